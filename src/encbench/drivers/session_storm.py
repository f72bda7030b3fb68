"""What the native storm drivers share as a workload's before/run/after (pg_storm, maria_storm).

The driver's own connection is the measured one: `before` starts it, checks its TLS state
against the variant (the session's check_client_tls: a mismatch fails the run, the driver
stopped first) and points the session's probes at it (`target`, engine-specific); `run`
is the timed storm; `after` stops the driver and says which client drove the load.
"""

from __future__ import annotations

import os
import subprocess

from ..errors import CheckFailedError


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
