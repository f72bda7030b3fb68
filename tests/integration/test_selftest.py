"""`encbench selftest` end to end: the real CLI, real SQLCipher, a very small configuration
(one workload, 1 MB, 2 runs per variant, no warmup: two invocations of a few seconds)."""

from __future__ import annotations

import json
import math

import pytest

from encbench.analysis import summary as analysis
from encbench.lab import selftest

pytestmark = pytest.mark.integration

SMALL = ("selftest", "--workload", "scan-eq", "--size", "1MB", "--runs", "2", "--warmups", "0")


@pytest.fixture(scope="module")
def small(encbench, data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("selftest")
    floor = out / "floor.json"
    res = encbench(*SMALL, "--data-dir", str(data_dir), "--save-floor", str(floor), "--keep-results", str(out),
                   "--json")
    assert res.returncode in (0, 18), str(res)
    return res, json.loads(res.stdout), floor, out


def test_selftest_prints_every_figure(small):
    res, r, _, _ = small
    assert "Traceback" not in res.stdout + res.stderr
    assert r["engine"] == "sqlite" and r["workloads"] == ["scan-eq"] and r["runs_per_variant"] == 2
    assert len(r["invocation_s"]) == 2 and all(s > 0 for s in r["invocation_s"])
    for side in ("within_run", "cross_run"):
        t = r[side]["total"]
        assert t["compared"] + t["not_judged"] > 0 and 0 <= t["flagged"] <= t["compared"]
    for floors in (r["noise_floor"], r["overhead_floor"]):
        for metric in ("wall_s", "cpu_s"):
            f = floors[metric]
            assert math.isfinite(f["floor_pct"]) and 0 <= f["floor_pct"] <= f["detectable_pct"]
            assert f["method"]
    assert isinstance(r["cold_cache"]["fadvise_works"], bool) and r["cold_cache"]["cold_operations"] == 2 * 2 * 4
    assert isinstance(r["placement"]["sched_setaffinity"], bool)
    assert r["verdict"].startswith("this machine can resolve")
    assert (res.returncode == 0) == r["passed"] == ("FAILED" not in r["verdict"])


def test_selftest_counts_every_placebo_twin_and_cross_run_row(small):
    _, r, _, out = small
    docs = [json.loads((out / f"selftest-{i}.json").read_text()) for i in (1, 2)]
    assert [d["status"] for d in docs] == ["complete", "complete"]
    twins = [c for d in docs for c in analysis.analyze(d)["placebo_comparisons"] if c["metric"] in ("wall_s", "cpu_s")]
    # 4 variants (encryption x cache), each with a twin; the scan and the connection open; 2 invocations
    assert len(twins) == 2 * 2 * 4 * 2
    t = r["within_run"]["total"]
    assert t["compared"] + t["not_judged"] == len(twins)


def test_selftest_floor_file_is_the_one_printed_and_reproducible(small):
    _, r, floor, out = small
    saved = json.loads(floor.read_text())
    assert saved["schema"] == 1 and saved["machine"]["logical_cores"] >= 1 and saved["measured"].endswith("Z")
    assert saved["metrics"]["wall_s"]["floor_pct"] == r["noise_floor"]["wall_s"]["floor_pct"]
    docs = [json.loads((out / f"selftest-{i}.json").read_text()) for i in (1, 2)]
    a, b = selftest.log_stats(docs[0]), selftest.log_stats(docs[1])
    again = selftest.noise_floor(selftest.absolute_rows(a, b, "cpu_s"), runs=2, invocation_s=None)
    assert again["floor_pct"] == pytest.approx(saved["metrics"]["cpu_s"]["floor_pct"])
    assert again["rows"] == 8  # encryption x cache x placebo twin, the scan only (the open is left out)
    from encbench.analysis import gate

    if hasattr(gate, "load_floor"):
        assert gate.load_floor(floor)["absolute"]["cpu_s"] == pytest.approx(saved["metrics"]["cpu_s"]["floor_pct"])


def test_selftest_text_output(small):
    res, r, _, _ = small
    text = "\n".join(selftest.lines(r))  # what the CLI prints without --json
    for words in ("false positives", "within a run (placebo twins)", "across the two invocations (compare)",
                  "noise floor per metric", "cold cache: posix_fadvise", "CPU placement:", "verdict: this machine"):
        assert words in text
    assert "invocation 2 of 2" in res.stderr


@pytest.mark.parametrize("args, code, words", [
    (("--runs", "0"), 4, "--runs"),
    (("--engine", "nope"), 3, "nope"),
    (("--workload", "nope"), 3, "nope"),
    (("--size", "huge"), 4, "huge"),
    (("--save-floor", "/nonexistent-dir/floor.json"), 5, "floor.json"),
    (("--keep-results", "/nonexistent-dir"), 5, "nonexistent"),
])
def test_selftest_bad_input(encbench, data_dir, args, code, words):
    res = encbench("selftest", "--data-dir", str(data_dir), *args)
    assert res.returncode == code, str(res)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("encbench: error:") and words in lines[0], str(res)
    assert res.stdout == ""
