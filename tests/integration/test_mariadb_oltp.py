"""The MariaDB oltp workload end to end (issue 22): sysbench's own scripts on an encrypted and a plain schema of a
real private MariaDB server started by encbench, with the buffer pool held to a share of the data.

Needs mariadb-server and sysbench (scripts/setup.sh --test installs both).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from integration_helpers import (HAVE_MARIADB, assert_one_line_error, env_command_lines, external_maria,
                                 process_command_lines, uses_our_temp_dir)

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not HAVE_MARIADB or not shutil.which("sysbench"),
                                 reason="needs mariadb-server and sysbench (scripts/setup.sh --test)")]

QUICK = ("run", "--engine", "mariadb", "--workload", "oltp", "--quick", "--runs", "2", "--warmups", "0")


def _maria_dirs() -> set[str]:
    return {str(p) for p in Path(tempfile.gettempdir()).glob("encbench-maria-*")}


def _left_behind(before: set[str]) -> tuple[set[str], list[str]]:
    dirs = _maria_dirs() - before
    procs = [c for c in process_command_lines("mariadbd") if any(d in c for d in dirs)]
    procs += [c for c in env_command_lines("sysbench") if "--mysql-db=encbench_" in c]
    return dirs, procs


def _measured(doc: dict) -> list[tuple[dict, dict]]:
    return [(r, op) for r in doc["runs"] if not r.get("warmup") for op in r["operations"]]


@pytest.fixture(scope="module")
def oltp_run(tmp_path_factory, encbench):
    """The default oltp matrix (encryption off/on x memory 100%/25%), --quick, two runs each."""
    before = _maria_dirs()
    out = tmp_path_factory.mktemp("oltp") / "o.json"
    res = encbench(*QUICK, "-o", str(out), timeout=600)
    return res, out, before


def test_oltp_runs_sysbench_on_encrypted_and_plain_schemas(oltp_run):
    res, out, before = oltp_run
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert doc["status"] == "complete" and {r["workload"] for r in doc["runs"]} == {"oltp"}
    facts = doc["dataset"]["oltp"]
    assert facts["sysbench"].startswith("sysbench 1.0") and facts["rand_type"] == "uniform"
    assert all(t["encryption_scheme"] == 1 for t in facts["tables_enc"].values())
    assert all(t["encryption_scheme"] == 0 for t in facts["tables_plain"].values())
    runs = _measured(doc)
    assert len(runs) == 8
    for r, op in runs:
        x = op["extra"]
        assert x["transactions"] > 0 and x["tps"] > 0, x
        assert 0 < x["latency_p50_ms"] <= x["latency_p95_ms"] <= x["latency_p99_ms"], x
        assert x["driver"].startswith("sysbench 1.0") and " oltp_read_only run" in x["driver"], x["driver"]
        assert "password" not in x["driver"] and "config-file" not in x["driver"]
        assert x["tls_checked_connections"] == 1 and x["sysbench_tls"] == "off"
        enc = r["variant"]["encryption"]
        assert all(bool(t["encryption_scheme"]) == (enc == "on") for t in r["session"]["oltp_tables"].values())
        assert not op["probe_errors"], op["probe_errors"]
    assert _left_behind(before) == (set(), [])
    # a DBA's server: on every CPU (the runner pinned after prepare); InnoDB's words, not SQLCipher's
    placed = doc["placement"]
    assert not placed["pinned"] or (placed["server_cpus"] == placed["available_cpus"]
                                    and "private server on every CPU" in placed["text"]), placed
    assert "key derivation" not in res.stdout and f"at 127.0.0.1:{doc['dataset']['server']['port']}" in res.stdout


def test_the_memory_share_is_proven_by_page_reads(oltp_run):
    """100%: no page from storage; 25%: pages read every transaction, decrypted exactly on the encrypted schema."""
    res, out, _ = oltp_run
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    for r, op in _measured(doc):
        x, m, v = op["extra"], op["metrics"], r["variant"]
        assert x["memory_held"] == 1, x.get("memory_not_held")
        assert x["memory_requested"] == v["memory"]
        assert x["memory_data_bytes"] == doc["dataset"]["oltp"]["data_bytes"][v["encryption"]] > 0
        assert x["memory_pool_bytes"] > 0 and "innodb_buffer_pool_size" in x["memory_how"]
        share = float(v["memory"].rstrip("%")) / 100
        assert share <= x["memory_share"] <= share * 1.25, x
        per_txn = m["pages_read"] / x["transactions"]
        if share == 1:
            assert per_txn <= 0.01, (v, per_txn)
        else:
            assert per_txn > 0.5, (v, per_txn)
            if v["encryption"] == "on":
                assert m["pages_decrypted"] >= 0.99 * m["pages_read"], m
        if v["encryption"] == "off":
            assert m["pages_decrypted"] <= 0.01 * max(m["pages_read"], 1), m


def test_oltp_tls_from_the_server_view(encbench, tmp_path):
    """tls varied (encryption fixed): each sysbench connection's cipher as the server reports it; the table's
    axis is tls."""
    before = _maria_dirs()
    out = tmp_path / "t.json"
    res = encbench(*QUICK, "--variant", "encryption=on", "--variant", "memory=25%",
                   "--variant", "tls=off,on,TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384", "-o", str(out), timeout=600)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert [t["axis"] for t in doc["engine"]["tables"] if t["workloads"] == ["oltp"]] == ["tls"]
    seen = {}
    for r, op in _measured(doc):
        assert op["extra"]["tls_checked_connections"] == 1
        seen.setdefault(r["variant"]["tls"], set()).add(op["extra"]["sysbench_tls"])
        assert op["metrics"]["pages_decrypted"] > 0
    assert seen["off"] == {"off"}
    assert seen["TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384"] == {"TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384"}
    assert len(seen["on"]) == 1 and next(iter(seen["on"])).startswith("TLSv1.")
    assert "tls=on" in res.stdout and _left_behind(before) == (set(), [])


def test_oltp_on_a_dsn_server_records_its_pool_and_changes_nothing(encbench, tmp_path):
    """--dsn: sysbench's schemas made and dropped, the server's own pool recorded (never resized), no memory key."""
    from encbench.engines.mariadb import server as maria_server

    with external_maria(tls=True, buffer_pool_mb=64) as server:
        h = server.handle
        dsn = f"mysql://{maria_server.BENCH_USER}:{h.password}@127.0.0.1:{h.port}/"
        conn = server.connect()
        cur = conn.cursor()
        cur.execute("SHOW DATABASES")
        databases = {r[0] for r in cur.fetchall()}
        cur.execute("SELECT @@innodb_buffer_pool_size")
        pool = cur.fetchone()[0]
        out = tmp_path / "d.json"
        res = encbench(*QUICK, "--dsn", dsn, "-o", str(out), timeout=600)
        assert res.returncode == 0, str(res)
        assert h.password not in res.stdout + res.stderr + out.read_text()
        doc = json.loads(out.read_text())
        runs = _measured(doc)
        assert {r["variant"]["encryption"] for r, _ in runs} == {"off", "on"}
        for r, op in runs:
            x = op["extra"]
            assert "memory" not in r["variant"] and "memory_held" not in x
            assert x["memory_requested"] == "the server's own" and x["memory_pool_bytes"] == pool
            assert x["memory_share"] == pytest.approx(x["memory_pages_total"] * 16384 / x["memory_data_bytes"])
            assert x["transactions"] > 0 and "encbench changed nothing" in x["memory_how"]
        cur.execute("SHOW DATABASES")
        assert {r[0] for r in cur.fetchall()} == databases
        cur.execute("SELECT @@innodb_buffer_pool_size, @@innodb_old_blocks_time")
        assert cur.fetchone() == (pool, 1000)
        conn.close()


@pytest.mark.parametrize("args, code, words", [
    (("--variant", "script=tpcb-like"), 3, "unknown value 'tpcb-like' for variant key 'script'"),
    (("--variant", "memory=0%"), 4, "not a share of the data in (0, 100]%"),
    (("--variant", "memory=150"), 4, "not a share of the data in (0, 100]%"),
    (("--variant", "tls=off,on"), 2, "encryption or tls, not both"),
    (("--variant", "encryption=fscrypt"), 2, "not encryption=fscrypt"),
    (("--dsn", "mysql://u:pw@127.0.0.1:1/x", "--variant", "memory=25%"), 2, "does not change a --dsn server's memory"),
    (("--size", "1TB"), 4, "the oltp tables need about"),
])
def test_oltp_bad_input_is_one_line(encbench, tmp_path, args, code, words):
    before = _maria_dirs()
    res = encbench(*QUICK, *args, "-o", str(tmp_path / "x.json"), timeout=300)
    line = assert_one_line_error(res, code)
    assert words in line and "pw@" not in line, line
    assert _left_behind(before) == (set(), [])


def _sysbench_run_ports() -> set[int] | None:
    """The local TCP ports of every running `sysbench ... run` (None when none runs, or it uses a socket)."""
    import psutil

    ports, seen = set(), False
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = p.info["cmdline"] or []
        if p.info["name"] != "sysbench" or "run" not in cmd or not any("--mysql-db=encbench_" in a for a in cmd) \
                or not uses_our_temp_dir(p):
            continue
        seen = True
        try:
            ports |= {c.laddr.port for c in p.net_connections(kind="tcp") if c.laddr}
        except psutil.Error:
            continue
    return ports if seen else None


def _kill_sysbench_connection_after(out: Path, runs: int, done: threading.Event, killed: list) -> None:
    """Once `runs` measured runs are in the result file and a measured `sysbench run` is going: KILL the server
    connections that sysbench's own client ports hold (as root over the private server's socket), so sysbench
    fails with its own error mid-run. The engine's own connections (same user, same schema) are left alone: killing
    one of those between two runs would test something else."""
    import pymysql

    while not done.is_set():
        try:
            doc = json.loads(out.read_text())
        except (OSError, ValueError):
            doc = {"runs": []}
        ports = _sysbench_run_ports() if sum(1 for r in doc["runs"] if not r.get("warmup")) >= runs else None
        if ports:
            for sock in Path(tempfile.gettempdir()).glob("encbench-maria-*/sock/mariadb.sock"):
                try:
                    conn = pymysql.connect(unix_socket=str(sock), user="root", ssl_disabled=True)
                except pymysql.err.MySQLError:
                    continue
                cur = conn.cursor()
                cur.execute("SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE USER = 'encbench' AND "
                            "(DB LIKE 'encbench\\_%\\_plain' OR DB LIKE 'encbench\\_%\\_enc')")
                for cid, host in cur.fetchall():
                    if not host or host.rpartition(":")[2] not in {str(p) for p in ports}:
                        continue
                    try:
                        cur.execute(f"KILL CONNECTION {int(cid)}")
                        killed.append(cid)
                    except pymysql.err.MySQLError:
                        pass
                conn.close()
            if killed:
                return
        time.sleep(0.05)


def test_sysbench_failing_mid_run_keeps_its_error_line_and_the_runs_before(encbench, tmp_path):
    before = _maria_dirs()
    out = tmp_path / "f.json"
    done, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_sysbench_connection_after, args=(out, 2, done, killed), daemon=True)
    killer.start()
    try:
        res = encbench(*QUICK, "--runs", "4", "--variant", "encryption=off", "--variant", "memory=100%",
                       "--param", "seconds=4", "-o", str(out), timeout=600)
    finally:
        done.set()
        killer.join(timeout=10)
    assert killed, "no sysbench connection was found to kill"
    line = assert_one_line_error(res, 11)
    assert "sysbench failed (oltp_read_only" in line and "FATAL:" in line, line
    doc = json.loads(out.read_text())
    assert doc["status"] != "complete" and sum(1 for r in doc["runs"] if not r.get("warmup")) >= 2
    assert _left_behind(before) == (set(), [])
