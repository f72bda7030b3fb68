"""Issue 30 item 11 (and issue 28's gate item): an exact count is judged from the runs that show it repeats.

Fake runs shaped like callgrind's counts (a few hundred instructions of jitter in 10^7-10^9): two runs per side
that repeat within 0.1% give a verdict and pass a 1% gate; a 1% change is a cost; counts that do not repeat, and
timed figures, keep the 6-run rule; a gate on instructions over files without counts is refused (exit 25).
"""

from __future__ import annotations

import copy

import pytest

from encbench import errors
from encbench.analysis import compare, gate, stats
from encbench.analysis import summary as an
from encbench.lab import meter

OPEN = 1_788_865_422.0  # a SQLCipher open's count (PBKDF2, 256,000 iterations), as measured


def test_repeats_is_the_stated_tolerance():
    assert stats.repeats([OPEN, OPEN + 500])  # 3e-7: callgrind's jitter
    assert stats.repeats([1000.0, 1000.0 * (1 + stats.EXACT_TOLERANCE)])
    assert not stats.repeats([1000.0, 1002.0])  # 0.2%
    assert not stats.repeats([1000.0])  # one run shows nothing repeats
    assert not stats.repeats([0.0, 0.0]) and not stats.repeats([1000.0, float("nan")])


def test_two_repeating_runs_per_side_bound_the_ratio():
    base, cont = [OPEN, OPEN + 300], [OPEN * 1.01, OPEN * 1.01 - 200]
    est = stats.ratio_ci(base, cont, exact=True)
    assert est.exact and est.method == stats.EXACT and est.se is None
    assert est.ci[0] <= est.value <= est.ci[1] and est.ci == est.ci90
    assert 1.0079 < est.ci[0] and est.ci[1] < 1.0121  # the ranges widened by 0.1% each side
    j = stats.judge_estimate(est, word="instructions")
    assert j.verdict == stats.COSTS and j.text.startswith("costs +1.0% instructions")


def test_a_one_percent_kdf_change_is_a_cost_not_within_the_timed_margin():
    """--variant kdf_iter=256000,258560: +1% of the open's count is inside the ±2% margin of timed figures; the
    count resolves it, so it is a cost (the margin of an exact count is at most 0.5%)."""
    est = stats.ratio_ci([OPEN, OPEN], [OPEN * 1.0099, OPEN * 1.0099], exact=True)
    assert stats.judge_estimate(est).verdict == stats.COSTS
    assert stats.judge_estimate(est, margin_pct=5.0).verdict == stats.COSTS
    same = stats.ratio_ci([OPEN, OPEN + 400], [OPEN - 100, OPEN + 200], exact=True)
    j = stats.judge_estimate(same)
    assert j.verdict == stats.NO_COST and "±0.5%" in j.text


def test_counts_that_do_not_repeat_and_timed_figures_keep_six_runs():
    drifting = stats.ratio_ci([1000.0, 1010.0], [1000.0, 1012.0], exact=True)  # 1% spread: not exact
    assert not drifting.exact and stats.judge_estimate(drifting).verdict == stats.TOO_FEW_RUNS
    timed = stats.ratio_ci([0.010, 0.010], [0.010, 0.010])  # cpu_s at a 10 ms tick: equal, and still no count
    assert not timed.exact and stats.judge_estimate(timed).verdict == stats.TOO_FEW_RUNS
    assert meter.is_count("instructions") and meter.is_count("instructions_per_query")
    assert not meter.is_count("cpu_s") and not meter.is_count("wall_s")


def test_ratio_of_ratios_bound_takes_each_groups_far_side():
    a0, a1, b0, b1 = [100.0, 100.05], [200.0, 200.1], [100.0, 100.0], [202.0, 202.02]
    est = stats.ratio_of_ratios_ci(a0, a1, b0, b1, exact=True)
    assert est.exact
    # any further run of a group lies in [its largest / 1.001, its smallest x 1.001]
    lo = (202.02 / 1.001) / (100.0 * 1.001) / ((200.0 * 1.001) / (100.05 / 1.001))
    hi = (202.0 * 1.001) / (100.0 / 1.001) / ((200.1 / 1.001) / (100.0 * 1.001))
    assert est.ci[0] == pytest.approx(lo) and est.ci[1] == pytest.approx(hi)


def _doc(open_counts: dict[str, list[float]], *, metered: bool = True) -> dict:
    """A minimal SQLite result file: two variants of scan-eq, each run's open and scan counted."""
    variants = {"off": {"encryption": "off"}, "on": {"encryption": "on", "kdf_iter": "256000"}}
    runs = []
    for vl, counts in open_counts.items():
        for n in counts:
            metrics = {"wall_s": 0.1, "cpu_s": 0.1} | ({"instructions": 5e6 if vl == "off" else 8.6e7} if metered
                                                       else {})
            runs.append({"workload": "scan-eq", "variant": variants[vl], "variant_label": f"encryption={vl}",
                         "warmup": False, "operations": [{"operation": "scan", "metrics": metrics}],
                         "open": {"wall_s": 0.2, **({"instructions": n} if metered else {})}})
    return {"engine": {"name": "sqlite", "axis": "encryption", "axis_baseline": "off",
                       "variant_keys": [{"name": "encryption", "applies_when": []},
                                        {"name": "kdf_iter", "applies_when": [["encryption", "on"]]}],
                       "variants": list(variants.values())},
            "environment": {"cpu": {"model": "x", "logical_cores": 2}, "kernel": "k", "engine_versions": {}},
            "dataset": {"rows": 1, "seed": 42}, "runs": runs, "encbench_version": "test",
            "workloads": {"scan-eq": {"verdict_metrics": ["instructions"]}},
            **({"meter": {"kind": "instructions"}, "config": {"meter": "instructions"}} if metered else
               {"config": {}})}


def test_two_metered_quick_runs_of_one_build_pass_a_one_percent_gate():
    a = _doc({"off": [826812.0, 826770.0], "on": [OPEN, OPEN - 262]})
    b = _doc({"off": [826665.0, 826781.0], "on": [OPEN + 436, OPEN - 141]})
    rows = compare.compare(a, b)["comparisons"]
    counted = [r for r in rows if r["metric"] == "instructions"]
    assert counted and all(r["exact"] and r["floor_pct"] == 0 for r in counted)
    verdict = gate.evaluate([gate.parse("instructions>1%")], rows)
    assert verdict["outcome"] == "passed" and verdict["checked"] == 4, verdict  # 2 scans, 2 opens (absolute)
    assert "an exact count" in verdict["within"][0]


def test_a_one_percent_count_change_fails_the_gate_and_costs_in_the_file():
    a = _doc({"off": [826812.0, 826770.0], "on": [OPEN, OPEN - 262]})
    b = _doc({"off": [826812.0, 826770.0], "on": [OPEN * 1.0099, OPEN * 1.0099 + 90]})
    verdict = gate.evaluate([gate.parse("instructions>0.5%")], compare.compare(a, b)["comparisons"])
    assert verdict["outcome"] == "failed" and "(open)/connect encryption=on" in verdict["failed"][0]
    opens = [c for c in an.analyze(b).comparisons if c["workload"] == "(open)" and c["metric"] == "instructions"]
    assert opens and opens[0]["exact"] and opens[0]["verdict"] == stats.COSTS


def test_a_gate_on_counts_over_files_without_counts_is_refused():
    timed, counted = _doc({"off": [1.0] * 6, "on": [2.0] * 6}, metered=False), _doc({"off": [1.0] * 2, "on": [2.0] * 2})
    cond = [gate.parse("instructions>1%")]
    with pytest.raises(errors.NotMeteredError) as e:
        gate.require_counts(cond, {"a.json": timed, "b.json": copy.deepcopy(timed)})
    assert e.value.exit_code == 25 and "a.json and b.json hold no instruction counts" in str(e.value)
    assert "--meter instructions" in e.value.one_line()
    with pytest.raises(errors.NotMeteredError, match="a.json holds no"):
        gate.require_counts(cond, {"a.json": timed, "b.json": counted})
    gate.require_counts(cond, {"a.json": counted, "b.json": counted})
    gate.require_counts([gate.parse("overhead>5%")], {"a.json": timed, "b.json": timed})  # timed: no counts needed
    assert errors.EXIT_CODES[25]


def test_an_exact_bound_across_the_limit_is_not_resolved_and_says_runs_will_not_help():
    c = {"workload": "w", "operation": "o", "variant": "v", "metric": "instructions", "kind": "absolute",
         "ratio": 1.01, "ci": [1.008, 1.012], "se_log": None, "df": None, "verdict": "costs", "exact": True,
         "floor_pct": 0, "verdict_text": "costs", "n_a": 2, "n_b": 2}
    verdict = gate.evaluate([gate.parse("instructions>1%")], [c])
    assert verdict["outcome"] == "not_resolved" and "more runs will not settle it" in verdict["not_resolved"][0]
