"""A restore is compare-and-swap (issue 28, item 1): encbench puts a value back only while the server still holds
the value it set; what was changed since (a DBA's) is kept, said in one line, with its journal, until
`encbench cleanup --forget-journal`. And a CREATE DATABASE that fails leaves no journal (item 6, the last case).

The server side is faked here (postgresql.auto.conf as a dict, MariaDB's catalog as a few rows); the real
servers are in tests/integration/test_dsn_restore_cas.py."""

from __future__ import annotations

import subprocess

import pytest

from encbench.cli import app
from encbench.engines.local import restore_journal as rj
from encbench.engines.mariadb import state as maria_state
from encbench.engines.postgres import state as pg_state

SYSID = {"system_identifier": "7712358355634069753", "port": 5432}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return rj.directory()


@pytest.fixture
def gone_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _dead(engine: str, pid: int, **data) -> rj.Journal:
    j = rj.new(engine, {"host": "127.0.0.1", "port": 1}, SYSID)
    j.path = j.path.with_name(j.path.name.replace(f"-{j.data['owner']['pid']}.", f"-{pid}."))
    j.data["owner"] = dict(j.data["owner"], pid=pid, start="1")
    j.data.update(data)
    j.save()
    return j


# -- the decision ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("now, found, written, verdict", [
    ("secp384r1", None, [None, "secp384r1"], rj.RESTORE),  # still what encbench set: put back
    ("secp521r1", None, ["secp384r1"], rj.CHANGED),  # a DBA's since: kept
    (None, None, ["secp384r1"], rj.AS_FOUND),  # already as found
    ("secp521r1", None, [], rj.AS_FOUND),  # encbench never set it: not its to undo
    ("secp384r1", None, None, rj.UNKNOWN),  # an older journal: what it set is not written down
    (None, None, None, rj.AS_FOUND),  # an older journal, and the server as found
    ("prime256v1", "prime256v1", None, rj.AS_FOUND),
])
def test_compare_and_swap(now, found, written, verdict):
    assert rj.compare_and_swap(now, found, written) == verdict


def test_the_kept_line_names_the_setting_what_was_set_and_what_is_found():
    line = rj.kept_text([rj.kept_value("ssl_ecdh_curve", ["secp384r1"], "secp521r1", found=None)],
                        rj.Path("/j.json"))
    assert line == ("ssl_ecdh_curve is 'secp521r1' now (encbench set 'secp384r1'): left as it is; /j.json keeps it "
                    "until you drop it: encbench cleanup --forget-journal /j.json")
    assert "does not say what it set" in rj.kept_value("ssl_ciphers", None, "HIGH", found=None)
    assert "(not set) now" in rj.kept_value("ssl_ciphers", ["HIGH"], None, found="MEDIUM")
    # killed while the change was under way: the value it found is not one encbench "set"
    assert "(encbench set 'secp384r1')" in rj.kept_value("ssl_ecdh_curve", [None, "secp384r1"], "X25519", found=None)


# -- PostgreSQL: postgresql.auto.conf as a dict ---------------------------------------------------------------

@pytest.fixture
def auto_conf(monkeypatch):
    """postgresql.auto.conf's lines; ALTER SYSTEM (None: RESET) writes them; the reload is taken at once."""
    lines: dict[str, str] = {}

    def alter(conn, changes, on_each=lambda n: None):
        for name, value in changes.items():
            if value is None:
                lines.pop(name, None)
            else:
                lines[name] = value

    monkeypatch.setattr(pg_state, "auto_conf_entries", lambda conn, names: {n: lines[n] for n in names if n in lines})
    monkeypatch.setattr(pg_state, "alter_system", alter)
    monkeypatch.setattr(pg_state, "wait_running", lambda connect, wanted: None)
    return lines


def _setting(written, value=None):
    entry = {"in_auto_conf": value is not None, "value": value, "effective": value or "default"}
    if written is not None:  # None: a journal of an older encbench (format 2) does not say what was set
        entry["set"] = written
    return entry


def _connect():
    class Conn:
        def close(self):
            pass
    return Conn()


def test_pg_restores_what_it_set_and_keeps_what_a_dba_changed(auto_conf):
    auto_conf.update(ssl_ecdh_curve="secp521r1", ssl_ciphers="ECDHE-RSA-AES256-SHA384", ssl_max_protocol_version="TLSv1.2")
    data = {"changed": True, "settings": {
        "ssl_ecdh_curve": _setting(["secp384r1"]),  # encbench set secp384r1, the DBA secp521r1 since
        "ssl_ciphers": _setting(["HIGH:MEDIUM", "ECDHE-RSA-AES256-SHA384"], "HIGH:MEDIUM"),  # still encbench's
        "ssl_max_protocol_version": _setting(None),  # an older journal: not as found, what was set unknown
        "ssl_min_protocol_version": _setting(["TLSv1.2"]),  # already as found (no line)
    }}
    done, kept = pg_state.restore(_connect, data)
    assert auto_conf == {"ssl_ecdh_curve": "secp521r1", "ssl_ciphers": "HIGH:MEDIUM",
                         "ssl_max_protocol_version": "TLSv1.2"}
    assert done == ["ssl_ciphers restored"]
    assert kept == ["ssl_ecdh_curve is 'secp521r1' now (encbench set 'secp384r1'): left as it is",
                    "ssl_max_protocol_version is 'TLSv1.2' now (an older encbench's journal does not say what it "
                    "set): left as it is"]
    assert set(data["settings"]) == {"ssl_ecdh_curve", "ssl_max_protocol_version"}  # the journal keeps only those


def test_pg_an_older_journal_is_restored_when_the_server_is_as_it_found_it(auto_conf):
    data = {"changed": True, "settings": {"ssl_ciphers": _setting(None)}}
    assert pg_state.restore(_connect, data) == (["settings reloaded"], [])
    assert data["settings"] == {}


def test_pg_a_killed_run_mid_change_is_restored_whichever_value_the_server_holds(auto_conf):
    """Killed between the journal (both values written down) and the ALTER SYSTEM: either is encbench's."""
    for now in ("secp384r1", "X25519"):
        auto_conf["ssl_ecdh_curve"] = now
        data = {"changed": True, "settings": {"ssl_ecdh_curve": _setting(["secp384r1", "X25519"])}}
        assert pg_state.restore(_connect, data) == (["ssl_ecdh_curve reset"], [])
        assert auto_conf == {}


# -- MariaDB: a database kept when it holds what encbench does not make; a failed CREATE journals nothing -----

class FakeCursor:
    """information_schema.SCHEMATA and the objects of each database; CREATE/DROP DATABASE."""

    def __init__(self, databases: dict[str, list[str]], create_fails: bool = False):
        self.databases, self.create_fails, self.rows, self.executed = databases, create_fails, [], []

    def execute(self, sql, args=None):
        self.executed.append(sql)
        if sql.startswith("CREATE DATABASE"):
            if self.create_fails:
                raise maria_state.pymysql().err.OperationalError(1044, "Access denied for user 'u'@'%' to database")
            self.databases[sql.split()[-1]] = []
        elif sql.startswith("DROP DATABASE"):
            self.databases.pop(sql.split()[-1].strip("`"), None)
        elif "SCHEMATA" in sql:
            self.rows = [(1,)] if args[0] in self.databases else []
        elif "information_schema.TABLES" in sql:
            self.rows = [(name,) for name in self.databases.get(args[0], [])]

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def fetchall(self):
        return self.rows


class FakeConn:
    def __init__(self, cur):
        self.cur = cur

    def cursor(self):
        return self.cur


def test_maria_a_failed_create_leaves_no_journal_entry(cache):
    journal = rj.new("mariadb", {"host": "127.0.0.1", "port": 3306}, {"server_uid": "u"})
    cur = FakeCursor({}, create_fails=True)
    with pytest.raises(maria_state.pymysql().err.OperationalError):
        maria_state.create_database(cur, journal, "encbench_0badc0de", main=True)
    with pytest.raises(maria_state.pymysql().err.OperationalError):
        maria_state.create_database(cur, journal, "encbench_0badc0de_plain")
    assert maria_state._schemas(journal) == []
    assert maria_state._schemas(rj.Journal(journal.path, rj._load(journal.path))) == []  # on disk too


def test_maria_journaled_databases_that_do_not_exist_are_forgotten_without_a_word(cache, gone_pid, capsys):
    journals = [_dead("mariadb", gone_pid, schema=f"encbench_0badc0d{i}") for i in range(3)]
    cur = FakeCursor({})
    for j in journals:
        assert maria_state.restore(FakeConn(cur), j, earlier=True) is True
        assert not j.path.exists()
    assert capsys.readouterr().err == "" and not any(s.startswith("DROP") for s in cur.executed)


def test_maria_a_database_holding_a_dbas_table_is_kept_with_its_journal(cache, gone_pid, capsys):
    j = _dead("mariadb", gone_pid, schema="encbench_0badc0de", extra_schemas=["encbench_0badc0de_plain"])
    cur = FakeCursor({"encbench_0badc0de": ["plain", "enc", "rt", "orders"], "encbench_0badc0de_plain": ["sbtest1"]})
    assert maria_state.restore(FakeConn(cur), j, earlier=True) is False
    assert set(cur.databases) == {"encbench_0badc0de"}
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "database encbench_0badc0de_plain dropped" in err
    assert "database encbench_0badc0de holds orders, which encbench does not make: not dropped" in err
    assert f"encbench cleanup --forget-journal {j.path}" in err
    assert maria_state._schemas(rj.Journal(j.path, rj._load(j.path))) == ["encbench_0badc0de"]


# -- encbench cleanup --forget-journal -----------------------------------------------------------------------

def test_forget_journal_drops_a_dead_runs_journal_and_never_a_running_ones(cache, gone_pid, capsys):
    dead = _dead("postgres", gone_pid, kept=True)
    live = rj.new("postgres", {"host": "127.0.0.1", "port": 1}, SYSID)
    live.save()
    assert app.main(["cleanup", "--forget-journal", str(live.path)]) == 4
    assert "still going" in capsys.readouterr().err and live.path.exists()
    assert app.main(["cleanup", "--forget-journal", str(cache.parent / "elsewhere.json")]) == 4
    assert "is not a restore journal" in capsys.readouterr().err
    assert app.main(["cleanup", "--forget-journal", str(dead.path)]) == 0
    assert not dead.path.exists() and "forgotten" in capsys.readouterr().out
    second = _dead("mariadb", gone_pid)
    assert app.main(["cleanup", "--forget-journal", "all"]) == 0
    out = capsys.readouterr().out
    assert not second.path.exists() and live.path.exists() and "1 journals forgotten, 1 kept" in out


def test_pg_the_journal_says_what_is_being_set_before_each_change_and_what_was_set_after():
    found = {"ssl_ecdh_curve": _setting([]), "ssl_ciphers": _setting([], "HIGH")}
    applied = {"ssl_ecdh_curve": None, "ssl_ciphers": None}  # as found
    pg_state.journal_setting(found, applied, {"ssl_ecdh_curve": "secp384r1", "ssl_ciphers": "AES256-SHA"})
    assert [found[k]["set"] for k in found] == [[None, "secp384r1"], ["HIGH", "AES256-SHA"]]  # killed now: either
    pg_state.journal_setting(found, None, {"ssl_ecdh_curve": "secp384r1", "ssl_ciphers": "AES256-SHA"})
    assert [found[k]["set"] for k in found] == [["secp384r1"], ["AES256-SHA"]]
    applied = {"ssl_ecdh_curve": "secp384r1", "ssl_ciphers": "AES256-SHA"}
    pg_state.journal_setting(found, applied, {"ssl_ecdh_curve": None})  # back to as found: RESET
    assert found["ssl_ecdh_curve"]["set"] == ["secp384r1", None] and found["ssl_ciphers"]["set"] == ["AES256-SHA"]
