from __future__ import annotations

from pathlib import Path

from .base import Operation, Param, Workload


class Storm(Workload):
    name = "storm"
    description = ("server-side loop sending one small message per iteration (a 'TCP storm'; PostgreSQL: RAISE "
                   "NOTICE, MariaDB: a stored procedure's one-row SELECT), and the same loop sending nothing (seed 000)")
    params = (Param("messages", "messages (loop iterations) per storm", 200_000, 20_000),)

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        n = params["messages"]
        return [
            Operation("messages", lambda: dict(session.storm(n, send=True), messages=n)),
            Operation("loop-only", lambda: dict(session.storm(n, send=False), messages=n)),
        ]
