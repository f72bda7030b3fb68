"""The defaults `run` and `selftest` share (and bench/aa_check.py reads): sizes, runs, seed, data directory
(and its check)."""

from __future__ import annotations

import os
from pathlib import Path
from ..util import files

DEFAULT_SIZE = "48MB"
DEFAULT_RUNS = 6  # the verdict minimum (stats.MIN_RUNS); with the warm repeats it keeps ~75-120 s on 2 cores
QUICK_SIZE = "6MB"
QUICK_RUNS = 3  # --quick with --workload or --variant: a smoke run (--quick alone runs until its verdicts resolve)
QUICK_BUDGET = "150s"  # --quick's time budget (--budget changes it): the whole run, data preparation included
DEFAULT_SEED = 42
# --meter instructions: a count is exact at any size and valgrind runs 20-50x slower, so the data is smaller and
# nothing is warmed up (every run is a fresh process: a warmup would count the same again)
METER_SIZE = "16MB"
METER_QUICK_SIZE = "3MB"
METER_WARMUPS = 0
METER_QUICK_RUNS = 2  # --quick: a count repeats to the instruction, two runs per side show it


def data_dir_default() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "encbench" / "data"


def data_dir(given: str | None) -> Path:
    """--data-dir (or the default), checked before any work: a directory encbench can create files in, or a path
    to one it can make (a regular file, a FIFO, an immutable or read-only directory, /proc: BadValueError, 4)."""
    path = Path(given) if given else data_dir_default()
    files.check_directory(path, what="--data-dir", hint="give a directory encbench may write in: generated data is "
                                                        "kept there")
    return path
