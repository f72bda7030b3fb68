"""`--meter instructions` on the private PostgreSQL server: its backends' instructions, per operation.

The server is started under callgrind (server.start(meter=...)): every backend it forks writes dumps of
its own (`cg.<pid>.<N>`) and a last one when it exits (`cg.<pid>`). Two triggers cut a backend's count:

- `--dump-after=InitPostgres`: a dump as the connection's set-up ends (the fork, the TLS handshake, the
  authentication, InitPostgres): what comes after is the session's work;
- `--dump-before=pg_trigger_depth`: a dump each time the backend starts to run `SELECT pg_trigger_depth()`
  (MARKER_SQL, a function that reads one integer and that nothing else calls): the marker statement.

An operation on a connection the worker holds is counted between two marker statements: the dump at the
second holds the end of the first marker statement (after its function was entered), the operation,
and the start of the second (up to its function). That framing is a constant of the backend: it is
measured once per backend (three markers in a row, the last dump between two of them) and subtracted.
The native storm driver runs the markers itself (storm.py). Connections that come and go inside an
operation (pgbench's, the connect workload's) are counted whole once they have exited: everything after
their set-up (roundtrip: the queries), or everything (connect: the set-up is the operation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..local.meter import ChurnedBackends, MarkedBackend

MARKER_FUNCTION = "pg_trigger_depth"
MARKER_SQL = f"SELECT {MARKER_FUNCTION}()"
SETUP_TRIGGER = "InitPostgres"
SERVER_OPTIONS = (f"--dump-after={SETUP_TRIGGER}", f"--dump-before={MARKER_FUNCTION}")
# under valgrind a JIT compile would be LLVM simulated; a backend's exit writes its last dump
SERVER_SETTINGS = {"jit": "off"}
METHOD = ("the backend under callgrind, counted between two marker statements (SELECT pg_trigger_depth(): a dump as "
          "each starts), their own constant cost (measured on the backend) subtracted")


def marked(directory: str | Path, pid: int, mark: Callable[[], None] | None) -> MarkedBackend:
    """A backend counted between markers: the worker's own connection's (`mark` sends one) or a native driver's."""
    return MarkedBackend(directory, pid, mark, method=METHOD)


def churned(directory: str | Path, backends: Callable[[], list[tuple[int, bool]]]) -> ChurnedBackends:
    """The backends of the connections an operation opened and closed (pgbench's, the connect workload's)."""
    return ChurnedBackends(directory, backends, SETUP_TRIGGER)


