"""encbench.analysis.stats: summaries, small-sample CIs (golden values), outliers, warnings and three-way verdicts."""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np
import pytest

from encbench.analysis import stats
from encbench.analysis.stats import Estimate


# --- summarize ---------------------------------------------------------------------------

def test_summarize_basic_values():
    s = stats.summarize([1.0, 2.0, 3.0, 4.0, 10.0])
    assert s.n == 5
    assert s.mean == pytest.approx(4.0)
    assert s.median == pytest.approx(3.0)
    assert s.min == 1.0 and s.max == 10.0
    # sample stdev (n - 1), not population stdev
    assert s.stdev == pytest.approx(statistics.stdev([1, 2, 3, 4, 10]))
    assert s.stdev != pytest.approx(statistics.pstdev([1, 2, 3, 4, 10]))


def test_summarize_even_count_median_is_midpoint():
    assert stats.summarize([4.0, 1.0, 3.0, 2.0]).median == pytest.approx(2.5)


def test_summarize_empty_is_none():
    assert stats.summarize([]) is None
    assert stats.summarize([None, None]) is None


def test_summarize_one_value_has_no_stdev():
    s = stats.summarize([7.5])
    assert s.n == 1 and s.mean == 7.5 and s.median == 7.5 and s.stdev is None


def test_summarize_ignores_none_values():
    s = stats.summarize([1.0, None, 3.0])
    assert s.n == 2 and s.mean == pytest.approx(2.0)


def test_summary_to_dict_keys():
    d = stats.summarize([1.0, 2.0]).to_dict()
    assert set(d) == {"n", "mean", "median", "stdev", "min", "max"}


# --- ratio_ci: Yuen-Welch t on logs (trimmed geometric means) --------------------------------

BASE = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99]
DOUBLE = [2.00, 2.02, 1.98, 2.01, 1.99, 2.00, 2.03, 1.97]
A6 = [10.2, 9.8, 10.5, 9.9, 10.1, 10.0]
B6_OUTLIER = [11.3, 10.9, 11.6, 11.0, 11.2, 33.0]  # +11%, and one run 3x slower


def _trimmed_log_mean(values, g):
    logs = sorted(math.log(v) for v in values)
    return sum(logs[g:len(logs) - g]) / (len(logs) - 2 * g)


def test_ratio_is_ratio_of_trimmed_geometric_means():
    est = stats.ratio_ci(A6, B6_OUTLIER)
    # 6 runs: 20% trimming drops one from each end (the outlier among them)
    assert stats.trim_count(6) == 1 and stats.trim_count(10) == 2 and stats.trim_count(4) == 0
    assert est.value == pytest.approx(math.exp(_trimmed_log_mean(B6_OUTLIER, 1) - _trimmed_log_mean(A6, 1)))
    # below 5 runs nothing is trimmed: the ratio of geometric means
    est = stats.ratio_ci([1.0, 4.0], [2.0, 8.0])
    assert est.value == pytest.approx(2.0)


def test_ratio_golden_values():
    """Pinned on fixed inputs (Yuen's winsorized variance, Welch-Satterthwaite df, t quantiles)."""
    est = stats.ratio_ci(BASE, DOUBLE)
    assert est.value == pytest.approx(2.0000250017, rel=1e-9)
    assert est.ci == pytest.approx((1.9737608895, 2.0266386008), rel=1e-9)
    assert est.ci90 == pytest.approx((1.9786491871, 2.0216317443), rel=1e-9)
    assert est.se == pytest.approx(0.0059162917, rel=1e-8) and est.df == pytest.approx(9.7999960333, rel=1e-8)
    est = stats.ratio_ci(A6, B6_OUTLIER)
    assert est.value == pytest.approx(1.1217539309, rel=1e-9)
    assert est.ci == pytest.approx((1.0707246072, 1.1752152450), rel=1e-9)
    assert est.df == pytest.approx(4.7696542481, rel=1e-8)
    assert (est.n_baseline, est.n_contender, est.excluded) == (6, 6, 0)
    assert "Yuen" in est.method


def test_one_outlier_does_not_hide_a_clear_difference():
    # Welch's t on untrimmed logs is swamped by the one slow run; the trimmed interval is not
    plain = stats.log_contrast([(A6, -1), (B6_OUTLIER, +1)], trim=0.0)
    assert plain.ci[0] < 1.0 and not plain.significant
    assert plain.ci == pytest.approx((0.8366880148, 2.1141782787), rel=1e-9)
    est = stats.ratio_ci(A6, B6_OUTLIER)
    assert est.significant and est.ci[0] > 1.05


def test_ratio_clear_doubling_is_significant_and_ci_excludes_one():
    est = stats.ratio_ci(BASE, DOUBLE)
    lo, hi = est.ci
    assert lo <= est.value <= hi
    assert 1.9 < lo < hi < 2.1  # low noise: a tight interval
    assert est.significant is True
    assert est.null == 1.0
    assert est.half_width == pytest.approx((hi - lo) / 2) and est.half_width_pct == pytest.approx(50 * (hi - lo))


def test_ratio_halving_is_significant_below_one():
    est = stats.ratio_ci(DOUBLE, BASE)
    assert est.value == pytest.approx(0.5, rel=0.02)
    assert est.ci[1] < 1.0
    assert est.significant is True


def test_ratio_identical_distributions_not_significant():
    est = stats.ratio_ci(BASE, list(reversed(BASE)))
    assert est.value == pytest.approx(1.0)
    lo, hi = est.ci
    assert lo < 1.0 < hi
    assert est.significant is False


def test_ratio_noisy_overlapping_groups_not_significant():
    rng = np.random.default_rng(123)
    a = rng.normal(10, 2, size=8)
    b = a[::-1] * 1.01  # 1% apart, 20% noise
    est = stats.ratio_ci(a, b)
    assert est.ci[0] < 1.0 < est.ci[1]
    assert not est.significant


@pytest.mark.parametrize("seed", [0, 1, 42])
def test_ratio_ci_contains_point_estimate(seed):
    rng = np.random.default_rng(seed)
    a = rng.lognormal(0, 0.3, size=6)
    b = rng.lognormal(0.2, 0.3, size=6)
    est = stats.ratio_ci(a, b)
    lo, hi = est.ci
    assert lo <= est.value <= hi
    lo90, hi90 = est.ci90
    assert lo < lo90 <= est.value <= hi90 < hi  # the 90% interval sits inside the 95% one


def test_ratio_baseline_all_zeros_gives_no_value():
    est = stats.ratio_ci([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    assert est.value is None
    assert est.ci is None
    assert est.significant is False


def test_ratio_empty_group_gives_no_value():
    for a, b in (([], [1.0]), ([1.0], [])):
        est = stats.ratio_ci(a, b)
        assert est.value is None and est.ci is None and not est.significant


def test_ratio_with_zeros_falls_back_to_ratio_of_means():
    # a count that is sometimes 0 has no logarithm: the ratio of means by the delta method
    est = stats.ratio_ci([0.0, 0.0, 1.0], [1.0, 1.0, 1.0])
    assert est.value == pytest.approx(3.0)
    assert est.method == stats.MEAN_T
    lo, hi = est.ci
    assert lo < 1.0 < 3.0 < hi and not est.significant  # one of three runs nonzero: very wide


def test_ratio_non_finite_values_are_excluded_and_counted():
    est = stats.ratio_ci(BASE + [math.nan], DOUBLE + [math.inf, -math.inf])
    assert est.excluded == 3 and (est.n_baseline, est.n_contender) == (8, 8)
    assert est == dataclasses.replace(stats.ratio_ci(BASE, DOUBLE), excluded=3)
    j = stats.judge_estimate(est, word="CPU")
    assert "3 non-finite value(s) excluded" in j.text
    assert stats.ratio_ci([math.nan] * 6, BASE).value is None


def test_ratio_ci_is_deterministic_and_seed_is_ignored():
    rng = np.random.default_rng(5)
    a = list(rng.lognormal(0, 0.2, size=8))
    b = list(rng.lognormal(0.1, 0.2, size=8))
    assert stats.ratio_ci(a, b, seed=7) == stats.ratio_ci(a, b, seed=8) == stats.ratio_ci(a, b, n_resamples=10)


def test_ratio_ci_narrower_at_lower_confidence():
    a = [1.0, 1.3, 0.8, 1.1, 0.9]
    b = [1.2, 1.5, 1.1, 1.4, 1.0]
    wide = stats.ratio_ci(a, b, confidence=0.99)
    narrow = stats.ratio_ci(a, b, confidence=0.80)
    assert wide.ci[0] < narrow.ci[0] and narrow.ci[1] < wide.ci[1]


def test_ratio_identical_constant_values():
    est = stats.ratio_ci([2.0] * 6, [2.0] * 6)
    assert est.value == 1.0 and est.ci == (1.0, 1.0) and not est.significant
    assert stats.judge_estimate(est).verdict == stats.NO_COST


def test_estimate_to_dict():
    est = stats.ratio_ci(BASE, DOUBLE)
    d = est.to_dict()
    assert d["value"] == est.value
    assert d["ci"] == list(est.ci) and len(d["ci"]) == 2
    assert d["significant"] is True
    assert Estimate(None, None, False, 1.0).to_dict() == {"value": None, "ci": None, "significant": False}


# --- ratio of ratios, one-sided test, Holm --------------------------------------------------

PLAIN_A = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
ENC_A = [1.2, 1.3, 1.1, 1.25, 1.15, 1.2]


def test_ratio_of_ratios_cancels_machine_drift():
    # B's invocation ran on a machine 15% slower: the absolute times moved, the overhead did not
    plain_b, enc_b = [x * 1.15 for x in PLAIN_A], [x * 1.15 for x in ENC_A]
    assert stats.ratio_ci(ENC_A, enc_b).significant  # the absolute comparison sees the drift
    est = stats.ratio_of_ratios_ci(PLAIN_A, ENC_A, plain_b, enc_b)
    assert est.value == pytest.approx(1.0) and est.ci[0] < 1 < est.ci[1]
    slower = stats.ratio_of_ratios_ci(PLAIN_A, ENC_A, plain_b, [x * 1.3 for x in enc_b])
    assert slower.value == pytest.approx(1.3) and slower.ci[0] > 1.1


def test_ratio_of_ratios_golden_values():
    est = stats.ratio_of_ratios_ci(PLAIN_A, ENC_A, [1.15, 1.26, 1.04, 1.2, 1.1, 1.15], [1.38, 1.5, 1.27, 1.44, 1.32, 1.38])
    assert est.value == pytest.approx(0.9998086407, rel=1e-9)
    assert est.ci == pytest.approx((0.8929912598, 1.1194032496), rel=1e-9)
    assert est.se == pytest.approx(0.0517337999, rel=1e-8) and est.df == pytest.approx(11.7479145015, rel=1e-8)


def test_p_above_threshold():
    assert stats.p_above(1.3, 0.05, 10, 1.05) == pytest.approx(0.0008165883, rel=1e-6)
    assert stats.p_above(1.0, 0.05, 10, 1.05) > 0.5
    assert stats.p_above(None, 0.05, 10, 1.05) is None and stats.p_above(1.2, None, 10, 1.05) is None
    assert stats.p_above(1.2, 0.0, math.inf, 1.05) == 0.0


def test_holm():
    assert stats.holm([0.01, 0.04, 0.03, 0.2], 0.05) == [True, False, False, False]
    assert stats.holm([0.01, 0.012, 0.02, 0.04], 0.05) == [True, True, True, True]
    assert stats.holm([], 0.05) == []


# --- difference_ci, mean_ci: Welch / Student t ------------------------------------------------

def test_difference_of_means_and_significance():
    est = stats.difference_ci(BASE, DOUBLE)
    assert est.value == pytest.approx(np.mean(DOUBLE) - np.mean(BASE))
    assert est.ci == pytest.approx((0.9815973343, 1.0184026657), rel=1e-9)
    assert est.df == pytest.approx(12.0689655172, rel=1e-8)
    assert est.significant is True
    assert est.null == 0.0
    assert all(type(x) is float for x in est.ci)


def test_difference_negative_shift():
    est = stats.difference_ci([5.0, 5.1, 4.9, 5.0], [3.0, 3.1, 2.9, 3.0])
    assert est.value == pytest.approx(-2.0)
    assert est.ci[1] < 0 and est.significant


def test_difference_identical_not_significant():
    est = stats.difference_ci(BASE, BASE[::-1])
    assert est.value == pytest.approx(0.0, abs=1e-12)
    assert est.ci[0] < 0 < est.ci[1]
    assert not est.significant


def test_difference_with_zero_baseline_is_defined():
    # unlike a ratio, a difference from zero is fine
    est = stats.difference_ci([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    assert est.value == pytest.approx(1.0)
    assert est.ci == (1.0, 1.0)
    assert est.significant


def test_difference_empty_group():
    assert stats.difference_ci([], [1.0]).value is None


def test_mean_ci_is_student_t():
    assert stats.mean_ci([1, 2, 3, 4]) == pytest.approx((0.4457397432, 4.5542602568), rel=1e-9)
    assert stats.mean_ci([1.0]) is None and stats.mean_ci([1.0, math.nan]) is None


# --- outliers -----------------------------------------------------------------------------

def test_outliers_finds_far_value():
    values = [10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 30.0]
    assert stats.outliers(values) == [6]


def test_outliers_low_and_high():
    values = [0.5, 10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 30.0]
    assert stats.outliers(values) == [0, 7]


def test_outliers_modified_z_score_threshold():
    # median 10, MAD 1: modified Z of x = 0.6745 * (x - 10)
    base = [9.0, 9.0, 10.0, 11.0, 11.0]
    just_below = 10 + 3.5 / 0.6745 - 0.01
    just_above = 10 + 3.5 / 0.6745 + 0.01
    assert stats.outliers(base + [10.0, just_below]) == []
    assert stats.outliers(base + [10.0, just_above]) == [6]
    # a lower threshold flags more
    assert stats.outliers(base + [10.0, just_below], threshold=3.0) == [6]


def test_outliers_none_for_tight_or_small_sets():
    assert stats.outliers([1.0, 1.1, 0.9, 1.05, 0.95]) == []
    assert stats.outliers([1.0, 100.0]) == []  # fewer than 3 values
    assert stats.outliers([]) == []


def test_outliers_zero_mad_gives_none():
    assert stats.outliers([5.0, 5.0, 5.0, 5.0]) == []


# --- warnings_for -------------------------------------------------------------------------

STABLE = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98]


def test_no_warnings_for_stable_long_runs():
    assert stats.warnings_for(STABLE, label="x", resolution=1e-6) == []


def test_warning_few_runs():
    w = stats.warnings_for([1.0, 1.01, 0.99], label="scan cpu_s")
    assert len(w) == 1
    assert w[0].startswith("scan cpu_s: only 3 runs (< 6): too few for a verdict")
    assert "--runs 10" in w[0]


def test_warning_no_runs():
    assert stats.warnings_for([], label="x") == ["x: no runs"]


def test_warning_non_finite_values():
    w = stats.warnings_for(STABLE + [math.nan, math.inf], label="x")
    assert w == ["x: 2 non-finite value(s) (NaN or Inf) excluded from every statistic"]
    assert stats.summarize([1.0, math.nan, 3.0]).mean == pytest.approx(2.0)


def test_warning_unstable_at_ten_percent():
    values = [1.0, 1.2, 0.8, 1.1, 0.9, 1.0]  # stdev ~ 14% of the mean
    w = stats.warnings_for(values, label="x")
    assert any("unstable" in m and "14% of the mean" in m for m in w)
    # just below 10%: no warning
    s = stats.summarize([1.0, 1.05, 0.95, 1.0, 1.08, 0.92])
    assert s.stdev < 0.10 * s.mean
    assert not any("unstable" in m for m in stats.warnings_for([1.0, 1.05, 0.95, 1.0, 1.08, 0.92], label="x"))


def test_warning_too_short_to_time():
    # mean 50 us with a 1 us resolution: < 100x the resolution
    w = stats.warnings_for([5e-5] * 6, label="x", resolution=1e-6)
    assert len(w) == 1 and "too short to time" in w[0]
    # mean exactly 100x: fine
    assert stats.warnings_for([1e-4] * 6, label="x", resolution=1e-6) == []
    # no resolution given: never flagged
    assert stats.warnings_for([5e-5] * 6, label="x") == []


def test_warning_outliers():
    values = [10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 30.0]
    w = stats.warnings_for(values, label="x")
    assert any("1 outlier run(s)" in m for m in w)


# --- percent / verdicts -------------------------------------------------------------------

@pytest.mark.parametrize("ratio,text", [(1.31, "+31%"), (0.9, "-10%"), (14.2, "+1320%"), (1.0, "+0%"), (4.1, "+310%")])
def test_percent(ratio, text):
    assert stats.percent(ratio) == text


def _j(ratio, ci, ci90, n=6, **kw):
    return stats.judge(ratio, ci, ci90, n, n, word="CPU", **kw)


def test_verdict_costs_and_saves():
    j = _j(1.153, (1.119, 1.189), (1.125, 1.182))
    assert j.verdict == stats.COSTS and j.text == "costs +15.3% CPU [+11.9, +18.9]"
    assert j.equivalence["shown"] is False and j.equivalence["bounds"] == [0.98, 1.02]
    j = _j(0.9, (0.85, 0.95), (0.86, 0.94))
    assert j.verdict == stats.SAVES and j.text.startswith("saves -10.0% CPU")
    # a rate: less throughput is the cost
    assert _j(0.9, (0.85, 0.95), (0.86, 0.94), higher_is_better=True).verdict == stats.COSTS


def test_verdict_no_cost_needs_equivalence_shown():
    j = _j(1.004, (0.985, 1.024), (0.988, 1.019))
    assert j.verdict == stats.NO_COST
    assert j.text.startswith("no cost: within ±2% (equivalence shown): +0.4% CPU")
    assert j.equivalence["shown"] and j.equivalence["ci90"] == [0.988, 1.019]
    # the same interval is inconclusive with a 1% margin; a real but negligible change is no cost
    assert _j(1.004, (0.985, 1.024), (0.988, 1.019), margin_pct=1).verdict == stats.INCONCLUSIVE
    assert _j(1.01, (1.003, 1.017), (1.004, 1.016)).verdict == stats.NO_COST


def test_verdict_inconclusive_says_run_longer():
    j = _j(1.02, (0.93, 1.12), (0.95, 1.10))
    assert j.verdict == stats.INCONCLUSIVE
    assert j.text == "inconclusive: CPU +2.0% [-7.0, +12.0] is too wide, run longer"


def test_verdict_too_few_runs_even_when_the_ci_excludes_one():
    j = stats.judge(4.1, (3.9, 4.3), (3.95, 4.25), 3, 5, word="CPU")
    assert j.verdict == stats.TOO_FEW_RUNS
    assert j.text == "too few runs for a verdict: 3 per side, need 6"
    assert stats.judge(4.1, (3.9, 4.3), (3.95, 4.25), 6, 6).verdict == stats.COSTS


def test_verdict_no_estimate():
    assert _j(None, None, None).verdict == stats.NO_ESTIMATE
    assert _j(math.nan, None, None).verdict == stats.NO_ESTIMATE
    assert _j(3.0, None, None).verdict == stats.NO_ESTIMATE


def test_verdict_noise_floor_widens_both_bands():
    # +15% across two invocations is within a 25% floor of machine drift: no failing verdict
    j = _j(1.15, (1.12, 1.19), (1.125, 1.18), floor_pct=25)
    assert j.verdict == stats.NO_COST and "noise floor" in j.text
    j = _j(1.6, (1.4, 1.8), (1.45, 1.75), floor_pct=25)
    assert j.verdict == stats.COSTS and "beyond the ±25% noise floor" in j.text
    assert _j(1.2, (1.0, 1.45), (1.05, 1.4), floor_pct=25).verdict == stats.INCONCLUSIVE


def test_verdict_enum_is_small_and_stable():
    assert stats.VERDICTS == ("costs", "saves", "no_cost", "inconclusive", "too_few_runs", "no_estimate", "withheld")


def test_verdict_from_real_estimates():
    base6, double6 = BASE[:6], DOUBLE[:6]
    assert stats.verdict("CPU", stats.ratio_ci(base6, double6)).startswith("costs +100.0% CPU [")
    assert stats.verdict("CPU", stats.ratio_ci(BASE[:3], DOUBLE[:3])) == "too few runs for a verdict: 3 per side, need 6"
    v = stats.verdict("elapsed", stats.ratio_ci(BASE, BASE[::-1]))
    assert v.startswith("no cost: within ±2% (equivalence shown): +0.0% elapsed")


# --- near-zero spread: instruction counts (--meter instructions, issue 23) ----------------------------------------
# A count repeats to a few instructions in 10^8: the statistics must give a ratio, a CI of width ~0 (a valid result,
# no division by zero) and verdicts that follow it, and the gate's one-sided test must be defined.

COUNT = 92_587_453.0


def test_identical_counts_give_a_point_ci_and_no_cost():
    est = stats.ratio_ci([COUNT] * 6, [COUNT] * 6)
    assert est.value == 1.0 and est.ci == (1.0, 1.0) and est.ci90 == (1.0, 1.0) and est.se == 0.0
    assert not est.significant
    assert stats.judge_estimate(est, word="instructions").verdict == stats.NO_COST
    assert stats.p_above(est.value, est.se, est.df, 1.01) == 1.0
    d = stats.difference_ci([COUNT] * 6, [COUNT] * 6)
    assert d.value == 0.0 and d.ci == (0.0, 0.0)
    assert stats.mean_ci([COUNT] * 6) == (COUNT, COUNT)


def test_identical_counts_on_each_side_that_differ_are_a_cost_with_a_point_ci():
    est = stats.ratio_ci([COUNT] * 6, [COUNT * 1.01] * 6)  # a real 1% change, counted exactly
    assert est.ci[0] <= est.value <= est.ci[1] and est.ci[1] - est.ci[0] < 1e-12 and abs(est.value - 1.01) < 1e-12
    j = stats.judge_estimate(est, word="instructions", margin_pct=0.5)
    assert j.verdict == stats.COSTS and "+1.0% instructions" in j.text
    assert stats.p_above(est.value, est.se, est.df, 1.005) < 1e-12  # over a 0.5% limit, for certain
    assert stats.p_above(est.value, est.se, est.df, 1.02) > 1 - 1e-12


def test_near_identical_counts_give_a_finite_narrow_ci():
    base = [COUNT + d for d in (0, 140, -65, 12, 88, -30)]
    cont = [COUNT * 1.01 + d for d in (5, -90, 40, 130, -12, 0)]
    est = stats.ratio_ci(base, cont)
    assert est.ci is not None and all(map(lambda x: x == x and abs(x) != float("inf"), est.ci))
    assert est.ci[0] < est.value < est.ci[1] and est.ci[1] - est.ci[0] < 1e-5
    assert est.df > 0 and est.se > 0
    assert stats.judge_estimate(est, margin_pct=0.5).verdict == stats.COSTS
    assert stats.judge_estimate(stats.ratio_ci(base, base[::-1])).verdict == stats.NO_COST
    p = stats.p_above(est.value, est.se, est.df, 1.01)
    assert 0.0 <= p <= 1.0
    d = stats.difference_ci(base, cont)
    assert d.ci[0] < d.value < d.ci[1]


def test_one_side_constant_the_other_near_constant():
    est = stats.ratio_ci([COUNT] * 6, [COUNT, COUNT + 1, COUNT, COUNT + 2, COUNT, COUNT + 1])
    assert est.ci is not None and est.ci[0] <= est.value <= est.ci[1]
    assert stats.judge_estimate(est).verdict == stats.NO_COST
    assert stats.warnings_for([COUNT] * 6, label="x", resolution=1.0) == []


def test_a_count_that_moves_a_few_thousand_is_no_outlier():
    # MAD-based Z-scores call a 0.03% deviation extreme when the others agree to 50 instructions (measured: a warm
    # scan of 10,785,049 / 10,785,094 / 10,788,053 instructions); outliers need to be 0.5% from the median
    counts = [10_785_049, 10_785_094, 10_788_053, 10_785_043, 10_785_094, 10_787_802]
    assert stats.outliers(counts) == []
    assert stats.warnings_for(counts, label="x") == []
    assert stats.outliers(counts[:5] + [10_900_000.0]) == [5]  # 1% away: still one
