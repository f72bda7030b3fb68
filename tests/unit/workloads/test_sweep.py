"""The hash workload's machinery without a server: sessions, barrier, raw speed, scaling math."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from encbench.analysis import summary as analysis
from encbench.engines import concurrent
from encbench.host import rawhash
from encbench.workloads import sweep
from encbench.errors import BadValueError


def test_default_sessions_levels():
    assert sweep.default_sessions(2) == ("1", "2", "4")
    assert sweep.default_sessions(8) == ("1", "2", "4", "16")
    assert sweep.default_sessions(200) == ("1", "2", "4", "256")  # at most MAX_SESSIONS


def test_sessions_and_function_keys():
    key = sweep.sessions_key()
    assert key.check("8") == "8" and key.workloads == ("hash",)
    for bad in ("0", "257", "x"):
        with pytest.raises(BadValueError):
            key.check(bad)
    fkey = sweep.function_key({"sha256": "sha256(v)", "md5": "md5(v)"}, "sha256")
    assert fkey.default == ("sha256",) and fkey.allowed == ("sha256", "md5")


def test_sessions_must_fit_max_connections():
    concurrent.check_sessions_fit(8, 100)
    with pytest.raises(BadValueError, match="max_connections=10"):
        concurrent.check_sessions_fit(8, 10)


class FakeConn:
    def __init__(self, log, delay):
        self.log, self.delay = log, delay


def test_run_together_starts_every_session_at_once():
    log: list[float] = []
    lock = threading.Lock()

    def execute(conn):
        with lock:
            log.append(time.perf_counter())
        time.sleep(conn.delay)
        return conn.delay

    conns = [FakeConn(log, 0.05), FakeConn(log, 0.1), FakeConn(log, 0.02)]
    results, elapsed = concurrent.run_together(conns, execute)
    assert results == [0.05, 0.1, 0.02]  # in connection order
    assert max(log) - min(log) < 0.03  # released together
    assert 0.09 <= elapsed < 0.5  # until the slowest one ends


def test_run_together_raises_the_first_error_after_all_end():
    ended = []

    def execute(conn):
        if conn.delay == 0:
            raise RuntimeError("boom")
        time.sleep(conn.delay)
        ended.append(conn)

    with pytest.raises(RuntimeError, match="boom"):
        concurrent.run_together([FakeConn(None, 0), FakeConn(None, 0.05)], execute)
    assert len(ended) == 1


def test_openssl_speed_output_parsed(monkeypatch):
    out = ("Doing sha256 ops for 1s on 10 size blocks: 7307634 sha256 ops in 1.00s\n"
           "version: 3.0.19\nThe 'numbers' are in 1000s of bytes per second processed.\n"
           "type             10 bytes\nsha256           73076.34k\n")
    monkeypatch.setattr(rawhash.shutil, "which", lambda name: "/usr/bin/openssl")
    monkeypatch.setattr(rawhash.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=out, stderr=""))
    assert rawhash._openssl_speed("sha256", 10, hmac_mode=False) == pytest.approx(7_307_634)
    monkeypatch.setattr(rawhash.shutil, "which", lambda name: None)
    assert rawhash._openssl_speed("sha256", 10, hmac_mode=False) is None


def test_raw_hash_is_measured():
    r = rawhash.raw_hash("sha256", seconds=0.02, repeats=3)
    assert r["us_per_call"] > 0 and r["hashlib_us_per_call"] > 0 and r["input_bytes"] == rawhash.VALUE_BYTES
    assert rawhash.raw_hash("hmac-sha256", seconds=0.02, repeats=3)["algorithm"] == "HMAC-SHA256"


def _doc(per_level: dict[int, tuple[list[float], list[float]]], cores: int = 2) -> dict:
    """A result document with hash runs: sessions -> (rows_per_s per run, wall per run)."""
    runs = []
    for k, (thr, wall) in per_level.items():
        for t, w in zip(thr, wall):
            v = {"function": "sha256", "sessions": str(k)}
            runs.append({"workload": "hash", "variant": v, "variant_label": f"function=sha256,sessions={k}",
                         "warmup": False, "operations": [
                             {"operation": "hash", "metrics": {"wall_s": w, "cpu_s": w * min(k, cores),
                                                              "client_cpu_s": 0.01},
                              "extra": {"rows_per_s": t, "rows_hashed": 1000 * k}}]})
    return {"runs": runs, "environment": {"cpu": {"logical_cores": cores}},
            "engine": {"name": "postgres", "axis": "sessions", "axis_baseline": "1", "variants": [],
                       "variant_keys": []},
            "calibration": {"raw_hash": {"sha256": {"us_per_call": 0.1, "method": "m"}}}}


def test_efficiency_and_degradation():
    doc = _doc({1: ([100.0, 100.0, 100.0], [1.0, 1.0, 1.0]),
                2: ([180.0, 180.0, 180.0], [1.1, 1.1, 1.1]),
                4: ([200.0, 200.0, 200.0], [2.0, 2.0, 2.0])})
    scale = {e["sessions"]: e for e in analysis.scaling(doc, analysis.collect(doc))}
    assert scale[1]["efficiency"] == pytest.approx(1.0)
    assert scale[2]["efficiency"] == pytest.approx(0.9)  # 180 / (2 x 100)
    assert scale[4]["efficiency"] == pytest.approx(1.0)  # 200 / (min(4, 2 cores) x 100)
    assert scale[4]["degradation"] == pytest.approx(2.0)
    assert scale[2]["client_cpu_share"] == pytest.approx(0.01 / (0.01 + 2.2))


def test_hash_cost_per_row_against_raw():
    doc = _doc({1: ([100.0, 100.0], [1.0, 1.0])})
    base = {"operation": "baseline", "metrics": {"wall_s": 0.1, "cpu_s": 0.1, "client_cpu_s": 0.0},
            "extra": {"rows_per_s": 1000.0, "rows_hashed": 1000}}
    for r in list(doc["runs"]):
        r["operations"].append(base)
    costs = analysis.hash_costs(doc, analysis.scaling(doc, analysis.collect(doc)))
    assert len(costs) == 1
    c = costs[0]  # 1.0 s / 1000 rows = 1000 µs with, 100 µs without
    assert c["hash_us_per_row"] == pytest.approx(1000) and c["function_us_per_row"] == pytest.approx(900)
    assert c["times_raw"] == pytest.approx(9000)
