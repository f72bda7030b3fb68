"""The bytes a process tree made the kernel read from storage and write to it: /proc/PID/io (issue 31: the rate a
filesystem that encrypts in the kernel, fscrypt, works on).

`read_bytes` counts what the process caused to be read from the block layer (page cache misses, readahead
included); `write_bytes` what it dirtied in the page cache (written back later), less `cancelled_write_bytes`
(dirty pages truncated before writeback). A parent's file includes the children it has reaped (the kernel adds a
reaped child's counts to its parent's), so a server's postmaster plus its live children count every backend that
came and went: a child reaped between two readings moves from the live children's sum to the parent's.

Reading another user's /proc/PID/io needs the right to trace it (root, or the same user): `tree_io` then says why
in one line instead of a figure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
FIELDS = ("read_bytes", "write_bytes", "cancelled_write_bytes")


@dataclass(frozen=True)
class TreeIo:
    """Bytes so far summed over a process tree, or why they could not be read (read_bytes None)."""

    read_bytes: int | None
    written_bytes: int | None
    pids: int = 0
    why: str | None = None


def read_io(pid: int, proc: Path = PROC) -> dict[str, int]:
    """/proc/PID/io's byte fields; OSError (gone, or not permitted) and ValueError (not that file's shape) raised."""
    out = {}
    for line in (proc / str(pid) / "io").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() in FIELDS:
            out[key.strip()] = int(value)
    if "read_bytes" not in out or "write_bytes" not in out:
        raise ValueError(f"{proc / str(pid) / 'io'} has no read_bytes/write_bytes")
    return out


def children(pid: int, proc: Path = PROC) -> list[int]:
    """The live children of a process (/proc/PID/task/*/children)."""
    out: list[int] = []
    for task in sorted((proc / str(pid) / "task").glob("*")):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return out


def tree_io(root: int, proc: Path = PROC, skip: tuple[int, ...] = ()) -> TreeIo:
    """root's /proc/PID/io (its reaped children included) plus each live child's (not `skip`'s: e.g. the reading
    session's own backend). A child gone between the listing and its read is left out (its counts are then its
    parent's). The root unreadable: no figure, with why."""
    try:
        first = read_io(root, proc)
    except PermissionError:
        return TreeIo(None, None, why=f"{proc}/{root}/io is not readable by this user (reading another user's "
                                      "process's I/O counters needs root or that user)")
    except (OSError, ValueError) as e:
        return TreeIo(None, None, why=f"{proc}/{root}/io could not be read ({getattr(e, 'strerror', None) or e})")
    total = [first]
    for kid in children(root, proc):
        if kid in skip:
            continue
        try:
            total.append(read_io(kid, proc))
        except (OSError, ValueError):
            continue
    read = sum(t["read_bytes"] for t in total)
    written = sum(t["write_bytes"] - t.get("cancelled_write_bytes", 0) for t in total)
    return TreeIo(read, written, len(total))


def cwd_fstype(pid: int, proc: Path = PROC) -> str | None:
    """The type of the filesystem holding a process's working directory (a PostgreSQL postmaster's: its data
    directory), from /proc/PID/mountinfo's entry of that device; None where it cannot be read."""
    try:
        dev = (proc / str(pid) / "cwd").stat().st_dev
        lines = (proc / str(pid) / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    want = f"{os.major(dev)}:{os.minor(dev)}"
    for line in lines:
        head, _, tail = line.partition(" - ")
        fields = head.split()
        if len(fields) > 2 and fields[2] == want and tail:
            return tail.split()[0]
    return None
