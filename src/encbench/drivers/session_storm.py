"""What the native storm drivers share as a workload's before/run/after (pg_storm, maria_storm).

The driver's own connection is the measured one: `before` starts it, checks its TLS state
against the variant (the session's check_client_tls: a mismatch fails the run, the driver
stopped first) and points the session's probes at it (`target`, engine-specific); `run`
is the timed storm; `after` stops the driver and says which client drove the load.
"""

from __future__ import annotations

import ctypes
import os
import subprocess

from ..errors import CheckFailedError, EngineUnavailableError
from ..util.redact import redact


class DriverProcess:
    """A native client process driving the load (`proc`) and its socket, duplicated for the net probe."""

    proc: subprocess.Popen | None = None
    socket_fd: int | None = None

    def finish(self) -> None:
        """Close the connection, reap the client (idempotent)."""
        if self.socket_fd is not None:
            os.close(self.socket_fd)
            self.socket_fd = None
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            proc.stdout.close()
            proc.stderr.close()


class SessionStorm:
    UNIT = "messages"  # what reaches the client, for the failure message
    CLIENT = "native"  # the client that drove the load, for the run's extra values

    def __init__(self, session, driver, messages: int, send: bool):
        self.session, self.driver, self.messages, self.send = session, driver, int(messages), send

    def target(self, state: dict):
        """The probes' target for the driver's connection (its server process or backend, socket, pid)."""
        raise NotImplementedError

    def before(self) -> None:
        state = self.driver.start()
        try:
            self.session.check_client_tls(state)
        except CheckFailedError:
            self.driver.finish()
            raise
        self.session.use_target(self.target(state))

    def run(self) -> dict:
        received = self.driver.run()
        if self.send and received != self.messages:
            raise CheckFailedError(f"storm: {received} of {self.messages} {self.UNIT} reached the client")
        return {"messages_received": received}

    def after(self) -> dict:
        state = self.driver.state
        self.session.use_target(None)
        self.driver.finish()
        tls = f"{state['version']} {state['cipher']}" if state.get("ssl") else "no TLS"
        return {"client": self.CLIENT, "tls_checked_connections": 1, "client_tls": tls}


# -- what the native storm clients share (engines/postgres/storm.py, engines/mariadb/storm.py) ----------------

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
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        proc.kill()
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
