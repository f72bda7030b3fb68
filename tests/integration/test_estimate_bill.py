"""`encbench estimate --live` (issue 31): the encryption bill of a real server under a light load driven here, every
term of the engine present (or absent with its reason), read-only: the server's settings, files and databases the
same before and after. Servers started by the test, addressed by DSN as a DBA's would be."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import pytest

from encbench.analysis.bill import TERM_KINDS
from encbench.engines.mariadb import server as maria_server
from integration_helpers import assert_one_line_error, external_maria, external_pg
from server_state import diff, maria_state, pg_state

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "results-v1.json"  # SQLCipher's costs: --other-setup
SECONDS = "2"


def _loaded(work) -> tuple[threading.Event, threading.Thread]:
    """A thread running `work()` until the event is set (errors after it is set are the server stopping)."""
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            work()

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return stop, t


def _bill(encbench, dsn: str, secret: str) -> tuple[int, dict]:
    res = encbench("estimate", "--from", str(GOLDEN), "--other-setup", "--live", dsn, "--seconds", SECONDS,
                   "--cores", "2", "--json")
    assert res.returncode in (0, 24), str(res)
    assert secret not in res.stdout + res.stderr
    text = encbench("estimate", "--from", str(GOLDEN), "--other-setup", "--live", dsn, "--seconds", "0.5")
    assert text.stdout.startswith("model: ") and "page reads" in text.stdout and secret not in text.stdout, str(text)
    # SQLCipher's per-page cost does not price this server unless told
    line = assert_one_line_error(encbench("estimate", "--from", str(GOLDEN), "--live", dsn, "--seconds", "0.2"), 9)
    assert "--other-setup" in line and secret not in line
    return res.returncode, json.loads(res.stdout)


def _check_terms(out: dict, present: set[str], absent: set[str]) -> dict:
    terms = {t["name"]: t for t in out["terms"]}
    assert set(terms) == present and {a["name"] for a in out["absent"]} == absent, out
    assert present | absent == set(TERM_KINDS)
    assert terms["reads"]["rate_per_s"] > 0 and terms["reads"]["resolved"] and terms["reads"]["added_cores"] > 0
    assert terms["tls_handshakes"]["rate_per_s"] > 0, terms["tls_handshakes"]  # the load's new TLS connections
    assert terms["log_bytes"]["rate_per_s"] > 0, terms["log_bytes"]  # its updates
    # the golden file measures no write, log or TLS cost: no total, each such term named, never a partial sum
    assert out["resolved"] is False and out["added_cores"] is None
    assert all(not t["resolved"] for t in out["terms"] if t["name"] == "log_bytes")
    assert any("log bytes" in r for r in out["reasons"])
    return terms


def test_live_bill_of_a_postgres_server_changes_nothing(encbench):
    import psycopg

    with external_pg({"shared_buffers": "16MB"}) as server:
        with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
            c.execute("CREATE TABLE big AS SELECT i, repeat('x', 200) AS v FROM generate_series(1, 100000) i")
        before = pg_state(server)
        conn = psycopg.connect(**server.conninfo(), sslmode="require", autocommit=True)  # seen by the polls

        def work():  # reads past shared_buffers, an update (WAL), a new TLS session
            conn.execute("SELECT count(*) FROM big").fetchone()
            conn.execute("UPDATE big SET v = v WHERE i < 500")
            psycopg.connect(**server.conninfo(), sslmode="require").close()

        stop, t = _loaded(work)
        try:
            rc, out = _bill(encbench, f"postgresql://postgres:{server.password}@127.0.0.1:{server.port}/postgres",
                            server.password)
        finally:
            stop.set()
            t.join(timeout=30)
            conn.close()
        assert rc == 24
        terms = _check_terms(out, set(TERM_KINDS) - {"tls_resumptions"}, {"tls_resumptions"})
        assert terms["tls_bytes"]["rate_per_s"] is None and "--rate tls_bytes" in terms["tls_bytes"]["why"]
        assert out["live"]["facts"]["page_size"] == 8192 and out["target"].startswith("postgres, 8192-byte pages")
        assert diff(before, pg_state(server)) == {}


def test_live_bill_of_a_mariadb_server_changes_nothing(encbench):
    with external_maria(tls=True, buffer_pool_mb=32) as server:
        conn = server.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE d")
        cur.execute("CREATE TABLE d.big (id INT PRIMARY KEY, v VARCHAR(255)) ENGINE=InnoDB")
        for lo in range(1, 150001, 50000):
            cur.execute(f"INSERT INTO d.big SELECT seq, REPEAT('x', 200) FROM d.seq_{lo}_to_{lo + 49999}")
        before = maria_state(server)
        h = server.handle
        values = itertools.cycle("yz")

        def work():  # reads past a 32 MB pool (O_DIRECT), an update that changes rows (redo), a new TLS session
            cur.execute("SELECT COUNT(*), SUM(LENGTH(v)) FROM d.big")
            cur.fetchall()
            cur.execute(f"UPDATE d.big SET v = REPEAT('{next(values)}', 200) WHERE id < 300")
            maria_server.connect_bounded(dict(h.tcp_params(), ssl={"check_hostname": False})).close()

        stop, t = _loaded(work)
        try:
            rc, out = _bill(encbench, f"mysql://{maria_server.BENCH_USER}:{h.password}@127.0.0.1:{h.port}/",
                            h.password)
        finally:
            stop.set()
            t.join(timeout=30)
            conn.close()
        assert rc == 24
        terms = _check_terms(out, set(TERM_KINDS) - {"temp_bytes"}, {"temp_bytes"})
        assert terms["tls_bytes"]["rate_per_s"] > 0 and terms["tls_resumptions"]["rate_per_s"] is not None
        assert out["live"]["facts"]["page_size"] == 16384
        assert diff(before, maria_state(server)) == {}
