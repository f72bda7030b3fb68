"""What the watched MariaDB server threads are doing: the wait-event probe's sampler, on its own
connection, read from performance_schema."""

from __future__ import annotations

from .client import connect_bounded


class WaitSampler:
    """Its own connection; sample() returns what the watched server threads are doing now.

    performance_schema.events_waits_current: an event still in progress (END_EVENT_ID IS
    NULL) is a wait; a connection in command Sleep is idle (waiting for its client);
    anything else is on CPU (or runnable).
    """

    SQL = ("SELECT t.THREAD_ID, t.PROCESSLIST_COMMAND, w.EVENT_NAME, w.END_EVENT_ID "
           "FROM performance_schema.threads t LEFT JOIN performance_schema.events_waits_current w "
           "ON w.THREAD_ID = t.THREAD_ID WHERE ")

    def __init__(self, params: dict, thread_ids: list[int] | None, others_of: tuple[str, int] | None):
        """thread_ids: those threads; others_of=(user, connection id): every other connection of that user."""
        self.conn = connect_bounded(params, autocommit=True, ssl_disabled=True)
        self.cur = self.conn.cursor()
        if thread_ids is not None:
            self.sql = self.SQL + "t.THREAD_ID IN (" + ",".join(str(int(t)) for t in thread_ids or [0]) + ")"
            self.args: tuple = ()
        else:
            self.sql = self.SQL + ("t.PROCESSLIST_USER = %s AND t.PROCESSLIST_ID NOT IN (%s, CONNECTION_ID()) "
                                   "AND t.TYPE = 'FOREGROUND'")
            self.args = others_of
        self.sample()

    def sample(self) -> list[str]:
        self.cur.execute(self.sql, self.args)
        by_thread: dict[int, str] = {}
        for tid, command, event, end in self.cur.fetchall():
            if command == "Sleep":
                by_thread[tid] = "Client/idle"
            elif event and end is None:
                by_thread[tid] = event.removeprefix("wait/").replace("/", ".", 1)
            else:
                by_thread.setdefault(tid, "CPU")
        return list(by_thread.values())

    def close(self) -> None:
        self.conn.close()
