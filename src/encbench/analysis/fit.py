"""The bill's unit costs fitted at once over a designed set of mixes (issue 31: `encbench calibrate`).

Every measured run gives the server CPU y of its unit of work (a transaction, a connect lab's batch, a bulk stream,
a fixed-duration roundtrip), the counts x_k of the bill's terms it did (page reads and writes, log bytes per
transaction at rest; new TLS sessions, bytes, records received and sent in transit), and whether it ran encrypted. Runs are
grouped in cells (the same mix: every variant key but the encryption axis, e.g. script and memory share). The
model, fitted over every run of one side:

    y = a_cell + e x sum_k (c_k x x_k)

(Where the filesystem encrypts in the kernel's worker threads, fscrypt, y is the server's CPU plus those threads' and a
page read is a page the kernel read from storage: `Basis`, recorded in the fit as "basis".)

a_cell: the cell's plain cost (one intercept per cell, so the plain work of each mix cancels); e: 1 for an encrypted
run. Each c_k, the added CPU per unit of term k, is identified when the cells' encrypted runs do the terms' work in
different proportions (a read-only and a write-heavy mix at two memory shares; a connect-heavy and a bytes-heavy TLS
mix). Weighted least squares: each run weighted by 1 / its group's variance (the mix, encrypted or plain: a
write-heavy mix varies far more than a read-only one). The 95% CIs: s^2 (X'WX)^-1 (s^2 the weighted residual
variance) with Student's t at n - p degrees of freedom (the runs are independent: each is its own process and
connection).

A term no encrypted run did (its count 0 in every one) or whose count never varied apart from the others' is not
fitted: it is returned with why, never as a zero. A cost whose CI reaches zero is returned as fitted; the bill says
"not resolved" (analysis/bill.UnitCost.unresolved).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..engines import engine_named
from ..util.tdist import t_ppf
from .summary import baseline_for, table_for

WORKLOAD = "oltp"
MIN_CV = 0.005  # the smallest spread a group of runs is weighted with (its coefficient of variation)
TRANSIT_WORKLOADS = ("connect", "bulk", "roundtrip", "storm")
METHOD = ("weighted least squares over every run (1 / each mix's variance, encrypted and plain apart): server CPU per "
          "unit of work = a plain cost per mix + (encrypted) x the sum of each term's count x its cost; 95% CI from "
          "s^2 (X'WX)^-1, Student's t")
METHOD_BLOCKED = METHOD.replace("a plain cost per mix", "a plain cost per mix and round (the encrypted and plain runs "
                                "of one interleaved round paired, so the machine's drift between rounds cancels)").replace(
    "1 / each mix's variance", "1 / the variance each mix's runs keep within their rounds")
# at rest, the per-transaction counts of each term (the first metric a run has): PostgreSQL's WAL, InnoDB's redo
# (commits: SQLite's write transactions, its driver's count; absent on the server engines, whose commit is log bytes)
ATREST_COUNTS = {"reads": ("pages_read",), "writes": ("pages_written",), "log_bytes": ("wal_bytes", "redo_bytes_written"),
                 "commits": ("commits",)}
ATREST_WORDS = {"reads": "per page read", "writes": "per page written", "log_bytes": "per log byte",
                "commits": "per write transaction (commit)"}
TRANSIT_WORDS = {"tls_handshakes": "per new TLS session", "tls_bytes": "per byte over TLS",
                 "tls_records_in": "per TLS record the server received", "tls_records_out": "per TLS record the server sent"}


# where the encryption runs in the kernel's worker threads (fscrypt: the engine's kernel_worker_crypto), the added CPU
# is the server's and those threads' (the kworkers probe) on both sides of every mix, as `show` and the held-out check
# measure it; and a page read is a page the kernel read from storage (what it decrypts; PostgreSQL's block reads may
# come from the OS cache): the server's processes' /proc/PID/io bytes, else the data's loop device, / the page size
KERNEL_CPU = ("cpu_s", "kworker_cpu_s")
KERNEL_READS = ("server_read_bytes", "device_read_bytes")


@dataclass(frozen=True)
class Basis:
    """What a run's y sums (CPU metrics) and what its page reads are counted from (None: the engine's page reads)."""

    cpu: tuple[str, ...] = ("cpu_s",)
    reads: str | None = None

    def to_dict(self) -> dict:
        return {"cpu": " + ".join(self.cpu), "reads": f"{self.reads} / page size" if self.reads else "pages_read"}

    def words(self) -> str:
        """'' for the default basis; else what the fit counted, in words."""
        parts = (["server + kernel-worker CPU (where the filesystem encrypts)"] if len(self.cpu) > 1 else []) + \
            ([f"page reads = {self.reads} / page size (pages the kernel read from storage)"] if self.reads else [])
        return "; ".join(parts)


@dataclass(frozen=True)
class Row:
    """One measured run: its mix, whether encrypted, its server CPU (seconds) and each term's count."""

    cell: str
    encrypted: bool
    y: float
    x: dict
    block: int | None = None  # the run's ABBA round (a blocked fit pairs the encrypted and plain runs of one round)


def _cell(variant: dict, engine: dict, workload: str, axis: str, base: str) -> str:
    # an encrypted run's cell is its plain baseline's (keys only the encrypted side has, e.g. kdf_iter, drop)
    plain = baseline_for(variant, engine, workload) if variant.get(axis) not in (None, base) else variant
    return ",".join([workload] + [f"{k}={v}" for k, v in sorted((plain or variant).items()) if k != axis])


def _oltp_ops(doc: dict):
    """(run, operation) of every measured oltp run."""
    for run in doc["runs"]:
        if not run.get("warmup") and run["workload"] == WORKLOAD:
            yield from ((run, op) for op in run.get("operations", []))


def basis_of(doc: dict) -> Basis:
    """The fit's basis for this file: the kernel's (KERNEL_CPU, KERNEL_READS) when an encryption value of its runs
    works in kernel worker threads and every run has what that needs (the kworkers probe; a bytes counter and the
    page size), else the server's CPU and the engine's page reads."""
    engine = engine_named((doc.get("engine") or {}).get("name", ""))
    axis = table_for(doc["engine"], WORKLOAD)["axis"]
    ops = list(_oltp_ops(doc))
    kernel = [(r, op) for r, op in ops if engine and r["variant"].get(axis) in engine.kernel_worker_crypto]
    if not kernel:
        return Basis()
    cpu = KERNEL_CPU if all(op.get("metrics", {}).get(k) is not None for _, op in ops for k in KERNEL_CPU) \
        else ("cpu_s",)
    reads = next((k for k in KERNEL_READS if all(op.get("metrics", {}).get(k) is not None
                                                 and (op.get("extra") or {}).get("page_size") for _, op in kernel)),
                 None)
    return Basis(cpu, reads)


def counts_of(m: dict, extra: dict, n: float, basis: Basis) -> dict:
    """A run's count of each at-rest term per unit of work (n), page reads by the basis's counter where it has one."""
    x = {}
    for term, names in ATREST_COUNTS.items():  # a probe's metric, else the driver's own count (commits)
        got = next((src[k] for k in names for src in (m, extra) if src.get(k) is not None), None)
        x[term] = (got or 0.0) / n
    if basis.reads and m.get(basis.reads) is not None and extra.get("page_size"):
        x["reads"] = m[basis.reads] / extra["page_size"] / n
    return x


def atrest_rows(doc: dict, basis: Basis | None = None) -> list[Row]:
    """One Row per measured oltp run, per transaction: its CPU (basis.cpu summed), page reads, page writes, log
    bytes."""
    table = table_for(doc["engine"], WORKLOAD)
    axis, base = table["axis"], table["axis_baseline"]
    basis = basis or basis_of(doc)
    out = []
    for run, op in _oltp_ops(doc):
        m, extra = op.get("metrics", {}), op.get("extra") or {}
        n = extra.get("transactions")
        if not n or any(m.get(k) is None for k in basis.cpu) or "pages_read" not in m:
            continue
        y = sum(float(m[k]) for k in basis.cpu) / n
        cell = _cell(run["variant"], doc["engine"], WORKLOAD, axis, base)
        out.append(Row(cell, run["variant"].get(axis) != base, y, counts_of(m, extra, n, basis)))
    return out


def wire_counts(m: dict, extra: dict) -> dict:
    """term -> what a run's traffic carried, seen from the server (`tls_bytes`, `tls_records_in`, `tls_records_out`):
    the server's sockets followed while its driver ran (host/sockets.py: `server_net_*`, pgbench's connections), else
    the client's own socket (the net probe: bytes, and the segments that carried data; what the client sent the
    server received). A record: a TCP segment that carried data, as estimate --live counts them on the server's
    sockets. A term nothing counted is absent (never 0): the records where neither counted them apart (a result file
    from before data segments were counted each way), and all three where the net probe's socket carried no byte (a
    driver's own connections: the worker's socket sat idle). What calibrate and the held-out check both count."""
    if extra.get("server_net_bytes") is not None:
        got = {"tls_bytes": extra["server_net_bytes"], "tls_records_in": extra.get("server_net_messages_in"),
               "tls_records_out": extra.get("server_net_messages_out")}
    else:
        sent, received = m.get("net_bytes_sent"), m.get("net_bytes_received")
        if not (sent or received):
            return {}
        got = {"tls_bytes": (sent or 0) + (received or 0), "tls_records_in": m.get("net_data_segments_out"),
               "tls_records_out": m.get("net_data_segments_in")}
    return {k: v for k, v in got.items() if v is not None}


def oltp_transit_counts(variant: dict, m: dict, extra: dict) -> dict:
    """An oltp run's in-transit counts over the whole run (per transaction: divided by its `transactions`): its new
    TLS sessions (one per client, each connection held through the run) and what its traffic carried (wire_counts:
    a term nothing counted absent, for the caller to assume or leave out, and say which)."""
    return {"tls_handshakes": float(variant.get("clients", 1)), **wire_counts(m, extra)}


def _wire(m: dict, extra: dict) -> tuple[float, float | None, float | None]:
    """(bytes, records in, records out) of a transit run (wire_counts): bytes 0 where nothing counted them, the
    records None."""
    got = wire_counts(m, extra)
    return got.get("tls_bytes", 0), got.get("tls_records_in"), got.get("tls_records_out")


def _records(counted_in, counted_out, assumed_in: float, assumed_out: float) -> dict:
    """The records term counts: as counted where the run counted both ways, else as assumed."""
    if counted_in is None or counted_out is None:
        return {"tls_records_in": assumed_in, "tls_records_out": assumed_out}
    return {"tls_records_in": counted_in, "tls_records_out": counted_out}


def _transit_counts(workload: str, m: dict, extra: dict) -> tuple[float, dict]:
    """A transit run's unit of work (what its server CPU is divided by: the plain work per unit is the same in every
    run of a mix, even a fixed-duration one that does less work with TLS) and its new sessions, bytes, and records
    the server received (requests) and sent (replies), counted where the run's sockets were followed, else assumed.
    connect: per connection (each too short to follow: one check query's request and result assumed, 1 in and 1
    out); bulk: per stream (assumed where not counted: 1 request in, 1 reply out); roundtrip: per query, its client's
    sessions (pgbench's), 1 in and 1 out per query where its driver's connections were not followed (MariaDB's) or
    were followed only in part (fewer requests counted than queries ran: a socket the counter lost);
    storm: per run, its notices out (`messages`, each flushed alone: one record each while the reader keeps up) and
    its one request in (the loop-only operation: 1 in, none out)."""
    wire, seg_in, seg_out = _wire(m, extra)
    if workload == "connect":
        n = extra.get("connections") or 0
        return n, {"tls_handshakes": n, "tls_bytes": wire, **_records(None, None, n, n)}
    if workload == "bulk":
        return 1, {"tls_handshakes": 0, "tls_bytes": wire or extra.get("bytes_received") or 0,
                   **_records(seg_in, seg_out, 1, 1)}
    if workload == "roundtrip":  # its driver's own connections: the net probe's socket is the worker's, idle
        q = extra.get("queries") or 0
        got_in, got_out = extra.get("server_net_messages_in"), extra.get("server_net_messages_out")
        if got_in is not None and got_in < q:  # fewer requests than queries: its socket was not followed throughout
            got_in = got_out = None
        return q, {"tls_handshakes": extra.get("tls_checked_connections") or 1, "tls_bytes": wire,
                   **_records(got_in, got_out, q, q)}
    # storm: its notices, each flushed alone, counted exactly; its one request (the loop) in
    sent = extra.get("messages") or m.get("messages") or 0
    received = (extra.get("messages_received") or 0) if "messages_received" in extra else sent
    return 1, {"tls_handshakes": 0, "tls_bytes": wire, "tls_records_in": 1, "tls_records_out": received}


def transit_rows(doc: dict) -> list[Row]:
    """One Row per measured run of the TLS labs (tls off or on): server CPU per unit of work and its counts. A cell
    is the workload's operation and the variant less tls (storm's loop-only operation is a mix of its own)."""
    out = []
    for run in doc["runs"]:
        tls = run["variant"].get("tls")
        if run.get("warmup") or run["workload"] not in TRANSIT_WORKLOADS or tls is None:
            continue
        keys = [f"{k}={v}" for k, v in sorted(run["variant"].items()) if k != "tls"]
        for op in run.get("operations", []):
            m = op.get("metrics", {})
            unit, counts = _transit_counts(run["workload"], m, op.get("extra") or {})
            if "cpu_s" not in m or not unit:
                continue
            cell = ",".join([f"{run['workload']}/{op.get('operation', '')}"] + keys)
            out.append(Row(cell, tls != "off", m["cpu_s"] / unit, {k: v / unit for k, v in counts.items()},
                           run.get("round")))
    return out


def _weights(rows: list[Row], ys: list[float] | None = None) -> np.ndarray:
    """1 / the variance of each run's group (its mix, encrypted or plain): a write-heavy mix's CPU per transaction
    varies tens of times more than a read-only one's, and unweighted its noise would drown the read cost. ys: what
    varies (default each run's y; a blocked fit passes its first pass's residuals: the spread left within a round)."""
    groups: dict[tuple, list[float]] = {}  # what varies in each group
    ys_of: dict[tuple, list[float]] = {}  # the group's own y (the floor below is a share of their mean)
    for r, y in zip(rows, ys if ys is not None else [r.y for r in rows]):
        groups.setdefault((r.cell, r.encrypted), []).append(y)
        ys_of.setdefault((r.cell, r.encrypted), []).append(r.y)
    # a group's variance at least (0.5% of its mean)^2: CPU times read at a 10 ms tick can repeat to the last digit,
    # and a variance of 1e-33 would weight that group 10^30 times the others
    var = {g: max(float(np.var(v, ddof=1)), (MIN_CV * float(np.mean(ys_of[g]))) ** 2) if len(v) > 1 else 0.0
           for g, v in groups.items()}
    known = [v for v in var.values() if v > 0]
    floor = min(known) if known else 1.0  # a group without spread: weighted as the steadiest group seen
    return np.array([1.0 / (var[(r.cell, r.encrypted)] or floor) for r in rows])


def _intercept(r: Row, blocked: bool) -> tuple:
    return (r.cell, r.block) if blocked else (r.cell, None)


def _design(rows: list[Row], intercepts: list[tuple], terms: list[str],
            blocked: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The design matrix with each column scaled to a largest value of 1 (bytes and sessions differ by 10^6: unscaled,
    X'X is singular to the machine), and the scales (a cost is the fitted coefficient over its column's scale)."""
    x = np.array([[1.0 if _intercept(r, blocked) == c else 0.0 for c in intercepts]
                  + [r.x[t] if r.encrypted else 0.0 for t in terms]
                  for r in rows], dtype=float).reshape(len(rows), len(intercepts) + len(terms))
    scale = np.abs(x).max(axis=0) if len(rows) else np.ones(x.shape[1])
    scale[scale == 0] = 1.0
    return x / scale, scale


def _identifiable(rows: list[Row], intercepts: list[tuple], terms: list[str],
                  blocked: bool = False) -> tuple[list[str], dict[str, str]]:
    """The terms the design can fit, and why each other one cannot: no encrypted run did it, or its count never
    varied apart from the terms kept before it (the terms are tried in the bill's order)."""
    kept, why = [], {}
    for t in terms:
        if not any(r.encrypted and r.x.get(t) for r in rows):
            why[t] = "no calibrated mix did this work (its count was 0 in every encrypted run)"
            continue
        x, _ = _design(rows, intercepts, kept + [t], blocked)
        if np.linalg.matrix_rank(x) < x.shape[1]:
            why[t] = (f"its count never varied apart from {', '.join(kept) or 'the mixes'}' across the calibrated "
                      "mixes: add a mix that does it in another proportion")
            continue
        kept.append(t)
    return kept, why


def solve(rows: list[Row], terms: list[str], blocked: bool = False) -> dict:
    """The fit of these terms' costs (seconds per unit) over the rows: {"runs", "cells", "df", "method", "costs":
    term -> {"value", "ci"} or {"why"}}; every term asked for is in "costs". blocked: a plain cost per mix and round
    (each run's Row.block), not per mix: the rounds' drift cancels, as in a paired comparison."""
    cells = sorted({r.cell for r in rows})
    out = {"method": METHOD_BLOCKED if blocked else METHOD, "runs": len(rows), "cells": cells, "df": None,
           "costs": {}}
    if not any(r.encrypted for r in rows) or all(r.encrypted for r in rows):
        why = "no runs" if not rows else "the mixes ran on one side only (encrypted and plain are both needed)"
        out["costs"] = {t: {"why": why} for t in terms}
        return out
    intercepts = sorted({_intercept(r, blocked) for r in rows}, key=lambda c: (c[0], -1 if c[1] is None else c[1]))
    kept, why = _identifiable(rows, intercepts, terms, blocked)
    x, scale = _design(rows, intercepts, kept, blocked)
    n, p = x.shape
    if n <= p:
        out["costs"] = {t: {"why": f"{n} runs for {p} parameters: more runs per variant"} for t in terms}
        return out
    y = np.array([r.y for r in rows])
    w = np.sqrt(_weights(rows))
    xw, yw = x * w[:, None], y * w
    beta, *_ = np.linalg.lstsq(xw, yw, rcond=None)
    if blocked:  # weighted by the spread left within the rounds, not the drift the blocks took out
        w = np.sqrt(_weights(rows, list(y - x @ beta)))
        xw, yw = x * w[:, None], y * w
        beta, *_ = np.linalg.lstsq(xw, yw, rcond=None)
    resid = yw - xw @ beta
    cov = float(resid @ resid) / (n - p) * np.linalg.inv(xw.T @ xw)
    q = t_ppf(0.975, n - p)
    out["df"] = n - p
    for i, t in enumerate(kept):
        j = len(intercepts) + i
        value, se = float(beta[j] / scale[j]), math.sqrt(max(float(cov[j, j]), 0.0)) / float(scale[j])
        out["costs"][t] = {"value": value, "ci": [value - q * se, value + q * se]}
    out["costs"].update({t: {"why": w_} for t, w_ in why.items()})
    out["costs"] = {t: out["costs"][t] for t in terms}
    return out


def fit_atrest(doc: dict, terms=None) -> dict:
    """The at-rest costs (terms: those to fit, default every one: a term the engine's design cannot fit is left out
    of the model, so its count absorbs none of the noise)."""
    basis = basis_of(doc)
    got = solve(atrest_rows(doc, basis), list(terms if terms is not None else ATREST_COUNTS))
    return {**got, "basis": basis.to_dict(), "basis_words": basis.words()}


def fit_transit(doc: dict, terms=None) -> dict:
    """The in-transit costs, blocked by round: the labs' operations are short, and their plain CPU drifts between
    rounds far more than TLS adds within one (a 150 MB COPY's server CPU read 0.29-0.53 s over 12 plain runs; TLS added
    about 0.09 s to each round's)."""
    return solve(transit_rows(doc), list(terms if terms is not None else TRANSIT_WORDS), blocked=True)


def fit(doc: dict) -> dict | None:
    """The fitted per-page read and write costs (µs) with 95% CIs, or None where the file cannot give them (no
    oltp runs, or reads and writes that never vary apart): the at-rest fit in its first slice's shape."""
    basis = basis_of(doc)
    got = solve(atrest_rows(doc, basis), list(ATREST_COUNTS))
    costs = got["costs"]
    if len(got["cells"]) < 2 or any("why" in costs[k] for k in ("reads", "writes")):
        return None
    out = {"method": got["method"], "runs": got["runs"], "cells": got["cells"], "df": got["df"],
           "basis": basis.to_dict(), "basis_words": basis.words()}
    for name, term in (("read", "reads"), ("write", "writes")):
        out[f"{name}_us"] = costs[term]["value"] * 1e6
        out[f"{name}_ci_us"] = [x * 1e6 for x in costs[term]["ci"]]
    return out
