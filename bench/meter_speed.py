"""How long `--meter instructions` takes (issue 23): the --quick SQLite suite (goal: 2 minutes on 2 cores) and a
PostgreSQL storm + roundtrip run (goal: 5 minutes), each as a user runs it (a new `encbench run` process).

Printed per run: the wall time, the CPU time of every process it started (user + sys: on an idle 2-core machine
the wall time is about this, the runner and the worker taking turns), the load average before and after (this
machine is shared: a busy one stretches the wall time, not the CPU time), and the phases from the result file
(the runs' own durations; the rest is start-up, data, calibration and the CPU-model probes). The CPU-model probes
(host/cpugap) run once per machine and library and are cached: --fresh-cache measures a first run with them.
It prints its figures; it is a benchmark, not a test.

Usage: .venv/bin/python bench/meter_speed.py [--only sqlite|postgres] [--fresh-cache] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import script_main

GOALS = {"sqlite": 120.0, "postgres": 300.0}
RUNS = {
    "sqlite": ["run", "--meter", "instructions", "--quick"],
    "postgres": ["run", "--engine", "postgres", "--meter", "instructions", "--quick", "--workload", "storm",
                 "--workload", "roundtrip"],
}


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="meter_speed.py", description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=tuple(RUNS), default=None)
    ap.add_argument("--fresh-cache", action="store_true", help="an empty XDG cache: the CPU-model probes run too")
    ap.add_argument("--keep", default=None, metavar="DIR", help="keep the result files in DIR")
    return ap.parse_args(argv)


def one(name: str, work: Path, env: dict) -> dict:
    out = work / f"meter-{name}.json"
    argv = [sys.executable, "-m", "encbench.cli", *RUNS[name], "--data-dir", str(work / "data"), "-o", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0, t0 = os.getloadavg()[0], time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        return {"name": name, "error": (done.stderr.strip().splitlines() or ["?"])[-1], "wall_s": wall}
    doc = json.loads(out.read_text())
    runs_s = sum((r.get("context") or {}).get("duration_s", 0) for r in doc["runs"])
    return {"name": name, "wall_s": wall, "cpu_s": cpu, "load_before": load0, "load_after": os.getloadavg()[0],
            "runs": len(doc["runs"]), "runs_s": runs_s, "command": " ".join(RUNS[name])}


def body(args) -> int:
    work = Path(args.keep or tempfile.mkdtemp(prefix="meter-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if args.fresh_cache:
        env["XDG_CACHE_HOME"] = str(work / "xdg-cache")
    for name in ([args.only] if args.only else list(RUNS)):
        r = one(name, work, env)
        if "error" in r:
            print(f"{name}: FAILED after {r['wall_s']:.0f} s: {r['error']}")
            continue
        verdict = "meets" if r["cpu_s"] <= GOALS[name] else "MISSES"
        print(f"{name}: `encbench {r['command']}`: {r['wall_s']:.0f} s wall, {r['cpu_s']:.0f} s CPU "
              f"(all its processes; {verdict} the {GOALS[name]:.0f} s goal on an idle 2-core machine), "
              f"{r['runs']} runs taking {r['runs_s']:.0f} s of it; load average {r['load_before']:.1f} before, "
              f"{r['load_after']:.1f} after{'; CPU-model probes included (fresh cache)' if args.fresh_cache else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(script_main("meter_speed.py", body, parse_args))
