"""Runs sharing a fresh data directory (issue 21 item 2): how often do they all succeed?

Each trial makes a fresh data directory and starts P real `encbench run --quick` processes on it at
once (the issue's command: `encbench run --quick --data-dir D -o X.json`, P of them). A trial
succeeds when every process exits 0 with a complete result file, every run names the same data
set, each data file was built by exactly one run and reused by the others, and the plain file is
byte for byte the same as in every other trial (the data is seeded). Printed: one line per trial,
then N/T succeeded. It prints its figures; it is a benchmark, not a test.

Usage: .venv/bin/python bench/concurrent_datadir.py [--trials 20] [--processes 2] [--keep DIR]
       [-- extra encbench run arguments, e.g. --workload scan-eq]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def encbench() -> list[str]:
    script = Path(sys.executable).parent / "encbench"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "encbench.cli"]


def trial(work: Path, processes: int, extra: list[str]) -> tuple[bool, str, str | None]:
    """(succeeded, what was seen, sha256 of the plain data file)."""
    data = work / "data"
    procs = []
    for i in range(processes):
        with open(work / f"p{i}.stderr", "w") as err:
            procs.append(subprocess.Popen([*encbench(), "run", "--quick", *extra, "--data-dir", str(data),
                                           "-o", str(work / f"p{i}.json")], cwd=work, stdout=subprocess.DEVNULL,
                                          stderr=err))
    codes = [p.wait() for p in procs]
    if any(codes):
        first = next(((work / f"p{i}.stderr").read_text().strip().splitlines() or ["?"])[-1]
                     for i, c in enumerate(codes) if c)
        return False, f"exit codes {codes}: {first}", None
    docs = []
    for i in range(processes):
        try:
            docs.append(json.loads((work / f"p{i}.json").read_text()))
        except (OSError, ValueError) as e:
            return False, f"result file {i}: {e}", None
    if any(d.get("status") != "complete" for d in docs):
        return False, "a result file is not complete", None
    sets = [d["dataset"] for d in docs]
    if len({s["dataset_id"] for s in sets}) != 1:
        return False, "different data sets", None
    for name in sets[0]["files"]:
        built = [s["files"][name]["reused"] for s in sets].count(False)
        if built != 1 or len({s["files"][name]["bytes"] for s in sets}) != 1:
            return False, f"{name}: built by {built} runs", None
    plain = Path(sets[0]["data_dir"]) / "plain-p4096.db"
    sha = hashlib.sha256(plain.read_bytes()).hexdigest() if plain.exists() else None
    return True, f"all {processes} exit 0; each file built once ({', '.join(sorted(sets[0]['files']))})", sha


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--keep", help="keep each trial's directory under DIR")
    ap.add_argument("extra", nargs="*", help="extra `encbench run` arguments (after --)")
    args = ap.parse_args()
    ok, shas = 0, set()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="encbench-concurrent-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        for t in range(args.trials):
            work = root / f"trial-{t:02d}"
            work.mkdir()
            t0 = time.monotonic()
            good, what, sha = trial(work, args.processes, args.extra)
            if sha:
                shas.add(sha)
            ok += good
            print(f"trial {t + 1:2d}/{args.trials}: {'ok  ' if good else 'FAIL'} {time.monotonic() - t0:5.1f} s  {what}",
                  flush=True)
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    same = "the same plain file in every trial" if len(shas) == 1 else f"{len(shas)} different plain files"
    print(f"{ok}/{args.trials} succeeded ({args.processes} concurrent `encbench run --quick` per fresh data "
          f"directory; {same})")
    return 0 if ok == args.trials else 1


if __name__ == "__main__":
    sys.exit(main())
