"""What a run killed with SIGKILL leaves behind, and reclaiming it on the next run.

A killed runner cannot clean up: its `scratch-*` directory in the data directory, the
`pymp-*` directory multiprocessing made for the forkserver's socket and, in an at-rest run,
the working directory of its filesystems (`encbench-maria-fs-*`, `encbench-pg-fs-*`) stay.
Each of them holds an owner record (OWNER_FILE: the runner's pid and process start time, so a
reused pid is not mistaken for the owner). The next run, and `encbench cleanup`, remove every
such directory whose owner is gone (a filesystems' directory only once the encfs ledger has
emptied it), leave the others alone (a live run, or a directory of another program without
our record), and say what they reclaimed.

Who writes the record: `claim_pymp()` (called by runner.execute first, through lab/reclaim.claim) for the pymp
directory, which it creates ahead of the forkserver; the runner for the scratch directory, as soon as it makes it;
host/encfs.workdir for a filesystems' directory. Each of them is also in the command's own owner record
(util/owners), written before the directory is made: lab/reclaim takes what a killed command left from there first,
and this module's scan finds the rest (a directory of an older version, or one `encbench cleanup --data-dir` names).
Process life (alive, stop by escalating signals) is util/proc's.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psutil

from ..util import owners, proc

OWNER_FILE = owners.OWNER_FILE
PATTERNS = ("scratch-*",)  # in the data directory
TEMP_PATTERNS = ("pymp-*",)  # in the temporary directory
# in the temporary directory: a run's filesystems' working directory (host/encfs.workdir). What is in it is the
# encfs ledger's to tear down (mounts, images, keys): it is removed only once nothing but its owner record is left.
SHELL_PATTERNS = ("encbench-maria-fs-*", "encbench-pg-fs-*")


me = proc.me
write_owner = owners.write_owner_file
read_owner = owners.read_owner_file


def alive(owner: dict) -> bool:
    """The recorded process still runs (same pid and the same start time: not a reused pid)."""
    return proc.owner_alive(owner)


def _glob_dirs(base: Path, patterns) -> list[Path]:
    found = []
    for pattern in patterns:
        try:
            found += [p for p in base.glob(pattern) if p.is_dir() and not p.is_symlink()]
        except OSError:
            continue
    return found


def _candidates(data_dir: Path | None) -> list[Path]:
    temp = Path(tempfile.gettempdir())
    return (_glob_dirs(Path(data_dir), PATTERNS) if data_dir is not None else []) + _glob_dirs(temp, TEMP_PATTERNS) \
        + _glob_dirs(temp, SHELL_PATTERNS)


def _only_the_record(directory: Path) -> bool:
    try:
        return all(p.name == OWNER_FILE for p in directory.iterdir())
    except OSError:
        return False


def reclaim(data_dir: Path | None) -> list[tuple[Path, int]]:
    """Remove what dead runs left (data_dir None: only the temporary directory's); [(directory, owner pid)]."""
    removed = []
    for d in _candidates(data_dir):
        owner = read_owner(d)
        if owner is None or not proc.owner_dead(owner):
            continue
        if any(d.match(p) for p in SHELL_PATTERNS) and not _only_the_record(d):
            continue  # its filesystems first (the ledger); the next reclaim takes the empty directory
        shutil.rmtree(d, ignore_errors=True)
        if not d.exists():
            removed.append((d, owner["pid"]))
    return removed


def reclaim_temp() -> list[tuple[Path, int]]:
    return reclaim(None)


def claim_pymp() -> None:
    """Create multiprocessing's temporary directory now (the forkserver puts its socket there), record us as its
    owner in it and in the command's owner record; multiprocessing removes it, record included, at a normal exit."""
    import multiprocessing.util

    d = Path(multiprocessing.util.get_temp_dir())
    write_owner(d, me())
    owners.add({"kind": "dir", "path": str(d)})


# -- private servers (engines/*/server.py) a killed run left ---------------------------------------
# Each server's private directory holds an owner record from the moment it is made (claim_server_dir).
# `encbench cleanup` stops the server still running from a dead owner's directory (only a process whose
# command line points into that directory: its my.cnf or data directory) and removes the directory.
SERVER_PATTERNS = ("encbench-maria-*", "encbench-pg-*", "encbench-pgdata-*")  # in the temporary directory
SERVER_NOT = SHELL_PATTERNS  # a run's filesystems' working directory (reclaim() takes it once the ledger emptied it)
SERVER_STOP_TIMEOUT_S = 60


def claim_server_dir(directory: Path) -> Path:
    """Mark a private server's directory as this process's (the server modules call it on mkdtemp)."""
    write_owner(Path(directory), me())
    return Path(directory)


def server_dir(prefix: str, parent: Path | None = None) -> Path:
    """A new private server directory: in the command's owner record before it exists, then with its own owner
    file (what `encbench cleanup` finds)."""
    return claim_server_dir(owners.make_dir(prefix, parent))


def release_server_dir(directory: Path) -> None:
    """A server kept on purpose (--keep): no owner record, so neither the next command nor cleanup takes it."""
    (Path(directory) / OWNER_FILE).unlink(missing_ok=True)
    owners.forget(directory)


def _inside(path: str, directory: Path) -> bool:
    if not path.startswith("/"):
        return False
    p = Path(os.path.normpath(path))
    return p == directory or directory in p.parents


def points_into(cmdline: list[str], directory: Path) -> bool:
    """Does a command line name a path inside `directory` (an argument, or an option's value:
    --defaults-file=DIR/my.cnf, -D DIR/data, --datadir=DIR/data)? Only absolute paths count."""
    directory = Path(os.path.normpath(str(directory)))
    for arg in cmdline[1:]:
        candidates = [arg]
        if arg.startswith("-") and "=" in arg:
            candidates.append(arg.split("=", 1)[1])
        if any(_inside(c, directory) for c in candidates):
            return True
    return False


def server_processes(directory: Path) -> list[psutil.Process]:
    """The processes (not this one) whose command line points into `directory`."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmdline = p.info.get("cmdline") or []
        if p.pid != os.getpid() and points_into(cmdline, directory):
            found.append(p)
    return found


def stop_processes(procs: list[psutil.Process], timeout: float = SERVER_STOP_TIMEOUT_S) -> list[psutil.Process]:
    """SIGTERM, wait up to `timeout`, then SIGKILL and wait again; the processes that still run afterwards."""
    return proc.stop(procs, timeout)


def _server_candidates(base: Path | None = None) -> list[Path]:
    found = _glob_dirs(Path(base or tempfile.gettempdir()), SERVER_PATTERNS)
    return sorted({p for p in found if not any(p.match(n) for n in SERVER_NOT)})


def mounts_under(directory: Path) -> list[str]:
    """Mount points inside `directory` (rmtree would descend into them)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = [ln.split()[1].encode().decode("unicode_escape") for ln in lines if len(ln.split()) > 1]
    return [m for m in points if _inside(m, Path(os.path.normpath(str(directory))))]


def reclaim_servers(base: Path | None = None, term_wait: float = SERVER_STOP_TIMEOUT_S, skip=frozenset()) -> list[dict]:
    """Stop and remove the private servers of dead runs: one row per directory taken,
    {"dir", "owner_pid", "stopped": [pids], "removed": bool, "problems": [...]}. A directory without an
    owner record, or whose owner is alive, is never touched."""
    rows = []
    for d in _server_candidates(base):
        if str(d) in skip:
            continue
        owner = read_owner(d)
        if owner is None or not proc.owner_dead(owner):
            continue
        problems = []
        procs = server_processes(d)
        left = stop_processes(procs, term_wait)
        mounts = mounts_under(d)
        if left:
            problems.append("still running: pid " + ", ".join(str(p.pid) for p in left))
        elif mounts:
            problems.append("holds a mount (" + ", ".join(mounts) + "): not removed")
        else:
            shutil.rmtree(d, ignore_errors=True)
            if d.exists():
                problems.append("could not remove the directory")
        rows.append({"dir": str(d), "owner_pid": owner["pid"], "stopped": [p.pid for p in procs],
                     "removed": not d.exists(), "problems": problems})
    return rows
