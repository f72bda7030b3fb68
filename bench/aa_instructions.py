"""A/A check of `--meter instructions` on this machine, and the smallest real change it catches (issue 23).

K back-to-back `encbench run --meter instructions` invocations (default 4) of SQLCipher's cold scan with
placebo twins (`--variant placebo=a,b`: every variant twice, under labels that change nothing) and the key
derivation at 256,000 PBKDF2 iterations and at +0.1%, +0.5% and +1% more (`--variant kdf_iter=...`: a real
change of the connection open, counted in the `(open)` row). Printed:

- A/A false positives within a run: placebo twins called different (costs/saves) by the run's own verdicts
  (instructions, the default ±2% margin), over the comparisons that got a verdict;
- A/A false positives across invocations: every row's runs in one invocation against the same row's in another
  (the same statistics: Yuen-Welch on logs, TOST at ±2%), over every pair of invocations;
- the spread of every row across the K invocations: (highest mean - lowest mean) / median mean;
- the real changes: the open with more PBKDF2 iterations against 256,000, in each invocation, placebo twins
  apart: the change measured with its 95% CI, whether it is caught (the 95% CI above 0%) every time, and the
  verdict `run` gives it at the default ±2% margin and at ±0.25% (a change inside the margin is "no cost":
  equivalence shown; to be told a 1% change costs, judge with a smaller --margin, or gate it).

Goals: A/A false positives 0; every row's spread <= 0.5%; a 1% change caught every time.
It prints its figures; it is a benchmark, not a test.

Usage: .venv/bin/python bench/aa_instructions.py [--k 4] [--runs 6] [--size 3MB] [--keep DIR] [--from DIR]
(--from re-analyses the aai-*.json of an earlier --keep DIR without running anything.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path

from aa_check import goal, invoke, rate_text, short
from benchlib import script_main
from encbench.analysis import stats, summary as analysis
from encbench.errors import BadValueError
from encbench.vocab.variants import flagged, judged
from encbench.util.units import parse_positive_int, parse_size

KDF_BASE = 256_000
KDF = (256_000, 256_256, 257_280, 258_560)  # +0%, +0.1%, +0.5%, +1%
WORKLOAD = "scan-eq"
GOAL_SPREAD_PCT = 0.5
SMALL_MARGIN_PCT = 0.25  # a verdict's equivalence margin below the +0.5% and +1% changes


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="aa_instructions.py", description=__doc__.splitlines()[0])
    ap.add_argument("--k", default="4", help="invocations (default 4, at least 2)")
    ap.add_argument("--runs", default="6", help="runs per variant (default 6: a verdict needs 6 per side)")
    ap.add_argument("--size", default="3MB", help="data size (default 3MB)")
    ap.add_argument("--keep", default=None, metavar="DIR", help="keep the result files in DIR")
    ap.add_argument("--from", dest="source", default=None, metavar="DIR", help="re-analyse DIR/aai-*.json")
    ap.add_argument("--data-dir", default=None, help="encbench run --data-dir (default encbench's)")
    return ap.parse_args(argv)


def run_args(args, output: Path) -> list[str]:
    out = ["run", "--meter", "instructions", "--workload", WORKLOAD, "--variant", "cache=cold",
           "--variant", "placebo=a,b", "--variant", "kdf_iter=" + ",".join(str(k) for k in KDF),
           "--size", args.size, "--runs", args.runs, "--warmups", "0", "-o", str(output), "--json"]
    return out + (["--data-dir", args.data_dir] if args.data_dir else [])


def _means(doc: dict) -> dict[tuple, tuple[float, list[float]]]:
    """(workload, operation, variant label) -> (mean instructions, the runs' values)."""
    out = {}
    for key, metrics in analysis.collect(doc).items():
        values = metrics.get("instructions") or []
        if values:
            out[key] = (statistics.fmean(values), values)
    return out


def row_spread(docs: list[dict]) -> list[dict]:
    rows: dict[tuple, list[float]] = {}
    for doc in docs:
        for key, (mean, _) in _means(doc).items():
            rows.setdefault(key, []).append(mean)
    out = []
    for (wl, op, vl), xs in sorted(rows.items()):
        med = statistics.median(xs)
        out.append({"row": f"{wl}/{op} {short(vl)},kdf_iter={dict(p.split('=') for p in vl.split(',')).get('kdf_iter', '-')}",
                    "n": len(xs), "median": med, "spread_pct": 100 * (max(xs) - min(xs)) / med if med else None})
    return out


def cross_fp(docs: list[dict]) -> tuple[int, int]:
    """Every row's runs in two invocations against each other, every pair of invocations: (flagged, judged)."""
    k = n = 0
    for a, b in itertools.combinations([_means(d) for d in docs], 2):
        for key in a.keys() & b.keys():
            est = stats.ratio_ci(a[key][1], b[key][1])
            j = stats.judge_estimate(est, word="instructions")
            c = {"verdict": j.verdict, "ratio": est.value}
            if judged(c):
                n += 1
                k += flagged(c)
    return k, n


def within_fp(docs: list[dict]) -> tuple[int, int, list[str]]:
    k = n = 0
    rows = []
    for doc in docs:
        for c in analysis.analyze(doc).placebo_comparisons or []:
            if c["metric"] != "instructions" or not judged(c):
                continue
            n += 1
            if flagged(c):
                k += 1
                rows.append(f"{c['workload']}/{c['operation']} {short(c['contender'])} {(c['ratio'] - 1) * 100:+.3f}%")
    return k, n, rows


def kdf_changes(docs: list[dict]) -> list[dict]:
    """The open with more iterations against 256,000 in each invocation, each placebo twin apart."""
    out = []
    for i, doc in enumerate(docs):
        groups = analysis.collect(doc)
        opens = {vl: m.get("instructions") for (wl, op, vl), m in groups.items() if (wl, op) == analysis.OPEN}
        for vl, values in opens.items():
            parts = dict(p.split("=") for p in vl.split(","))
            if parts.get("encryption") != "on" or int(parts["kdf_iter"]) == KDF_BASE or not values:
                continue
            base_vl = vl.replace(f"kdf_iter={parts['kdf_iter']}", f"kdf_iter={KDF_BASE}")
            base = opens.get(base_vl)
            if not base:
                continue
            est = stats.ratio_ci(base, values)
            out.append({"invocation": i + 1, "kdf_iter": int(parts["kdf_iter"]), "placebo": parts.get("placebo"),
                        "expected_pct": 100 * (int(parts["kdf_iter"]) / KDF_BASE - 1),
                        "change_pct": 100 * (est.value - 1), "ci_pct": [100 * (x - 1) for x in est.ci] if est.ci else None,
                        "caught": bool(est.ci and est.ci[0] > 1.0),
                        "verdict": stats.judge_estimate(est, word="instructions").verdict,
                        "verdict_small": stats.judge_estimate(est, word="instructions",
                                                              margin_pct=SMALL_MARGIN_PCT).verdict})
    return out


def report(docs: list[dict], seconds: list[float]) -> int:
    k_in, n_in, rows_in = within_fp(docs)
    k_x, n_x = cross_fp(docs)
    spreads = row_spread(docs)
    changes = kdf_changes(docs)
    print(f"{len(docs)} invocations of `encbench run --meter instructions` ({WORKLOAD} cold + the open, placebo "
          f"twins, kdf_iter {', '.join(f'{x:,}' for x in KDF)})"
          + (f", {statistics.fmean(seconds):.0f} s each on average" if seconds else ""))
    print(f"A/A false positives within a run (placebo twins, instructions): {rate_text(k_in, n_in)}"
          f" - goal 0: {goal(k_in == 0 if n_in else None)}")
    for r in rows_in[:5]:
        print(f"  {r}")
    print(f"A/A false positives across invocations (every row, every pair): {rate_text(k_x, n_x)}"
          f" - goal 0: {goal(k_x == 0 if n_x else None)}")
    worst = max((s for s in spreads if s["spread_pct"] is not None), key=lambda s: s["spread_pct"], default=None)
    print(f"spread of every row's mean across the {len(docs)} invocations (highest - lowest) / median, "
          f"{len(spreads)} rows: largest {worst['spread_pct']:.4f}% ({worst['row']})" if worst else "no rows")
    for s in sorted(spreads, key=lambda s: -(s["spread_pct"] or 0))[:8]:
        print(f"  {s['row']}: {s['spread_pct']:.4f}% of {s['median']:,.0f} instructions ({s['n']} invocations)")
    print(f"  goal <= {GOAL_SPREAD_PCT}%: {goal(worst['spread_pct'] <= GOAL_SPREAD_PCT if worst else None)}")
    print("real changes (the open with more PBKDF2 iterations vs 256,000):")
    smallest = None
    for it in sorted({c["kdf_iter"] for c in changes}):
        mine = [c for c in changes if c["kdf_iter"] == it]
        caught = sum(c["caught"] for c in mine)
        measured = ", ".join(f"{c['change_pct']:+.4f}%" + (f" [{c['ci_pct'][0]:+.4f}, {c['ci_pct'][1]:+.4f}]"
                                                           if c["ci_pct"] else "") for c in mine[:4])
        verdicts = ", ".join(sorted({c["verdict"] for c in mine}))
        small = ", ".join(sorted({c["verdict_small"] for c in mine}))
        print(f"  kdf_iter {it:,} (+{mine[0]['expected_pct']:.2f}% iterations): caught {caught} of {len(mine)}; "
              f"measured {measured}{' ...' if len(mine) > 4 else ''}; verdict at ±2%: {verdicts}, at "
              f"±{SMALL_MARGIN_PCT:g}%: {small}")
        if caught == len(mine) and smallest is None:
            smallest = mine[0]["expected_pct"]
    one = [c for c in changes if abs(c["expected_pct"] - 1.0) < 1e-9]
    print(f"smallest change caught every time: {'+%.2f%% iterations' % smallest if smallest is not None else 'none'}"
          f" - goal 1%: {goal(all(c['caught'] for c in one) if one else None)}")
    return 0


def body(args) -> int:
    k = parse_positive_int(args.k, what="--k", maximum=50)
    if k < 2:
        raise BadValueError("--k must be 2 or more")
    parse_size(args.size)
    work = Path(args.source or args.keep or tempfile.mkdtemp(prefix="aa-instructions-"))
    seconds: list[float] = []
    if args.source:
        paths = sorted(work.glob("aai-*.json"))
    else:
        work.mkdir(parents=True, exist_ok=True)
        paths = []
        for i in range(k):
            path = work / f"aai-{i + 1}.json"
            print(f"invocation {i + 1} of {k} ...", flush=True)
            t0 = time.monotonic()
            invoke(run_args(args, path))
            seconds.append(time.monotonic() - t0)
            paths.append(path)
    docs = [json.loads(p.read_text()) for p in paths]
    return report(docs, seconds)


if __name__ == "__main__":
    import sys

    sys.exit(script_main("aa_instructions.py", body, parse_args))
