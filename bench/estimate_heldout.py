#!/usr/bin/env python3
"""The encryption bill checked on workloads it never saw (issue 31): held-out peer mixes, measured and predicted.

Per engine:
1. **Calibrate** on encbench's own mixes only: `encbench calibrate --engine E --quick` (its read-only and
   write-heavy oltp scripts at 100% and 25% in memory: the read and write costs fitted at once); on PostgreSQL
   also encbench's in-transit labs (`encbench run --workload connect,bulk,roundtrip,storm --variant tls=off,on`,
   fitted at once as calibrate fits them: the costs of a new TLS session, a byte, a record received and a record sent).
2. **Held-out mixes**, each one ordinary `encbench run` of the oltp workload (one private server, encrypted and
   plain runs interleaved A B / B A, a fresh worker per run) at a memory share the calibration never used (50%):
   the peers' own scripts run by the peers' own drivers: sysbench oltp_read_write and oltp_point_select on MariaDB
   (ENCRYPTED=YES vs NO tables), pgbench tpcb-like and select-only on PostgreSQL with TLS off/on and on fscrypt
   (plain ext4 vs fscrypt), and the TPC-B-like mix on SQLCipher (encbench's in-process pgbench statements).
3. Per mix: the **measured** added CPU per transaction (encrypted minus plain, Welch 95% CI; with the kernel
   workers' CPU on fscrypt), and the **predicted** one: that mix's own counters per transaction (page reads and
   writes of its encrypted runs; for TLS, its sessions, the bytes and the records each way the server's sockets carried)
   times the calibrated unit costs. error = predicted / measured - 1; its 95% CI by the delta method (each 95%
   half-width taken as 1.96 standard errors, the calibration's and the mix's errors independent). A mix whose added
   CPU does not resolve (its CI holds 0) is said so and run again, longer (2x the runs and the seconds, at most
   --max-extend times), never dropped.
4. Per engine/setup and overall: median |error| and worst |error|, each with the interval its mixes' CIs bound
   (the median and the maximum are monotone in each mix's |error|: the interval of the bounds, not a joint 95%).

    .venv/bin/python bench/estimate_heldout.py                      # all three engines (PostgreSQL fscrypt: root)
    .venv/bin/python bench/estimate_heldout.py --engines sqlite --quick   # a smoke test (tiny, minutes at most)
    .venv/bin/python bench/estimate_heldout.py -o heldout.json --work-dir DIR   # DIR keeps (and reuses) each step's file

With -o the findings are written as the small JSON `encbench estimate` reads (src/encbench/data/heldout.json is
the shipped copy; analysis/heldout.py words it). Prints what was measured in this run; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

Z95 = 1.959964
HELD_OUT_MEMORY = "50%"  # the calibration runs 100% and 25% (MariaDB 25% and 10%): the held-out mixes a share it never saw
TRANSIT_TERMS = ("tls_handshakes", "tls_bytes", "tls_records_in", "tls_records_out")
RECORDS = {"tls_records_in": "query", "tls_records_out": "reply"}  # what a record each way is, per statement
# pgbench's built-in scripts: statements per transaction (tpcb-like: BEGIN, 3 UPDATEs, SELECT, INSERT, END). pgbench's
# bytes and records are counted as calibrate counts its own runs (analysis/fit.oltp_transit_counts: the server's
# sockets, a run's server_net_* fields: the records the server received and sent); where a run has no such count (a
# remote server, or a file from before), a transaction's records are taken as 1 received and 1 sent per statement
# (the query and its reply), and said so
STATEMENTS = {"select-only": 1, "simple-update": 5, "tpcb-like": 7}
# at rest: page reads (on fscrypt the pages the kernel read, as calibrate counts them: analysis/fit.Basis), page
# writes and log bytes (PostgreSQL's WAL; a term absent on the engine, SQLite's log, is left out as estimate does)
AT_REST_TERMS = ("reads", "writes", "log_bytes", "commits")


@dataclass(frozen=True)
class Setup:
    """One encrypted setup of an engine, checked on the peers' mixes: its scripts and the variant it compares."""

    engine: str
    name: str  # "sqlcipher", "encrypted tables", "tls", "fscrypt"
    side: str  # "at rest" or "in transit"
    scripts: tuple[str, ...]
    axis: str  # the variant key compared, e.g. encryption=off,on
    tag: str = ""  # the file name's suffix
    root: bool = False
    # the terms this setup does not encrypt, left out of its bill as `estimate --live` leaves them on such a server
    # (MariaDB's private server writes its redo log in the clear: innodb_encrypt_log=OFF, no binary log)
    clear: tuple[str, ...] = ()


SETUPS = (
    Setup("sqlite", "sqlcipher", "at rest", ("tpcb-like", "simple-update"), "encryption=off,on"),
    Setup("mariadb", "encrypted tables", "at rest", ("oltp_read_write", "oltp_point_select"), "encryption=off,on",
          clear=("log_bytes",)),
    Setup("postgres", "tls", "in transit", ("tpcb-like", "select-only"), "tls=off,on", "tls"),
    Setup("postgres", "fscrypt", "at rest", ("tpcb-like", "select-only"), "encryption=off,fscrypt", "fscrypt",
          root=True),
)
ENGINES = tuple(dict.fromkeys(s.engine for s in SETUPS))
# data per schema, calibration and held-out alike: MariaDB's buffer pool has a floor of several MB, so at 6 MB a
# 50% share holds every page and its mixes read nothing encrypted from storage; calibrate --quick's own 6 MB elsewhere
SIZES = {"sqlite": "6MB", "mariadb": "48MB", "postgres": "6MB"}
CALIBRATION_VARIANTS = {  # what `encbench calibrate` runs (engines/*/engine.py calibration_variants): --quick's copy
    "sqlite": ("script=select-only,update-one,update-batch", "memory=100%,25%", "encryption=off,on"),
    "mariadb": ("script=oltp_read_only,oltp_write_only", "memory=25%,10%", "encryption=off,on"),
    "postgres": ("script=select-only,tpcb-like", "memory=100%,25%", "encryption=off,fscrypt"),
}


@dataclass
class Bench:
    """Where the step files go, how long each mix runs, and the load seen while it ran."""

    work: Path
    quick: bool
    runs: int
    seconds: int
    max_extend: int
    calibration_runs: int | None = None
    precision_pct: float = 0.0  # a mix whose added CPU's 95% half-width is above this % of it runs again, longer
    extend_for: dict = field(default_factory=dict)  # engine -> its own max_extend (--max-extend ENGINE=N)
    docs: list[dict] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def encbench(self, args: list[str], out: Path) -> dict | None:
        """One encbench command writing `out` (reused when the work dir already holds it); its document, or None
        where it failed (said on stderr, with its last line)."""
        self.commands.append(" ".join(["encbench", *args, "-o", out.name]))
        if out.exists():
            print(f"  reused {out}", file=sys.stderr)
            return self._kept(out)
        cmd = [sys.executable, "-m", "encbench.cli", *args, "-o", str(out)]
        t0 = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True)
        print(f"  encbench {' '.join(args)}: exit {done.returncode}, {time.monotonic() - t0:.0f} s", file=sys.stderr)
        if not out.exists():
            print(f"  failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}", file=sys.stderr)
            return None
        return self._kept(out)

    def _kept(self, out: Path) -> dict:
        doc = json.loads(out.read_text())
        self.docs.append(doc)
        return doc


# -- calibration: encbench's own mixes ----------------------------------------------------------------------------

def calibrate(b: Bench, engine: str, transit: bool = True, atrest: bool = True) -> dict:
    """term -> UnitCost from encbench's own mixes (the read and write costs fitted at once; on PostgreSQL the
    in-transit labs' costs, fitted at once over them as calibrate fits them), and the files they came from."""
    from encbench.analysis import calibration, summary, unitcost

    costs, files, steps = {}, [], []
    if b.quick:  # calibrate's own design, tiny: the same fit over fewer, shorter runs
        args = ["run", "--engine", engine, "--workload", "oltp", "--runs", "2", "--size", "1MB", "--param",
                "seconds=1", "--param", "warmup_seconds=1"]
        args += [x for v in CALIBRATION_VARIANTS[engine] for x in ("--variant", v)]
    else:
        args = ["calibrate", "--engine", engine, "--quick", "--json", "--size", SIZES[engine]]
        args += ["--runs", str(b.calibration_runs)] if b.calibration_runs else []
    if atrest:
        steps.append((args, b.work / f"calibrate-{engine}.json"))
    # the in-transit labs, only for a setup checked in transit: 12 runs of 2 s per side (under 1.5 cores of other load,
    # 6 runs of 1 s left the record sent unresolved; 12 of 2 s resolved both); bulk streams 150,000 rows of ~1 KB (at
    # 20,000 the byte cost did not resolve idle, 0.35 ns [-0.09, 0.78], and the fit asked for a data size 7x larger)
    if engine == "postgres" and transit:
        steps.append((["run", "--engine", "postgres", "--workload", "connect,bulk,roundtrip,storm", "--variant",
                       "tls=off,on", "--variant", "clients=1", "--runs", "3" if b.quick else "12", "--param",
                       "connections=100", "--param", "messages=20000", "--param",
                       "rows=20000" if b.quick else "rows=150000", "--param",
                       f"seconds={1 if b.quick else 2}"], b.work / "transit-records-postgres.json"))
    for args, out in steps:
        doc = b.encbench(args, out)
        if doc is None:
            continue
        files.append(out.name)
        if doc.get("format") == calibration.FORMAT:  # `encbench calibrate -o`: its fitted costs, every term
            got = calibration.costs_of(doc, out.name)
        elif any(r["workload"] != "oltp" for r in doc["runs"]):  # PostgreSQL's in-transit labs: calibrate's fit
            got = {k: v for k, v in calibration.costs_of(calibration.build(
                engine, {}, {"in_transit": (doc, out.name)}), out.name).items() if k in TRANSIT_TERMS}
        else:  # a result file (--quick's tiny run)
            got = unitcost.fitted_costs(doc, summary.analyze(doc), out.name)
        costs.update({k: v[0] for k, v in got.items() if k not in costs or v[0].value is not None})
    return {"costs": costs, "files": files}


# -- the held-out mixes -------------------------------------------------------------------------------------------

def _per_txn(doc: dict, label: str, script: str) -> dict[str, float]:
    """The contender's counters per transaction (means over its measured runs): what its bill is priced from, each
    as calibrate counts its own runs: at rest fit.counts_of on the file's basis (on fscrypt, the kernel's pages
    read), in transit fit.oltp_transit_counts (a term nothing counted is absent: `predict` assumes or names it)."""
    from encbench.analysis import fit

    basis = fit.basis_of(doc)
    sums: dict[str, list[float]] = {}
    for run in doc["runs"]:
        if run.get("warmup") or run["variant_label"] != label:
            continue
        for op in run.get("operations", []):
            m, x = op.get("metrics", {}), op.get("extra") or {}
            n = x.get("transactions")
            if not n:
                continue
            # sessions, bytes and records each way: exactly as calibrate counts them (a term nothing counted absent)
            rows = {k: v / n for k, v in fit.oltp_transit_counts(run["variant"], m, x).items()}
            if m.get("pages_read") is not None:  # already per transaction
                rows.update(fit.counts_of(m, x, n, basis))
            for k, v in rows.items():
                sums.setdefault(k, []).append(v)
    return {k: statistics.fmean(v) for k, v in sums.items()}


def _se(ci) -> float | None:
    return None if not ci else (ci[1] - ci[0]) / (2 * Z95)


def predict(counts: dict, costs: dict, side: str, script: str = "", absent=()) -> dict:
    """The bill of one transaction: each term of this side priced (µs), its standard error, what was left out
    (`absent`: the engine's terms that do not apply, left out as the bill leaves them)."""
    terms = [t for t in (AT_REST_TERMS if side == "at rest" else TRANSIT_TERMS) if t not in absent]
    parts, var, missing, assumed, unresolved = {}, 0.0, [], [], []
    for t, what in RECORDS.items() if side == "in transit" and script in STATEMENTS else ():
        if counts.get(t) is None:
            counts = {**counts, t: float(STATEMENTS[script])}
            assumed.append(f"{t}: {counts[t]:g} per transaction, 1 per statement of {script} (its {what}), not "
                           "counted")
    for t in terms:
        rate = counts.get(t)
        if rate is None:
            missing.append(f"{t}: no counter for this mix")
            continue
        if rate == 0:  # as the bill: a term at a rate of 0 costs 0 whatever its unit cost (or none)
            parts[t] = 0.0
            continue
        cost = costs.get(t)
        if cost is None or cost.value is None:
            missing.append(f"{t}: no calibrated cost")
            continue
        parts[t] = rate * cost.value * 1e6
        var += (rate * (_se(cost.ci) or 0.0) * 1e6) ** 2
        if rate != 0 and cost.unresolved():  # as the bill: 0 x any cost is 0, else an unresolved cost is no figure
            unresolved.append(f"{t}: {cost.unresolved()}")
    # as `estimate` says of a bill: a term without a rate or a resolved cost leaves it not resolved, never partial
    return {"predicted_us": sum(parts.values()) if parts else None, "predicted_se_us": math.sqrt(var),
            "parts_us": parts, "counts_per_txn": counts, "left_out": missing, "assumed": assumed,
            "bill_resolved": not (missing or unresolved), "bill_unresolved": unresolved + missing}


def error_of(pred: float, pred_se: float, meas: float, meas_ci) -> tuple[float | None, list[float] | None]:
    """error % = predicted / measured - 1, its 95% CI by the delta method (independent errors)."""
    if meas <= 0:
        return None, None
    r = pred / meas
    se_m = _se(meas_ci) or 0.0
    se = math.sqrt((pred_se / meas) ** 2 + (r * se_m / meas) ** 2)
    return 100 * (r - 1), [100 * (r - Z95 * se - 1), 100 * (r + Z95 * se - 1)]


def abs_ci(ci) -> list[float] | None:
    """The bounds of |error| from the error's CI."""
    if not ci:
        return None
    lo, hi = ci
    return [0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi))]


def held_out_run(b: Bench, s: Setup, scripts, runs: int, seconds: int, out: Path) -> dict | None:
    args = ["run", "--engine", s.engine, "--workload", "oltp", "--variant", f"script={','.join(scripts)}",
            "--variant", f"memory={HELD_OUT_MEMORY}", "--variant", s.axis, "--runs", str(runs),
            "--size", "1MB" if b.quick else SIZES[s.engine], "--param", f"seconds={seconds}",
            "--param", f"warmup_seconds={1 if b.quick else 1}"]
    return b.encbench(args, out)


def mixes_of(doc: dict, costs: dict, s: Setup, runs: int, seconds: int) -> list[dict]:
    """Per oltp comparison of the file: measured beside predicted."""
    from encbench.analysis import summary

    out = []
    for e in summary.analyze(doc).to_dict().get("oltp_costs") or []:
        meas, ci = e["added_cpu_us_per_txn"], e["added_cpu_us_per_txn_ci"]
        p = predict(_per_txn(doc, e["contender"], e["script"]), costs, s.side, e["script"],
                    _absent(s.engine) | set(s.clear))
        row = {"mix": e["script"], "compared": f"{e['contender']} vs {e['baseline']}", "memory": e["memory"],
               "runs": runs, "seconds": seconds, "measured_us": meas, "measured_ci_us": ci,
               "cpu_basis": e.get("cpu_basis"), "resolved": bool(ci) and ci[0] > 0, **p,
               "error_pct": None, "error_ci_pct": None}
        if row["resolved"] and p["predicted_us"] is not None:
            err = error_of(p["predicted_us"], p["predicted_se_us"], meas, ci)
            if p["bill_resolved"]:
                row["error_pct"], row["error_ci_pct"] = err
            else:  # shown, never counted: the bill a user would get says "not resolved"
                row["error_if_taken_pct"], row["error_if_taken_ci_pct"] = err
        out.append(row)
    return out


def _absent(engine: str) -> set[str]:
    from encbench.analysis import calibration

    return set(calibration.engine_facts(engine)[0])


def check_setup(b: Bench, s: Setup, costs: dict) -> list[dict]:
    """The setup's mixes, each measured and predicted; a mix whose added CPU does not resolve runs again longer."""
    name = f"heldout-{s.engine}{'-' + s.tag if s.tag else ''}"
    doc = held_out_run(b, s, s.scripts, b.runs, b.seconds, b.work / f"{name}.json")
    if doc is None:
        return [{"mix": m, "resolved": False, "note": "the run failed"} for m in s.scripts]
    rows = mixes_of(doc, costs, s, b.runs, b.seconds)
    for i, row in enumerate(rows):
        runs, seconds = b.runs, b.seconds
        for k in range(1, b.extend_for.get(s.engine, b.max_extend) + 1):
            if (row["resolved"] and _precise(row, b.precision_pct)) or row.get("predicted_us") == 0:
                break  # resolved as precisely as asked, or nothing encrypted to predict (a zero bill, said below)
            runs, seconds = runs * 2, seconds * 2
            why = "not resolved" if not row["resolved"] else \
                f"±{_half_pct(row):.0f}%, wider than the ±{b.precision_pct:g}% asked"
            print(f"  {s.engine} {s.name} {row['mix']}: added CPU {why} ({_us(row)}): again with {runs} runs "
                  f"of {seconds} s", file=sys.stderr)
            again = held_out_run(b, s, (row["mix"],), runs, seconds, b.work / f"{name}-{row['mix']}-x{k}.json")
            got = [r for r in mixes_of(again, costs, s, runs, seconds) if r["mix"] == row["mix"]] if again else []
            if got:
                row = rows[i] = {**got[0], "extended": k}
        if row.get("bill_resolved") is False:
            row["note"] = ("the predicted bill is not resolved (a calibrated cost or a rate, above): no error figure"
                           + ("" if row["resolved"] else f"; nor did its own added CPU, after {runs} runs of {seconds} s "
                              "per side"))
        elif not row["resolved"] and row.get("predicted_us") == 0:
            row["note"] = ("no encrypted page read or written per transaction at this share: the bill predicts 0 added, "
                           f"the measured {_us(row)} holds 0 (they agree; there is no size to give an error in %)")
        elif not row["resolved"]:
            row["note"] = (f"the added CPU did not resolve after {runs} runs of {seconds} s per side (95% CI holds 0): "
                           "no error figure")
        elif not _precise(row, b.precision_pct):
            row["note"] = (f"its added CPU is ±{_half_pct(row):.0f}% (95% CI) after {runs} runs of {seconds} s per "
                           f"side, wider than the ±{b.precision_pct:g}% asked: its error is counted, and its CI says "
                           "how far to trust it")
    return rows


def _half_pct(row: dict) -> float:
    """The measured added CPU's 95% half-width, in % of it."""
    ci, m = row.get("measured_ci_us"), row.get("measured_us")
    return 100 * (ci[1] - ci[0]) / 2 / abs(m) if ci and m else math.inf


def _precise(row: dict, pct: float) -> bool:
    """Whether the mix's measured added CPU is as precise as asked (pct 0: resolved is enough)."""
    return not pct or _half_pct(row) <= pct


def _us(row: dict) -> str:
    ci = row.get("measured_ci_us")
    return f"{row['measured_us']:.1f} µs [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else f"{row.get('measured_us')} µs"


# -- summary, load, output ----------------------------------------------------------------------------------------

def summarize(rows: list[dict]) -> dict:
    """median and worst |error| of the mixes with an error, with the interval their CIs bound."""
    got = [r for r in rows if r.get("error_pct") is not None]
    if not got:
        return {"mixes": len(rows), "checked": 0, "median_abs_error_pct": None, "worst_abs_error_pct": None,
                **_unresolved(rows, got)}
    errs, bounds = [abs(r["error_pct"]) for r in got], [abs_ci(r["error_ci_pct"]) for r in got]
    return {"mixes": len(rows), "checked": len(got), "median_abs_error_pct": statistics.median(errs),
            "median_ci_pct": [statistics.median(x[0] for x in bounds), statistics.median(x[1] for x in bounds)],
            "worst_abs_error_pct": max(errs),
            "worst_ci_pct": [max(x[0] for x in bounds), max(x[1] for x in bounds)],
            "within_15_pct": sum(e <= 15 for e in errs), **_unresolved(rows, got)}


def _unresolved(rows: list[dict], got: list[dict]) -> dict:
    return {"unresolved": len(rows) - len(got),
            "added_cpu_unresolved": sum(not r.get("resolved") for r in rows),
            "bill_unresolved": sum(r.get("bill_resolved") is False for r in rows)}  # the two may overlap


def machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version()}


def load_words(docs: list[dict]) -> dict:
    """The other processes' CPU during the runs (each run's context: the machine's busy time minus encbench's own
    process tree, in cores), and the 1-minute load average at the runs' ends."""
    other = sorted(r["context"]["other_load_cores"] for d in docs for r in d.get("runs", [])
                   if isinstance(r.get("context"), dict) and r["context"].get("other_load_cores") is not None)
    load1 = [r["context"]["load1_end"] for d in docs for r in d.get("runs", [])
             if isinstance(r.get("context"), dict) and r["context"].get("load1_end") is not None]
    if not other:
        return {}
    return {"other_load_cores_median": statistics.median(other), "other_load_cores_max": other[-1],
            "other_load_cores_p90": other[int(0.9 * (len(other) - 1))], "load1_median": statistics.median(load1)
            if load1 else None, "runs": len(other),
            "what": "other processes' CPU (the machine's busy time minus encbench's own process tree) in cores, per "
                    f"run, over every run of the bench's files; the machine has {os.cpu_count()} cores"}


def _fmt(x, ci=None, unit="") -> str:
    if x is None:
        return "n/a"
    return f"{x:.1f}{unit}" + (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else "")


def report(checks: list[dict], overall: dict) -> None:
    print(f"{'engine':<9} {'setup':<17} {'mix':<18} {'measured µs/txn [95% CI]':>27} {'predicted µs/txn':>24} "
          f"{'error % [95% CI]':>22}")
    for c in checks:
        for r in c["mixes"]:
            pred = _fmt(r.get("predicted_us"), [r["predicted_us"] - Z95 * r["predicted_se_us"], r["predicted_us"] +
                                                Z95 * r["predicted_se_us"]] if r.get("predicted_us") is not None else None)
            err = _fmt(r.get("error_pct"), r.get("error_ci_pct"), "") if r.get("error_pct") is not None else \
                ("added CPU not resolved" if not r.get("resolved") else "bill not resolved"
                 if r.get("predicted_us") is not None else "no prediction")
            print(f"{c['engine']:<9} {c['setup']:<17} {r['mix']:<18} "
                  f"{_fmt(r.get('measured_us'), r.get('measured_ci_us')):>27} {pred:>24} {err:>22}")
            for why in r.get("bill_unresolved") or []:
                print(f"    bill not resolved: {why}")
            if r.get("error_if_taken_pct") is not None:
                lo, hi = r["error_if_taken_ci_pct"]
                print(f"    (its point figures taken anyway: error {r['error_if_taken_pct']:+.0f}% [{lo:+.0f}, {hi:+.0f}]; "
                      "not counted)")
            for why in r.get("assumed") or []:
                print(f"    assumed: {why}")
            if r.get("note"):
                print(f"    {r['note']}")
        print(f"  {c['engine']} {c['setup']}: {words_of(c['summary'])}")
    print(f"overall: {words_of(overall)}")


def words_of(s: dict) -> str:
    if not s.get("checked"):
        return (f"no mix with an error figure ({s.get('mixes', 0)} mixes: the added CPU did not resolve in "
                f"{s.get('added_cpu_unresolved', 0)}, the bill in {s.get('bill_unresolved', 0)})")
    m, w = s["median_ci_pct"], s["worst_ci_pct"]
    return (f"{s['checked']} of {s['mixes']} mixes: median |error| {s['median_abs_error_pct']:.0f}% [{m[0]:.0f}, "
            f"{m[1]:.0f}], worst {s['worst_abs_error_pct']:.0f}% [{w[0]:.0f}, {w[1]:.0f}], within 15% in "
            f"{s['within_15_pct']}; not resolved: the added CPU in {s['added_cpu_unresolved']}, the bill in "
            f"{s['bill_unresolved']}")


def markdown(doc: dict) -> str:
    """The findings as the Markdown table docs/estimate.md shows."""
    out = ["| engine | setup | mix | measured µs/txn [95% CI] | predicted µs/txn [95% CI] | error [95% CI] |",
           "|---|---|---|---|---|---|"]
    for c in doc["checks"]:
        for r in c["mixes"]:
            p, se = r.get("predicted_us"), r.get("predicted_se_us") or 0.0
            pred = _fmt(p, [p - Z95 * se, p + Z95 * se]) if p is not None else "n/a"
            if r.get("error_pct") is not None:
                err = f"{r['error_pct']:+.0f}% [{r['error_ci_pct'][0]:+.0f}, {r['error_ci_pct'][1]:+.0f}]"
            elif r.get("error_if_taken_pct") is not None:
                lo, hi = r["error_if_taken_ci_pct"]
                err = f"bill not resolved ({r['error_if_taken_pct']:+.0f}% [{lo:+.0f}, {hi:+.0f}] if taken)"
            else:
                both = "bill and added CPU not resolved" if not r.get("resolved") else "bill not resolved"
                err = both if r.get("bill_resolved") is False else \
                    ("agree at 0" if r.get("predicted_us") == 0 else "added CPU not resolved")
            runs = f" ({r['runs']} x {r['seconds']} s)" if r.get("extended") else ""
            measured = _fmt(r.get("measured_us"), r.get("measured_ci_us"))
            out.append(f"| {c['engine']} | {c['setup']} | {r['mix']}{runs} | {measured} | {pred} | {err} |")
    return "\n".join(out)


def run_all(args, b: Bench) -> dict:
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(engines) - set(ENGINES)
    if unknown:
        raise SystemExit(f"estimate_heldout: unknown engine(s) {sorted(unknown)}: use {','.join(ENGINES)}")
    only = selected(args.only)
    checks = []
    for engine in engines:
        setups = [s for s in SETUPS if s.engine == engine and (not only or (s.engine, s.tag or s.name) in only)]
        if not setups:
            continue
        print(f"{engine}: calibrating on encbench's own mixes", file=sys.stderr)
        cal = calibrate(b, engine, transit=any(s.side == "in transit" for s in setups),
                        atrest=any(s.side == "at rest" for s in setups))
        for s in setups:
            if s.root and os.geteuid() != 0:
                print(f"  {engine} {s.name}: skipped (needs root)", file=sys.stderr)
                continue
            rows = check_setup(b, s, cal["costs"])
            checks.append({"engine": engine, "setup": s.name, "side": s.side, "calibrated_from": cal["files"],
                           "costs_us": {k: {"value": c.value * 1e6 if c.value is not None else None,
                                            "ci": [x * 1e6 for x in c.ci] if c.ci else None}
                                        for k, c in cal["costs"].items()},
                           "held_out": f"memory={HELD_OUT_MEMORY} (calibration: {_shares(engine)}), fresh runs",
                           "mixes": rows, "summary": summarize(rows)})
    return {"checks": checks, "overall": summarize([r for c in checks for r in c["mixes"]])}


def _shares(engine: str) -> str:
    """The memory shares the engine's calibration runs, in words ('100%, 25%')."""
    return ", ".join(next(v for v in CALIBRATION_VARIANTS[engine] if v.startswith("memory=")).split("=")[1].split(","))


def selected(only: str | None) -> set[tuple[str, str]]:
    """--only ENGINE:SETUP[,...] (SETUP: a setup's tag, e.g. postgres:fscrypt, or its name) -> those pairs; none:
    every setup."""
    if not only:
        return set()
    known = {(s.engine, s.tag or s.name) for s in SETUPS} | {(s.engine, s.name) for s in SETUPS}
    want = {tuple(x.strip().split(":", 1)) for x in only.split(",") if x.strip()}
    bad = sorted(":".join(w) for w in want if w not in known)
    if bad:
        raise SystemExit(f"estimate_heldout: unknown setup(s) {bad}: use "
                         f"{','.join(sorted(e + ':' + t for e, t in known))}")
    names = {(s.engine, s.name): (s.engine, s.tag or s.name) for s in SETUPS}
    return {names.get(w, w) for w in want}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engines", default=",".join(ENGINES), help=f"comma list (default {','.join(ENGINES)})")
    p.add_argument("--only", default=None, metavar="ENGINE:SETUP[,...]",
                   help="check only these setups, e.g. postgres:fscrypt (setups: sqlite:sqlcipher, mariadb:encrypted "
                        "tables, postgres:tls, postgres:fscrypt)")
    p.add_argument("--quick", action="store_true", help="tiny runs, no extension: a smoke test, not a figure")
    p.add_argument("--runs", type=int, default=None, help="runs per side of each held-out mix (default 6; quick 2)")
    p.add_argument("--seconds", type=int, default=None, help="each held-out run's timed window (default 3; quick 1)")
    p.add_argument("--max-extend", action="append", default=[], metavar="N|ENGINE=N",
                   help="how many times an unresolved (or imprecise: --precision) mix runs again at 2x runs and "
                        "seconds (default 2; quick 0); ENGINE=N for one engine (repeatable)")
    p.add_argument("--precision", type=float, default=None, metavar="PCT",
                   help="run a mix again, longer, while its added CPU's 95%% CI is wider than ±PCT%% of it "
                        "(default 20; 0: only while it does not resolve)")
    p.add_argument("--calibration-runs", type=int, default=None,
                   help="runs per variant of `encbench calibrate` (default calibrate's own)")
    p.add_argument("--work-dir", default=None, help="keep each step's result file here (an existing one is reused)")
    p.add_argument("--markdown", default=None, metavar="FINDINGS", help="print a findings file's table as Markdown")
    p.add_argument("-o", "--output", default=None, help="write the findings as JSON (what estimate reads)")
    return p.parse_args(argv)


def _extends(given: list[str]) -> tuple[int | None, dict]:
    """--max-extend values: N for every engine (the last given), ENGINE=N for one."""
    every, per_engine = None, {}
    for g in given:
        name, sep, n = g.rpartition("=")
        if sep and name not in ENGINES:
            raise SystemExit(f"estimate_heldout: --max-extend {g}: unknown engine {name!r} (use {','.join(ENGINES)})")
        if not n.isdigit():
            raise SystemExit(f"estimate_heldout: --max-extend {g}: not a whole number of extensions")
        if sep:
            per_engine[name] = int(n)
        else:
            every = int(n)
    return every, per_engine


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return 0
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="estimate-heldout-"))
    work.mkdir(parents=True, exist_ok=True)
    every, per_engine = _extends(args.max_extend)
    b = Bench(work, args.quick, args.runs or (2 if args.quick else 6), args.seconds or (1 if args.quick else 3),
              every if every is not None else (0 if args.quick else 2), args.calibration_runs,
              args.precision if args.precision is not None else 20.0, per_engine)
    t0 = time.monotonic()
    found = run_all(args, b)
    report(found["checks"], found["overall"])
    from encbench.analysis import calibration

    doc = {"version": 1, "calibration_version": calibration.VERSION,  # the model the bills were made with
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "quick": args.quick,
           "machine": machine(), "load": load_words(b.docs), "invocation_s": round(time.monotonic() - t0),
           "method": "predicted = the mix's counters per transaction x unit costs calibrated on encbench's own mixes "
                     "only; measured = encrypted - plain server CPU per transaction (Welch 95% CI); error = "
                     "predicted / measured - 1, 95% CI by the delta method; median and worst |error| with the "
                     "interval their mixes' CIs bound",
           "precision_pct": b.precision_pct, "commands": b.commands, **found}
    load = doc["load"]
    print(f"load: other processes used {load.get('other_load_cores_median', float('nan')):.2f} cores (median "
          f"over {load.get('runs', 0)} runs; max {load.get('other_load_cores_max', float('nan')):.2f}) of "
          f"{os.cpu_count()}; {doc['invocation_s']} s (reused steps not counted); step files in {work}")
    if args.output:
        Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"findings: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
