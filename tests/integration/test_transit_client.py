"""In-transit workloads measure the server, not the client: the PostgreSQL storm through the
native C driver (libpq), every connection's TLS checked, the client's CPU share recorded.

Real private servers started by encbench (managed mode); needs the PostgreSQL / MariaDB
server binaries and, for the native driver, cc and the libpq headers (setup --test).
"""

from __future__ import annotations

import json
import os

import pytest

from encbench.engines.mariadb import storm as maria_storm
from encbench.engines.postgres import storm as pg_storm
from encbench.drivers.client_share import SATURATED_SHARE
from integration_helpers import needs_mariadb, needs_pg

pytestmark = pytest.mark.integration

FORCED = "TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384"


def _ops(doc: dict, workload: str) -> list[tuple[dict, dict]]:
    return [(r, op) for r in doc["runs"] if r["workload"] == workload for op in r["operations"]]


@needs_pg
@pytest.mark.skipif(pg_storm.unavailable_reason() is not None, reason="the native storm driver cannot be built here")
def test_pg_storm_native_client_tls_verified_share_recorded(encbench, tmp_path):
    out = tmp_path / "storm.json"
    res = encbench("run", "--engine", "postgres", "--workload", "storm", "--runs", "2", "--warmups", "0",
                   "--variant", f"tls=off,{FORCED}", "--param", "messages=20000", "-o", str(out), timeout=300)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    ops = _ops(doc, "storm")
    assert len(ops) == 8  # 2 variants x 2 runs x (messages, loop-only)
    for run, op in ops:
        e, m = op["extra"], op["metrics"]
        assert e["client"] == "native (C, libpq)", e
        want = run["variant"]["tls"]
        # the driver's own connection, as the server reports it in pg_stat_ssl
        assert e["client_tls"] == ("no TLS" if want == "off" else want.replace(":", " ")), e
        assert e["tls_checked_connections"] == 1
        assert m["client_cpu_s"] > 0 and m["cpu_s"] > 0, m  # the driver's CPU is the client's; its backend the server's
        assert e["client_share"] == pytest.approx(m["client_cpu_s"] / m["wall_s"])
        assert e["client_share"] < SATURATED_SHARE and e["client_saturated"] == 0, e
        if op["operation"] == "messages":
            assert e["messages_received"] == 20000
            assert m["net_bytes_received"] > 20000 * 5, m  # the driver's socket, one small message each
    comps = [c for c in doc["comparisons"] if c["workload"] == "storm"]
    assert comps and not any("withheld" in c for c in comps)
    assert not os.environ.get("PGSSLMODE")  # nothing leaked into the test's own environment


@needs_pg
def test_pg_every_in_transit_workload_records_its_client_share(encbench, tmp_path):
    out = tmp_path / "all.json"
    res = encbench("run", "--engine", "postgres", "--runs", "1", "--warmups", "0", "--variant", "tls=off,on",
                   "--variant", "clients=1", "--param", "messages=3000", "--param", "native_client=0",
                   "--param", "rows=2000", "--param", "connections=8", "--param", "seconds=1",
                   "-o", str(out), timeout=300)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    for workload in ("storm", "bulk", "connect", "roundtrip"):
        ops = _ops(doc, workload)
        assert ops, workload
        for _run, op in ops:
            e, m = op["extra"], op["metrics"]
            assert e["client_share"] == pytest.approx(m["client_cpu_s"] / m["wall_s"]), (workload, e)
            assert e["client_saturated"] == int(e["client_share"] >= SATURATED_SHARE)
    assert all(op["extra"]["client"] == "python" for _r, op in _ops(doc, "storm"))  # native_client=0


@needs_mariadb
@pytest.mark.skipif(maria_storm.client_binary() is None, reason="the mariadb command-line client is not installed")
def test_mariadb_storm_native_client_tls_verified_share_recorded(encbench, tmp_path):
    out = tmp_path / "maria.json"
    res = encbench("run", "--engine", "mariadb", "--workload", "storm", "--runs", "1", "--warmups", "0",
                   "--variant", f"tls=off,{FORCED}", "--param", "messages=5000", "-o", str(out), timeout=600)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    ops = _ops(doc, "storm")
    assert len(ops) == 4
    for run, op in ops:
        e, m = op["extra"], op["metrics"]
        assert e["client"] == "native (mariadb client)", e
        want = run["variant"]["tls"]
        # the client's own connection, as the server reports it in Ssl_version / Ssl_cipher
        assert e["client_tls"] == ("no TLS" if want == "off" else want.replace(":", " ")), e
        assert m["client_cpu_s"] > 0 and m["thread_cpu_s"] > 0, m  # the client process; its connection's thread
        assert e["client_share"] == pytest.approx(m["client_cpu_s"] / m["wall_s"]), e
        assert e["client_share"] < SATURATED_SHARE and e["client_saturated"] == 0, e
        if op["operation"] == "messages":
            assert e["messages_received"] == 5000
            assert m["net_bytes_received"] > 5000 * 5, m
