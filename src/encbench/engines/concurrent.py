"""k sessions of one server engine started together (the hash workload, the column workload's
sessions sweep), shared by the engines' sessions: opened one by one (untimed), released at once
by a barrier, closed.

A session class gets the protocol (open_sessions, run_sessions, close_sessions) from
`SessionsTogether` and answers only what differs per engine: how one more connection is
opened and set up, how a query's single value is read, which driver errors mean that a
connection could not be opened, and how such an error reads in one line.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..errors import BadValueError, EngineUnavailableError


class SessionsTogether:
    """open_sessions / run_sessions / close_sessions for a session class, from five hooks."""

    def _new_session(self) -> Any:
        """One more connection of this variant's database, TLS off (the hash workload measures the query)."""
        raise NotImplementedError

    def _session_setup(self, conn: Any, parallel: bool) -> None:
        """Settings of one session; parallel=False: one session is one CPU."""

    @staticmethod
    def _session_value(conn: Any, sql: str) -> Any:
        """sql run in that session: its single value."""
        raise NotImplementedError

    def _connect_errors(self) -> type[BaseException] | tuple[type[BaseException], ...]:
        """The driver's errors that mean a connection could not be opened."""
        raise NotImplementedError

    @staticmethod
    def _error_line(e: BaseException) -> str:
        """Such an error in one line, secrets hidden."""
        raise NotImplementedError

    def open_sessions(self, k: int, *, parallel: bool) -> list:
        conns: list = []
        try:
            for _ in range(k):
                conns.append(self._new_session())
                self._session_setup(conns[-1], parallel)
        except self._connect_errors() as e:
            close_all(conns)
            raise EngineUnavailableError(f"cannot open {k} sessions: {self._error_line(e)}",
                                         hint="use fewer --sessions, or raise max_connections") from None
        return conns

    def run_sessions(self, conns: list, sql: str) -> tuple[list, float]:
        return run_together(conns, lambda conn: self._session_value(conn, sql))

    @staticmethod
    def close_sessions(conns: list) -> None:
        close_all(conns)


class Together(tuple):
    """(results, elapsed) as run_together returns it, unpacked like a pair, plus `spans`: each session's
    (start, end) in seconds from the release, start taken just before its execute (so a caller that passes
    the pair on unchanged, an engine's session, still lets the workload see whether the sessions overlapped)."""

    spans: list[tuple[float, float]]

    def __new__(cls, results: list, elapsed: float, spans: list[tuple[float, float]]):
        self = super().__new__(cls, (results, elapsed))
        self.spans = spans
        return self


def run_together(conns: list, execute: Callable[[Any], Any]) -> Together:
    """execute(conn) in one thread per connection, all released at once by a barrier.

    Returns (results, seconds from the release to the last finish), with each session's span
    (Together.spans). The first error of any session is raised after every thread has ended.
    """
    barrier = threading.Barrier(len(conns) + 1)
    results: list = [None] * len(conns)
    errors: list = []
    starts: list[float] = [0.0] * len(conns)
    ends: list[float] = [0.0] * len(conns)

    def one(i: int, conn) -> None:
        try:
            barrier.wait()
            starts[i] = time.perf_counter()
            results[i] = execute(conn)
        except BaseException as e:  # reported below, in the caller's thread
            errors.append(e)
        finally:
            ends[i] = time.perf_counter()

    threads = [threading.Thread(target=one, args=(i, c), name=f"encbench-session-{i}", daemon=True)
               for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return Together(results, max(ends) - t0, [(max(0.0, s - t0), e - t0) for s, e in zip(starts, ends)])


def close_all(conns: list) -> None:
    for c in conns:
        c.close()


def check_sessions_fit(max_sessions: int, max_connections: int, reserved: int = 5) -> None:
    if max_sessions + reserved > max_connections:
        raise BadValueError(f"sessions={max_sessions} needs more connections than the server allows "
                            f"(max_connections={max_connections}, {reserved} kept for encbench itself)",
                            hint=f"use --sessions up to {max(1, max_connections - reserved)}, or raise max_connections")
