"""A server restarted where the one it replaces ran: the CPUs of a process that is about to stop, taken before it
stops and given to the new one at its start (lab/placement.py: a worker that restarts a server would otherwise
start it on the worker's own CPU, beside the client it measures; a runner pinned after prepare, on the runner's)."""

from __future__ import annotations

import os
from contextlib import contextmanager


def cpus_of(pid: int | None) -> set[int] | None:
    """The CPUs a process may run on (None: no such process, or no affinity on this system)."""
    if pid is None or not hasattr(os, "sched_getaffinity"):
        return None
    try:
        return os.sched_getaffinity(pid)
    except OSError:
        return None


@contextmanager
def starting_on(cpus: set[int] | None):
    """This process on `cpus` while the block starts a process (which inherits them), then back where it was; a
    no-op when cpus is None or already this process's."""
    mine = cpus_of(0)
    move = bool(cpus and mine and cpus != mine)
    if move:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            move = False
    try:
        yield
    finally:
        if move:
            try:
                os.sched_setaffinity(0, mine)
            except OSError:
                pass
