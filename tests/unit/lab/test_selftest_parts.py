"""encbench.lab.selftest: the A/A arithmetic (false positives, noise floor, verdict) on fabricated documents."""

from __future__ import annotations

import math

import pytest

from encbench.lab import selftest


def comp(metric="wall_s", ratio=1.0, significant=False, verdict=None, **kw):
    c = {"workload": "scan-eq", "operation": "scan", "metric": metric, "ratio": ratio, "ci": [ratio - 0.1, ratio + 0.1] if ratio else None,
         "significant": significant, "contender": "cache=cold,placebo=b", "baseline": "cache=cold,placebo=a",
         "placebo": True}
    if verdict is not None:
        c["verdict"] = verdict
    return dict(c, **kw)


# --- false positives -----------------------------------------------------------------------

def test_false_positives_counts_significant_rows_without_verdicts():
    rows = [comp(significant=True, ratio=1.2), comp(), comp(), comp("cpu_s", significant=True, ratio=0.8),
            comp("cpu_s"), comp("ctx_voluntary", significant=True)]  # not a headline metric: not counted
    fp = selftest.false_positives(rows)
    assert fp["by_metric"]["wall_s"] == {"flagged": 1, "compared": 3, "not_judged": 0,
                                         "rows": ["scan-eq/scan cache=cold,placebo=b +20.0%"]}
    assert fp["by_metric"]["cpu_s"]["flagged"] == 1 and fp["by_metric"]["cpu_s"]["compared"] == 2
    assert fp["total"]["flagged"] == 2 and fp["total"]["compared"] == 5
    assert fp["total"]["rate"] == pytest.approx(0.4)


def test_false_positives_use_the_three_way_verdict_and_skip_unjudged_rows():
    rows = [comp(verdict="costs", significant=True), comp(verdict="saves", significant=True),
            comp(verdict="no_cost"), comp(verdict="inconclusive", significant=True),  # the verdict decides, not the CI
            comp(verdict="too_few_runs", significant=True), comp(verdict="no_estimate", ratio=None)]
    fp = selftest.false_positives(rows)
    assert fp["total"] == {"flagged": 2, "compared": 4, "not_judged": 2, "rate": 0.5,
                           "excess_p": pytest.approx(1 - 0.95 ** 4 - 4 * 0.05 * 0.95 ** 3)}


def test_false_positives_keep_compares_overhead_rows_apart():
    rows = [comp(kind="absolute", significant=True), comp(kind="overhead"), comp(kind="overhead", significant=True),
            comp()]
    fp = selftest.false_positives(rows)
    assert set(fp["by_metric"]) == {"wall_s", "overhead wall_s"}
    assert fp["by_metric"]["wall_s"]["compared"] == 2 and fp["by_metric"]["overhead wall_s"]["flagged"] == 1


def test_false_positives_of_nothing():
    fp = selftest.false_positives([])
    assert fp["total"] == {"flagged": 0, "compared": 0, "not_judged": 0, "rate": None, "excess_p": None}


def test_excess_p_is_the_binomial_upper_tail():
    assert selftest.excess_p(0, 20) == pytest.approx(1.0)
    assert selftest.excess_p(1, 20) == pytest.approx(1 - 0.95 ** 20)
    # 8 of 40 at 5% (expected 2): about 0.00079 (exact binomial tail)
    tail = sum(math.comb(40, i) * 0.05 ** i * 0.95 ** (40 - i) for i in range(8, 41))
    assert selftest.excess_p(8, 40) == pytest.approx(tail)
    assert selftest.excess_p(8, 40) < selftest.EXCESS_P < selftest.excess_p(4, 40)
    assert selftest.excess_p(3, 0) is None
    assert 0.0 <= selftest.excess_p(120, 2000) <= 1.0  # a sum of math.comb terms overflowed a float here


# --- from runs to rows ---------------------------------------------------------------------

def run(variant_label, values: dict, warmup=False, workload="scan-eq", operation="scan"):
    return {"workload": workload, "variant_label": variant_label, "variant": {}, "warmup": warmup,
            "operations": [{"operation": operation, "metrics": values}],
            "open": {"wall_s": 0.001, "cpu_s": 0.001}}


def doc(rows: dict[str, list[tuple[float, float]]]) -> dict:
    """variant label -> [(wall_s, cpu_s) per run]; a warmup run of absurd values first (must be ignored)."""
    runs = []
    for vl, values in rows.items():
        runs.append(run(vl, {"wall_s": 100.0, "cpu_s": 100.0}, warmup=True))
        runs += [run(vl, {"wall_s": w, "cpu_s": c}) for w, c in values]
    return {"runs": runs}


PLAIN, ENC = "encryption=off", "encryption=on"


def test_log_stats_are_log_means_and_their_variance_without_warmups_or_the_open():
    d = doc({PLAIN: [(1.0, 0.5), (math.e, 0.5)]})
    stats = selftest.log_stats(d)
    assert set(stats) == {("scan-eq", "scan", PLAIN)}  # the connection open is left out
    mean, var = stats[("scan-eq", "scan", PLAIN)]["wall_s"]
    assert mean == pytest.approx(0.5) and var == pytest.approx(0.5 / 2)  # var(ln) = 0.5, over n = 2
    assert stats[("scan-eq", "scan", PLAIN)]["cpu_s"] == (pytest.approx(math.log(0.5)), pytest.approx(0.0))


def test_log_stats_skip_rows_that_cannot_be_logged():
    d = doc({PLAIN: [(1.0, 0.0), (1.0, 0.1)], ENC: [(2.0, 1.0)]})
    stats = selftest.log_stats(d)
    assert "cpu_s" not in stats[("scan-eq", "scan", PLAIN)]  # a zero CPU: no log
    assert ("scan-eq", "scan", ENC) not in stats  # one run: no variance


def test_absolute_and_overhead_rows():
    a = selftest.log_stats(doc({PLAIN: [(1.0, 1.0)] * 3, ENC: [(2.0, 1.5)] * 3}))
    b = selftest.log_stats(doc({PLAIN: [(1.1, 1.0)] * 3, ENC: [(2.2, 1.8)] * 3}))
    rows = dict((k, d) for k, d, _ in selftest.absolute_rows(a, b, "wall_s"))
    assert rows == {f"scan-eq/scan {PLAIN}": pytest.approx(math.log(1.1)), f"scan-eq/scan {ENC}": pytest.approx(math.log(1.1))}
    pairs = [("scan-eq", "scan", PLAIN, ENC), ("scan-eq", "scan", PLAIN, "missing")]
    over = selftest.overhead_rows(a, b, pairs, "wall_s")
    assert over == [(f"scan-eq/scan {ENC}", pytest.approx(0.0), pytest.approx(0.0))]  # the drift cancels
    over_cpu = selftest.overhead_rows(a, b, pairs, "cpu_s")
    assert over_cpu[0][1] == pytest.approx(math.log(1.8 / 1.5))


# --- the noise floor -----------------------------------------------------------------------

def test_noise_floor_from_the_rms_of_the_log_changes():
    rows = [("r1", 0.1, 0.0), ("r2", -0.1, 0.0), ("r3", 0.1, 0.0), ("r4", -0.1, 0.0)]
    f = selftest.noise_floor(rows, runs=6, invocation_s=30.0)
    assert f["rms_log_change"] == pytest.approx(0.1)
    assert f["detectable_pct"] == pytest.approx(100 * (math.exp(1.959964 * 0.1) - 1))  # 21.65%
    assert f["detectable_80_pct"] == pytest.approx(100 * (math.exp((1.959964 + 0.841621) * 0.1) - 1))
    assert f["floor_pct"] == pytest.approx(f["detectable_pct"])  # no scatter inside the runs: all of it is drift
    assert f["mean_change_pct"] == pytest.approx(0.0)
    assert f["largest_row"] == "r1" and f["largest_change_pct"] == pytest.approx(100 * (math.exp(0.1) - 1))
    assert f["rows"] == 4 and f["runs_per_variant"] == 6 and f["invocation_s"] == 30.0
    assert "root mean square" in f["method"] and "1.96" in f["method"]


def test_noise_floor_drift_is_what_the_runs_scatter_does_not_explain():
    rows = [("r1", 0.1, 0.0064), ("r2", -0.1, 0.0064)]  # s^2 = 0.01, the runs explain 0.0064 of it
    f = selftest.noise_floor(rows, runs=6, invocation_s=None)
    assert f["rms_log_drift"] == pytest.approx(0.06)
    assert f["floor_pct"] == pytest.approx(100 * (math.exp(1.959964 * 0.06) - 1))
    explained = selftest.noise_floor([("r1", 0.1, 0.02), ("r2", -0.1, 0.02)], runs=6, invocation_s=None)
    assert explained["floor_pct"] == 0.0 and explained["detectable_pct"] > 0  # all of it is the runs' scatter


def test_noise_floor_sees_a_common_shift():
    f = selftest.noise_floor([("r1", 0.2, 0.0), ("r2", 0.2, 0.0)], runs=6, invocation_s=None)
    assert f["mean_change_pct"] == pytest.approx(100 * (math.exp(0.2) - 1))
    assert f["detectable_pct"] == pytest.approx(100 * (math.exp(1.959964 * 0.2) - 1))


def test_noise_floor_of_nothing():
    assert selftest.noise_floor([], runs=6, invocation_s=None) is None


def test_floor_document_is_what_compare_reads():
    wall = selftest.noise_floor([("r", 0.05, 0.0)], runs=6, invocation_s=20.0)
    over = selftest.noise_floor([("r", 0.01, 0.0)], runs=6, invocation_s=20.0)
    d = selftest.floor_document({"wall_s": wall, "cpu_s": None}, {"wall_s": over, "cpu_s": None},
                                {"cpu_model": "X", "logical_cores": 2}, engine="sqlite", workloads=["scan-eq"],
                                size_bytes=1000, measured="2026-01-01T00:00:00Z")
    assert d["schema"] == 1 and d["measured"] == "2026-01-01T00:00:00Z"
    assert set(d["metrics"]) == {"wall_s"} and d["metrics"]["wall_s"]["floor_pct"] == wall["floor_pct"]
    assert d["overhead"]["wall_s"]["floor_pct"] == over["floor_pct"]
    assert d["machine"]["cpu_model"] == "X" and d["suite"]["workloads"] == ["scan-eq"]


def test_floor_file_loads_in_the_gate(tmp_path):
    from encbench.analysis import gate

    if not hasattr(gate, "load_floor"):
        pytest.skip("this gate reads no noise floor file")
    wall = selftest.noise_floor([("r", 0.05, 0.0)], runs=6, invocation_s=20.0)
    path = tmp_path / "floor.json"
    selftest.save_floor(path, selftest.floor_document({"wall_s": wall}, {}, {}, engine="sqlite", workloads=[],
                                                      size_bytes=1))
    loaded = gate.load_floor(path)
    assert loaded["absolute"]["wall_s"] == pytest.approx(wall["floor_pct"])


# --- the verdict ---------------------------------------------------------------------------

def fp(k, n):
    return {"total": {"flagged": k, "compared": n, "not_judged": 0, "rate": k / n if n else None,
                      "excess_p": selftest.excess_p(k, n)}, "by_metric": {}}


FLOORS = {"wall_s": {"detectable_pct": 3.2, "floor_pct": 1.0}, "cpu_s": {"detectable_pct": 2.4, "floor_pct": 0.5}}


def test_verdict_passes_with_few_false_positives():
    text, passed = selftest.verdict(FLOORS, {"wall_s": None, "cpu_s": None}, fp(1, 40), fp(2, 40), 31.6)
    assert passed
    assert text.startswith("this machine can resolve 3% elapsed and 2% CPU effects in 32 s")
    assert "within what the 95% CIs promise" in text


def test_verdict_fails_on_too_many_false_positives():
    text, passed = selftest.verdict(FLOORS, {}, fp(1, 40), fp(12, 40), 30)
    assert not passed
    assert "FAILED" in text and "cross-run (compare)" in text and "within-run" not in text


def test_verdict_says_when_nothing_was_judged():
    text, passed = selftest.verdict({}, {}, fp(0, 0), fp(0, 0), 30)
    assert passed and "no noise floor" in text and "too few runs" in text


# --- the machine ---------------------------------------------------------------------------

def test_cold_runs_read_from_storage():
    ops = lambda state, read: {"operation": "scan", "cache": {"cache": state}, "metrics": {"read_bytes": read}}
    d = {"runs": [{"warmup": True, "operations": [ops("cold", 0)]},
                  {"warmup": False, "operations": [ops("cold", 900), ops("warm", 0)]},
                  {"warmup": False, "operations": [ops("cold", 1100)]}],
         "dataset": {"files": {"plain.db": {"bytes": 1000}, "enc.db": {"bytes": 1024}}}}
    c = selftest.cold_runs([d])
    assert c["cold_operations"] == 2 and c["cold_reading"] == 2 and c["cold_mean_read_bytes"] == 1000
    assert c["warm_mean_read_bytes"] == 0 and c["database_file_bytes"] == 1000 and c["cold_works"]
    d["runs"][2]["operations"][0]["metrics"]["read_bytes"] = 0  # one cold operation served from the cache
    assert not selftest.cold_runs([d])["cold_works"]


def test_machine_load_shares():
    t0 = [100, 0, 50, 800, 50, 0, 0, 0, 0, 0]
    t1 = [200, 0, 100, 900, 50, 0, 0, 50, 0, 0]  # +100 user, +50 system, +100 idle, +50 steal
    load = selftest.machine_load(t0, t1)
    assert load["steal_share"] == pytest.approx(50 / 300)
    assert load["busy_share"] == pytest.approx(1 - 100 / 300)
    assert "steal_share" not in selftest.machine_load(None, t1)


def test_placement_undoes_what_it_tries():
    import os

    before = os.sched_getaffinity(0)
    p = selftest.placement()
    assert os.sched_getaffinity(0) == before
    assert p["allowed_cpus"] == sorted(before)
    assert isinstance(p["sched_setaffinity"], bool)


def test_fadvise_probe_leaves_nothing(tmp_path):
    out = selftest.fadvise_probe(tmp_path, size=1 << 20)
    assert list(tmp_path.iterdir()) == []
    assert isinstance(out["fadvise_works"], bool) and out["probe_bytes"] == 1 << 20
