from __future__ import annotations

import time
import uuid
from pathlib import Path

from ..drivers.client_share import share_extra
from .base import Operation, Param, Workload
from .capabilities import ConnectSession


class Connect(Workload):
    name = "connect"
    needs = ConnectSession
    description = ("a new connection per operation (TCP + TLS handshake + authentication + the TLS check "
                   "query + close): connections/s")
    # a connection is the unit a DBA decides in (what TLS adds to each new session): the server's CPU per connection
    # first, as the summary, the table's lead column and the gate state it; then the client's; then elapsed
    verdict_metrics = ("cpu_us_per_connection", "client_cpu_us_per_connection", "wall_s")
    params = (Param("connections", "connections opened and closed, one after the other", 300, 50),)

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        n = params["connections"]
        appname = f"encbench-connect-{uuid.uuid4().hex[:8]}"

        def before() -> None:
            session.use_target(session.churn_target(appname))

        def run() -> dict:
            t0 = time.perf_counter()
            pids = session.connect_cycles(n, appname)
            elapsed = time.perf_counter() - t0
            session.settle(pids[-1:])  # its CPU reaches the postmaster's account once reaped
            return {"connections": n, "connections_per_s": n / elapsed, "ms_per_connect": 1e3 * elapsed / n}

        return [Operation("connect", run, before, lambda: session.use_target(None), check=share_extra)]
