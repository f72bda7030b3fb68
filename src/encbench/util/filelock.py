"""One process at a time in a critical section shared by several encbench processes: flock(2) on a file.

The kernel releases the lock when its holder exits, however it ends (SIGKILL included), so a killed
holder never leaves a stale lock behind; the lock file itself stays (it is empty and reused).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Callable, Iterator


@contextlib.contextmanager
def locked(path: Path, *, on_wait: Callable[[], None] = lambda: None, mode: int = 0o644) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created if missing) for the block. When another process holds it,
    `on_wait()` is called once (to say why we wait), then we block until it is released."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock
