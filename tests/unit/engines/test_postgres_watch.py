"""The roundtrip's pgbench watch takes pgbench's client connections, never its own first one (which runs no query)."""

from __future__ import annotations

from encbench.engines.postgres.session import PgSession


class _Rows:
    def __init__(self, rows):
        self._rows = rows

    def fetchall(self):
        return self._rows


class _Conn:
    """pg_stat_ssl JOIN pg_stat_activity as the server answers it, look after look."""

    def __init__(self, looks):
        self.looks = list(looks)

    def execute(self, sql, params=None):
        return _Rows(self.looks.pop(0) if len(self.looks) > 1 else self.looks[0])


class _Proc:
    def poll(self):
        return None


def _session(looks) -> PgSession:
    s = object.__new__(PgSession)
    s.conn, s.schema, s.tls = _Conn(looks), "encbench", "off"
    return s


def test_the_first_query_less_connection_is_not_taken_for_the_client(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    first = (101, False, None, None, None, "", 40001)  # pgbench's own connection: no query, closes at once
    client = (102, False, None, None, None, "SELECT v FROM encbench.rt WHERE id = $1", 40002)
    states = _session([[first], [client]])._watch_tls("encbench-rt", 1, _Proc())
    assert [s["port"] for s in states] == [40002], states  # the socket counter follows the client's port
