"""`encbench compare --fail-if` (the regression gate) and `encbench estimate`, from result
files and live against real servers under a read load."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

import pytest

from encbench.engines import maria_server, pg_server
from integration_helpers import assert_one_line_error

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "results-v1.json"


@pytest.fixture
def worse(tmp_path) -> Path:
    """The golden file with every elapsed time 50% longer: B is clearly worse than A."""
    doc = json.loads(GOLDEN.read_text())
    b = copy.deepcopy(doc)
    for run in b["runs"]:
        for op in run.get("operations", []):
            if "wall_s" in op["metrics"]:
                op["metrics"]["wall_s"] *= 1.5
    path = tmp_path / "worse.json"
    path.write_text(json.dumps(b))
    return path


def test_gate(encbench, worse):
    res = encbench("compare", str(GOLDEN), str(GOLDEN), "--fail-if", "overhead>5%")
    assert res.returncode == 0 and "gate: passed" in res.stdout, str(res)
    res = encbench("compare", str(GOLDEN), str(worse), "--fail-if", "overhead>5%")
    assert res.returncode == 17 and "gate: FAILED" in res.stdout and "FAIL  overhead>5%" in res.stdout, str(res)
    res = encbench("compare", str(GOLDEN), str(worse), "--fail-if", "overhead>60%", "--fail-if", "cpu>5%")
    assert res.returncode == 0, str(res)  # +50% elapsed is within 60%; CPU did not change
    res = encbench("compare", str(GOLDEN), str(worse), "--fail-if", "overhead>5%", "--json")
    assert res.returncode == 17 and json.loads(res.stdout)["gate"]["failed"], str(res)
    assert_one_line_error(encbench("compare", str(GOLDEN), str(worse), "--fail-if", "latency>5%"), 3)
    assert_one_line_error(encbench("compare", str(GOLDEN), str(worse), "--fail-if", "overhead>5"), 2)


def test_estimate_from_results(encbench, tmp_path):
    res = encbench("estimate", "--from", str(GOLDEN), "--read-rate", "25MB/s", "--cores", "4", "--json")
    assert res.returncode == 0, str(res)
    out = json.loads(res.stdout)
    assert out["added_cores"] == pytest.approx(25e6 / out["page_size"] * out["per_page_cpu_s"])
    assert out["share_ci"][0] < out["share_of_server"] < out["share_ci"][1]
    res = encbench("estimate", "--from", str(GOLDEN), "--read-rate", "25MB/s", "--cores", "4")
    assert "formula:" in res.stdout and "pages/s" in res.stdout
    assert_one_line_error(encbench("estimate", "--from", str(GOLDEN), "--read-rate=-3MB/s"), 4)
    assert_one_line_error(encbench("estimate", "--from", str(GOLDEN)), 2)
    line = assert_one_line_error(encbench("estimate", "--from", str(GOLDEN), "--read-rate", "1MB/s",
                                          "--write-rate", "1MB/s"), 4)
    assert "no per-page write cost" in line  # the golden file has no warm rebuild
    assert_one_line_error(encbench("estimate", "--from", str(tmp_path / "none.json"), "--read-rate", "1MB/s"), 6)
    doc = json.loads(GOLDEN.read_text())
    doc["runs"] = [r for r in doc["runs"] if r["variant"].get("cache") != "cold"]  # no cold runs: no per-page cost
    doc["derived"] = []
    no_cost = tmp_path / "nocost.json"
    no_cost.write_text(json.dumps(doc))
    assert "no per-page" in assert_one_line_error(encbench("estimate", "--from", str(no_cost), "--read-rate", "1MB/s"), 4)


def _load(stop: threading.Event, query) -> threading.Thread:
    def loop():
        while not stop.is_set():
            query()

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def test_live_postgres_under_read_load(encbench):
    try:
        pg_server.find_bindir()
    except Exception:  # noqa: BLE001
        pytest.skip("PostgreSQL server binaries not installed")
    import psycopg

    server = pg_server.start(settings={"shared_buffers": "16MB"})
    stop = threading.Event()
    try:
        with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
            c.execute("CREATE TABLE big AS SELECT i, repeat('x', 200) AS v FROM generate_series(1, 200000) i")
        conn = psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True)
        t = _load(stop, lambda: conn.execute("SELECT count(*) FROM big").fetchone())
        dsn = f"postgresql://postgres:{server.password}@127.0.0.1:{server.port}/postgres"
        res = encbench("estimate", "--from", str(GOLDEN), "--live", dsn, "--seconds", "2", "--cores", "2", "--json")
        stop.set()
        t.join()
        conn.close()
        assert res.returncode == 0, str(res)
        out = json.loads(res.stdout)
        assert out["live"]["read_bytes_per_s"] > 1e6 and out["added_cores"] > 0  # the scans read from the OS
        assert server.password not in res.stdout
    finally:
        stop.set()
        server.stop()


def test_live_mariadb_under_read_load(encbench):
    try:
        maria_server.binaries()
    except Exception:  # noqa: BLE001
        pytest.skip("MariaDB server binaries not installed")
    server = maria_server.start(base=maria_server.BENCH, buffer_pool_mb=32)
    stop = threading.Event()
    try:
        conn = server.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE d")
        cur.execute("CREATE TABLE d.big (id INT PRIMARY KEY, v VARCHAR(255)) ENGINE=InnoDB")
        for lo in range(1, 300001, 50000):
            cur.execute(f"INSERT INTO d.big SELECT seq, REPEAT('x', 200) FROM d.seq_{lo}_to_{lo + 49999}")

        def scan():
            cur.execute("SELECT COUNT(*), SUM(LENGTH(v)) FROM d.big")
            cur.fetchall()

        t = _load(stop, scan)  # 60+ MB through a 32 MB buffer pool with O_DIRECT: physical reads
        h = server.handle
        dsn = f"mysql://{maria_server.BENCH_USER}:{h.password}@127.0.0.1:{h.port}/"
        res = encbench("estimate", "--from", str(GOLDEN), "--live", dsn, "--seconds", "2", "--json")
        stop.set()
        t.join()
        conn.close()
        assert res.returncode == 0, str(res)
        assert json.loads(res.stdout)["live"]["read_bytes_per_s"] > 1e6
    finally:
        stop.set()
        server.stop()
