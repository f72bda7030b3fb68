"""`--meter instructions` on the private MariaDB server: the instructions its statements execute, per operation.

The server runs under callgrind (server.start(meter=...)), one process with a thread per connection, counted
only inside `do_command` (`--collect-atstart=no --toggle-collect=do_command*`): reading a client's command
(TLS decryption included), running it and sending its result (TLS encryption included), on every
connection's thread; not the connection's set-up (the handshake and the login are outside it) nor the
background threads (purge, page cleaner, timers), whose work has no place in one operation. A dump is
written each time a thread starts to run `SELECT IS_USED_LOCK('encbench')` (MARKER_SQL; `--dump-before`
on Item_func_is_used_lock::val_int, which nothing else calls): the worker's own connection runs one
before and one after the operation, and the dump at the second holds every thread's statements in between
(the storm's client, the roundtrip's drivers), plus the markers' own constant cost, measured once per
connection (three markers in a row) and subtracted. Measured here: 1 query counted 35,972,121 twice, 3
queries 106,858,715 and 106,858,719 (docs/FIELD-NOTES, third round).

Under valgrind MariaDB needs innodb_use_native_aio=0 (valgrind 3.19 hangs on io_uring) and an
innodb_buffer_pool_size_max (it maps the largest pool it could grow to: 8 TB by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..local.meter import MarkedBackend

MARKER_SQL = "SELECT IS_USED_LOCK('encbench')"
SERVER_OPTIONS = ("--collect-atstart=no", "--toggle-collect=do_command*",
                  "--dump-before=Item_func_is_used_lock::val_int*")
CONNECTIONS = ("storm", "roundtrip", "bulk")  # what the count covers: statements, not connection set-up


def settings(buffer_pool_mb: int) -> dict[str, str]:
    return {"innodb_use_native_aio": "0", "innodb_buffer_pool_size_max": f"{int(buffer_pool_mb)}M"}


METHOD = ("the server under callgrind counting only do_command (every connection's statements, not its set-up nor the "
          "background threads), between two marker statements (SELECT IS_USED_LOCK('encbench')) of the worker's "
          "connection, their own constant cost (measured on that connection) subtracted")


def marked(directory: str | Path, pid: int, mark: Callable[[], None], connection: int) -> MarkedBackend:
    """The server's statement threads between two markers of the worker's connection (one framing per connection)."""
    return MarkedBackend(directory, pid, mark, key=connection, method=METHOD)
