"""Duet runs on the embedded engine: do baseline and contender measured *at the same time*, on
separate CPUs, give tighter intervals than encbench's interleaved runs, without more A/A false
positives? (Bulej et al., ICPE 2020, report 5x tighter results on cloud VMs.)

Each round starts two `encbench run` invocations at once, one per CPU (taskset; --no-pin), one
with the baseline variant and one with the contender, so run i of one overlaps run i of the
other in time and machine-wide noise hits both. A duet's ratio pairs the runs by index (a t
interval on the log of each pair's ratio); the same runs unpaired give what the interleaved design
would (stats.ratio_ci). The interleaved reference is one ordinary invocation with both variants.
A/A: the same with two identical variants (placebo a and b), counting intervals that exclude 1.

    .venv/bin/python bench/duet_eval.py --rounds 4 --runs 10

It prints, per design, the median CI half-width of the overhead and the A/A rate. A benchmark,
not a test: the machine's noise decides; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats as st

from encbench.analysis import stats

WORKLOAD = "scan-eq"


def _run(args: list[str], cpu: int | None, out: Path, data_dir: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "encbench.cli", "run", "--workload", WORKLOAD, "--no-pin", "--warmups", "1",
           "--data-dir", str(data_dir), "-o", str(out), *args]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _values(path: Path, cache: str, metric: str = "cpu_s") -> dict[str, list[float]]:
    """variant label -> the measured runs' values of the scan, in run order."""
    doc = json.loads(path.read_text())
    out: dict[str, list[float]] = {}
    for r in doc["runs"]:
        if r["warmup"] or r["variant"].get("cache") != cache:
            continue
        for op in r["operations"]:
            out.setdefault(r["variant_label"], []).append(op["metrics"][metric])
    return out


def paired(base: list[float], cont: list[float]) -> tuple[float, float, float]:
    """(ratio, low, high): geometric mean of the pairs' ratios with a 95% t interval on their logs."""
    n = min(len(base), len(cont))
    d = np.log(np.asarray(cont[:n]) / np.asarray(base[:n]))
    m, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(n))
    t = st.t.ppf(0.975, n - 1)
    return math.exp(m), math.exp(m - t * se), math.exp(m + t * se)


def half_points(r: float, lo: float, hi: float) -> float:
    return max(r - lo, hi - r) * 100


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--size", default="16MB")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        print("duet runs need 2 CPUs", file=sys.stderr)
        return 2
    common = ["--runs", str(args.runs), "--size", args.size]
    rows = {k: [] for k in ("duet paired", "duet unpaired", "interleaved")}
    aa = {k: [0, 0] for k in ("duet paired", "interleaved")}
    with tempfile.TemporaryDirectory(prefix="duet-") as tmp:
        tmp_path, data = Path(tmp), Path(tmp) / "data"
        for rnd in range(args.rounds):
            for cache in ("cold", "warm"):
                # the interleaved reference: one invocation, both variants (and placebo twins for the A/A)
                ref = tmp_path / f"ref-{rnd}-{cache}.json"
                p = _run([*common, "--variant", f"cache={cache}", "--variant", "placebo=a,b"], None, ref, data)
                if p.wait() != 0:
                    print(p.stderr.read(), file=sys.stderr)
                    return 1
                v = _values(ref, cache)
                off = [k for k in v if "encryption=off" in k and "placebo=a" in k][0]
                on = [k for k in v if "encryption=on" in k and "placebo=a" in k][0]
                twin = off.replace("placebo=a", "placebo=b")
                est = stats.ratio_ci(v[off], v[on])
                rows["interleaved"].append(half_points(est.value, *est.ci))
                a = stats.ratio_ci(v[off], v[twin])
                aa["interleaved"][0] += int(not a.ci[0] <= 1 <= a.ci[1])
                aa["interleaved"][1] += 1
                # the duet: baseline on one CPU, contender on the other, at the same time
                outs = [tmp_path / f"duet-{rnd}-{cache}-{side}.json" for side in ("off", "on")]
                procs = [_run([*common, "--variant", f"cache={cache}", "--variant", f"encryption={e}"], cpu, o, data)
                         for e, cpu, o in zip(("off", "on"), cpus[:2], outs)]
                if any(q.wait() != 0 for q in procs):
                    print("".join(q.stderr.read() for q in procs), file=sys.stderr)
                    return 1
                b = list(_values(outs[0], cache).values())[0]
                c = list(_values(outs[1], cache).values())[0]
                rows["duet paired"].append(half_points(*paired(b, c)))
                est = stats.ratio_ci(b, c)
                rows["duet unpaired"].append(half_points(est.value, *est.ci))
                # the duet A/A: two plain invocations at once (warm only: two cold runs would evict each other's file)
                if cache == "warm":
                    outs = [tmp_path / f"aa-{rnd}-{side}.json" for side in ("a", "b")]
                    procs = [_run([*common, "--variant", "cache=warm", "--variant", "encryption=off"], cpu, o, data)
                             for cpu, o in zip(cpus[:2], outs)]
                    if any(q.wait() != 0 for q in procs):
                        return 1
                    r, lo, hi = paired(list(_values(outs[0], "warm").values())[0],
                                       list(_values(outs[1], "warm").values())[0])
                    aa["duet paired"][0] += int(not lo <= 1 <= hi)
                    aa["duet paired"][1] += 1
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{WORKLOAD}, {args.size}, {args.runs} runs per variant, {args.rounds} rounds x cold/warm; CPU overhead "
          "encrypted/plain, 95% CI half-width in points (median [min, max]):")
    for k, v in rows.items():
        print(f"  {k:14s} {np.median(v):7.1f} [{min(v):.1f}, {max(v):.1f}] over {len(v)}")
    for k, (bad, n) in aa.items():
        print(f"  A/A {k:11s} {bad}/{n} intervals exclude no change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
