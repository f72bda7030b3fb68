"""Unit tests of the MariaDB engine's pure parts (no server: fakes for cursors only)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from encbench.report import render as report
from encbench.analysis.summary import table_for, tables
from encbench.engines import ENGINES
from encbench.engines.mariadb import client as mc
from encbench.engines.mariadb import session as ms
from encbench.engines.local import server as local_server
from encbench.engines.mariadb import engine as md
from encbench.engines.mariadb import leakcheck as maria_leak
from encbench.errors import BadValueError, CheckFailedError, UsageError
from encbench.vocab.variants import matrix


def test_dsn_parsing():
    p = md.parse_dsn("mysql://bob:s%40cret@db.example:3307/app")
    assert (p["host"], p["port"], p["user"], p["password"]) == ("db.example", 3307, "bob", "s@cret")
    assert md.parse_dsn("mariadb://bob@10.0.0.1/")["port"] == 3306
    assert md.parse_dsn("mysql:///?unix_socket=/run/mysqld/mysqld.sock")["unix_socket"] == "/run/mysqld/mysqld.sock"
    for bad in ("postgresql://x@y/z", "host=1", "mysql://u@h:port/", "mysql://u@[::1", "mysql://u@h:0/",
                "mysql://u@h:70000/"):
        with pytest.raises(BadValueError) as e:
            md.parse_dsn(bad.replace("u@", "u:topsecret@"))
        assert "topsecret" not in str(e.value)


def test_settings_parsing():
    assert local_server.parse_settings(["innodb_encrypt_log=OFF", " a = b "]) == {"innodb_encrypt_log": "OFF", "a": "b"}
    with pytest.raises(UsageError):
        local_server.parse_settings(["nonsense"])


def test_placeholders_and_literal_percent():
    assert ms._sql("SELECT (grp + 1) % 1000 FROM t WHERE id BETWEEN ? AND ?") == \
        "SELECT (grp + 1) %% 1000 FROM t WHERE id BETWEEN %s AND %s"


def test_tls_state_check():
    mc.check_tls_state({"cipher": None, "version": None}, "off")
    mc.check_tls_state({"cipher": "TLS_AES_256_GCM_SHA384", "version": "TLSv1.3"}, "on")
    mc.check_tls_state({"cipher": "ECDHE-RSA-AES256-SHA384", "version": "TLSv1.2"}, "TLSv1.2:ECDHE-RSA-AES256-SHA384")
    for state, tls in (({"cipher": None}, "on"), ({"cipher": "X", "version": "TLSv1.2"}, "off"),
                       ({"cipher": "ECDHE-RSA-AES256-GCM-SHA384", "version": "TLSv1.2"},
                        "TLSv1.2:ECDHE-RSA-AES256-SHA384")):
        with pytest.raises(CheckFailedError):
            mc.check_tls_state(state, tls)


def test_client_offers_only_the_forced_suite():
    assert mc.tls_params("off") == {"ssl_disabled": True}
    ctx = mc.tls_params("TLSv1.2:ECDHE-RSA-AES256-SHA384")["ssl"]
    assert ctx.maximum_version == ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert [c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"] == ["ECDHE-RSA-AES256-SHA384"]
    ctx = mc.tls_params("TLSv1.3:TLS_CHACHA20_POLY1305_SHA256")["ssl"]
    assert [c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.3"] == ["TLS_CHACHA20_POLY1305_SHA256"]
    with pytest.raises(BadValueError):
        mc.tls_params("TLSv1.2:NOT-A-SUITE")
    with pytest.raises(BadValueError):
        mc.tls_params("TLSv1.3:TLS_NOT_A_SUITE")


class FakeCursor:
    def __init__(self, row):
        self.row = row

    def execute(self, sql, args=None):
        assert "INNODB_TABLESPACES_ENCRYPTION" in sql

    def fetchone(self):
        return self.row


def test_table_encryption_must_match_the_variant():
    assert ms.check_table(FakeCursor((1, 1, 1)), "s", "enc", {"encryption": "on"})["key_version"] == 1
    assert ms.check_table(FakeCursor(None), "s", "plain", {"encryption": "off"}) == {"encryption_scheme": 0}
    with pytest.raises(CheckFailedError, match="not encrypted"):
        ms.check_table(FakeCursor(None), "s", "enc", {"encryption": "on"})
    with pytest.raises(CheckFailedError, match="not encrypted"):
        ms.check_table(FakeCursor((1, 0, 1)), "s", "enc", {"encryption": "on"})  # key version 0: not yet
    with pytest.raises(CheckFailedError):
        ms.check_table(FakeCursor((1, 1, 1)), "s", "plain", {"encryption": "off"})


def _checker(**setup):
    s = ms.MariaSession.__new__(ms.MariaSession)
    s.setup = setup
    return s


def test_cache_state_checks():
    s = _checker()
    on, off = {"encryption": "on"}, {"encryption": "off"}
    assert s.check_operation(on, {"pool_misses": 0, "pages_read": 0}, {"cache": "warm"}) == {"cache_verified": 1}
    with pytest.raises(CheckFailedError, match="warm"):
        s.check_operation(on, {"pool_misses": 3, "pages_read": 3}, {"cache": "warm"})
    assert s.check_operation(on, {"pool_misses": 9, "pages_read": 9, "pages_decrypted": 9}, {"cache": "cold"})
    with pytest.raises(CheckFailedError, match="no page was read"):
        s.check_operation(off, {"pool_misses": 0, "pages_read": 0, "pages_decrypted": 0}, {"cache": "cold"})
    with pytest.raises(CheckFailedError, match="decrypted"):
        s.check_operation(on, {"pool_misses": 9, "pages_read": 9, "pages_decrypted": 0}, {"cache": "cold"})
    with pytest.raises(CheckFailedError, match="decrypted"):
        s.check_operation(off, {"pool_misses": 9, "pages_read": 9, "pages_decrypted": 2}, {"cache": "cold"})
    # an instance that encrypts its system tablespace decrypts a few pages for a plain table too
    assert _checker(instance_encrypts_tables=True).check_operation(
        off, {"pool_misses": 9, "pages_read": 9, "pages_decrypted": 2}, {"cache": "cold"})
    assert s.check_operation(on, {}, {}) is None  # no cache key (backup) or no counters: nothing to check


def test_variant_matrix_per_workload():
    keys = ENGINES.get("mariadb").variant_keys
    assert matrix(keys, {}, "scan-eq") == [{"encryption": e, "cache": c} for e in ("off", "on") for c in ("cold", "warm")]
    assert matrix(keys, {}, "backup") == [{"encryption": "off"}, {"encryption": "on"}]
    assert {v["tls"] for v in matrix(keys, {}, "storm")} >= {"off", "on"}
    assert all(set(v) == {"tls", "clients"} for v in matrix(keys, {}, "roundtrip"))


def test_two_report_tables_one_axis_each():
    engine = {"name": "mariadb", "axis": "encryption", "axis_baseline": "off",
              "tables": [t.to_dict() for t in ENGINES.get("mariadb").tables()]}
    assert table_for(engine, "dml")["axis"] == "encryption"
    assert table_for(engine, "storm")["axis"] == "tls"
    assert [t["axis"] for t in tables(engine)] == ["encryption", "tls", "sessions", "method", "encryption"]
    assert table_for(engine, "oltp")["axis"] == "encryption" and table_for(engine, "oltp")["workloads"] == ["oltp"]
    assert table_for(engine, "column")["axis_baseline"] == "none"
    assert table_for(engine, "hash")["axis_baseline"] == "1"
    old = {"axis": "tls", "axis_baseline": "off"}  # a file written before engine.tables existed
    assert table_for(old, "storm")["axis"] == "tls" and len(tables(old)) == 1
    assert all(c in report.COLUMNS for t in tables(engine) for c in t["table_columns"])


def test_file_roles_name_the_fixing_setting():
    assert maria_leak.classify(Path("/d/ib_logfile0")) == ("redo log", "innodb_encrypt_log=ON")
    assert maria_leak.classify(Path("/d/binlog.000001"))[1] == "encrypt_binlog=ON"
    assert maria_leak.classify(Path("/d/db/t.ibd"))[0] == "table data"
