"""The hash workload's machinery without a server: sessions, barrier, raw speed, scaling math."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from encbench.vocab import session
from encbench.analysis import summary as analysis
from encbench.engines import concurrent
from encbench.host import rawhash
from encbench.vocab import sweep
from encbench.errors import BadValueError
from encbench.vocab.variants import VariantKey


def test_default_sessions_levels():
    assert sweep.default_sessions(2) == ("1", "2", "4")
    assert sweep.default_sessions(8) == ("1", "2", "4", "16")
    assert sweep.default_sessions(200) == ("1", "2", "4", "256")  # at most MAX_SESSIONS


def test_sessions_and_function_keys():
    key = sweep.sessions_key()
    assert key.check("8") == "8" and key.workloads == ("hash", "column") and key.named_only == ("column",)
    for bad in ("0", "257", "x"):
        with pytest.raises(BadValueError):
            key.check(bad)
    fkey = sweep.function_key({"sha256": "sha256(v)", "md5": "md5(v)"}, "sha256")
    assert fkey.default == ("sha256",) and fkey.allowed == ("sha256", "md5")


def test_the_column_workload_is_swept_only_when_sessions_are_named():
    from encbench.vocab.variants import matrix, parse_filters

    keys = [sweep.sessions_key(), VariantKey("method", "m", ("none", "pg-aes"), workloads=("column",))]
    assert matrix(keys, {}, "column") == [{"method": "none"}, {"method": "pg-aes"}]  # no --sessions: as before
    assert [v["sessions"] for v in matrix(keys, {}, "hash")] == list(sweep.default_sessions())  # hash: always
    named = matrix(keys, parse_filters(["sessions=1,2"], keys), "column")
    assert named == [{"sessions": s, "method": m} for s in ("1", "2") for m in ("none", "pg-aes")]


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
    together = concurrent.run_together(conns, execute)
    results, elapsed = together
    assert results == [0.05, 0.1, 0.02]  # in connection order
    assert max(log) - min(log) < 0.1  # released together (one after another: >= 0.15 s apart)
    assert 0.09 <= elapsed < 2  # until the slowest one ends (the upper bound loose for a busy machine)
    assert len(together.spans) == 3 and all(0 <= s < e <= elapsed for s, e in together.spans)
    assert [e - s >= c.delay for (s, e), c in zip(together.spans, conns)] == [True] * 3  # each its own session's


def test_overlap_of_sessions():
    assert session.overlap_s([(0.0, 1.0), (0.5, 2.0)]) == pytest.approx(0.5)
    assert session.overlap_s([(0.0, 1.0), (1.5, 2.0)]) < 0  # one after the other: never together
    assert session.overlap_s([]) == 0.0


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


def _column_doc(per_level: dict[int, list[float]], server_cpus: int, cores: int = 2) -> dict:
    """A result document of a column sessions sweep: sessions -> read-sessions rows_per_s per run (pg-aes), and a
    client method that ran its four operations at sessions=1 only (nothing to sweep)."""
    runs = []
    for k, thr in per_level.items():
        for t in thr:
            v = {"sessions": str(k), "method": "pg-aes"}
            runs.append({"workload": "column", "variant": v, "variant_label": f"sessions={k},method=pg-aes",
                         "warmup": False, "operations": [
                             {"operation": "read-sessions", "metrics": {"wall_s": 1.0 * k, "cpu_s": 0.5 * k,
                                                                        "client_cpu_s": 0.01},
                              "extra": {"rows_per_s": t, "sessions": k, "server_cpus": server_cpus}}]})
        runs.append({"workload": "column", "variant": {"sessions": str(k), "method": "client-gcm"},
                     "variant_label": f"sessions={k},method=client-gcm", "warmup": False,
                     "operations": [] if k > 1 else [{"operation": "read", "metrics": {"wall_s": 0.1},
                                                      "extra": {"rows_per_s": 50.0}}]})
    return {"runs": runs, "environment": {"cpu": {"logical_cores": cores}},
            "engine": {"name": "postgres", "axis": "method", "axis_baseline": "none", "variants": [],
                       "variant_keys": []}}


def test_column_sweep_efficiency_per_in_database_method_against_the_servers_cpus():
    doc = _column_doc({1: [98.0, 100.0, 102.0], 2: [156.0, 160.0, 164.0]}, server_cpus=2)
    scale = analysis.scaling(doc, analysis.collect(doc))
    assert [(e["workload"], e["function"], e["operation"], e["sessions"]) for e in scale] == [
        ("column", "pg-aes", "read-sessions", 1), ("column", "pg-aes", "read-sessions", 2)]  # not the client method
    two = scale[1]
    assert two["efficiency"] == pytest.approx(0.8, abs=0.01) and two["cores"] == 2  # 160 / (2 x 100)
    assert two["efficiency_ci"][0] < two["efficiency"] < two["efficiency_ci"][1]
    # a server pinned to one CPU: the ideal at 2 sessions is 1 x, and a note says so
    pinned = _column_doc({1: [100.0, 100.0, 100.0], 2: [95.0, 95.0, 95.0]}, server_cpus=1)
    a = analysis.analyze(pinned)
    assert a.scaling[1]["efficiency"] == pytest.approx(0.95) and a.scaling[1]["cores"] == 1
    assert any("could run on 1 of the machine's 2 CPUs" in n for n in a.notes)
    assert any("client methods and none are measured at sessions=1 only" in n for n in a.notes)
    line = next(h for h in a.headline if h["label"] == "column sweep, pg-aes")
    assert "at 2 sessions efficiency 0.95" in line["detail"]
    from encbench.report import render

    text = render.scaling_lines(a, "column")
    assert text[0].startswith("column pg-aes/read-sessions 1 sessions") and "efficiency 0.95" in text[1]
    assert render.scaling_lines(a, "hash") == []


def test_column_sweep_profile_is_the_generic_profile_of_read_sessions():
    doc = _column_doc({1: [100.0, 100.0]}, server_cpus=2)
    prof = {"top_functions": [["pgp_decrypt", 0.5]], "top_objects": [["pgcrypto.so", 0.6]], "libcrypto_share": 0.4,
            "lock_share": 0.01, "sample_count": 100, "frequency_hz": 499, "event": "cpu-clock"}
    doc["runs"].append({"workload": "column", "variant": {"sessions": "2", "method": "pg-aes"},
                        "variant_label": "sessions=2,method=pg-aes", "warmup": True, "operations": [
                            {"operation": "profile:read-sessions", "metrics": {}, "extra": {"profile": prof}},
                            {"operation": "profile:insert", "metrics": {}, "extra": {"profile": prof}}]})
    assert analysis.profiles(doc) == [dict(prof, workload="column", function="pg-aes", sessions=2, has_folded=False)]
