from __future__ import annotations

from pathlib import Path

from . import repeat
from .base import Operation, Workload, spread_ranges
from .capabilities import DmlSession

# Statement counts follow seed 001: 10 SELECT, 5 INSERT, 8 UPDATE, 5 DELETE.
SELECTS, INSERTS, UPDATES, DELETES = 10, 5, 8, 5


class Dml(Workload):
    name = "dml"
    needs = DmlSession
    description = "SELECT, INSERT, UPDATE, DELETE over id ranges, each type timed apart, one commit per statement"
    mutates = True
    params = (repeat.param(12),)  # the warm select: ~8 ms at 48 MB; only the select repeats (it changes nothing)

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        t, n = session.table, session.row_count

        def statements(sql: str, params: list[tuple]):
            def run() -> dict:
                affected = 0
                for p in params:
                    session.begin()
                    affected += max(0, session.execute(sql, p))
                    session.commit()
                return {"rows_affected": affected}

            return run

        def select() -> dict:
            rows = 0
            for lo, hi in spread_ranges(n, SELECTS, 0.02):
                rows += session.query(f"SELECT count(*), sum(length(body)) FROM {t} WHERE id BETWEEN ? AND ?",
                                      (lo, hi))[0][0]
            return {"rows_returned": rows}

        offset = 1 << 31
        return [
            Operation("select", repeat.repeated(repeat.times(session, params), select)),
            Operation("insert", statements(
                f"INSERT INTO {t} (k, grp, name, body) SELECT k + ?, grp, name, body FROM {t} WHERE id BETWEEN ? AND ?",
                [(offset * (i + 1), lo, hi) for i, (lo, hi) in enumerate(spread_ranges(n, INSERTS, 0.01))])),
            Operation("update", statements(
                f"UPDATE {t} SET name = upper(name), grp = (grp + 1) % 1000 WHERE id BETWEEN ? AND ?",
                spread_ranges(n, UPDATES, 0.01))),
            Operation("delete", statements(
                f"DELETE FROM {t} WHERE id BETWEEN ? AND ?",
                spread_ranges(n, DELETES, 0.01))),
        ]
