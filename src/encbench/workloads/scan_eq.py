from __future__ import annotations

from pathlib import Path

from ..vocab import datagen
from . import repeat
from .base import Operation, Workload
from .capabilities import ScanSession


class ScanEq(Workload):
    name = "scan-eq"
    needs = ScanSession
    reads_only = True
    description = "full scan with equality on an unindexed column: light CPU per page"

    params = (repeat.param(8),)  # warm: ~14 ms (scan-eq) / ~24 ms (scan-like) each at 48 MB

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        sql = f"SELECT * FROM {session.table} WHERE k = ?"
        wanted = datagen.key_of(session.row_count // 2)

        def scan() -> dict:
            return {"rows_returned": len(session.query(sql, (wanted,)))}

        return [Operation("scan", repeat.repeated(repeat.times(session, params), scan))]
