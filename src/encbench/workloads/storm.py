from __future__ import annotations

from pathlib import Path

from ..drivers.client_share import share_extra
from .base import Operation, Param, Workload
from .capabilities import StormSession


class Storm(Workload):
    name = "storm"
    needs = StormSession
    description = ("server-side loop sending one small message per iteration (a 'TCP storm'; PostgreSQL: RAISE "
                   "NOTICE, MariaDB: a stored procedure's one-row SELECT), and the same loop sending nothing; "
                   "PostgreSQL's is driven by a native C client (libpq) where one can be built, so the server, not "
                   "the client, sets the pace; the client's CPU share is recorded")
    params = (Param("messages", "messages (loop iterations) per storm", 200_000, 20_000),
              Param("native_client", "1: drive the storm with a native C client where the engine has one "
                    "(PostgreSQL: libpq, built once with cc); 0: the Python client", 1, 1, minimum=0, maximum=1))

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        n = params["messages"]
        native = session.native_storm if params.get("native_client", 1) else None
        return [self._op("messages", session, native, n, True), self._op("loop-only", session, native, n, False)]

    @staticmethod
    def _op(name: str, session, native, n: int, send: bool) -> Operation:
        driver = native(n, send) if native else None
        if driver is None:  # the Python client, in the worker's own thread
            return Operation(name, lambda: dict(session.storm(n, send=send), messages=n, client="python"),
                             check=share_extra)
        return Operation(name, lambda: dict(driver.run(), messages=n), driver.before, driver.after,
                         check=share_extra)
