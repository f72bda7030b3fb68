"""The restore journal names a server by what it is, not by the spelling of its address (issue 21, item 3).

No server here: the journal files, the address matching of format 1 journals, and the PostgreSQL
engine's rule (system identifier and port; data directory; a standby) on connection facts.
"""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pytest

from encbench.engines.local import restore_journal
from encbench.engines.postgres import external as pg_external

SYSID = {"system_identifier": "7712358355634069753", "port": 5432}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return restore_journal.directory()


@pytest.fixture
def gone_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _left_behind(journal: restore_journal.Journal, pid: int) -> restore_journal.Journal:
    journal.path = journal.path.with_name(journal.path.name.replace(f"-{journal.data['owner']['pid']}.", f"-{pid}."))
    journal.data["owner"] = dict(journal.data["owner"], pid=pid, start="1")
    journal.save()
    return journal


def _format1(cache, host: str, port: int, pid: int, **extra) -> dict:
    """A journal as encbench wrote it before identities (format 1: the file named by host:port as spelled)."""
    data = {"format": 1, "engine": "postgres", "server": {"host": host, "port": port, "dbname": "postgres",
                                                           "user": "postgres"},
            "owner": {"pid": pid, "start": "1", "hostname": restore_journal.socket.gethostname()},
            "created": "2025-01-01T00:00:00+0000", "schema": "encbench_0badc0de", **extra}
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{restore_journal.legacy_key('postgres', host, port)}-{pid}.json").write_text(json.dumps(data))
    return data


def _admin(host: str, hostaddr: str, port: int = 5432):
    return SimpleNamespace(info=SimpleNamespace(host=host, hostaddr=hostaddr, port=port))


def test_the_file_is_named_by_identity_whatever_the_spelling(cache):
    a = restore_journal.new("postgres", {"host": "127.0.0.1", "port": 5432}, SYSID)
    b = restore_journal.new("postgres", {"host": "localhost", "port": 5432}, SYSID)
    assert a.path == b.path and a.data["identity"] == SYSID and a.data["format"] == restore_journal.FORMAT
    other = restore_journal.new("postgres", {"host": "127.0.0.1", "port": 5432}, dict(SYSID, system_identifier="1"))
    assert other.path != a.path


def test_format1_spelled_127_is_found_from_localhost_and_back(cache, gone_pid):
    _format1(cache, "127.0.0.1", 5432, gone_pid)
    via_localhost = pg_external.journal_matcher(_admin("localhost", "127.0.0.1"), SYSID, None, False)
    [found], live, bad = restore_journal.existing("postgres", via_localhost)
    assert found.data["schema"] == "encbench_0badc0de" and (live, bad) == ([], [])
    found.discard()
    _format1(cache, "localhost", 5432, gone_pid)
    via_ip = pg_external.journal_matcher(_admin("127.0.0.1", "127.0.0.1"), SYSID, None, False)
    assert len(restore_journal.existing("postgres", via_ip)[0]) == 1


@pytest.mark.parametrize("host, port", [("127.0.0.1", 5433), ("192.0.2.77", 5432), ("/tmp", 5432)])
def test_format1_of_another_address_or_port_is_not_this_servers(cache, gone_pid, host, port):
    _format1(cache, host, port, gone_pid)
    belongs = pg_external.journal_matcher(_admin("localhost", "127.0.0.1"), SYSID, None, False)
    assert restore_journal.existing("postgres", belongs) == ([], [], [])


def test_format1_of_another_data_directory_is_not_this_servers(cache, gone_pid):
    _format1(cache, "127.0.0.1", 5432, gone_pid, data_directory="/srv/old")
    assert restore_journal.existing("postgres", pg_external.journal_matcher(_admin("localhost", "127.0.0.1"), SYSID,
                                                                    "/srv/new", False))[0] == []
    assert len(restore_journal.existing("postgres", pg_external.journal_matcher(_admin("localhost", "127.0.0.1"), SYSID,
                                                                        "/srv/old", False))[0]) == 1


def test_same_address_another_cluster_is_never_mistaken(cache, gone_pid):
    """A cluster re-made on the same address and port (new system identifier): not its journal."""
    _left_behind(restore_journal.new("postgres", {"host": "127.0.0.1", "port": 5432, "address": "127.0.0.1"}, SYSID),
                 gone_pid)
    again = dict(SYSID, system_identifier="42")
    assert restore_journal.existing("postgres", pg_external.journal_matcher(_admin("127.0.0.1", "127.0.0.1"), again,
                                                                    None, False)) == ([], [], [])
    spelled_otherwise = pg_external.journal_matcher(_admin("203.0.113.9", "203.0.113.9"), SYSID, None, False)
    assert len(restore_journal.existing("postgres", spelled_otherwise)[0]) == 1  # the same cluster, another route


def test_a_standby_never_takes_its_primarys_journal(cache, gone_pid):
    """A physical standby shares its primary's system identifier (and often its port)."""
    j = _left_behind(restore_journal.new("postgres", {"host": "db1", "port": 5432}, SYSID), gone_pid)
    j.data["in_recovery"] = False
    j.save()
    standby = pg_external.journal_matcher(_admin("db2", "198.51.100.2"), SYSID, None, True)
    assert restore_journal.existing("postgres", standby) == ([], [], [])


def test_without_a_system_identifier_the_address_reached_decides(cache, gone_pid):
    """A role pg_control_system() was revoked from: the journal's recorded address and port."""
    _left_behind(restore_journal.new("postgres", {"host": "localhost", "port": 5432, "address": "127.0.0.1"},
                                     SYSID), gone_pid)
    port_only = {"port": 5432}
    assert len(restore_journal.existing("postgres", pg_external.journal_matcher(_admin("127.0.0.1", "127.0.0.1"), port_only,
                                                                        None, False))[0]) == 1
    assert restore_journal.existing("postgres", pg_external.journal_matcher(_admin("192.0.2.5", "192.0.2.5"), port_only,
                                                                    None, False))[0] == []


def test_reaches_resolves_names_and_compares_ports():
    assert restore_journal.reaches({"host": "localhost", "port": 5432}, {"127.0.0.1"}, 5432)
    assert not restore_journal.reaches({"host": "localhost", "port": 5432}, {"127.0.0.1"}, 5433)
    assert not restore_journal.reaches({"host": "no-such-host.invalid", "port": 5432}, {"127.0.0.1"}, 5432)
    assert restore_journal.reaches({"host": "/tmp/", "port": 5432}, restore_journal.addresses("/tmp", 5432), 5432)


def test_other_engines_journals_are_not_read(cache, gone_pid):
    _left_behind(restore_journal.new("mariadb", {"host": "127.0.0.1", "port": 3306}, {"server_uid": "x"}), gone_pid)
    assert restore_journal.existing("postgres", lambda data: True) == ([], [], [])
    assert len(restore_journal.existing("mariadb", lambda data: True)[0]) == 1


@pytest.mark.parametrize("name", ["shop", "encbench_", "encbench_0badc0de`; DROP DATABASE shop; --", "mysql"])
def test_maria_never_drops_a_database_encbench_does_not_make(cache, gone_pid, name, capsys):
    """A journal is a file anyone with the account can edit: only encbench_<8 hex> names are dropped."""
    from encbench.engines.mariadb import state as maria_state

    j = _left_behind(restore_journal.new("mariadb", {"host": "127.0.0.1", "port": 3306}, {"server_uid": "u"}),
                     gone_pid)
    j.data["schema"] = name
    assert maria_state.restore(None, j, earlier=True) is False  # the connection is never used
    assert j.path.exists() and "not a database encbench makes" in capsys.readouterr().err


def test_a_journal_owner_is_judged_by_util_proc_whatever_its_format(cache):
    """One liveness rule (util/proc): a new journal's owner is proc's record (start time both ways) + hostname; an
    older journal's "start" (clock ticks since boot, a string) reads as proc's since_boot; a zombie is gone."""
    from encbench.util import proc

    me = restore_journal.new("postgres", {"host": "h", "port": 1}, SYSID).data["owner"]
    assert {"pid", "start", "since_boot", "hostname"} <= me.keys() and restore_journal.owner_alive(me)
    ticks = str(round(proc.since_boot(me["pid"]) * restore_journal.os.sysconf("SC_CLK_TCK")))
    assert restore_journal.owner_alive({"pid": me["pid"], "start": ticks, "hostname": me["hostname"]})
    assert not restore_journal.owner_alive({"pid": me["pid"], "start": "1", "hostname": me["hostname"]})
    zombie = subprocess.Popen(["true"])
    try:
        while proc.running(zombie.pid):  # exited, not yet reaped: a zombie
            pass
        assert not restore_journal.owner_alive(dict(proc.identity(zombie.pid) or {}, pid=zombie.pid,
                                                    hostname=me["hostname"]))
    finally:
        zombie.wait()
    assert restore_journal.owner_alive({"pid": 1, "start": "1", "hostname": "another-machine"})
