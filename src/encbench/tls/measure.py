"""`encbench tls-scan --measure`: the cost of each accepted suite, measured and ranked.

Each suite becomes a `tls=PROTOCOL:SUITE` variant of an ordinary `encbench run` of the
storm, bulk and connect workloads (so every measured connection is checked in the
server's own view, pg_stat_ssl or Ssl_cipher), against `tls=off`. The ranking reads the
run's comparisons: storm elapsed, bulk throughput, connect rate, each with its CI.
"""

from __future__ import annotations

import time
from pathlib import Path
from ..engines import ENGINES
from ..errors import BadValueError
from ..lab import runner
from ..probes import DEFAULT_PROBES
from ..util.units import parse_size

RANKED = (("storm", "messages", "wall_s", "storm elapsed"), ("bulk", "copy-out", "mb_per_s", "bulk MB/s"),
          ("connect", "connect", "connections_per_s", "connections/s"))
CANNOT_OFFER = "accepted, not measured: the client cannot offer it"


def variants_for(scan: dict, top: int | None) -> list[tuple[str, dict]]:
    """[(tls variant value, graded suite)] in the server's order, TLS 1.3 first, at most `top` suites."""
    out = []
    for proto in ("TLSv1.3", "TLSv1.2"):
        for s in scan["suites"].get(proto, []):
            out.append((f"{proto}:{s['suite']}", s))
    return out[:top] if top else out


def not_offered(scan: dict, engine: str, top: int | None) -> dict[str, str]:
    """{tls variant value: why} of the accepted suites the measuring client cannot offer (the server accepts them
    from a scan, which offers every suite; the engine's client library keeps some below its security level)."""
    eng = ENGINES.get(engine)
    return {v: CANNOT_OFFER for v, _ in variants_for(scan, top) if not eng.client_offers(v)}


def run(scan: dict, engine: str, *, dsn: str | None, top: int | None, runs: int, quick: bool, output: Path,
        data_dir: Path, command: str, on_progress=lambda *a: None) -> dict:
    skipped = not_offered(scan, engine, top)
    chosen = [(v, s) for v, s in variants_for(scan, top) if v not in skipped]
    if not chosen:
        raise BadValueError(f"none of the {len(skipped)} suite(s) to measure can be offered by the measuring client",
                            hint="the scan lists them; measure with a client whose OpenSSL offers them")
    config = runner.RunConfig(
        engine=engine, workloads=[w for w, _, _, _ in RANKED],
        variant_filters=["tls=off," + ",".join(v for v, _ in chosen)],
        runs=runs, warmups=1, size_bytes=parse_size("6MB"), seed=42, output=output, data_dir=data_dir,
        probes=list(DEFAULT_PROBES), regenerate=False, key=None, key_source="default", quick=quick,
        command=command, params=[], engine_options={"dsn": dsn} if dsn else {},
    )
    runner.plan(config)
    t0 = time.perf_counter()
    doc = runner.execute(config, on_progress=on_progress)
    doc["tls_measure_seconds"] = time.perf_counter() - t0
    return doc


def group_variants(scan: dict) -> list[str]:
    """tls=PROTOCOL:SUITE@GROUP for every accepted group, with the server's first suite of the newest
    protocol (an ECDHE one for TLS 1.2, where the group is the curve): the handshake's cost per group."""
    for proto in ("TLSv1.3", "TLSv1.2"):
        groups = (scan.get("groups_by_protocol") or {}).get(proto) or []
        suites = [s["suite"] for s in scan["suites"].get(proto, [])
                  if proto == "TLSv1.3" or s["suite"].startswith("ECDHE")]
        if groups and suites:
            return [f"{proto}:{suites[0]}@{g}" for g in groups]
    return []


def run_groups(scan: dict, engine: str, *, dsn: str | None, runs: int, quick: bool, output: Path, data_dir: Path,
               command: str) -> dict | None:
    """The connect workload under each accepted group (one suite), against tls=off."""
    chosen = group_variants(scan)
    if not chosen:
        return None
    config = runner.RunConfig(
        engine=engine, workloads=["connect"], variant_filters=["tls=off," + ",".join(chosen)],
        runs=runs, warmups=1, size_bytes=parse_size("6MB"), seed=42, output=output, data_dir=data_dir,
        probes=list(DEFAULT_PROBES), regenerate=False, key=None, key_source="default", quick=quick,
        command=command, params=[], engine_options={"dsn": dsn} if dsn else {},
    )
    runner.plan(config)
    return runner.execute(config)


def group_ranking(doc: dict) -> list[dict]:
    rows = []
    for c in doc.get("comparisons", []):
        if (c["workload"], c["operation"], c["metric"]) == ("connect", "connect", "connections_per_s") and "@" in c["contender"]:
            rows.append({"tls": c["contender"].removeprefix("tls="), "group": c["contender"].rsplit("@", 1)[1],
                         "connections/s": {"ratio": c["ratio"], "ci": c["ci"], "significant": c["significant"]}})
    return sorted(rows, key=lambda r: -(r["connections/s"]["ratio"] or 0))


def ranking(doc: dict, scan: dict, top: int | None) -> list[dict]:
    """One row per suite: each ranked metric's ratio vs tls=off with its CI; sorted by storm overhead."""
    graded = dict(variants_for(scan, top))
    skipped = not_offered(scan, doc["engine"]["name"], top)
    by = {(c["workload"], c["operation"], c["metric"], c["contender"]): c for c in doc.get("comparisons", [])}
    rows = []
    for value, suite in graded.items():
        label = f"tls={value}"
        row = {"tls": value, "suite": suite["suite"], "grade": suite["grade"], "aead": suite["aead"],
               "not_measured": skipped.get(value)}
        for wl, op, metric, name in RANKED:
            c = by.get((wl, op, metric, label))
            row[name] = {"ratio": c["ratio"], "ci": c["ci"], "significant": c["significant"]} if c else None
        rows.append(row)

    def key(r):
        s = r.get("storm elapsed")
        return s["ratio"] if s and s["ratio"] is not None else float("inf")

    return sorted(rows, key=key)


def recommendation(rows: list[dict]) -> str | None:
    strong = [r for r in rows if r["grade"] == "A" and r.get("storm elapsed")]
    if not strong:
        return None
    best = strong[0]
    s = best["storm elapsed"]
    return (f"cheapest strong suite: {best['tls']} (grade A; storm elapsed {(s['ratio'] - 1) * 100:+.0f}% vs no TLS"
            + (f", 95% CI [{(s['ci'][0] - 1) * 100:+.0f}, {(s['ci'][1] - 1) * 100:+.0f}]" if s["ci"] else "") + ")")
