"""Issue 22: `encbench estimate` takes the per-page cost measured the way the user's workload reads, never prints an
unresolved or negative cost as a figure, and is checked against a real mix."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from encbench.analysis import estimate, summary as an

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_oltp_costs import _doc  # noqa: E402  (the fabricated MariaDB measurement of issue 22)

WIDE = dict(os.environ, COLUMNS="1000")  # a wide pipe: each line whole, as the checks read them


@pytest.fixture(scope="module")
def analysis():
    return an.analyze(_doc())


def test_access_picks_the_cost_measured_that_way(analysis):
    seq = estimate.pick(analysis, access="sequential")
    rnd = estimate.pick(analysis, access="random")
    assert seq["workload"] == "scan-eq" and seq["access"] == "sequential"
    assert rnd["workload"] == "oltp" and rnd["access"] == "random"
    assert rnd["per_page_cpu_s"] == pytest.approx(4.5 * seq["per_page_cpu_s"], rel=0.1)
    assert estimate.pick(analysis)["workload"] == "scan-eq"  # the default is unchanged
    scans_only = an.analyze(dict(_doc(), runs=[r for r in _doc()["runs"] if r["workload"] != "oltp"]))
    with pytest.raises(Exception, match="no per-page cost measured with random reads"):
        estimate.pick(scans_only, access="random")


def test_an_unresolved_or_negative_cost_is_no_figure():
    base = {"workload": "scan-eq", "operation": "scan", "contender": "c", "baseline": "b", "page_size": 4096}
    negative = dict(base, per_page_cpu_s=-1.5e-6, per_page_cpu_ci=[-4e-6, 1e-6])
    spans = dict(base, per_page_cpu_s=2e-6, per_page_cpu_ci=[-0.5e-6, 4.5e-6])
    for entry in (negative, spans):
        why = estimate.unresolved(entry)
        assert "not resolved" in why and "runs per side would resolve it" in why and "--runs 20" not in why, why
    assert estimate.unresolved(dict(base, per_page_cpu_s=2e-6, per_page_cpu_ci=[1e-6, 3e-6])) is None


def test_the_cli_checks_the_scans_against_a_mix(tmp_path):
    doc = _doc()
    scans, oltp = tmp_path / "scans.json", tmp_path / "oltp.json"
    scans.write_text(json.dumps(dict(doc, runs=[r for r in doc["runs"] if r["workload"] != "oltp"])))
    oltp.write_text(json.dumps(dict(doc, runs=[r for r in doc["runs"] if r["workload"] == "oltp"])))
    res = subprocess.run([sys.executable, "-m", "encbench.cli", "estimate", "--from", str(scans), "--check", str(oltp),
                          "--json"], capture_output=True, text=True, timeout=60, env=WIDE)
    assert res.returncode == 0, res.stderr
    (check,) = json.loads(res.stdout)["checks"]
    assert check["error_pct"] == pytest.approx(-78, abs=3) and check["misses"], check
    res = subprocess.run([sys.executable, "-m", "encbench.cli", "estimate", "--from", str(scans), "--check", str(oltp),
                          "--read-rate", "25MB/s"], capture_output=True, text=True, timeout=60, env=WIDE)
    lines = res.stdout.splitlines()  # the model, then the check's verdict on it, before any figure (issue 30.4)
    assert res.returncode == 0 and lines[0].startswith("model: ") and lines[1].startswith("warning: ") \
        and "off by -78%" in lines[1], res.stdout + res.stderr
    res = subprocess.run([sys.executable, "-m", "encbench.cli", "estimate", "--from", str(oltp), "--read-rate",
                          "25MB/s", "--access", "random"], capture_output=True, text=True, timeout=60, env=WIDE)
    assert res.returncode == 0 and "20." in res.stdout and "cores" in res.stdout, res.stdout + res.stderr


def test_a_check_file_with_nothing_to_check_is_refused_not_ignored(tmp_path):
    """Issue 28: --check FILE without a usable oltp entry was ignored without a word (exit 0)."""
    doc = _doc()
    scans = tmp_path / "scans.json"
    scans.write_text(json.dumps(dict(doc, runs=[r for r in doc["runs"] if r["workload"] != "oltp"])))
    for extra in (["--read-rate", "25MB/s", "--json"], []):
        res = subprocess.run([sys.executable, "-m", "encbench.cli", "estimate", "--from", str(scans), "--check",
                              str(scans), *extra], capture_output=True, text=True, timeout=60)
        assert res.returncode == 4 and "has no oltp entry to check against" in res.stderr, res
        assert len(res.stderr.strip().splitlines()) == 1 and not res.stdout, res
