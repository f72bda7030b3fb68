"""engines/concurrent.SessionsTogether: the k-sessions protocol shared by the server engines' sessions."""

from __future__ import annotations

import pytest

from encbench.engines.concurrent import SessionsTogether
from encbench.errors import EngineUnavailableError


class Refused(Exception):
    pass


class Conn:
    def __init__(self, n: int):
        self.n, self.closed, self.settings = n, False, []

    def close(self) -> None:
        self.closed = True


class Sessions(SessionsTogether):
    """Connections numbered from 1; the `refuse`-th one is refused, as a server at max_connections does."""

    def __init__(self, refuse: int | None = None):
        self.refuse, self.opened = refuse, []

    def _new_session(self):
        if len(self.opened) + 1 == self.refuse:
            raise Refused("too many clients already\nsecond line")
        self.opened.append(Conn(len(self.opened) + 1))
        return self.opened[-1]

    def _session_setup(self, conn, parallel: bool) -> None:
        conn.settings.append("parallel" if parallel else "one CPU")

    @staticmethod
    def _session_value(conn, sql: str):
        return f"{sql}@{conn.n}"

    def _connect_errors(self):
        return Refused

    @staticmethod
    def _error_line(e: BaseException) -> str:
        return str(e).splitlines()[0]


def test_open_run_close():
    s = Sessions()
    conns = s.open_sessions(3, parallel=False)
    assert [c.settings for c in conns] == [["one CPU"]] * 3
    results, elapsed = s.run_sessions(conns, "q")
    assert results == ["q@1", "q@2", "q@3"] and elapsed >= 0
    s.close_sessions(conns)
    assert all(c.closed for c in conns)


def test_a_refused_session_closes_those_already_open_and_says_what_to_do():
    s = Sessions(refuse=3)
    with pytest.raises(EngineUnavailableError, match=r"^cannot open 4 sessions: too many clients already$") as e:
        s.open_sessions(4, parallel=True)
    assert "fewer --sessions" in e.value.hint
    assert len(s.opened) == 2 and all(c.closed for c in s.opened)
