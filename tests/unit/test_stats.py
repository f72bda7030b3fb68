"""encbench.stats: summaries, bootstrap CIs, outliers, warnings and verdicts."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from encbench import stats
from encbench.stats import Estimate


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


# --- ratio_ci -----------------------------------------------------------------------------

BASE = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99]
DOUBLE = [2.00, 2.02, 1.98, 2.01, 1.99, 2.00, 2.03, 1.97]


def test_ratio_is_ratio_of_means():
    est = stats.ratio_ci([1.0, 3.0], [4.0, 8.0])
    assert est.value == pytest.approx(6.0 / 2.0)
    est = stats.ratio_ci(BASE, DOUBLE)
    assert est.value == pytest.approx(np.mean(DOUBLE) / np.mean(BASE))


def test_ratio_clear_doubling_is_significant_and_ci_excludes_one():
    est = stats.ratio_ci(BASE, DOUBLE)
    assert est.value == pytest.approx(2.0, rel=0.02)
    lo, hi = est.ci
    assert lo <= est.value <= hi
    assert lo > 1.0
    assert 1.9 < lo < hi < 2.1  # low noise: a tight interval
    assert est.significant is True
    assert est.null == 1.0


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
    est = stats.ratio_ci(a, b, seed=seed)
    lo, hi = est.ci
    assert lo <= est.value <= hi


def test_ratio_baseline_all_zeros_gives_no_value():
    est = stats.ratio_ci([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    assert est.value is None
    assert est.ci is None
    assert est.significant is False


def test_ratio_empty_group_gives_no_value():
    for a, b in (([], [1.0]), ([1.0], [])):
        est = stats.ratio_ci(a, b)
        assert est.value is None and est.ci is None and not est.significant


def test_ratio_baseline_mostly_zeros_has_value_but_no_ci():
    # mean is nonzero, but many resamples draw only zeros: undefined in > 10% of them
    est = stats.ratio_ci([0.0, 0.0, 1.0], [1.0, 1.0, 1.0])
    assert est.value == pytest.approx(3.0)
    assert est.ci is None
    assert est.significant is False


def test_ratio_ci_reproducible_with_same_seed():
    rng = np.random.default_rng(5)
    a = list(rng.lognormal(0, 0.2, size=8))
    b = list(rng.lognormal(0.1, 0.2, size=8))
    e1 = stats.ratio_ci(a, b, seed=7)
    e2 = stats.ratio_ci(a, b, seed=7)
    assert e1 == e2
    e3 = stats.ratio_ci(a, b, seed=8)
    assert e3.value == e1.value
    assert e3.ci != e1.ci  # the CI really depends on the seed


def test_ratio_ci_narrower_at_lower_confidence():
    a = [1.0, 1.3, 0.8, 1.1, 0.9]
    b = [1.2, 1.5, 1.1, 1.4, 1.0]
    wide = stats.ratio_ci(a, b, confidence=0.99)
    narrow = stats.ratio_ci(a, b, confidence=0.80)
    assert wide.ci[0] < narrow.ci[0] and narrow.ci[1] < wide.ci[1]


def test_estimate_to_dict():
    est = stats.ratio_ci(BASE, DOUBLE)
    d = est.to_dict()
    assert d["value"] == est.value
    assert d["ci"] == list(est.ci) and len(d["ci"]) == 2
    assert d["significant"] is True
    assert Estimate(None, None, False, 1.0).to_dict() == {"value": None, "ci": None, "significant": False}


# --- difference_ci ------------------------------------------------------------------------

def test_difference_of_means_and_significance():
    est = stats.difference_ci(BASE, DOUBLE)
    assert est.value == pytest.approx(np.mean(DOUBLE) - np.mean(BASE))
    lo, hi = est.ci
    assert lo <= est.value <= hi
    assert lo > 0
    assert est.significant is True
    assert est.null == 0.0


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
    assert w[0].startswith("scan cpu_s: only 3 runs (< 5)")
    assert "--runs 10" in w[0]


def test_warning_no_runs():
    assert stats.warnings_for([], label="x") == ["x: no runs"]


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


# --- percent / verdict --------------------------------------------------------------------

@pytest.mark.parametrize("ratio,text", [(1.31, "+31%"), (0.9, "-10%"), (14.2, "+1320%"), (1.0, "+0%"), (4.1, "+310%")])
def test_percent(ratio, text):
    assert stats.percent(ratio) == text


def test_verdict_significant():
    est = Estimate(4.1, (3.9, 4.3), True, 1.0)
    assert stats.verdict("CPU", est) == "+310% CPU, significant"


def test_verdict_not_significant():
    est = Estimate(1.02, (0.97, 1.08), False, 1.0)
    assert stats.verdict("CPU", est) == "no significant difference in CPU (+2%)"


def test_verdict_no_value_and_no_ci():
    assert stats.verdict("CPU", Estimate(None, None, False, 1.0)) == "CPU: no ratio (baseline is zero or missing)"
    assert stats.verdict("CPU", Estimate(3.0, None, False, 1.0)) == "+200% CPU, no CI"


def test_verdict_from_real_estimates():
    assert stats.verdict("CPU", stats.ratio_ci(BASE, DOUBLE)) == "+100% CPU, significant"
    v = stats.verdict("elapsed", stats.ratio_ci(BASE, BASE[::-1]))
    assert v == "no significant difference in elapsed (+0%)"
    assert math.isfinite(stats.ratio_ci(BASE, DOUBLE).value)
