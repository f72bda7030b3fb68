#!/usr/bin/env python3
"""Is `encbench advise`'s ranking stable? K invocations of the same advise, back to back (issue 24).

For every pair of ranked entries of the same cost whose 95% CIs do not overlap in one invocation, the other
invocations must put them in the same order (the goal: every such pair, every time). Also prints each
invocation's wall time (goals: --quick on SQLite within 3 minutes, a full SQLite sweep within 10, a server
engine within 15) and each entry's ratio across invocations.

    .venv/bin/python bench/advise_stability.py --k 2 --quick            # SQLite, the reduced sweeps
    .venv/bin/python bench/advise_stability.py --k 2 --engine postgres  # a private server's sweeps

Prints ratios and counts measured in this run; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def advise(args, out: Path, data: Path) -> tuple[list[dict], float]:
    cmd = [sys.executable, "-m", "encbench.cli", "advise", "--json", "-o", str(out), "--data-dir", str(data)]
    cmd += ["--engine", args.engine] + (["--quick"] if args.quick else []) + (["--size", args.size] if args.size else [])
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    took = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"advise exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)["entries"], took


def key(e: dict) -> tuple[str, str]:
    return e["key"], e["value"]


def disjoint(a: dict, b: dict) -> bool:
    return bool(a["ci"] and b["ci"]) and (a["ci"][1] < b["ci"][0] or b["ci"][1] < a["ci"][0])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=2)
    p.add_argument("--engine", default="sqlite")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--size", default=None)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="advise-stability-"))
    work.chmod(0o755)  # a server engine's at-rest clusters run as their own user, on mounts below the data directory
    runs = []
    for i in range(args.k):
        entries, took = advise(args, work / f"inv-{i + 1}", work / "data")
        runs.append({key(e): e for e in entries})
        print(f"invocation {i + 1}: {len(entries)} entries, {sum(1 for e in entries if e['rank'])} ranked, "
              f"{took:.0f} s")
    checked = agreed = 0
    for i, j in itertools.permutations(range(args.k), 2):
        ranked = [e for e in runs[i].values() if e["rank"]]
        for a, b in itertools.combinations(ranked, 2):
            if a["what"] != b["what"] or not disjoint(a, b):
                continue
            other_a, other_b = runs[j].get(key(a)), runs[j].get(key(b))
            checked += 1
            if other_a and other_b and other_a["rank"] and other_b["rank"] and \
                    (a["rank"] < b["rank"]) == (other_a["rank"] < other_b["rank"]):
                agreed += 1
            else:
                print(f"  order differs: {key(a)} vs {key(b)} (invocation {i + 1} then {j + 1})")
    print(f"pairs with disjoint CIs kept in the same order: {agreed} of {checked}"
          + (" (goal: all)" if checked else ""))
    for k in sorted(set().union(*runs)):
        ratios = [f"{(r[k]['ratio'] - 1) * 100:+.0f}%" if k in r and r[k]["ratio"] else "-" for r in runs]
        standings = {r[k]["standing"] for r in runs if k in r}
        print(f"  {k[0]}={k[1]}: {', '.join(ratios)} ({'; '.join(sorted(standings))})")
    print(f"result files kept in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
