"""--profile on the embedded engine: perf records the worker during the warmup runs of any workload,
flame graphs land next to the results, and the report says where the encrypted variant's time goes."""

from __future__ import annotations

import json

import pytest

from encbench.profiling.profiler import Profiler

PERF = Profiler.available()  # None: perf can sample here


@pytest.mark.skipif(PERF is not None, reason=f"perf cannot record on this machine: {PERF}")
def test_sqlite_profile_any_workload(encbench, data_dir, tmp_path):
    out = tmp_path / "prof.json"
    res = encbench("run", "--size", "2MB", "--runs", "2", "--warmups", "1", "--workload", "scan-eq",
                   "--variant", "cache=warm", "--profile", "--data-dir", str(data_dir), "-o", str(out))
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    profiled = [op for run in doc["runs"] if run["warmup"] for op in run["operations"]
                if op["operation"] == "profile:scan"]
    assert len(profiled) == 2 and all(op["extra"]["profile"]["sample_count"] > 0 for op in profiled)
    assert all(op["extra"]["profile_repeats"] >= 1 for op in profiled)
    assert not any(op["operation"].startswith("profile") for run in doc["runs"] if not run["warmup"]
                   for op in run["operations"])  # measured runs are never profiled
    flames = sorted(tmp_path.glob("prof-flame-scan-eq-scan-*.svg"))
    assert len(flames) == 2 and all("<svg" in f.read_text() for f in flames)
    line = [n for n in doc["notes"] if n.startswith("CPU profile (perf, warmup runs): scan-eq/scan")]
    assert line and "in libcrypto/SQLCipher" in line[0], doc["notes"]
    assert "CPU profile (perf, warmup runs): scan-eq/scan" in res.stdout
