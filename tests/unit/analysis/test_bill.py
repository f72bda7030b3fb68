"""Issue 31: the encryption bill (analysis/bill.py) and issue 30 item 4: estimate's model line, its refusal of a
cost measured on another setup, its exit code without an estimate, the best-resolved write row, the runs hint."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from encbench import errors
from encbench.analysis import bill, estimate, unitcost
from encbench.report import bill as words

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "results-v1.json"


def cost(v, lo, hi, runs=6):
    return bill.UnitCost(v, (lo, hi), "test file", runs)


def test_a_term_is_its_rate_times_its_cost_and_the_total_ci_adds_variances():
    reads = bill.term("reads", cost(14.2e-6, 12.9e-6, 15.5e-6), bill.Rate(412.0, "counter"))
    hs = bill.term("tls_handshakes", cost(1.9e-3, 1.5e-3, 2.3e-3), bill.Rate(35.0, "counter"))
    b = bill.bill([reads, hs], 4)
    assert b.resolved and b.reasons == []
    assert reads.cores == pytest.approx(412 * 14.2e-6) and hs.cores == pytest.approx(35 * 1.9e-3)
    assert b.total == pytest.approx(reads.cores + hs.cores)
    se = math.sqrt(sum(((t.cores_ci[1] - t.cores_ci[0]) / (2 * bill.Z95)) ** 2 for t in (reads, hs)))
    assert b.ci == pytest.approx((b.total - bill.Z95 * se, b.total + bill.Z95 * se))
    # narrower than the sum of the intervals (independent errors), and never below zero when every term resolved
    assert b.ci[0] > reads.cores_ci[0] + hs.cores_ci[0] > 0
    assert b.share == pytest.approx(b.total / 4)


def test_an_unresolved_cost_leaves_no_total_and_says_what_would_resolve_it():
    spans = bill.term("writes", cost(20e-6, -5e-6, 45e-6, runs=6), bill.Rate(500.0, "counter"))
    negative = bill.term("reads", cost(-2e-6, -6e-6, 2e-6), bill.Rate(100.0, "counter"))
    missing = bill.term("log_bytes", None, bill.Rate(1e6, "counter"))
    b = bill.bill([spans, negative, missing], 2)
    assert not b.resolved and b.total is None and b.ci is None and b.share is None
    assert len(b.reasons) == 3 and all(t.cores is None for t in b.terms)
    # runs from the spread: half-width 25 µs, cost 20 µs -> (25 / 10)^2 x 6 = 37.5 -> 38 runs per side
    assert "about 38 runs per side would resolve it (6 now)" in spans.why, spans.why
    assert "--runs 20" not in " ".join(b.reasons)
    assert "no measured unit cost" in missing.why
    text = "\n".join(words.lines(b))
    assert "total: NOT RESOLVED: page writes, page reads, log bytes" in text and "cores" not in text.splitlines()[-1]


def test_absent_terms_are_not_zero_terms():
    reads = bill.term("reads", cost(10e-6, 8e-6, 12e-6), bill.Rate(1000.0, "counter"))
    none_now = bill.term("temp_bytes", None, bill.Rate(0.0, "counter"))  # no event in the window: 0, resolved
    b = bill.bill([reads, none_now], 2, absent={"tls_resumptions": "the engine never resumes"})
    assert b.resolved and none_now.cores == 0.0 and none_now.cores_ci == (0.0, 0.0)
    d = b.to_dict()
    assert [t["name"] for t in d["terms"]] == ["reads", "temp_bytes"]
    assert d["absent"] == [{"name": "tls_resumptions", "label": "resumed TLS sessions", "why": "the engine never resumes"}]
    text = words.lines(b)
    assert any("resumed TLS sessions: absent (the engine never resumes)" in x for x in text)
    assert bill.bill([], 2).resolved is False  # nothing applies: no bill, not a zero one


def test_no_rate_or_a_negative_rate_is_not_resolved():
    c = cost(10e-6, 8e-6, 12e-6)
    assert "no rate (PostgreSQL counts no bytes" in bill.term("tls_bytes", c, bill.Rate(
        None, "no counter", "PostgreSQL counts no bytes")).why
    assert "counter was reset" in bill.term("reads", c, bill.Rate(-5.0, "counter")).why


def test_rendering_of_a_term_and_the_total():
    reads = bill.term("reads", cost(14.2e-6, 12.9e-6, 15.6e-6), bill.Rate(412.0, "counter"))
    log = bill.term("log_bytes", cost(2e-9, 1e-9, 3e-9), bill.Rate(1.2e6, "counter"))
    assert words.term_line(reads) == "page reads 412/s x 14.2 µs [12.9, 15.6] = 0.59% of a core [0.53%, 0.64%]"
    assert words.term_line(log).startswith("log bytes 1.2 MB/s x 2 ns [1, 3] = 0.24% of a core")
    last = words.lines(bill.bill([reads, log], 4))[-1]
    assert last.startswith("total 0.00825 cores [") and "% of 4 cores [" in last and "delta method" in last


def test_the_best_resolved_write_row_wins_over_the_first():
    reindex = {"workload": "rebuild", "operation": "reindex", "per_page_cpu_s": 96.2e-6,
               "per_page_cpu_ci": [17.7e-6, 174.7e-6], "pages_read": 538}
    vacuum = {"workload": "rebuild", "operation": "vacuum", "per_page_cpu_s": 39.3e-6,
              "per_page_cpu_ci": [35.0e-6, 43.6e-6], "pages_read": 12491}
    assert estimate.best_resolved([reindex, vacuum])["operation"] == "vacuum"
    wide_many = dict(vacuum, per_page_cpu_ci=[17.7e-6 * 39.3 / 96.2, 174.7e-6 * 39.3 / 96.2])
    assert estimate.best_resolved([reindex, wide_many])["operation"] == "vacuum"  # same width: more pages


def test_a_cost_of_another_setup_is_refused_unless_told():
    c = cost(10e-6, 8e-6, 12e-6)
    sqlite = unitcost.Setup("sqlite", 4096, "AES-256-CBC + HMAC-SHA512 per 4096-byte page")
    costs = {"reads": (c, sqlite)}
    for target in (unitcost.Setup("mariadb", 16384, "AES_CTR"), unitcost.Setup("sqlite", 16384, None),
                   unitcost.Setup("sqlite", 4096, "AES_CTR")):
        with pytest.raises(errors.IncomparableError, match="does not price this server"):
            unitcost.priced(costs, target)
    got = unitcost.priced(costs, unitcost.Setup("mariadb", 16384, "AES_CTR"), other_setup=True)["reads"]
    assert got.value == pytest.approx(4 * c.value) and "x 4 for 16384-byte pages" in got.source
    same = unitcost.priced(costs, unitcost.Setup("sqlite", 4096, "AES-256-CBC"))
    assert same["reads"] is c and same["writes"].value is None and "--workload rebuild" in same["writes"].why


def _cli(*args):
    """estimate in a wide pipe (COLUMNS=1000): each line whole, as the checks read them."""
    return subprocess.run([sys.executable, "-m", "encbench.cli", "estimate", *args], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, COLUMNS="1000"))


def test_the_cli_says_its_model_first_and_exits_24_without_a_total(tmp_path):
    res = _cli("--from", str(GOLDEN), "--read-rate", "25MB/s", "--cores", "4")
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.startswith("model: ") and "includes: page reads" in first and "leaves out: page writes" in first
    res = _cli("--from", str(GOLDEN), "--read-rate", "25MB/s", "--write-rate", "1MB/s", "--json")
    assert res.returncode == errors.EXIT_NO_ESTIMATE == 24, res.stderr
    out = json.loads(res.stdout)
    assert out["resolved"] is False and out["added_cores"] is None and "page writes" in out["reasons"][0]
    res = _cli("--from", str(GOLDEN), "--read-rate", "25MB/s", "--engine", "mariadb")
    assert res.returncode == 9 and len(res.stderr.strip().splitlines()) == 1 and "--other-setup" in res.stderr
    res = _cli("--from", str(GOLDEN), "--rate", "tls_handshakes=35/s", "--side", "in-transit")
    assert res.returncode == 24 and "--workload connect" in res.stdout, res.stdout + res.stderr
    assert _cli("--from", str(GOLDEN), "--rate", "nonsense=3").returncode == 4


def _mix_runs(script, memory, reads, writes, plain_us, c_read_us, c_write_us, runs=6):
    out = []
    for enc in ("off", "on"):
        for i in range(runs):
            n = 1000
            noise = 1 + 0.004 * ((i * 7 + len(script)) % 5 - 2)
            cpu_us = (plain_us + (c_read_us * reads + c_write_us * writes if enc == "on" else 0)) * noise
            variant = {"encryption": enc, "script": script, "memory": memory, **({"kdf_iter": "4000"} if enc == "on"
                                                                                  else {})}
            out.append({"workload": "oltp", "variant": variant, "warmup": False,
                        "variant_label": ",".join(f"{k}={v}" for k, v in variant.items()),
                        "operations": [{"operation": "mix", "metrics": {"cpu_s": n * cpu_us / 1e6,
                                                                         "pages_read": n * reads,
                                                                         "pages_written": n * writes},
                                        "extra": {"transactions": n}}]})
    return out


def test_read_and_write_costs_are_fitted_at_once_over_the_mixes():
    from encbench.analysis import fit

    truth = {"c_read_us": 14.0, "c_write_us": 40.0}
    runs = (_mix_runs("select-only", "25%", 2.0, 0.0, 300, **truth) + _mix_runs("select-only", "10%", 4.0, 0.0, 320, **truth)
            + _mix_runs("tpcb-like", "25%", 3.0, 4.0, 900, **truth) + _mix_runs("tpcb-like", "10%", 6.0, 4.5, 950, **truth))
    keys = [{"name": k, "applies_when": [["encryption", "on"]] if k == "kdf_iter" else []}
            for k in ("encryption", "kdf_iter", "script", "memory")]
    doc = {"engine": {"name": "sqlite", "axis": "encryption", "axis_baseline": "off", "variant_keys": keys},
           "runs": runs}
    got = fit.fit(doc)
    assert got["runs"] == 48 and len(got["cells"]) == 4 and got["df"] == 48 - 6
    assert got["read_us"] == pytest.approx(14.0, rel=0.1) and got["write_us"] == pytest.approx(40.0, rel=0.1)
    assert got["read_ci_us"][0] < 14.0 < got["read_ci_us"][1] and got["write_ci_us"][0] < 40.0 < got["write_ci_us"][1]
    one_mix = dict(doc, runs=_mix_runs("tpcb-like", "25%", 3.0, 4.0, 900, **truth))
    assert fit.fit(one_mix) is None  # one cell: reads and writes cannot be told apart


def test_the_user_picks_the_mix_whose_cost_to_use():
    from encbench.analysis import summary as an

    sys.path.insert(0, str(Path(__file__).parent))
    from test_oltp_costs import _doc

    analysed = an.analyze(_doc())
    got = estimate.pick(analysed, "oltp:oltp_read_only")
    assert got["workload"] == "oltp" and got["script"] == "oltp_read_only" and got["access"] == "random"
    assert got["runs"] == 8  # the runs per side behind it, which the hint scales from
    with pytest.raises(errors.BadValueError, match="no per-page cost for workload 'oltp:oltp_point_select'") as e:
        estimate.pick(analysed, "oltp:oltp_point_select")
    assert "oltp:oltp_read_only" in e.value.hint  # the hint lists the mixes the file has

