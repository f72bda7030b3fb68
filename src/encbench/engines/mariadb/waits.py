"""What the watched MariaDB server threads are doing: the wait-event probe's sampler, on its own
connection, read from performance_schema.

A private server runs with every performance_schema instrument and consumer off (server.BENCH): timing each
mutex, lock and I/O costs the server CPU on every statement. A sampler on such a server (`switch=True`) turns
the wait instruments and the events_waits_current consumer on as it starts and off as it closes, so they are on
only while the waits probe samples an operation. A --dsn server is never changed: its sampler reads what the
server's own settings record.
"""

from __future__ import annotations

from .client import connect_bounded

# the instruments and the consumer the sampler reads, and the statements that turn them on and off
WAITS_ON = ("UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES' WHERE NAME LIKE 'wait/%'",
            "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME = 'events_waits_current'")
WAITS_OFF = ("UPDATE performance_schema.setup_consumers SET ENABLED = 'NO' WHERE NAME = 'events_waits_current'",
             "UPDATE performance_schema.setup_instruments SET ENABLED = 'NO', TIMED = 'NO' WHERE NAME LIKE 'wait/%'")


def waits_state(cur) -> dict[str, int]:
    """{"consumer": 1 when events_waits_current is on, "instruments": how many wait/ instruments are enabled}."""
    cur.execute("SELECT ENABLED FROM performance_schema.setup_consumers WHERE NAME = 'events_waits_current'")
    row = cur.fetchone()
    cur.execute("SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/%' "
                "AND ENABLED = 'YES'")
    return {"consumer": int(bool(row and row[0] == "YES")), "instruments": int(cur.fetchone()[0])}


class WaitSampler:
    """Its own connection; sample() returns what the watched server threads are doing now.

    performance_schema.events_waits_current: an event still in progress (END_EVENT_ID IS
    NULL) is a wait; a connection in command Sleep is idle (waiting for its client);
    anything else is on CPU (or runnable).
    """

    SQL = ("SELECT t.THREAD_ID, t.PROCESSLIST_COMMAND, w.EVENT_NAME, w.END_EVENT_ID "
           "FROM performance_schema.threads t LEFT JOIN performance_schema.events_waits_current w "
           "ON w.THREAD_ID = t.THREAD_ID WHERE ")

    def __init__(self, params: dict, thread_ids: list[int] | None, others_of: tuple[str, int] | None,
                 switch: bool = False):
        """thread_ids: those threads; others_of=(user, connection id): every other connection of that user;
        switch: turn the wait instruments and consumer on now and off at close (a private server's)."""
        self.conn = connect_bounded(params, autocommit=True, ssl_disabled=True)
        self.cur = self.conn.cursor()
        self.switch = switch
        if switch:
            self._run(WAITS_ON)
        if thread_ids is not None:
            self.sql = self.SQL + "t.THREAD_ID IN (" + ",".join(str(int(t)) for t in thread_ids or [0]) + ")"
            self.args: tuple = ()
        else:
            self.sql = self.SQL + ("t.PROCESSLIST_USER = %s AND t.PROCESSLIST_ID NOT IN (%s, CONNECTION_ID()) "
                                   "AND t.TYPE = 'FOREGROUND'")
            self.args = others_of
        try:
            self.sample()
        except BaseException:
            self.close()
            raise

    def _run(self, statements: tuple[str, ...]) -> None:
        for sql in statements:
            self.cur.execute(sql)

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
        try:
            if self.switch:
                self._run(WAITS_OFF)
        finally:
            self.conn.close()
