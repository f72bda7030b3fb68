"""The in-query hash workload (seed 004) on real PostgreSQL and MariaDB servers: the sessions
sweep, the scaling figures, the perf profile where perf can sample, plots and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from encbench.profiling.profiler import Profiler
from integration_helpers import HAVE_MARIADB, HAVE_PG, assert_one_line_error, external_pg, own_command_lines

pytestmark = pytest.mark.integration

PERF = Profiler.available()  # None: perf can sample here

SMALL = ["--rows", "20000", "--runs", "2", "--warmups", "1"]


def _check_sweep(doc: dict, out: Path, functions: set[str]) -> None:
    assert doc["status"] == "complete"
    levels = {(e["function"], e["operation"], e["sessions"]) for e in doc["scaling"]}
    assert levels >= {(f, op, k) for f in functions for op in ("hash", "baseline") for k in (1, 2)}
    for e in doc["scaling"]:
        assert e["throughput"] > 0 and e["efficiency"] is not None and e["runs"] == 2
        assert 0 <= e["client_cpu_share"] < 1
    ops = [op for r in doc["runs"] for op in r["operations"] if op["operation"] in ("hash", "baseline")]
    assert all(op["extra"]["results_agree"] == 1 and op["metrics"]["cpu_s"] > 0 for op in ops)
    assert {c["function"] for c in doc["hash_costs"]} == functions
    assert all(c["raw_us_per_call"] > 0 for c in doc["hash_costs"])
    assert Path(f"{out.with_suffix('')}-scaling.png").stat().st_size > 0
    assert Path(f"{out.with_suffix('')}-scaling.svg").stat().st_size > 0
    profiles = doc["profiles"]
    assert {(p["function"], p["sessions"]) for p in profiles} == {(f, k) for f in functions for k in (1, 2)}
    measured = [op["operation"] for r in doc["runs"] if not r["warmup"] for op in r["operations"]]
    assert "profile" not in measured  # perf runs only in the warmups
    if PERF is None:
        assert all("error" not in p and p["sample_count"] > 0 for p in profiles), profiles
        for f in functions:
            svg = Path(f"{out.with_suffix('')}-flame-{f}-s2.svg")
            assert svg.read_text().startswith("<?xml") or "<svg" in svg.read_text()[:300]
    else:
        assert all(p["error"] == PERF for p in profiles)
        assert any(PERF in n for n in doc["notes"])


@pytest.mark.skipif(not HAVE_PG, reason="PostgreSQL server binaries not installed")
def test_postgres_sweep_with_profile(encbench, tmp_path):
    out = tmp_path / "pg-hash.json"
    res = encbench("run", "--engine", "postgres", "--sessions", "1,2", "--profile", *SMALL, "-o", str(out),
                   timeout=600)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    _check_sweep(doc, out, {"sha256"})
    assert "Scaling of the in-query hash" in res.stdout and "efficiency" in res.stdout
    if PERF is None:  # PostgreSQL's sha256() goes through OpenSSL's EVP API
        assert all(p["libcrypto_share"] > 0 for p in doc["profiles"])
    shown = encbench("show", str(out))
    assert shown.returncode == 0 and "scaling.png" in shown.stdout, str(shown)


@pytest.mark.skipif(not HAVE_MARIADB, reason="MariaDB server binaries not installed")
def test_mariadb_sweep_two_functions(encbench, tmp_path):
    out = tmp_path / "maria-hash.json"
    res = encbench("run", "--engine", "mariadb", "--sessions", "1,2", "--function", "sha2-256,md5", "--profile",
                   *SMALL, "-o", str(out), timeout=600)
    assert res.returncode == 0, str(res)
    _check_sweep(json.loads(out.read_text()), out, {"sha2-256", "md5"})
    assert not [c for c in own_command_lines("mariadbd") if "encbench-maria-" in c]


def test_bad_hash_input(encbench, tmp_path):
    res = encbench("run", "--engine", "postgres", "--function", "sha3", "-o", str(tmp_path / "a.json"))
    line = assert_one_line_error(res, 3)
    assert "sha256" in line and "hmac-sha256" in line  # the valid ones are listed
    res = encbench("run", "--engine", "mariadb", "--function", "sha256", "-o", str(tmp_path / "b.json"))
    assert "sha2-256" in assert_one_line_error(res, 3)
    res = encbench("run", "--engine", "postgres", "--sessions", "0", "-o", str(tmp_path / "c.json"))
    assert_one_line_error(res, 4)
    res = encbench("run", "--engine", "sqlite", "--sessions", "2", "-o", str(tmp_path / "d.json"))
    assert_one_line_error(res, 3)  # SQLite has no sessions sweep


@pytest.fixture(scope="module")
def small_pg():
    """An external server with few connections and no pgcrypto."""
    with external_pg({"max_connections": "20"}) as server:
        yield server


def test_external_limits_are_clear(encbench, tmp_path, small_pg):
    dsn = f"postgresql://postgres:{small_pg.password}@127.0.0.1:{small_pg.port}/postgres"
    res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--sessions", "1,30", *SMALL,
                   "-o", str(tmp_path / "a.json"), timeout=300)
    assert "max_connections=20" in assert_one_line_error(res, 4)
    res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--sessions", "1", "--function", "digest-sha256",
                   *SMALL, "-o", str(tmp_path / "b.json"), timeout=300)
    assert "CREATE EXTENSION pgcrypto" in assert_one_line_error(res, 10)
    res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--allow-reconfigure", "--sessions", "1",
                   "--function", "digest-sha256,hmac-sha256", *SMALL, "-o", str(tmp_path / "c.json"), timeout=300)
    assert res.returncode == 0, str(res)
    assert {c["function"] for c in json.loads((tmp_path / "c.json").read_text())["hash_costs"]} == \
        {"digest-sha256", "hmac-sha256"}
    import psycopg

    with psycopg.connect(**small_pg.conninfo(), sslmode="disable") as c:  # created for the run, dropped after it
        assert c.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pgcrypto'").fetchone()[0] == 0
