"""What a run killed with SIGKILL leaves behind, and reclaiming it on the next run.

A killed runner cannot clean up: its `scratch-*` directory in the data directory and the
`pymp-*` directory multiprocessing made for the forkserver's socket stay. Each of them
holds an owner record (OWNER_FILE: the runner's pid and process start time, so a reused
pid is not mistaken for the owner). The next run removes every such directory whose owner
is gone, leaves the others alone (a live run, or a directory of another program without
our record), and says what it reclaimed in one stderr line.

Who writes the record: `claim()` (called by runner.execute first) for the pymp directory,
which it creates ahead of the forkserver; the runner for the scratch directory, as soon as
it makes it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import psutil

OWNER_FILE = ".encbench-owner"
PATTERNS = ("scratch-*",)  # in the data directory
TEMP_PATTERNS = ("pymp-*",)  # in the temporary directory


def _start_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, ValueError):
        return None


def me() -> dict:
    return {"pid": os.getpid(), "start": _start_time(os.getpid())}


def write_owner(directory: Path, owner: dict) -> None:
    """Record the owner in the directory (atomic, never over an existing record)."""
    target = Path(directory) / OWNER_FILE
    if target.exists():
        return
    tmp = target.with_name(f"{OWNER_FILE}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(owner))
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def read_owner(directory: Path) -> dict | None:
    try:
        owner = json.loads((Path(directory) / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return None
    return owner


def alive(owner: dict) -> bool:
    """The recorded process still runs (same pid and the same start time: not a reused pid)."""
    started = _start_time(owner["pid"])
    if started is None:
        return False
    recorded = owner.get("start")
    return not isinstance(recorded, (int, float)) or abs(started - recorded) < 1.0


def _candidates(data_dir: Path) -> list[Path]:
    found = []
    for base, patterns in ((Path(data_dir), PATTERNS), (Path(tempfile.gettempdir()), TEMP_PATTERNS)):
        for pattern in patterns:
            try:
                found += [p for p in base.glob(pattern) if p.is_dir() and not p.is_symlink()]
            except OSError:
                continue
    return found


def reclaim(data_dir: Path) -> list[tuple[Path, int]]:
    """Remove what dead runs left; [(directory, owner pid)] of what was removed."""
    removed = []
    for d in _candidates(data_dir):
        owner = read_owner(d)
        if owner is None or owner["pid"] == os.getpid() or alive(owner):
            continue
        shutil.rmtree(d, ignore_errors=True)
        if not d.exists():
            removed.append((d, owner["pid"]))
    return removed


def _claim_pymp_dir(owner: dict) -> None:
    """Create multiprocessing's temporary directory now (the forkserver puts its socket there) and
    record us as its owner; multiprocessing removes it, record included, at a normal exit."""
    import multiprocessing.util

    write_owner(Path(multiprocessing.util.get_temp_dir()), owner)


def claim(data_dir: Path) -> list[tuple[Path, int]]:
    """At the start of a run: reclaim what dead runs left (one stderr line), then mark what this run
    will leave if it is killed: its pymp directory now (the runner marks its scratch directory)."""
    removed = reclaim(data_dir)
    if removed:
        pids = sorted({pid for _, pid in removed})
        print(f"encbench: reclaimed {len(removed)} director{'y' if len(removed) == 1 else 'ies'} left by dead "
              f"run{'s' if len(pids) > 1 else ''} (pid {', '.join(map(str, pids))}): "
              + ", ".join(str(d) for d, _ in removed), file=sys.stderr)
    _claim_pymp_dir(me())
    return removed
