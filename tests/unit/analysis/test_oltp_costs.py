"""Issue 22: what encryption costs a transaction mix, and the per-page estimate checked against it.

The fabricated runs are the issue's MariaDB measurement: sysbench oltp_read_only, 16 KB pages, 18.35 page reads per
transaction at 25% of the data in memory, server CPU per transaction 2.15 -> 2.53 ms (+380 µs: 20.7 µs per page
read), while the scans measured 4.54 µs per page: the per-page estimate predicts about a quarter of the truth.
"""

from __future__ import annotations

import pytest

from encbench.analysis import oltpcost, stats, summary as an

PAGE = 16384


def _run(workload, op, variant, metrics, extra=None):
    label = ",".join(f"{k}={v}" for k, v in variant.items())
    return {"workload": workload, "variant": variant, "variant_label": label, "warmup": False,
            "operations": [{"operation": op, "metrics": metrics, "extra": extra or {}}]}


def _oltp_runs(memory: str, reads: float, cpu_us: dict[str, float], tps: dict[str, float]) -> list[dict]:
    runs = []
    for enc in ("off", "on"):
        for i in range(8):
            jitter = 1 + 0.01 * (i % 4 - 1.5)
            t = tps[enc] * jitter
            n = int(t * 10)
            runs.append(_run("oltp", "mix", {"encryption": enc, "script": "oltp_read_only", "memory": memory,
                                             "clients": "1"},
                             {"wall_s": 10.0, "cpu_s": n * cpu_us[enc] * jitter / 1e6, "client_cpu_s": n * 50e-6,
                              "pages_read": n * reads * (1 + 0.005 * (i % 3)), "pages_written": 0.0},
                             {"transactions": n, "tps": t, "latency_p95_ms": 1000 / t * 1.4, "page_size": PAGE,
                              "memory_held": 1}))
    return runs


def _scan_runs() -> list[dict]:
    runs = []
    for enc, cpu in (("off", 0.200), ("on", 0.200 + 4.54e-6 * 6000)):
        for i in range(8):
            runs.append(_run("scan-eq", "scan", {"encryption": enc, "cache": "cold"},
                             {"wall_s": 0.5, "cpu_s": cpu * (1 + 0.004 * (i % 3)), "pages_read": 6000.0,
                              "pages_decrypted": 6000.0 if enc == "on" else 0.0}))
    return runs


def _doc() -> dict:
    runs = (_oltp_runs("25%", 18.35, {"off": 2150, "on": 2530}, {"off": 420, "on": 360})
            + _oltp_runs("100%", 0.0, {"off": 1500, "on": 1505}, {"off": 600, "on": 598}) + _scan_runs())
    return {"schema_version": 1, "encbench_version": "test", "status": "complete",
            "environment": {"cpu": {"logical_cores": 2, "model": "test", "flags": {}}, "kernel": "x"},
            "config": {"command": None, "size_bytes": 0}, "dataset": {"page_size": PAGE},
            "engine": {"name": "mariadb", "axis": "encryption", "axis_baseline": "off",
                       "variant_keys": [{"name": k, "applies_when": []}
                                        for k in ("encryption", "cache", "script", "memory", "clients")]},
            "workloads": {"oltp": {"fixed_duration": True,
                                   "verdict_metrics": ["tps", "cpu_us_per_transaction", "client_cpu_us_per_transaction"]},
                          "scan-eq": {"reads_only": True}},
            "runs": runs}


@pytest.fixture(scope="module")
def analysis():
    return an.analyze(_doc())


def test_per_transaction_and_per_page(analysis):
    (e,) = [x for x in analysis.oltp_costs if x["memory"] == "25%"]
    assert e["added_cpu_us_per_txn"] == pytest.approx(380, rel=0.03)
    assert e["pages_read_per_txn"] == pytest.approx(18.4, rel=0.01)
    assert e["added_cpu_us_per_page_read"] == pytest.approx(20.7, rel=0.05)
    lo, hi = e["added_cpu_us_per_page_read_ci"]
    assert lo < e["added_cpu_us_per_page_read"] < hi
    assert e["scan_per_page_us"] == pytest.approx(4.54, rel=0.02)
    assert e["times_scan"] == pytest.approx(4.56, rel=0.06)
    (full,) = [x for x in analysis.oltp_costs if x["memory"] == "100%"]
    assert full["added_cpu_us_per_page_read"] is None  # no page read: no cost per page read


def test_the_estimate_is_checked_and_its_miss_named(analysis):
    (e,) = [x for x in analysis.oltp_costs if x["memory"] == "25%"]
    chk = e["estimate_check"]
    assert chk["predicted_us_per_txn"] == pytest.approx(4.54 * 18.35, rel=0.03)
    assert chk["error_pct"] == pytest.approx(-78, abs=3)
    lo, hi = chk["error_ci_pct"]
    assert lo < chk["error_pct"] < hi < 0  # the truth is outside the estimate: the model misses
    assert chk["predicted_added_cores"] == pytest.approx(chk["predicted_us_per_txn"] * e["tps_contender"] / 1e6)
    assert any("random single-page read" in m for m in chk["misses"]), chk["misses"]


def test_the_headline_line(analysis):
    lines = [x for x in analysis.headline if x["label"].startswith("oltp_read_only, 25% in memory")]
    assert len(lines) == 1, [x["label"] for x in analysis.headline]
    text = lines[0]["detail"]
    short = lines[0]["text"]  # the summary's line: within 100 columns, the verdict with its CI (the check: if it fits)
    assert short == "oltp_read_only, 25% in memory, encryption=on: costs -14% throughput [-16, -13]", short
    assert lines[0]["metric"] == "tps" and lines[0]["verdict"] == stats.COSTS, text
    assert "encryption=on: costs -14% throughput" in text, text
    assert "server CPU per transaction" in text and "p95 latency" in text, text
    assert "per 16 KB page read" in text and "x the scans' 4." in text, text
    assert "error -78%" in text, text


def test_no_verdict_when_the_memory_did_not_hold():
    doc = _doc()
    for r in doc["runs"]:
        if r["workload"] == "oltp" and r["variant"]["memory"] == "25%" and r["variant"]["encryption"] == "on":
            r["operations"][0]["extra"]["memory_held"] = 0
            break
    comps = [c for c in an.analyze(doc).comparisons if c["workload"] == "oltp" and "memory=25%" in c["contender"]]
    assert comps and all(c["verdict"] == stats.WITHHELD for c in comps)
    assert "did not hold" in comps[0]["verdict_text"] and "contender 1 of 8 runs" in comps[0]["verdict_text"]


def test_the_check_with_another_files_per_page_cost(analysis):
    (e,) = [x for x in analysis.oltp_costs if x["memory"] == "25%"]
    scans = {"read": {"workload": "scan-like", "operation": "scan", "contender": "encryption=on,cache=cold",
                      "per_page_cpu_s": 20.7e-6, "per_page_cpu_ci": [19e-6, 22.4e-6]}}
    chk = oltpcost.check(e, scans, source="other.json")
    assert abs(chk["error_pct"]) < 5 and chk["error_ci_pct"][0] < 0 < chk["error_ci_pct"][1]
    assert chk["misses"] == []  # the model and the truth agree within the noise
    assert chk["per_page_source"].startswith("other.json: scan-like/scan")


def test_an_unresolved_side_gives_no_error_figure(analysis):
    """A scan's per-page cost whose CI holds 0 (0.8 µs [-10.4, 11.9] on a busy VM) predicts nothing: no error, no
    'x the scan's cost', no misses drawn from it; the same for a mix whose added CPU does not resolve."""
    (e,) = [x for x in analysis.oltp_costs if x["memory"] == "25%"]
    noisy = {"read": {"workload": "scan-eq", "operation": "scan", "contender": "encryption=on,cache=cold",
                      "per_page_cpu_s": 0.8e-6, "per_page_cpu_ci": [-10.4e-6, 11.9e-6]}}
    chk = oltpcost.check(e, noisy)
    assert chk["error_pct"] is None and chk["error_ci_pct"] is None and chk["misses"] == []
    assert chk["per_page_resolved"] is False and "per-page read cost not resolved" in chk["unresolved"]
    text = "\n".join(oltpcost.lines([dict(e, estimate_check=chk)]))
    assert "the estimate not checked" in text and "predicts" not in text, text
    unsure = dict(e, added_cpu_us_per_txn_ci=[-27.5, 435.8])
    good = {"read": dict(noisy["read"], per_page_cpu_s=20.7e-6, per_page_cpu_ci=[19e-6, 22.4e-6])}
    chk = oltpcost.check(unsure, good)
    assert chk["error_pct"] is None and chk["per_page_resolved"] is True and "added CPU not resolved" in chk["unresolved"]


def test_fscrypt_counts_the_kernel_workers_that_decrypt():
    """PostgreSQL on fscrypt: the pages are decrypted in kernel worker threads, not in the server's processes, so
    the added CPU per transaction is the server's plus the kworkers' (as the per-page cost of the scans is)."""
    runs = []
    for enc, server_us, kworker_us in (("off", 500.0, 5.0), ("fscrypt", 510.0, 300.0)):
        for i in range(6):
            j = 1 + 0.01 * (i % 3)
            n = 3000
            runs.append(_run("oltp", "mix", {"encryption": enc, "script": "select-only", "memory": "25%"},
                             {"wall_s": 10.0, "cpu_s": n * server_us * j / 1e6, "kworker_cpu_s": n * kworker_us * j / 1e6,
                              "pages_read": n * 1.1},
                             {"transactions": n, "tps": 300.0, "page_size": 8192}))
    doc = dict(_doc(), runs=runs, engine={"name": "postgres", "axis": "encryption", "axis_baseline": "off",
                                          "variant_keys": [{"name": k, "applies_when": []}
                                                           for k in ("encryption", "script", "memory")]})
    (e,) = an.analyze(doc).oltp_costs
    assert e["cpu_basis"] == "cpu_s + kworker_cpu_s"
    assert e["added_cpu_us_per_txn"] == pytest.approx(305, rel=0.03)  # 10 µs in the server, 295 in the kworkers
    assert e["added_cpu_us_per_page_read"] == pytest.approx(305 / 1.1, rel=0.03)
