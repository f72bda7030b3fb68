"""`encbench run` end to end: the real CLI against real SQLCipher at 2 MB."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from statistics import fmean

import pytest

from integration_helpers import scratch_dirs

pytestmark = pytest.mark.integration

SCANS = ("scan-eq", "scan-like")
COMPARISON_KEYS = {"workload", "metric", "baseline", "contender", "ratio", "ci", "significant"}


def _op_metric_values(doc, workload, operation, variant_label, metric, *, warmup):
    return [op["metrics"][metric] for run in doc["runs"]
            if run["workload"] == workload and run["variant_label"] == variant_label and run["warmup"] is warmup
            for op in run["operations"] if op["operation"] == operation and metric in op["metrics"]]


# -- 1. happy path ------------------------------------------------------------------------

def test_happy_path_exit_and_table(happy):
    res, _, path = happy
    assert res.returncode == 0
    assert "Traceback" not in res.stdout + res.stderr
    for word in ("scan-eq", "scan-like", "cache=cold", "cache=warm", "verdict"):
        assert word in res.stdout, str(res)
    assert "results written to" in res.stderr and path.name in res.stderr  # (long paths wrap: see the xfail below)


def test_happy_path_result_file(happy):
    _, doc, _ = happy
    assert doc["schema_version"] == 1
    assert doc["status"] == "complete"
    assert doc["error"] is None
    assert doc["engine"]["name"] == "sqlite"
    assert set(doc["workloads"]) == set(SCANS)
    assert doc["config"]["runs"] == 3 and doc["config"]["warmups"] == 1
    assert doc["config"]["size_bytes"] == 2_000_000


def test_happy_path_warmups_tagged_and_counted(happy):
    _, doc, _ = happy
    variants = doc["engine"]["variants"]
    assert len(variants) == 4  # encryption off/on x cache cold/warm
    runs = doc["runs"]
    assert all(isinstance(r["warmup"], bool) for r in runs)
    warmups = [r for r in runs if r["warmup"]]
    measured = [r for r in runs if not r["warmup"]]
    assert len(warmups) == 1 * len(variants) * len(SCANS)
    assert len(measured) == 3 * len(variants) * len(SCANS)
    # warmups come first within each workload
    for wl in SCANS:
        flags = [r["warmup"] for r in runs if r["workload"] == wl]
        assert flags == sorted(flags, reverse=True)


def test_happy_path_summaries_exclude_warmups(happy):
    _, doc, _ = happy
    summaries = {(s["workload"], s["operation"], s["variant"], s["metric"]): s for s in doc["summaries"]}
    for v in doc["engine"]["variants"]:
        vl = ",".join(f"{k}={x}" for k, x in v.items())
        for wl in SCANS:
            s = summaries[(wl, "scan", vl, "wall_s")]
            assert s["n"] == 3, s  # the 1 warmup is not in it
            measured = _op_metric_values(doc, wl, "scan", vl, "wall_s", warmup=False)
            assert len(measured) == 3
            assert s["mean"] == pytest.approx(fmean(measured), rel=1e-9)
        opened = summaries[("(open)", "connect", vl, "wall_s")]
        assert opened["n"] == 3 * len(SCANS)


def test_happy_path_comparisons(happy):
    _, doc, _ = happy
    comps = doc["comparisons"]
    assert comps
    for c in comps:
        assert COMPARISON_KEYS <= set(c), c
        assert "encryption=off" in c["baseline"] and "encryption=on" in c["contender"]
        assert isinstance(c["significant"], bool)
        assert c["ratio"] is None or c["ratio"] >= 0  # None: 0/0; 0: nothing in the contender (e.g. pages)
        assert c["ci"] is None or (len(c["ci"]) == 2 and c["ci"][0] <= c["ci"][1])
        if c["metric"] == "wall_s":
            assert c["ratio"] > 0 and c["ci"] is not None, c
    for wl in SCANS:
        for cache in ("cold", "warm"):
            assert any(c["workload"] == wl and c["metric"] == m and f"cache={cache}" in c["contender"]
                       for c in comps for m in ("wall_s", "cpu_s")), (wl, cache)


def test_happy_path_derived_per_page_for_cold_scans(happy):
    _, doc, _ = happy
    derived = doc["derived"]
    for wl in SCANS:
        entries = [d for d in derived if d["workload"] == wl]
        assert len(entries) == 1, derived  # cold only: warm scans read no pages
        d = entries[0]
        assert "cache=cold" in d["contender"] and "encryption=on" in d["contender"]
        assert d["page_size"] == 4096
        assert d["pages_read"] > 0
        for key in ("added_cpu_s", "per_page_cpu_s", "decrypt_mb_per_s_per_core", "method"):
            assert key in d, d
        assert isinstance(d["per_page_cpu_s"], float)
    assert not any("cache=warm" in d["contender"] for d in derived)
    assert "4096" in doc["calibration"]["raw_cipher"]


def test_happy_path_pages_read_warm_zero_cold_positive(happy):
    _, doc, _ = happy
    seen = {"warm": 0, "cold": 0}
    for run in doc["runs"]:
        for op in run["operations"]:
            assert "pages_read" in op["metrics"], op
            if run["variant"]["encryption"] != "on":
                continue
            cache = run["variant"]["cache"]
            seen[cache] += 1
            if cache == "warm":
                assert op["metrics"]["pages_read"] == 0, run
            else:
                assert op["metrics"]["pages_read"] > 0, run
    assert seen == {"warm": 8, "cold": 8}  # (3 runs + 1 warmup) x 2 workloads


def test_happy_path_leaves_no_scratch(happy, data_dir):
    assert scratch_dirs(data_dir) == []
    _, _, path = happy
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []  # no temp files


def test_result_file_mode_follows_umask(happy):
    _, _, path = happy
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # an ordinary file, not mkstemp's 0600


def test_dataset_reused_on_second_run(second):
    _, doc, _ = second
    files = doc["dataset"]["files"]
    assert set(files) == {"plain-p4096.db", "enc-p4096-k256000-passphrase.db"}
    assert all(f["reused"] is True for f in files.values()), files


def test_passphrase_never_in_output(encbench, tmp_path_factory, tmp_path):
    secret = "some-secret-value-123"
    data = tmp_path_factory.mktemp("data-secret")
    out = tmp_path / "secret.json"
    res = encbench("run", "--size", "2MB", "--runs", "2", "--warmups", "0", "--workload", "scan-eq",
                   "--data-dir", str(data), "-o", str(out), env={"ENCBENCH_KEY": secret})
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert doc["status"] == "complete"
    assert doc["config"]["key_source"] == "ENCBENCH_KEY"
    assert doc["dataset"]["key_source"] == "ENCBENCH_KEY"
    raw_key = hashlib.sha256(secret.encode()).hexdigest()  # what --variant key=raw would use
    texts = {"result file": out.read_text(), "stdout": res.stdout, "stderr": res.stderr}
    texts.update({str(p): p.read_text() for p in data.rglob("*.json")})  # the data sets' metadata
    for where, text in texts.items():
        assert secret not in text, where
        assert raw_key not in text, where
    # the key was really used: the encrypted file does not open with the built-in default key
    res2 = encbench("run", "--size", "2MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq",
                    "--data-dir", str(data), "-o", str(tmp_path / "default-key.json"))
    assert res2.returncode == 8, str(res2)
    assert secret not in res2.stdout + res2.stderr


# -- 2. run --json --------------------------------------------------------------------------

def test_run_json_prints_parseable_json(encbench, data_dir, tmp_path):
    out = tmp_path / "r.json"
    res = encbench("run", "--size", "2MB", "--runs", "2", "--warmups", "0", "--workload", "scan-eq",
                   "--variant", "cache=warm", "--json", "--data-dir", str(data_dir), "-o", str(out))
    assert res.returncode == 0, str(res)
    printed = json.loads(res.stdout)
    assert printed["schema_version"] == 1
    assert printed["status"] == "complete"
    assert printed["engine"] == "sqlite"
    assert printed["summaries"] and printed["comparisons"]
    for c in printed["comparisons"]:
        assert COMPARISON_KEYS | {"verdict"} <= set(c), c
    assert any(c["workload"] == "scan-eq" and c["verdict"] for c in printed["comparisons"])
    assert json.loads(out.read_text())["status"] == "complete"


# -- 3. the other workloads -------------------------------------------------------------------

EXPECTED_OPERATIONS = {
    "dml": {"select", "insert", "update", "delete"},
    "rebuild": {"reindex", "vacuum"},
    "backup": {"to-file", "to-file+zstd"},
}


@pytest.fixture(scope="module")
def other_workloads(encbench, data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("other") / "other.json"
    res = encbench("run", "--size", "2MB", "--runs", "2", "--warmups", "0",
                   "--workload", "dml", "--workload", "rebuild", "--workload", "backup",
                   "--data-dir", str(data_dir), "-o", str(out))
    assert res.returncode == 0, str(res)
    return res, json.loads(out.read_text())


def test_other_workloads_every_operation_with_metrics(other_workloads, data_dir):
    res, doc = other_workloads
    assert doc["status"] == "complete"
    n_variants = len(doc["engine"]["variants"])
    for wl, ops in EXPECTED_OPERATIONS.items():
        runs = [r for r in doc["runs"] if r["workload"] == wl]
        assert len(runs) == 2 * n_variants
        assert all(r["warmup"] is False for r in runs)
        for run in runs:
            assert {op["operation"] for op in run["operations"]} == ops, run
            for op in run["operations"]:
                for metric in ("wall_s", "cpu_s", "pages_read"):
                    assert isinstance(op["metrics"].get(metric), (int, float)), (wl, op)
                assert op["probe_errors"] == {}, op
        assert wl in res.stdout
    compared = {(c["workload"], c["operation"]) for c in doc["comparisons"] if c["metric"] == "cpu_s"}
    for wl, ops in EXPECTED_OPERATIONS.items():
        assert {(wl, op) for op in ops} <= compared
    assert scratch_dirs(data_dir) == []


def test_other_workloads_extras(other_workloads):
    _, doc = other_workloads
    for run in doc["runs"]:
        for op in run["operations"]:
            extra = op["extra"]
            if run["workload"] == "dml":
                key = "rows_returned" if op["operation"] == "select" else "rows_affected"
                assert extra[key] > 0, (run["variant_label"], op)
            elif run["workload"] == "backup":
                assert extra["backup_bytes"] > 0 and extra["output_bytes"] > 0, op
                if op["operation"] == "to-file+zstd" and run["variant"]["encryption"] == "off":
                    assert extra["output_bytes"] < extra["backup_bytes"]  # plain pages compress


# -- the status line on stderr ----------------------------------------------------------------

def test_status_line_not_wrapped_for_long_paths(encbench, data_dir, tmp_path):
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 5)
    deep.mkdir(parents=True)  # -o never creates directories
    out = deep / "result.json"
    assert len(str(out)) > 150
    res = encbench("run", "--size", "2MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq",
                   "--variant", "encryption=off", "--variant", "cache=warm",
                   "--data-dir", str(data_dir), "-o", str(out))
    assert res.returncode == 0, str(res)
    assert out.exists()
    lines = res.stderr.splitlines()
    assert len(lines) == 1, str(res)
    assert f"encbench show {out}" in lines[0]


def test_progress_lines_for_a_log(encbench, data_dir, tmp_path):
    """--progress lines: plain lines on a pipe (a CI log), one per workload start, then the usual last line."""
    out = tmp_path / "p.json"
    res = encbench("run", "--size", "2MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq",
                   "--workload", "scan-like", "--variant", "encryption=off", "--variant", "cache=warm",
                   "--progress", "lines", "--data-dir", str(data_dir), "-o", str(out))
    assert res.returncode == 0, str(res)
    lines = res.stderr.splitlines()
    progress = [line for line in lines if line.startswith("encbench: progress: ")]
    assert any(" scan-eq " in line for line in progress) and any(" scan-like " in line for line in progress), str(res)
    assert progress[-1].startswith("encbench: progress: 2/2 runs, done"), str(res)
    assert lines[-1].startswith("results written to") and "\x1b" not in res.stderr


# -- 4. precision-driven runs (--precision, --max-time), placement and run context ----------------

def _precision_run(encbench, data_dir, tmp_path, *args):
    out = tmp_path / "precision.json"
    res = encbench("run", "--size", "2MB", "--workload", "scan-eq", "--variant", "cache=warm", "--warmups", "0",
                   *args, "--data-dir", str(data_dir), "-o", str(out))
    assert res.returncode == 0, str(res)
    return res, json.loads(out.read_text())


def test_precision_run_stops_at_the_time_budget(encbench, data_dir, tmp_path):
    res, doc = _precision_run(encbench, data_dir, tmp_path, "--precision", "0.1%", "--max-time", "12s")
    p = doc["precision"]
    assert p["target_points"] == 0.1 and p["max_time_s"] == 12
    assert p["stopped_because"] == "time budget"  # ±0.1 points is out of reach in 12 s
    measured = [r for r in doc["runs"] if not r["warmup"]]
    per_variant = {vl: sum(1 for r in measured if r["variant_label"] == vl) for vl in {r["variant_label"] for r in measured}}
    assert len(per_variant) == 2 and min(per_variant.values()) > 6  # rounds were added after the minimum
    assert set(per_variant.values()) == {p["runs_per_variant"]["scan-eq"]}  # whole ABBA rounds only
    assert p["elapsed_s"] <= 12
    rows = {r["metric"]: r for r in p["rows"]}
    assert set(rows) == {"wall_s", "cpu_s"}
    for r in rows.values():
        assert r["n_baseline"] == r["n_contender"] == p["runs_per_variant"]["scan-eq"]
        assert r["half_width_points"] > 0.1 and r["reached"] is False
    assert p["not_reached"] == 2
    assert "precision: widest CI" in res.stdout and "not reached: scan-eq/scan" in res.stdout
    rounds = [r["round"] for r in measured]
    assert rounds == sorted(rounds)  # rounds in order, two runs each
    for a, b in zip(measured[0::2], measured[1::2]):
        assert a["round"] == b["round"] and a["variant_label"] != b["variant_label"]


def test_precision_run_stops_at_the_target(encbench, data_dir, tmp_path):
    # a target any CI meets (a 2 MB cold scan-eq ratio of ~5x has a CI of several hundred points on a busy
    # machine): the stopping rule, not the machine, is under test
    res, doc = _precision_run(encbench, data_dir, tmp_path, "--precision", "1000%", "--max-time", "5m")  # the largest accepted
    p = doc["precision"]
    assert p["stopped_because"] == "precision reached"
    assert p["runs_per_variant"] == {"scan-eq": 6}  # the verdict minimum, nothing added
    assert all(r["reached"] is True for r in p["rows"]) and p["not_reached"] == 0
    # placement and the per-run context are recorded
    pl = doc["placement"]
    if len(os.sched_getaffinity(0)) >= 2:
        assert pl["pinned"] is True and len(pl["worker_cpus"]) == 1
        assert all(r["process"]["cpus"] == pl["worker_cpus"] for r in doc["runs"])
    for r in doc["runs"]:
        c = r["context"]
        assert c["duration_s"] > 0 and isinstance(c["flags"], list)
        assert "steal_pct" in c and "other_load_cores" in c
    assert doc["run_context"]["runs"] == len(doc["runs"])
    assert "placement:" in res.stdout and "run context:" in res.stdout


def test_no_pin_and_warm_repeat_divided_back(encbench, data_dir, tmp_path):
    _, doc = _precision_run(encbench, data_dir, tmp_path, "--runs", "1", "--no-pin", "--param", "repeat=3")
    assert doc["placement"]["pinned"] is False and doc["placement"]["reason"] == "--no-pin"
    assert "precision" in doc and doc["precision"]["target_points"] is None
    for r in doc["runs"]:
        op = r["operations"][0]
        assert op["repeat"] == 3 and "repeat" not in op["extra"]
        assert op["metrics"]["wall_s"] == pytest.approx(op["metrics_total"]["wall_s"] / 3)


def test_precision_bad_values_exit_4(encbench, data_dir, tmp_path):
    for args in (("--precision", "fine"), ("--max-time", "soon"), ("--precision", "5%", "--runs", "3")):
        res = encbench("run", "--size", "2MB", *args, "--data-dir", str(data_dir), "-o", str(tmp_path / "x.json"))
        assert res.returncode == 4, str(res)
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
