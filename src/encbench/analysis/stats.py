"""Statistics across runs: summaries, small-sample confidence intervals, verdicts, warnings.

Values inside one process are correlated, so every statistic here is taken across
runs (one value per run), never across iterations inside a run (pyperf's rule).

Ratios (contender / baseline) are ratios of 20%-trimmed geometric means with Yuen's
t-interval on the log values (Welch-Satterthwaite degrees of freedom): timings are
positive and multiplicative, the log makes a skewed (lognormal) spread symmetric, the
trimming keeps one slow run from widening the interval into uselessness, and the t
keeps its stated error rate down to a handful of runs, where the percentile bootstrap
of a ratio of means it replaces was too narrow (bench/stats_sim.py measures them all;
docs/RESULTS.md has the figures). The same machinery gives a ratio of ratios (an
overhead compared across two files) and a one-sided test against a threshold (the gate).
Values that are not finite never reach a statistic: they are dropped and counted.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

import numpy as np

from encbench.util.tdist import t_ppf, t_sf

CONFIDENCE = 0.95
N_RESAMPLES = 10_000  # kept for callers that pass n_resamples (no longer used: the intervals are analytic)
MIN_RUNS = 6  # per side: below this no verdict is given (the CI is still computed and shown)
DEFAULT_MARGIN_PCT = 2.0  # equivalence margin: "no cost" means the 90% CI lies within ±2%
UNSTABLE_CV = 0.10
OUTLIER_Z = 3.5
# a run within 0.5% of the median is no outlier whatever its Z-score: instruction counts (--meter instructions) repeat
# to a few hundred in 10^8, so a MAD of tens makes a difference of thousands "extreme" when it is nothing a reader
# should chase; a time that moves 0.5% is no outlier either
OUTLIER_MIN_RELATIVE = 0.005
TRIM = 0.2  # Yuen's trimmed means: 20% of the runs dropped from each end (one of 5-9 runs, two of 10-14)
# An exact count (instructions under --meter instructions) repeats from run to run: judged from as few runs as show
# it repeats. A side repeats when each of its runs is within EXACT_TOLERANCE of the others (largest / smallest - 1);
# measured: SQLite's worker at most 0.014% over 44 groups of runs; a private PostgreSQL server's storm within 0.1%
# in 9 of 12 groups (up to 0.26%), its roundtrip up to 0.64% (those are judged as timed figures: docs/meter.md). Two
# repeating runs per side then bound the ratio (exact_contrast) without a t-interval: a t with 1 degree of freedom
# would widen a spread of 0.01% into one that hides a 1% change.
EXACT_TOLERANCE = 0.001
EXACT_MIN_RUNS = 2
EXACT_MARGIN_PCT = 0.5  # an exact count's "no cost" margin: at most this (a 1% change it resolves is a cost)

# the verdict of one comparison: a small, stable enum (docs/RESULTS.md)
COSTS, SAVES, NO_COST, INCONCLUSIVE, TOO_FEW_RUNS, NO_ESTIMATE, WITHHELD = (
    "costs", "saves", "no_cost", "inconclusive", "too_few_runs", "no_estimate", "withheld")
VERDICTS = (COSTS, SAVES, NO_COST, INCONCLUSIVE, TOO_FEW_RUNS, NO_ESTIMATE, WITHHELD)  # withheld: a saturated client

LOG_T = "ratio of 20%-trimmed geometric means, Yuen-Welch t-interval on log values"
EXACT = ("exact count: every run of each side within 0.1% of its others; the interval bounds the ratio of any "
         "further runs (each side's range widened by that tolerance), no t-interval")
MEAN_T = "ratio of means, Welch t-interval by the delta method (some values are zero or negative)"


def finite(values: Iterable) -> tuple[np.ndarray, int]:
    """(the finite values, how many were not finite: NaN, Inf); None values are left out silently."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    ok = np.isfinite(arr)
    return arr[ok], int(arr.size - ok.sum())


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    median: float
    stdev: float | None
    min: float
    max: float

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(values: Sequence[float]) -> Summary | None:
    """Median, mean, sample stdev (None below 2 values), min, max of the finite values; None for none."""
    arr, _ = finite(values)
    if arr.size == 0:
        return None
    stdev = float(arr.std(ddof=1)) if arr.size >= 2 else None
    return Summary(
        n=int(arr.size),
        mean=float(arr.mean()),
        median=float(np.median(arr)),
        stdev=stdev,
        min=float(arr.min()),
        max=float(arr.max()),
    )


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a confidence interval.

    For a ratio, `se` and `df` are those of the log of the ratio (what a one-sided test or
    a narrower interval needs); `ci90` is the 1 - 2 alpha interval used by the equivalence
    test (TOST). `excluded` counts the non-finite values dropped before anything was computed.
    """

    value: float | None
    ci: tuple[float, float] | None
    significant: bool
    null: float  # the value meaning "no difference" (1 for a ratio, 0 for a difference)
    ci90: tuple[float, float] | None = None
    n_baseline: int = 0
    n_contender: int = 0
    excluded: int = 0
    method: str = ""
    se: float | None = None
    df: float | None = None
    exact: bool = False  # an exact count's bound (exact_contrast), not a t-interval: se and df are None

    @property
    def half_width(self) -> float | None:
        """Half the CI's width in the estimate's units (a ratio: 0.05 = ±5 points)."""
        return None if self.ci is None else (self.ci[1] - self.ci[0]) / 2

    @property
    def half_width_pct(self) -> float | None:
        """A ratio's half-width in percentage points (±5.0 for [1.03, 1.13])."""
        hw = self.half_width
        return None if hw is None else 100 * hw

    def to_dict(self) -> dict:
        return {
            "value": self.value,
            "ci": list(self.ci) if self.ci else None,
            "significant": self.significant,
        }


@dataclass(frozen=True)
class _Part:
    """One group's contribution to a log contrast: its centre, the variance of that centre, n - 1."""

    centre: float
    var: float
    dof: int


def trim_count(n: int, trim: float = TRIM) -> int:
    """How many values a trimmed mean drops from each end: floor(trim x n)."""
    return int(math.floor(trim * n + 1e-9))


def _part(arr: np.ndarray, log_values: bool, trim: float) -> _Part | None:
    n = arr.size
    if log_values:
        # Yuen: the trimmed mean of the logs, its variance from the winsorized variance
        logs = np.sort(np.log(arr))
        g = trim_count(n, trim)
        h = n - 2 * g
        centre = float(logs[g:n - g].mean())
        if h < 2:
            return _Part(centre, math.nan, h - 1)
        wins = np.clip(logs, logs[g], logs[n - g - 1])
        var = float(wins.var(ddof=1)) * (n - 1) / (h * (h - 1))
        return _Part(centre, var, h - 1)
    m = float(arr.mean())
    if m <= 0:
        return None
    var = float(arr.var(ddof=1)) / (n * m * m) if n >= 2 else math.nan  # delta method: var(log mean)
    return _Part(math.log(m), var, n - 1)


def repeats(values: Sequence[float], tolerance: float = EXACT_TOLERANCE) -> bool:
    """Do these runs repeat, as an exact count does: at least EXACT_MIN_RUNS values, all finite and positive, the
    largest within `tolerance` of the smallest?"""
    arr, bad = finite(values)
    return (not bad and arr.size >= EXACT_MIN_RUNS and bool((arr > 0).all())
            and float(arr.max()) <= float(arr.min()) * (1 + tolerance))


def exact_contrast(groups: Sequence[tuple[Sequence[float], int]], *,
                   tolerance: float = EXACT_TOLERANCE) -> Estimate | None:
    """exp(sum of coef x log centre) for groups that each repeat (`repeats`), with a bound in place of a CI; None
    when a group does not repeat (then it is judged as a timed figure: log_contrast's t-interval, MIN_RUNS runs).

    Each group's runs lie within `tolerance` of one another, so any further run of it lies in [max / (1 + tol),
    min x (1 + tol)]; the interval is the contrast of those ranges (its low end from each group's low or high side,
    as its coefficient's sign says). It holds at any confidence level: ci and ci90 are the same bound."""
    arrays = [(finite(v)[0], c) for v, c in groups]
    if not arrays or not all(repeats(arr, tolerance) for arr, _ in arrays):
        return None
    widen = math.log1p(tolerance)
    d = sum(c * float(np.log(arr).mean()) for arr, c in arrays)
    ranges = [(math.log(float(arr.max())) - widen, math.log(float(arr.min())) + widen) for arr, _ in arrays]
    lo = sum(c * (low if c > 0 else high) for (low, high), (_, c) in zip(ranges, arrays))
    hi = sum(c * (high if c > 0 else low) for (low, high), (_, c) in zip(ranges, arrays))
    value, ci = math.exp(d), (math.exp(lo), math.exp(hi))
    n_base = min((arr.size for arr, c in arrays if c < 0), default=0)
    n_cont = min((arr.size for arr, c in arrays if c > 0), default=0)
    return Estimate(value, ci, bool(ci[0] > 1.0 or ci[1] < 1.0), 1.0, ci90=ci, n_baseline=n_base,
                    n_contender=n_cont, method=EXACT, exact=True)


def log_contrast(groups: Sequence[tuple[Sequence[float], int]], *, confidence: float = CONFIDENCE,
                 trim: float = TRIM, exact: bool = False) -> Estimate:
    """exp(sum of coef x log centre) over independent groups, with a Welch-Satterthwaite t-interval.

    `groups` are (values, coefficient) pairs, e.g. [(baseline, -1), (contender, +1)] for a
    ratio, or four groups for a ratio of ratios. When every value of every group is
    positive, the centre of a group is the `trim`-trimmed mean of its log values with
    Yuen's variance (from the winsorized variance; trim=0 is Welch's t on logs): one slow
    run among six moves neither the estimate nor the interval much. Otherwise it is the log
    of the plain mean (delta method); a non-positive mean gives no estimate. `exact` (a count): when every group
    repeats, exact_contrast's bound instead.
    """
    if exact and (bound := exact_contrast(groups)) is not None:
        return bound
    cleaned = [(finite(v), c) for v, c in groups]
    excluded = sum(bad for (_, bad), _ in cleaned)
    arrays = [(arr, c) for (arr, _), c in cleaned]
    ns = [arr.size for arr, _ in arrays]
    n_base = min((arr.size for arr, c in arrays if c < 0), default=0)
    n_cont = min((arr.size for arr, c in arrays if c > 0), default=0)
    none = Estimate(None, None, False, 1.0, n_baseline=n_base, n_contender=n_cont, excluded=excluded)
    if min(ns) == 0:
        return none
    log_values = all((arr > 0).all() for arr, _ in arrays)
    parts = [(_part(arr, log_values, trim), c) for arr, c in arrays]
    if any(p is None for p, _ in parts):
        return none
    d = sum(c * p.centre for p, c in parts)
    method = LOG_T if log_values else MEAN_T
    base = dict(n_baseline=n_base, n_contender=n_cont, excluded=excluded, method=method)
    if not math.isfinite(d):
        return none
    value = math.exp(d)
    var = sum(c * c * p.var for p, c in parts)
    if not math.isfinite(var):  # a group of one value: no spread to judge by
        return Estimate(value, None, False, 1.0, **base)
    if var == 0:  # identical values on every side: the interval is the point
        return Estimate(value, (value, value), value != 1.0, 1.0, ci90=(value, value), se=0.0, df=math.inf, **base)
    dof_den = sum((c * c * p.var) ** 2 / p.dof for p, c in parts if p.dof > 0 and p.var > 0)
    df = var * var / dof_den if dof_den > 0 else float(max(sum(p.dof for p, _ in parts), 1))
    se = math.sqrt(var)
    alpha = 1 - confidence
    q, q90 = t_ppf(1 - alpha / 2, df), t_ppf(1 - alpha, df)
    ci = (math.exp(d - q * se), math.exp(d + q * se))
    ci90 = (math.exp(d - q90 * se), math.exp(d + q90 * se))
    return Estimate(value, ci, bool(ci[0] > 1.0 or ci[1] < 1.0), 1.0, ci90=ci90, se=se, df=df, **base)


def ratio_ci(
    baseline: Sequence[float],
    contender: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int | None = None,
    seed: int = 0,
    exact: bool = False,
) -> Estimate:
    """contender / baseline: the ratio of trimmed geometric means with a Yuen-Welch t-interval on logs.

    The runs are not paired. Not significant when the CI spans 1. `n_resamples` and `seed`
    are accepted for older callers and ignored: the interval is analytic and deterministic.
    With a zero or negative value on either side, the ratio of means (delta method). `exact`: the metric is a
    count; when both sides repeat, exact_contrast's bound.
    """
    del n_resamples, seed
    return log_contrast([(baseline, -1), (contender, +1)], confidence=confidence, exact=exact)


def ratio_of_ratios_ci(base_a: Sequence[float], cont_a: Sequence[float], base_b: Sequence[float],
                       cont_b: Sequence[float], *, confidence: float = CONFIDENCE, exact: bool = False) -> Estimate:
    """(cont_b / base_b) / (cont_a / base_a): an overhead in file B against the same overhead in file A.

    A drift of the machine between the two invocations that slows baseline and contender
    alike cancels; the interval comes from all four groups' runs.
    """
    return log_contrast([(cont_b, +1), (base_b, -1), (cont_a, -1), (base_a, +1)], confidence=confidence, exact=exact)


def p_above(value: float | None, se: float | None, df: float | None, threshold_ratio: float) -> float | None:
    """One-sided p-value of H0: true ratio <= threshold_ratio, from a ratio and the se and df of its log
    (an Estimate's value, se, df); None when untestable. The gate's test."""
    if value is None or se is None or df is None or not value > 0:
        return None
    if se == 0:
        return 0.0 if value > threshold_ratio else 1.0
    t = (math.log(value) - math.log(threshold_ratio)) / se
    return t_sf(t, df)


def holm(pvalues: Sequence[float], alpha: float) -> list[bool]:
    """Holm-Bonferroni: which hypotheses are rejected with a family-wise error rate of alpha."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    rejected = [False] * len(pvalues)
    m = len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] > alpha / (m - rank):
            break
        rejected[i] = True
    return rejected


def difference_ci(baseline: Sequence[float], contender: Sequence[float], *, confidence: float = CONFIDENCE) -> Estimate:
    """mean(contender) - mean(baseline) with a Welch t-interval (unequal variances)."""
    a, bad_a = finite(baseline)
    b, bad_b = finite(contender)
    base = dict(n_baseline=int(a.size), n_contender=int(b.size), excluded=bad_a + bad_b,
                method="difference of means, Welch t-interval")
    if a.size == 0 or b.size == 0:
        return Estimate(None, None, False, 0.0, **base)
    d = float(b.mean() - a.mean())
    if a.size < 2 or b.size < 2:
        return Estimate(d, None, False, 0.0, **base)
    va, vb = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
    var = va + vb
    if var == 0:
        return Estimate(d, (d, d), d != 0.0, 0.0, ci90=(d, d), se=0.0, df=math.inf, **base)
    df = var * var / ((va * va / (a.size - 1) if va else 0) + (vb * vb / (b.size - 1) if vb else 0))
    se = math.sqrt(var)
    alpha = 1 - confidence
    q, q90 = t_ppf(1 - alpha / 2, df), t_ppf(1 - alpha, df)
    ci = (d - q * se, d + q * se)
    return Estimate(d, ci, bool(ci[0] > 0 or ci[1] < 0), 0.0, ci90=(d - q90 * se, d + q90 * se), se=se, df=df,
                    **base)


def mean_ci(values: Sequence[float], *, confidence: float = CONFIDENCE, n_resamples: int | None = None,
            seed: int = 0) -> tuple[float, float] | None:
    """Student t-interval of a mean (None below 2 finite values)."""
    del n_resamples, seed
    arr, _ = finite(values)
    if arr.size < 2:
        return None
    m, se = float(arr.mean()), float(arr.std(ddof=1)) / math.sqrt(arr.size)
    q = t_ppf(1 - (1 - confidence) / 2, arr.size - 1)
    return m - q * se, m + q * se


# --- verdicts ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Judgement:
    verdict: str  # one of VERDICTS
    text: str
    equivalence: dict | None  # the TOST: margin, the 90% CI, shown or not


def pct(x: float) -> str:
    """A ratio as a signed change: 1.153 -> '+15.3%', 0.9 -> '-10.0%'."""
    return f"{(x - 1) * 100:+.1f}%"


def ci_text(ci) -> str:
    """[1.119, 1.189] -> '[+11.9, +18.9]'."""
    return f"[{(ci[0] - 1) * 100:+.1f}, {(ci[1] - 1) * 100:+.1f}]"


def judge(ratio: float | None, ci, ci90, n_baseline: int, n_contender: int, *, word: str = "",
          margin_pct: float = DEFAULT_MARGIN_PCT, floor_pct: float = 0.0, higher_is_better: bool = False,
          min_runs: int = MIN_RUNS, excluded: int = 0, exact: bool = False) -> Judgement:
    """The three-way verdict on a ratio (plus the two cases that give none).

    - costs / saves: the 95% CI lies entirely beyond no change (beyond the noise floor, if any);
      which of the two depends on whether a higher value is worse (time, CPU) or better (rates);
    - no_cost: equivalence shown by two one-sided tests at the same 5% level, i.e. the 90% CI
      lies within ±margin (widened by the noise floor, if any);
    - inconclusive: neither, the interval is too wide: run longer;
    - too_few_runs: fewer than `min_runs` finite runs on a side; no_estimate: no ratio or CI.

    `exact`: the interval is an exact count's bound (exact_contrast): EXACT_MIN_RUNS runs per side suffice, and the
    margin is at most EXACT_MARGIN_PCT (a change the count resolves is not called "no cost").
    """
    if exact:
        min_runs, margin_pct = EXACT_MIN_RUNS, min(margin_pct, EXACT_MARGIN_PCT)
    w = f" {word}" if word else ""
    dropped = f" ({excluded} non-finite value(s) excluded)" if excluded else ""
    n = min(n_baseline, n_contender)
    if ratio is None or not math.isfinite(ratio):
        return Judgement(NO_ESTIMATE, f"no estimate{w}: the baseline is zero or missing{dropped}", None)
    if n < min_runs:
        return Judgement(TOO_FEW_RUNS, f"too few runs for a verdict: {n} per side, need {min_runs}{dropped}", None)
    if ci and not ci90:
        return Judgement(NO_ESTIMATE, f"no verdict{w} ({pct(ratio)}): no 90% CI, stored by an older encbench "
                         "(`encbench show FILE` recomputes it)", None)
    if not ci:
        return Judgement(NO_ESTIMATE, f"no CI{w} ({pct(ratio)}){dropped}", None)
    f, m = floor_pct / 100, margin_pct / 100
    lo_eq, hi_eq = (1 - m) / (1 + f), (1 + m) * (1 + f)
    shown = bool(ci90[0] >= lo_eq and ci90[1] <= hi_eq)
    band = f"±{margin_pct:g}%" + (f" beyond a ±{floor_pct:g}% noise floor" if f else "")
    equivalence = {"margin_pct": margin_pct, "floor_pct": floor_pct, "bounds": [lo_eq, hi_eq],
                   "ci90": list(ci90), "shown": shown,
                   "test": "two one-sided tests at 5% (the 90% CI within the bounds)"}
    est = f"{pct(ratio)}{w} {ci_text(ci)}"
    up, down = ci[0] > 1 + f, ci[1] < 1 / (1 + f)
    if shown:
        return Judgement(NO_COST, f"no cost: within {band} (equivalence shown): {est}{dropped}", equivalence)
    if up or down:
        worse = up != higher_is_better
        beyond = f", beyond the ±{floor_pct:g}% noise floor" if f else ""
        return Judgement(COSTS if worse else SAVES, f"{'costs' if worse else 'saves'} {est}{beyond}{dropped}",
                         equivalence)
    return Judgement(INCONCLUSIVE, f"inconclusive:{w} {pct(ratio)} {ci_text(ci)} is too wide, run longer"
                     + (f" (or within the ±{floor_pct:g}% noise floor)" if f else "") + dropped, equivalence)


def judge_estimate(est: Estimate, **kw) -> Judgement:
    return judge(est.value, est.ci, est.ci90, est.n_baseline, est.n_contender, excluded=est.excluded,
                 exact=est.exact, **kw)


# --- outliers and warnings ------------------------------------------------------------------

def outliers(values: Sequence[float], threshold: float = OUTLIER_Z,
             min_relative: float = OUTLIER_MIN_RELATIVE) -> list[int]:
    """Indices of outliers by modified Z-score on the MAD (Iglewicz and Hoaglin), each also more than
    `min_relative` of the median away from it."""
    arr = np.asarray(values, dtype=float)
    if arr.size < 3 or not np.isfinite(arr).all():
        return []
    med = np.median(arr)
    mad = np.median(np.abs(arr - med))
    if mad == 0:
        return []
    z = 0.6745 * (arr - med) / mad
    far = np.abs(arr - med) > min_relative * abs(med)
    return [int(i) for i in np.nonzero((np.abs(z) > threshold) & far)[0]]


def warnings_for(
    values: Sequence[float],
    *,
    label: str,
    resolution: float | None = None,
    min_runs: int = MIN_RUNS,
) -> list[str]:
    """Plain-word warnings about a set of run values (pyperf's format_checks)."""
    out: list[str] = []
    arr, bad = finite(values)
    if bad:
        out.append(f"{label}: {bad} non-finite value(s) (NaN or Inf) excluded from every statistic")
    s = summarize(arr)
    if s is None:
        return out + [f"{label}: no runs"]
    if s.n < min_runs:
        out.append(f"{label}: only {s.n} runs (< {min_runs}): too few for a verdict, use --runs {max(10, min_runs)}")
    if s.stdev is not None and s.mean > 0 and s.stdev >= UNSTABLE_CV * s.mean:
        out.append(f"{label}: unstable, stdev is {100 * s.stdev / s.mean:.0f}% of the mean (>= {UNSTABLE_CV:.0%})")
    if resolution and s.mean < 100 * resolution:
        out.append(
            f"{label}: too short to time, mean {s.mean:.4g} is < 100x the probe's resolution {resolution:g}"
        )
    bad_runs = outliers(arr)
    if bad_runs:
        out.append(f"{label}: {len(bad_runs)} outlier run(s) by modified Z-score > {OUTLIER_Z}")
    return out


def percent(ratio: float) -> str:
    """1.31 -> '+31%', 0.9 -> '-10%', 14.2 -> '+1320%'."""
    return f"{(ratio - 1) * 100:+.0f}%"


def verdict(metric_label: str, est: Estimate, **kw) -> str:
    """The one-line verdict on a ratio estimate, in words (judge_estimate's text)."""
    return judge_estimate(est, word=metric_label, **kw).text
