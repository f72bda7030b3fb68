"""engines/mariadb/leakcheck.py: the places an existing MariaDB names, and the role of a leaking file."""

from __future__ import annotations

import pytest

from encbench.engines.mariadb import leakcheck as maria_leak
from encbench.engines.mariadb.leakcheck import classify
from encbench.errors import UsageError


def _vars(tmp_path, **over):
    v = {"datadir": f"{tmp_path}/data/", "innodb_log_group_home_dir": "./", "innodb_undo_directory": "./",
         "tmpdir": f"{tmp_path}/tmp", "aria_log_dir_path": f"{tmp_path}/data/", "log_bin": "ON",
         "log_bin_basename": f"{tmp_path}/binlogs/mysql-bin", "general_log": "OFF", "slow_query_log": "OFF",
         "log_output": "FILE"}
    v.update(over)
    return v


def test_places_are_merged_and_most_specific_first(tmp_path):
    for d in ("data", "tmp", "binlogs"):
        (tmp_path / d).mkdir()
    targets = maria_leak.scan_targets(_vars(tmp_path))
    by_path = {t.path.rstrip("/"): t.role for t in targets}
    assert by_path == {f"{tmp_path}/binlogs": "binary log", f"{tmp_path}/tmp": "temporary file",
                       f"{tmp_path}/data": "redo log, undo log, Aria log, data directory"}
    # a binary log directory below the data directory is scanned for its own role, before the data directory
    targets = maria_leak.scan_targets(_vars(tmp_path, log_bin_basename="binlog/b"))
    assert [t.role for t in targets][0] == "binary log" and targets[0].path.endswith("data/binlog")


def test_query_logs_only_when_on_and_to_a_file(tmp_path):
    v = _vars(tmp_path, general_log="ON", general_log_file="g.log", log_output="TABLE")
    assert "general log" not in {t.role for t in maria_leak.scan_targets(v)}
    v["log_output"] = "FILE,TABLE"
    assert [t.path for t in maria_leak.scan_targets(v) if t.role == "general log"] == [f"{tmp_path}/data/g.log"]


def test_a_leaking_file_gets_the_setting_that_closes_it(tmp_path):
    v = _vars(tmp_path)
    assert maria_leak.classify_finding(f"{tmp_path}/binlogs/mysql-bin.000003", "binary log", v, classify) == \
        ("binary log", "encrypt_binlog=ON")
    assert maria_leak.classify_finding(f"{tmp_path}/data/ib_logfile0", "redo log, data directory", v, classify) == \
        ("redo log", "innodb_encrypt_log=ON")
    assert maria_leak.classify_finding(f"{tmp_path}/data/g.log", "general log", v, classify)[1].startswith("general_log=OFF")


def test_only_a_server_on_this_host(tmp_path):
    maria_leak.check_local({"host": "127.0.0.1"}, "mysql://u@127.0.0.1/")
    maria_leak.check_local({"unix_socket": "/run/mysqld/mysqld.sock"}, "mysql://u@localhost/")
    with pytest.raises(UsageError, match="not on this host"):
        maria_leak.check_local({"host": "db.example"}, "mysql://u:secret@db.example/")
    try:
        maria_leak.check_local({"host": "db.example"}, "mysql://u:secret@db.example/")
    except UsageError as e:
        assert "secret" not in e.one_line()


def test_a_shared_tmpdir_is_read_for_the_servers_own_names_only(tmp_path):
    """Issue 28 item 3: MariaDB's default tmpdir is /tmp. It is read only for the server's own temporary files
    (MariaDB 10.11: #sql-temptable-*.MAD/.MAI/.MYD/.MYI; ib*, ML*, MY* where O_TMPFILE does not work) owned by the
    server's OS user (the data directory's owner); a tmpdir list (a:b) is each directory; one that is the data
    directory is read whole."""
    import os

    for d in ("data", "tmp", "tmp2", "binlogs"):
        (tmp_path / d).mkdir()
    uid = os.stat(tmp_path / "data").st_uid
    two = _vars(tmp_path, tmpdir=f"{tmp_path}/tmp:{tmp_path}/tmp2")
    targets = {t.path.rstrip("/"): t for t in maria_leak.scan_targets(two)}
    for d in ("tmp", "tmp2"):
        t = targets[f"{tmp_path}/{d}"]
        assert t.role == "temporary file" and t.owner == uid
        assert {"#sql*", "ib*", "ML*", "MY*"} == set(t.names)
    assert targets[f"{tmp_path}/binlogs"].names == ("mysql-bin.*",)  # a binary log directory of its own: its files
    assert targets[f"{tmp_path}/data"].names == ()  # the data directory: the server's whole
    same = {t.path.rstrip("/"): t for t in maria_leak.scan_targets(_vars(tmp_path, tmpdir=f"{tmp_path}/data"))}
    assert same[f"{tmp_path}/data"].names == () and "temporary file" in same[f"{tmp_path}/data"].role
