from __future__ import annotations

from pathlib import Path

from .. import datagen
from .base import Operation, Workload


class ScanLike(Workload):
    name = "scan-like"
    reads_only = True
    description = "full scan with LIKE '%needle%' over a text column: heavy CPU per page (seed 003, query 1)"

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        sql = f"SELECT * FROM {session.table} WHERE body LIKE ?"

        def scan() -> dict:
            return {"rows_returned": len(session.query(sql, (f"%{datagen.NEEDLE}%",)))}

        return [Operation("scan", scan)]
