"""The one contract of a private server encbench starts on loopback (PostgreSQL, MariaDB), and what both share.

A private server is made in a directory of its own (util/leftovers.server_dir: owned before it exists, so a killed
run's server is reclaimed), runs as an unprivileged user when we are root, is recorded as an owned process when it
starts (util/owners: its pid and start time), writes one log, and is stopped and deleted by `stop()` on exit,
error, Ctrl-C and SIGTERM (a no-op with --keep). `PrivateServer` says what each engine's server offers;
`ServerLog` gives both the same answers about their log and death; the functions below are the steps both
start() functions take alike.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator, Protocol, runtime_checkable

from ...errors import EngineUnavailableError
from ...host import valgrind
from ...util import owners, proc
from .server import keep_log, log_tail


@runtime_checkable
class PrivateServer(Protocol):
    """What every private server offers its engine, the runner and a worker process."""

    ENGINE: str  # its name in messages and owner records: "PostgreSQL", "MariaDB"
    keep: bool  # --keep: stop() leaves it running, its directory in place

    @property
    def root(self) -> Path: ...  # its own directory (socket, log, keys, certificate; data unless on a mount)

    @property
    def port(self) -> int: ...

    @property
    def logfile(self) -> Path: ...

    def pid(self) -> int | None: ...  # the server process that runs now (by its pid file: a worker may restart it)

    def alive(self) -> bool: ...

    def worker_handle(self) -> dict: ...  # plain data: what a worker needs to reach and restart it

    def how_to_connect(self) -> str: ...

    def log_tail(self, lines: int = ...) -> list[str]: ...

    def death_report(self, keep_dir: Path) -> dict | None: ...

    def stop(self) -> None: ...  # stopped (escalating signals, util/proc) and deleted; idempotent


class ServerLog:
    """The shared half of the contract: alive, died, the log's tail and the death report, from `pid()`,
    `logfile`, `port` and `keep` (the class's own)."""

    ENGINE = "?"
    LOG_TAG = "server"  # the kept log's name: encbench-<tag>-<port>-server.log
    CRASH_MARKS: tuple[str, ...] = ()  # a log line that says a server process crashed (while the server runs on)

    def alive(self) -> bool:
        return self.pid() is not None

    def died(self) -> bool:
        """Did this server die under us: no server process, or a crash its log tells of?"""
        if not self.alive():
            return True
        return bool(self.CRASH_MARKS) and any(mark in line for line in log_tail(self.logfile, 10_000)
                                               for mark in self.CRASH_MARKS)

    def log_tail(self, lines: int = 50) -> list[str]:
        return log_tail(self.logfile, lines)

    def death_report(self, keep_dir: Path) -> dict | None:
        """When the server died: its log kept (a redacted copy in keep_dir; a --keep server's own log stays) and
        its last lines, redacted: {"server_log": path, "server_log_tail": [...]}; None while it runs well."""
        if not self.died():
            return None
        tail = self.log_tail()
        kept = self.logfile if self.keep else keep_log(self.logfile, keep_dir,
                                                       f"encbench-{self.LOG_TAG}-{self.port}-server.log")
        return {"server_log": str(kept) if kept else f"{self.logfile} (could not be kept)", "server_log_tail": tail}


def running_pid(pidfile: Path) -> int | None:
    """The server process its pid file names (the first line), while it runs: a zombie, which holds no port or
    file, counts as gone (its parent may not be us); None when there is no such file or process."""
    try:
        pid = int(Path(pidfile).read_text().split("\n", 1)[0].strip())
    except (OSError, ValueError):
        return None
    return pid if proc.running(pid) else None


def record_spawned(pid: int, engine: str, root, metered: bool) -> None:
    """The owner record of a server process just started (util/owners): reclaimed after a kill."""
    owners.spawned(pid, f"{engine} server" + (" under valgrind" if metered else ""), root)


def own_dir(path: Path, user: tuple[str, int, int] | None, *, make: bool = False) -> Path:
    """A directory of the server's, 0700, owned by the user it runs as (when we are root)."""
    if make:
        path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    if user:
        os.chown(path, user[1], user[2])
    return path


def meter_wrapper(meter_dir: Path, user, meter: dict, options: tuple[str, ...]) -> list[str]:
    """--meter instructions: the server's directory for callgrind's dumps made (the server's user's), and
    valgrind's command line to put before the server's."""
    own_dir(meter_dir, user, make=True)
    return valgrind.callgrind_argv(str(meter_dir / "cg.%p"), cache_sim=bool(meter.get("cache_sim")), options=options)


def start_failed(engine: str, tag: str, logfile: Path, port: int, last: str, meter: dict | None,
                 hint: str | None = None) -> EngineUnavailableError:
    """The error of a server that did not start: under valgrind its log (valgrind's words too) is kept in the
    meter's keep_dir, whatever --keep says (the directory goes with the server)."""
    if meter:
        kept = keep_log(logfile, Path(meter.get("keep_dir") or tempfile.gettempdir()),
                        f"encbench-{tag}-valgrind-{port}-server.log")
        return EngineUnavailableError(f"the private {engine} server did not start under valgrind: {last}",
                                      hint=f"its log kept: {kept}" if kept else "its log could not be kept")
    return EngineUnavailableError(f"the private {engine} server did not start: {last}", hint=hint)


@contextlib.contextmanager
def stopped_on_error(server) -> Iterator[None]:
    """A server being made: stopped (and deleted) at interpreter exit at the latest, at once on any error."""
    import atexit

    atexit.register(server.stop)
    try:
        yield
    except BaseException:
        server.stop()
        raise
