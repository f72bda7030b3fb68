"""What the watched PostgreSQL backends are waiting on: the wait-event probe's sampler, on its own
connection, read from pg_stat_get_activity."""

from __future__ import annotations

from typing import Callable

from .client import conninfo_of


class WaitSampler:
    """Its own connection; sample() returns the wait events of the watched backends.

    Kept cheap, since it runs beside the measurement: pg_stat_get_activity(pid) for the
    known backends (no join with the catalogs, as the pg_stat_activity view does), as a
    prepared statement, and one warm-up sample when the probe starts (outside the timing).
    """

    BY_PID = "SELECT wait_event_type, wait_event, state FROM pg_stat_get_activity(%s)"
    BY_APP = ("SELECT wait_event_type, wait_event, state FROM pg_stat_get_activity(NULL) "
              "WHERE application_name = %s")

    def __init__(self, conninfo: dict, pids: list[int] | None, application_name: str | None):
        import psycopg

        local = conninfo.get("host") in ("127.0.0.1", "localhost", "::1")
        self.conn = psycopg.connect(**conninfo, sslmode="disable" if local else "prefer", autocommit=True,
                                    application_name="encbench-sampler")
        self.cur = self.conn.cursor()
        self.pids, self.appname = pids, application_name
        self.sample()  # warm-up: plan, catalog caches, first snapshot

    def _rows(self) -> list[tuple]:
        if self.appname:
            return self.cur.execute(self.BY_APP, (self.appname,), prepare=True).fetchall()
        rows = []
        for pid in self.pids or []:
            rows += self.cur.execute(self.BY_PID, (pid,), prepare=True).fetchall()
        return rows

    def sample(self) -> list[str]:
        out = []
        for wtype, event, state in self._rows():
            if state != "active":
                out.append("Client/idle" if state and state.startswith("idle") else f"state/{state}")
            elif wtype:
                out.append(f"{wtype}/{event}")
            else:
                out.append("CPU")
        return out

    def close(self) -> None:
        self.conn.close()


def sampler_factory(setup: dict, *, pids, application_name) -> Callable[[], WaitSampler]:
    info = conninfo_of(setup)
    return lambda: WaitSampler(info, pids, application_name)

