"""What the storms' native client drivers share (the PostgreSQL libpq driver, the `mariadb` client): the driver's
TCP socket duplicated into the worker (so the net probe sees its bytes), and what a failed driver said, read as
the server gone or a failed check."""

from __future__ import annotations

import ctypes
import os
import subprocess

from ...errors import CheckFailedError, EngineUnavailableError
from ...util.proc import kill_and_reap
from ...util.redact import redact

_SYS_PIDFD_OPEN, _SYS_PIDFD_GETFD = 434, 438  # the same on every Linux architecture


def steal_socket(pid: int) -> int | None:
    """A duplicate, in this process, of the TCP socket of process `pid` (pidfd_getfd, Linux 5.6+); None if not."""
    try:
        fds = [(int(fd), os.readlink(f"/proc/{pid}/fd/{fd}")) for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return None
    sockets = [fd for fd, link in fds if link.startswith("socket:")]
    if len(sockets) != 1:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = libc.syscall(_SYS_PIDFD_OPEN, pid, 0)
    if pidfd < 0:
        return None
    try:
        fd = libc.syscall(_SYS_PIDFD_GETFD, pidfd, sockets[0], 0)
    finally:
        os.close(pidfd)
    return fd if fd >= 0 else None


# what a client prints when the server is not there any more (runner.SERVER_GONE, plus the mariadb client's words)
GONE_SIGNS = ("server closed the connection unexpectedly", "terminating connection due to administrator command",
              "Lost connection to", "server has gone away", "Connection refused", "connection is lost",
              "Can't connect to")


def stderr_of(proc: subprocess.Popen, finish) -> str:
    """What a failed driver said: it is given a moment to exit (and finish writing) before it is killed."""
    kill_and_reap(proc, 2)
    err = proc.stderr.read() if proc.stderr else ""
    finish()
    return err.decode(errors="replace") if isinstance(err, bytes) else err


def driver_failure(what: str, err: str) -> Exception:
    """The server went away (EngineUnavailableError, as the Python client says it), else a failed check."""
    lines = [x.strip() for x in err.strip().splitlines() if x.strip()] or ["no output"]
    first = redact(lines[0])
    if any(sign in err for sign in GONE_SIGNS):
        return EngineUnavailableError(f"the server went away: {first}",
                                      hint="it was reachable when the run started: was it stopped, restarted or killed?")
    return CheckFailedError(f"{what}: {first}")
