"""Issue 23: `encbench run --meter instructions` against the real engines, counted by valgrind's callgrind.

Small runs (each well under 3 minutes on 2 busy cores): the SQLite worker under callgrind (a cold scan, encrypted
vs plain), the private PostgreSQL server under callgrind (a TLS storm and roundtrip), the private MariaDB server
under callgrind (a TLS bulk read); and the bad input: valgrind missing, --dsn, a workload that cannot be metered, a
server that does not start under valgrind in time. Nothing is left running after any of them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import psutil
import pytest

from integration_helpers import assert_one_line_error, needs_mariadb, needs_pg, temp_dir, uses_our_temp_dir

pytestmark = pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind not installed (scripts/setup.sh)")
TIMEOUT = 600


def _callgrind_pids() -> set[int]:
    """Processes under callgrind of this test process: their command line names a path in its temporary directory,
    or they run with that directory (not another test process's, running meanwhile)."""
    prefix = str(temp_dir()) + "/"
    out = set()
    for p in psutil.process_iter(["cmdline"]):
        line = " ".join(p.info["cmdline"] or [])
        if "--tool=callgrind" in line and (prefix in line or uses_our_temp_dir(p)):
            out.add(p.pid)
    return out


@pytest.fixture
def nothing_left():
    """No process under callgrind started by the test outlives it."""
    before = _callgrind_pids()
    yield
    left = _callgrind_pids() - before
    assert not left, [" ".join(psutil.Process(p).cmdline())[:200] for p in left if psutil.pid_exists(p)]


def _ops(doc: dict):
    for run in doc["runs"]:
        for op in run["operations"]:
            yield run, op


# a raw key (no PBKDF2 at open): the passphrase's 256,000 key derivation iterations are 1.8 billion instructions at
# each encrypted open, 20 times the 3 MB cold scan's 86 million (about 3 s of each encrypted run under callgrind here);
# the page cipher and HMAC counted are the same (test_advise.py ranks the key forms)
SQLITE_METERED = ("run", "--meter", "instructions", "--quick", "--workload", "scan-eq", "--variant", "cache=cold",
                  "--variant", "key=raw")


def _opens_repeat(doc: dict) -> bool:
    """Do the connection open's instruction counts of each side repeat within 0.1% (an exact count's rule)?"""
    by_side: dict = {}
    for run in doc["runs"]:
        if not run.get("warmup"):
            by_side.setdefault(run["variant"]["encryption"], []).append(run["open"]["instructions"])
    return all(max(v) / min(v) < 1.001 for v in by_side.values())


def test_sqlite_is_counted_in_its_worker(encbench, tmp_path, nothing_left):
    out = tmp_path / "s.json"
    res = encbench(*SQLITE_METERED, "--data-dir", str(tmp_path / "data"), "-o", str(out), timeout=TIMEOUT)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    counts = {}
    for run, op in _ops(doc):
        assert op["metrics"]["instructions"] > 0 and "instructions_profile" in op["extra"]
        counts.setdefault(run["variant"]["encryption"], []).append(op["metrics"]["instructions"])
        assert run["open"]["instructions"] > 0  # the first (only) workload's runs count the open
    # exact: the runs of a variant agree to 0.1%; an encrypted cold scan costs several times the plain one
    for values in counts.values():
        assert max(values) / min(values) < 1.001, counts
    assert min(counts["on"]) > 3 * max(counts["off"])
    assert doc["meter"]["kind"] == "instructions" and doc["meter"]["simulated_cpu_features"] is not None
    assert {p["family"] for p in doc["meter"]["code_paths"]} == {"AES-CBC", "SHA-512"}
    raw = doc["calibration"]["raw_cipher_instructions"]["4096"]["per_page"]
    assert 50_000 < raw < 200_000
    a = doc["instructions"]
    (e,) = [x for x in a["attribution"] if x["workload"] == "scan-eq"]
    assert e["groups"][0]["group"] == "SHA-512" and e["groups"][0]["role"] == "the page HMAC"
    (page,) = a["per_page"]
    assert 0.8 < page["per_page"] / raw < 1.5, page
    detail = encbench("show", str(out), "--detail")  # the headline's whole sentence: where the instructions went
    assert detail.returncode == 0, str(detail)
    assert "of the added instructions are the page HMAC (SHA-512)" in detail.stdout
    show = encbench("show", str(out))
    assert show.returncode == 0, str(show)
    assert "CPU-model gap: valgrind's simulated CPU" in show.stdout
    assert "mean instructions" in show.stdout and "Where the instructions go" in show.stdout
    # issue 30 item 11: 2 runs per side of an exact count give verdicts, and a second run of the same build passes a
    # 1% gate on them (it used to be "NOT RESOLVED: 0 of 0 comparisons", exit 23)
    counted = [c for c in doc["comparisons"] if c["metric"] == "instructions" and "verdict_basis" in c]
    scans = [c for c in counted if c["workload"] != "(open)"]
    assert scans and all(c.get("exact") and c["verdict"] == "costs" for c in scans), scans
    # the connection open: exact too when its runs repeat within 0.1%; the plain open's count once differed by 0.13%
    # between two runs (926,061 vs 927,220), and then the rule says "too few runs", as it should
    repeat = _opens_repeat(doc)
    for c in counted:
        if c["workload"] == "(open)":
            assert (c.get("exact") and c["verdict"] == "costs") if repeat else not c.get("exact"), c
    if repeat:
        assert "too few runs" not in show.stdout
    again = tmp_path / "s2.json"
    res = encbench(*SQLITE_METERED, "--data-dir", str(tmp_path / "data"), "-o", str(again), timeout=TIMEOUT)
    assert res.returncode == 0, str(res)
    gate = encbench("compare", str(out), str(again), "--fail-if", "instructions>1%")
    if repeat and _opens_repeat(json.loads(again.read_text())):
        assert gate.returncode == 0 and "gate: passed" in gate.stdout, str(gate)
    else:  # an open whose 2 runs differ by more than 0.1% is no exact count: that row alone may stay unresolved
        unresolved = [ln for ln in gate.stdout.splitlines() if ln.startswith("NOT RESOLVED")]
        assert gate.returncode == 0 or (gate.returncode == 23 and unresolved and all(
            "(open)/connect" in ln for ln in unresolved)), str(gate)


@needs_pg
def test_postgres_private_server_under_callgrind(encbench, tmp_path, nothing_left):
    out = tmp_path / "p.json"
    res = encbench("run", "--engine", "postgres", "--meter", "instructions", "--quick", "--workload", "storm",
                   "--workload", "roundtrip", "--variant", "tls=off,on", "--variant", "clients=1",
                   "--param", "messages=1000", "--param", "metered_queries=50", "--runs", "2",
                   "--data-dir", str(tmp_path / "data"),
                   "-o", str(out), timeout=TIMEOUT)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    for run, op in _ops(doc):
        assert op["metrics"]["instructions"] > 0, (run["variant_label"], op)
    rt = [op for run, op in _ops(doc) if run["workload"] == "roundtrip"]
    assert all(op["extra"]["queries"] == 50 for op in rt)  # fixed work under the meter
    storms = {run["variant"]["tls"]: op["metrics"]["instructions"] for run, op in _ops(doc)
              if op["operation"] == "messages"}
    assert storms["on"] > 1.2 * storms["off"]  # every notice encrypted
    comps = {(c["workload"], c["metric"]) for c in doc["comparisons"] if "verdict_basis" in c}
    assert ("roundtrip", "instructions_per_query") in comps and ("storm", "instructions") in comps
    show = encbench("show", str(out))
    # the table words the roundtrip's metric whatever its verdict (2 runs resolve only counts that repeat within 0.1%)
    assert "instructions per op" in show.stdout and "CPU-model gap" in show.stdout, show.stdout[-3000:]
    summary = show.stdout.split("encbench ")[0]
    assert "TLS roundtrip:" in summary, summary


@needs_mariadb
def test_mariadb_private_server_under_callgrind(encbench, tmp_path, nothing_left):
    out = tmp_path / "m.json"
    res = encbench("run", "--engine", "mariadb", "--meter", "instructions", "--quick", "--workload", "bulk",
                   "--variant", "tls=off,on", "--param", "rows=5000", "--runs", "2", "--warmups", "0",
                   "--data-dir", str(tmp_path / "data"),
                   "-o", str(out), timeout=TIMEOUT)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    counts = {run["variant"]["tls"]: op["metrics"]["instructions"] for run, op in _ops(doc)}
    assert counts["on"] > 1.2 * counts["off"], counts
    (e,) = doc["instructions"]["attribution"]
    assert e["groups"] and e["added_instructions"] > 0


def test_valgrind_missing_is_exit_10(encbench, tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(sys.executable, bare / "python")
    res = encbench("run", "--meter", "instructions", "-o", str(tmp_path / "x.json"), env={"PATH": str(bare)})
    line = assert_one_line_error(res, 10)
    assert "valgrind not found" in line and "apt-get install valgrind" in line
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("args,words", [
    (("--engine", "postgres", "--dsn", "postgresql://u@127.0.0.1:1/db"), "not with --dsn"),
    (("--engine", "postgres", "--workload", "scan-like", "--variant", "encryption=off"),
     "workloads it can: storm, roundtrip, bulk, connect"),
    (("--engine", "mariadb", "--workload", "connect"), "workloads it can: storm, roundtrip, bulk"),
])
def test_what_cannot_be_metered_is_refused_in_one_line(encbench, tmp_path, args, words):
    res = encbench("run", "--meter", "instructions", *args, "-o", str(tmp_path / "x.json"))
    line = assert_one_line_error(res, 4)
    assert words in line
    assert not (tmp_path / "x.json").exists()


@needs_pg
def test_a_server_not_started_under_valgrind_in_time_keeps_its_log(encbench, tmp_path, nothing_left):
    data = tmp_path / "data"
    res = encbench("run", "--engine", "postgres", "--meter", "instructions", "--quick", "--workload", "bulk",
                   "--data-dir", str(data), "-o", str(tmp_path / "x.json"),
                   env={"ENCBENCH_VALGRIND_START_TIMEOUT_S": "0.5"}, timeout=TIMEOUT)
    line = assert_one_line_error(res, 10)
    assert "did not start under valgrind" in line and "its log kept: " in line
    kept = Path(line.rsplit("its log kept: ", 1)[1].rstrip(")"))
    assert kept.is_file() and kept.parent == data and oct(kept.stat().st_mode & 0o777) == "0o600"
