"""Does the per-page cost predict the overhead of another query? (seed 003's model, checked)

`encbench estimate` assumes at-rest encryption costs a fixed amount of CPU per page read
from storage. This bench tests that on one engine: one `encbench run` of several
read-only workloads with cache=cold (encryption off and on, interleaved), then for every
ordered pair (A, B) it takes A's per-page cost and B's pages and predicts B's added CPU:

    predicted(B) = pages(B) x per-page cost(A)     measured(B) = CPU cold encrypted - CPU cold plain

and prints the prediction error, (predicted - measured) / measured, with the measured
CI. The workloads differ in query shape (scan-like: heavy CPU per page; scan-eq: light)
and, with --also-dml, in read volume (dml's ranged SELECTs read a few hundred pages).
The goal is an error within 10%.

Usage: .venv/bin/python bench/estimate_validation.py [--engine sqlite|mariadb] [--runs 8]
       [--size 48MB] [--also-dml]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from encbench.analysis import summary as analysis
from encbench.lab import runner
from encbench.analysis import stats
from encbench.probes import DEFAULT_PROBES
from encbench.util.units import fmt_seconds, parse_positive_int, parse_size
from benchlib import script_main

GOAL = 0.10


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="estimate_validation.py", description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="sqlite", choices=("sqlite", "mariadb"))
    ap.add_argument("--runs", default="8")
    ap.add_argument("--size", default="48MB")
    ap.add_argument("--also-dml", action="store_true", help="also predict dml/select (fewer pages per operation)")
    return ap.parse_args(argv)


def added(doc: dict, groups, workload: str, op: str) -> tuple[object, float] | None:
    """(difference estimate of cpu_s cold on - cold off, mean pages) for one operation."""
    pairs = [c for c in doc["comparisons"] if c["workload"] == workload and c["operation"] == op
             and c["metric"] == "cpu_s" and "cache=cold" in c["contender"]]
    if not pairs:
        return None
    c = pairs[0]
    on, off = groups[(workload, op, c["contender"])], groups[(workload, op, c["baseline"])]
    basis = "pages_decrypted" if sum(on.get("pages_decrypted", [])) > 0 else "pages_read"
    pages = on.get(basis, [])
    if not pages:
        return None
    return stats.difference_ci(off["cpu_s"], on["cpu_s"]), sum(pages) / len(pages)


def body(args) -> int:
    runs = parse_positive_int(args.runs, what="--runs", maximum=100)
    targets = [("scan-eq", "scan"), ("scan-like", "scan")] + ([("dml", "select")] if args.also_dml else [])
    with tempfile.TemporaryDirectory(prefix="encbench-validate-") as tmp:
        out = Path(tmp) / "r.json"
        config = runner.RunConfig(
            engine=args.engine, workloads=sorted({w for w, _ in targets}),
            variant_filters=["cache=cold"], runs=runs, warmups=1, size_bytes=parse_size(args.size), seed=42,
            output=out, data_dir=Path(tmp) / "data", probes=list(DEFAULT_PROBES), regenerate=False, key=None,
            key_source="default", quick=False, command="bench/estimate_validation.py", params=[], engine_options={})
        t0 = time.perf_counter()
        print(f"running {', '.join(config.workloads)} on {args.engine}, cache=cold, encryption off/on, "
              f"{runs} runs + 1 warmup each ({args.size})...", flush=True)
        doc = runner.execute(config)
        took = time.perf_counter() - t0
    groups = analysis.collect(doc)
    measured = {}
    for wl, op in targets:
        got = added(doc, groups, wl, op)
        if got:
            measured[(wl, op)] = got
    print(f"done in {took:.0f} s; per workload (cold, encrypted minus plain, mean of {runs} runs each):")
    for (wl, op), (diff, pages) in measured.items():
        ci = f" [{fmt_seconds(diff.ci[0])}, {fmt_seconds(diff.ci[1])}]" if diff.ci else ""
        print(f"  {wl}/{op}: +{fmt_seconds(diff.value)} CPU{ci} for {pages:,.0f} pages = "
              f"{fmt_seconds(diff.value / pages)} per page")
    print("predictions (per-page cost of A x pages of B, against B's measured added CPU):")
    errors = []
    for (wa, oa), (da, pa) in measured.items():
        per_page = da.value / pa
        for (wb, ob), (db, pb) in measured.items():
            if (wa, oa) == (wb, ob):
                continue
            predicted = per_page * pb
            err = (predicted - db.value) / db.value if db.value else float("nan")
            inside = bool(db.ci and db.ci[0] <= predicted <= db.ci[1])
            errors.append(abs(err))
            print(f"  from {wa}/{oa} to {wb}/{ob}: predicted +{fmt_seconds(predicted)}, measured "
                  f"+{fmt_seconds(db.value)} -> error {err * 100:+.1f}%"
                  f" ({'inside' if inside else 'outside'} the measured 95% CI)")
    if errors:
        worst = max(errors)
        print(f"worst error {worst * 100:.1f}% (goal: within {GOAL * 100:.0f}%): "
              f"{'met' if worst <= GOAL else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(script_main("estimate_validation", body, parse_args))
