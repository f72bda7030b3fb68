"""`encbench compare --fail-if` (the regression gate) and `encbench estimate`, from result
files and live against real servers under a read load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integration_helpers import assert_one_line_error, same_build_runs, scale_encrypted

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "results-v1.json"


GATE_RUN = ("run", "--size", "2MB", "--runs", "6", "--warmups", "1", "--workload", "scan-like",
            "--variant", "cache=cold", "--variant", "kdf_iter=4000")


@pytest.fixture(scope="module")
def same_build(encbench, data_dir, tmp_path_factory) -> tuple[Path, Path]:
    """Two real default-shaped runs of the same build, minutes apart: 6 runs per variant each."""
    out = tmp_path_factory.mktemp("gate")
    return same_build_runs(encbench, GATE_RUN, data_dir, out)



def test_gate_passes_two_runs_of_the_same_build(encbench, same_build):
    a, b = same_build
    res = encbench("compare", str(a), str(b), "--fail-if", "overhead>5%", "--fail-if", "cpu_overhead>5%")
    # an unchanged build is never failed; on a noisy machine a row may not be resolved at 5% (exit 23, said so)
    assert res.returncode in (0, 23) and "FAIL  " not in res.stdout, str(res)
    assert ("gate: passed" in res.stdout) == (res.returncode == 0), str(res)
    if res.returncode == 23:
        assert "NOT RESOLVED  " in res.stdout and "runs per side would resolve" in res.stdout, str(res)
    assert "comparisons checked" in res.stdout and "Holm" in res.stdout
    res = encbench("compare", str(a), str(b), "--fail-if", "overhead>5%", "--json")
    assert res.returncode in (0, 23), str(res)
    out = json.loads(res.stdout)
    kinds = {(r["kind"], r["metric"]) for r in out["comparisons"]}
    assert {("overhead", "wall_s"), ("overhead", "cpu_s"), ("absolute", "wall_s"), ("absolute", "cpu_s")} <= kinds
    for r in out["comparisons"]:
        assert r["verdict"] in ("costs", "saves", "no_cost", "inconclusive", "too_few_runs", "no_estimate")
        assert r["ratio"] is None or r["ci"][0] <= r["ratio"] <= r["ci"][1]
        if r["kind"] == "absolute":  # no floor file: the conservative default, said so
            assert r["floor_pct"] == 25.0 and r["floor_source"] == "default"
    assert out["gate"]["failed"] == [] and out["gate"]["checked"] >= 1
    # the connection open has absolute rows only (its overhead's denominator, a plain open, is noise)
    assert not [r for r in out["comparisons"] if r["workload"] == "(open)" and r["kind"] == "overhead"]
    assert "cannot separate the build from machine drift" in encbench("compare", str(a), str(b)).stdout


def test_gate_fails_a_30_percent_slower_encrypted_variant(encbench, same_build, tmp_path):
    a, b = same_build
    slower = scale_encrypted(b, tmp_path / "slower.json", 1.3)
    res = encbench("compare", str(a), str(slower), "--fail-if", "cpu_overhead>5%", "--json")
    rows = [r for r in json.loads(res.stdout)["comparisons"]
            if r["kind"] == "overhead" and r["metric"] == "cpu_s" and r["workload"] == "scan-like"]
    assert len(rows) == 1, str(res)
    row = rows[0]
    unchanged = {r["workload"]: r for r in json.loads(
        encbench("compare", str(a), str(b), "--json").stdout)["comparisons"]
        if r["kind"] == "overhead" and r["metric"] == "cpu_s"}["scan-like"]
    assert row["ratio"] == pytest.approx(unchanged["ratio"] * 1.3, rel=1e-6)  # exactly the injected slowdown
    # the overhead's own interval (both files' runs) says whether +30% can be told from this machine's noise:
    # when the 95% CI's lower bound clears +5%, the one-sided test (at most 5% with one row) must fail
    if row["ci"][0] > 1.05:
        assert res.returncode == 17, str(res)
    # issue 23: +30% never passes: over the limit (17), or not resolved at it (23) with the runs that would resolve it
    assert res.returncode in (17, 23), str(res)
    gate_out = json.loads(res.stdout)["gate"]
    text = encbench("compare", str(a), str(slower), "--fail-if", "cpu_overhead>5%")
    assert text.returncode == res.returncode, str(text)
    if res.returncode == 17:
        assert "FAIL  cpu_overhead>5%: scan-like/scan" in text.stdout and "gate: FAILED" in text.stdout, str(text)
    else:  # too noisy to show it over 5%: not resolved, never within, and the line says how many runs would tell
        assert gate_out["within"] == [] or all("scan-like" not in x for x in gate_out["within"]), gate_out
        assert "NOT RESOLVED  cpu_overhead>5%: scan-like/scan" in text.stdout and "runs per side" in text.stdout


def test_gate_fails_a_30_percent_slower_encrypted_variant_on_quiet_runs(encbench, same_build, tmp_path):
    """The same +30% against A itself: the injected change on top of A's own spread (no second invocation)."""
    a, _ = same_build
    doc = json.loads(a.read_text())
    slower = scale_encrypted(a, tmp_path / "a-slower.json", 1.3)
    res = encbench("compare", str(a), str(slower), "--fail-if", "cpu_overhead>5%", "--json")
    row = next(r for r in json.loads(res.stdout)["comparisons"]
               if r["kind"] == "overhead" and r["metric"] == "cpu_s" and r["workload"] == "scan-like")
    assert row["ratio"] == pytest.approx(1.3, rel=1e-9)
    assert len([r for r in doc["runs"] if not r["warmup"]]) == 2 * 6  # 2 variants x 6 runs
    if row["ci"][0] > 1.05:
        assert res.returncode == 17, str(res)
    assert res.returncode in (17, 23), str(res)  # issue 23: never passed
    if res.returncode == 23:
        assert row["verdict"] == "inconclusive", row


def test_gate_with_too_few_runs_and_bad_input(encbench, tmp_path, same_build):
    # the golden file has 3 runs per variant: no overhead row can be judged (the connection open has none),
    # so the gate cannot vouch for the build
    res = encbench("compare", str(GOLDEN), str(GOLDEN), "--fail-if", "overhead>5%")
    assert res.returncode == 23 and res.stdout.count("NOT RESOLVED  ") == 6, str(res)
    assert "too few runs for a verdict: 3 per side, need 6" in res.stdout
    assert "gate: NOT RESOLVED" in res.stdout and "nothing could be judged" in res.stdout, str(res)
    assert_one_line_error(encbench("compare", str(GOLDEN), str(GOLDEN), "--fail-if", "latency>5%"), 3)
    assert_one_line_error(encbench("compare", str(GOLDEN), str(GOLDEN), "--fail-if", "overhead>5"), 2)
    assert_one_line_error(encbench("compare", str(GOLDEN), str(GOLDEN), "--margin", "0"), 4)
    a, b = same_build
    floor = tmp_path / "floor.json"
    floor.write_text(json.dumps({"schema": 1, "metrics": {"wall_s": {"floor_pct": 3.0}, "cpu_s": {"floor_pct": 2.0}}}))
    res = encbench("compare", str(a), str(b), "--noise-floor", str(floor), "--json")
    assert res.returncode == 0, str(res)
    absolute = [r for r in json.loads(res.stdout)["comparisons"] if r["kind"] == "absolute"]
    assert {(r["metric"], r["floor_pct"], r["floor_source"]) for r in absolute} == {
        ("wall_s", 3.0, str(floor)), ("cpu_s", 2.0, str(floor))}
    assert "noise floor measured in" in encbench("compare", str(a), str(b), "--noise-floor", str(floor)).stdout
    floor.write_text(json.dumps({"schema": 9, "metrics": {}}))
    assert_one_line_error(encbench("compare", str(a), str(b), "--noise-floor", str(floor)), 7)
    floor.write_text(json.dumps({"schema": 1, "metrics": {"wall_s": {"floor_pct": -2}}}))
    assert_one_line_error(encbench("compare", str(a), str(b), "--noise-floor", str(floor)), 4)
    assert_one_line_error(encbench("compare", str(a), str(b), "--noise-floor", str(tmp_path / "none.json")), 6)


def test_estimate_from_results(encbench, tmp_path):
    res = encbench("estimate", "--from", str(GOLDEN), "--read-rate", "25MB/s", "--cores", "4", "--json")
    assert res.returncode == 0, str(res)
    out = json.loads(res.stdout)
    (reads,) = out["terms"]
    assert out["added_cores"] == pytest.approx(25e6 / 4096 * reads["unit_cost_s"])
    assert out["share_ci"][0] < out["share_of_server"] < out["share_ci"][1]
    res = encbench("estimate", "--from", str(GOLDEN), "--read-rate", "25MB/s", "--cores", "4")
    assert res.stdout.startswith("model: ") and "page reads 6,104/s x " in res.stdout and "of 4 cores" in res.stdout
    assert_one_line_error(encbench("estimate", "--from", str(GOLDEN), "--read-rate=-3MB/s"), 4)
    assert_one_line_error(encbench("estimate", "--from", str(GOLDEN)), 2)
    res = encbench("estimate", "--from", str(GOLDEN), "--read-rate", "1MB/s", "--write-rate", "1MB/s")
    assert res.returncode == 24 and "total: NOT RESOLVED: page writes" in res.stdout, str(res)  # no warm rebuild
    assert_one_line_error(encbench("estimate", "--from", str(tmp_path / "none.json"), "--read-rate", "1MB/s"), 6)
    doc = json.loads(GOLDEN.read_text())
    doc["runs"] = [r for r in doc["runs"] if r["variant"].get("cache") != "cold"]  # no cold runs: no per-page cost
    doc["derived"] = []
    no_cost = tmp_path / "nocost.json"
    no_cost.write_text(json.dumps(doc))
    res = encbench("estimate", "--from", str(no_cost), "--read-rate", "1MB/s")
    assert res.returncode == 24 and "--workload scan-eq" in res.stdout, str(res)  # no cost: what would measure it
