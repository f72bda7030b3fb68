"""The private servers' generated configurations are a stock server's (issue 30): MariaDB's encryption settings at
the version's defaults unless a knob names one, performance_schema's instruments off; PostgreSQL's oltp server
with the default WAL and checkpoint settings and no I/O timing; where the servers run; the facts read from a
server; the open's remark in the engine's own words."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from encbench.engines import engine_named
from encbench.engines.local import affinity
from encbench.engines.mariadb import facts, knobs, server as maria_server, waits
from encbench.engines.postgres import oltp as pg_oltp, server as pg_server
from encbench.lab import placement
from encbench.workloads import WORKLOADS

# what a stock MariaDB 10.11 has, for the settings encbench used to change
MARIADB_STOCK = {"innodb_encrypt_log": "OFF", "innodb_encrypt_temporary_tables": "OFF", "encrypt_tmp_files": "OFF",
                 "encrypt_binlog": "OFF", "aria_encrypt_tables": "OFF", "innodb_encrypt_tables": "OFF"}


def _cnf(conf: dict) -> dict[str, str]:
    handle = maria_server.Handle(root="/r", port=3307, user=None, mariadbd="mariadbd")
    text = maria_server.config_text(handle, conf, 64, True, [])
    return dict(line.split("=", 1) for line in text.splitlines()[1:] if "=" in line)


def test_mariadb_bench_config_is_stock_encryption_and_instruments_off():
    cnf = _cnf(maria_server.BENCH)
    for name, stock in MARIADB_STOCK.items():
        assert cnf.get(name, stock) == stock, name  # absent: the version's default
    assert cnf["file_key_management_encryption_algorithm"] == "AES_CBC"  # the plugin's default, written out
    assert cnf["plugin_load_add"] == "file_key_management" and cnf["file_key_management_filename"] == "/r/keys.txt"
    assert cnf["performance_schema"] == "ON" and cnf["performance_schema_instrument"] == "'%=OFF'"
    assert not any(k.startswith("performance_schema_consumer_events_waits") for k in cnf)
    assert maria_server.FS_BENCH == maria_server.BENCH
    assert set(maria_server.NOT_STOCK) <= set(maria_server.BENCH)  # every difference says why


@pytest.mark.parametrize("key,value,variable,want", [
    ("encrypt_log", "on", "innodb_encrypt_log", "ON"), ("encrypt_tmp_files", "on", "encrypt_tmp_files", "ON"),
    ("encryption_algorithm", "aes_ctr", "file_key_management_encryption_algorithm", "AES_CTR"),
    ("encrypt_binlog", "on", "encrypt_binlog", "ON")])
def test_a_named_knob_changes_its_setting_alone(key, value, variable, want):
    groups = knobs.server_groups([{"script": "oltp_read_write", "encryption": "on", key: value}], maria_server.BENCH)
    (_, startup), = groups
    cnf = _cnf(dict(maria_server.BENCH, **startup))
    assert cnf[variable] == want
    others = {k: v for k, v in MARIADB_STOCK.items() if k != variable}
    assert all(cnf.get(k, v) == v for k, v in others.items())
    assert set(startup) - {variable} <= {"log_bin", "server_id"}  # encrypt_binlog needs the binary log on


def test_unnamed_knobs_leave_the_stock_server():
    assert knobs.server_groups([{"script": "oltp_read_write", "encryption": "on"}], maria_server.BENCH) == [([""], {})]


def test_a_knob_at_its_stock_value_runs_on_the_stock_server():
    """encryption=off (no algorithm) and encryption_algorithm=aes_cbc are the same server; aes_ctr one more."""
    variants = [{"encryption": "off", "cache": "cold"}, {"encryption": "on", "encryption_algorithm": "aes_cbc"},
                {"encryption": "on", "encryption_algorithm": "aes_ctr"}]
    groups = knobs.server_groups(variants, maria_server.BENCH)
    assert [keys for keys, _ in groups] == [["", "encryption_algorithm=aes_cbc"], ["encryption_algorithm=aes_ctr"]]
    log = knobs.server_groups([{"encrypt_log": "off"}, {"encrypt_log": "on"}, {}], maria_server.BENCH)
    assert [keys for keys, _ in log] == [["encrypt_log=off", ""], ["encrypt_log=on"]]


def test_postgres_oltp_server_has_the_default_wal_and_no_io_timing():
    conf = pg_server.settings_for(pg_oltp.SERVER_SETTINGS)
    for name in ("max_wal_size", "min_wal_size", "track_io_timing", "max_wal_senders", "wal_level",
                 "synchronous_commit", "full_page_writes", "checkpoint_timeout"):
        assert name not in conf, name  # the server's default
    assert conf["fsync"] == "on"
    assert pg_oltp.disk_needed(1) > 1 << 30  # room for the default 1 GB of WAL


def test_oltp_spreads_its_server_and_the_placement_says_so():
    assert WORKLOADS.get("oltp").spreads_server and not WORKLOADS.get("scan-eq").spreads_server
    spread = placement.choose(True, [0, 1], spread=True)
    assert not spread.before_prepare and spread.describe()["server_cpus"] == [0, 1]
    assert "any private server on every CPU" in spread.describe()["text"]
    timed = placement.choose(True, [0, 1])
    assert timed.before_prepare and timed.describe()["server_cpus"] == [0]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_a_restarted_server_starts_where_the_old_one_ran():
    mine = os.sched_getaffinity(0)
    one = {min(mine)}
    with affinity.starting_on(one):
        proc = subprocess.Popen(["sleep", "5"])
    try:
        assert affinity.cpus_of(proc.pid) == one and os.sched_getaffinity(0) == mine
    finally:
        proc.kill()
        proc.wait()
    assert affinity.cpus_of(None) is None
    with affinity.starting_on(None):
        assert os.sched_getaffinity(0) == mine


def test_facts_address_and_algorithm():
    assert facts.address({"host": "127.0.0.1", "port": 27001}) == ("127.0.0.1", 27001, "127.0.0.1:27001")
    assert facts.address({"unix_socket": "/s/m.sock", "host": "localhost"}) == ("/s/m.sock", None, "/s/m.sock")
    assert facts.algorithm("aes_cbc")[0] == "AES_CBC" and facts.algorithm("aes_ctr")[0] == "AES_CTR"
    algo, source = facts.algorithm(None)
    assert algo == "AES_CBC" and "default" in source


class _Cursor:
    def __init__(self, log):
        self.log = log

    def execute(self, sql, args=None):
        self.log.append(sql)

    def fetchall(self):
        return []


class _Conn:
    def __init__(self, log):
        self.log = log

    def cursor(self):
        return _Cursor(self.log)

    def close(self):
        self.log.append("close")


@pytest.mark.parametrize("switch", [True, False])
def test_the_sampler_turns_the_wait_instruments_on_only_while_it_samples(monkeypatch, switch):
    log: list[str] = []
    monkeypatch.setattr(waits, "connect_bounded", lambda params, **kw: _Conn(log))
    sampler = waits.WaitSampler({}, [7], None, switch)
    assert [s for s in log if s.startswith("UPDATE")] == (list(waits.WAITS_ON) if switch else [])
    log.clear()
    sampler.close()
    assert log == ([*waits.WAITS_OFF, "close"] if switch else ["close"])


def test_the_open_is_said_in_the_engine_s_words():
    from encbench.analysis import headline

    class A:
        engine = "mariadb"

    text = headline._remark(A(), "what each new connection pays, {open_includes}")
    assert "key derivation" not in text.split(";")[0] and "login" in text
    assert "key derivation" in engine_named("sqlite").open_includes
    assert "key derivation" not in engine_named("postgres").open_includes
