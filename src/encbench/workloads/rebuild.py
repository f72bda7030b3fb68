from __future__ import annotations

from pathlib import Path

from .base import Operation, Workload
from .capabilities import RebuildSession


class Rebuild(Workload):
    name = "rebuild"
    needs = RebuildSession
    description = ("index and table rebuild (SQLite: REINDEX, VACUUM; MariaDB: ALTER TABLE ... FORCE, OPTIMIZE "
                   "TABLE: index maintenance)")
    mutates = True
    rewrites = True

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        return [Operation(name, fn) for name, fn in session.rebuild_operations()]
