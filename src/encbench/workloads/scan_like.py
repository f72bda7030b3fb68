from __future__ import annotations

from pathlib import Path

from ..vocab import datagen
from . import repeat
from .base import Operation, Workload
from .capabilities import ScanSession


class ScanLike(Workload):
    name = "scan-like"
    needs = ScanSession
    reads_only = True
    description = "full scan with LIKE '%needle%' over a text column: heavy CPU per page"

    params = (repeat.param(4),)  # warm: ~14 ms (scan-eq) / ~24 ms (scan-like) each at 48 MB

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        sql = f"SELECT * FROM {session.table} WHERE body LIKE ?"

        def scan() -> dict:
            return {"rows_returned": len(session.query(sql, (f"%{datagen.NEEDLE}%",)))}

        return [Operation("scan", repeat.repeated(repeat.times(session, params), scan))]
