"""Statistics across runs: summaries, bootstrap confidence intervals, plain-word warnings.

Values inside one process are correlated, so every statistic here is taken across
runs (one value per run), never across iterations inside a run (pyperf's rule).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

CONFIDENCE = 0.95
N_RESAMPLES = 10_000
MIN_RUNS = 5
UNSTABLE_CV = 0.10
OUTLIER_Z = 3.5


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
    """Median, mean, sample stdev (None below 2 values), min, max; None for no values."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
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
    """A point estimate with a bootstrap confidence interval."""

    value: float | None
    ci: tuple[float, float] | None
    significant: bool
    null: float  # the value meaning "no difference" (1 for a ratio, 0 for a difference)

    def to_dict(self) -> dict:
        return {
            "value": self.value,
            "ci": list(self.ci) if self.ci else None,
            "significant": self.significant,
        }


def _bootstrap(
    baseline: Sequence[float],
    contender: Sequence[float],
    statistic,
    *,
    null: float,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> Estimate:
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(contender, dtype=float)
    if a.size == 0 or b.size == 0:
        return Estimate(None, None, False, null)
    point = statistic(a[None, :], b[None, :])[0]
    if not np.isfinite(point):
        return Estimate(None, None, False, null)
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, a.size, size=(n_resamples, a.size))
    ib = rng.integers(0, b.size, size=(n_resamples, b.size))
    boot = statistic(a[ia], b[ib])
    boot = boot[np.isfinite(boot)]
    if boot.size < n_resamples * 0.9:
        # the statistic is undefined in too many resamples (e.g. a baseline of zeros)
        return Estimate(float(point), None, False, null)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    significant = bool(lo > null or hi < null)
    return Estimate(float(point), (float(lo), float(hi)), significant, null)


def _ratio_of_means(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    den = a.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, b.mean(axis=1) / den, np.nan)


def _difference_of_means(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return b.mean(axis=1) - a.mean(axis=1)


def ratio_ci(
    baseline: Sequence[float],
    contender: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> Estimate:
    """mean(contender) / mean(baseline) with a percentile bootstrap CI.

    Both groups are resampled independently (the runs are not paired). Not
    significant when the CI spans 1. The seed makes the CI reproducible.
    """
    return _bootstrap(
        baseline, contender, _ratio_of_means,
        null=1.0, confidence=confidence, n_resamples=n_resamples, seed=seed,
    )


def difference_ci(
    baseline: Sequence[float],
    contender: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> Estimate:
    """mean(contender) - mean(baseline) with a percentile bootstrap CI."""
    return _bootstrap(
        baseline, contender, _difference_of_means,
        null=0.0, confidence=confidence, n_resamples=n_resamples, seed=seed,
    )


def outliers(values: Sequence[float], threshold: float = OUTLIER_Z) -> list[int]:
    """Indices of outliers by modified Z-score on the MAD (Iglewicz and Hoaglin)."""
    arr = np.asarray(values, dtype=float)
    if arr.size < 3:
        return []
    med = np.median(arr)
    mad = np.median(np.abs(arr - med))
    if mad == 0:
        return []
    z = 0.6745 * (arr - med) / mad
    return [int(i) for i in np.nonzero(np.abs(z) > threshold)[0]]


def warnings_for(
    values: Sequence[float],
    *,
    label: str,
    resolution: float | None = None,
    min_runs: int = MIN_RUNS,
) -> list[str]:
    """Plain-word warnings about a set of run values (pyperf's format_checks)."""
    out: list[str] = []
    s = summarize(values)
    if s is None:
        return [f"{label}: no runs"]
    if s.n < min_runs:
        out.append(f"{label}: only {s.n} runs (< {min_runs}); the CI is rough, use --runs {max(10, min_runs)}")
    if s.stdev is not None and s.mean > 0 and s.stdev >= UNSTABLE_CV * s.mean:
        out.append(f"{label}: unstable, stdev is {100 * s.stdev / s.mean:.0f}% of the mean (>= {UNSTABLE_CV:.0%})")
    if resolution and s.mean < 100 * resolution:
        out.append(
            f"{label}: too short to time, mean {s.mean:.4g} is < 100x the probe's resolution {resolution:g}"
        )
    bad = outliers(values)
    if bad:
        out.append(f"{label}: {len(bad)} outlier run(s) by modified Z-score > {OUTLIER_Z}")
    return out


def percent(ratio: float) -> str:
    """1.31 -> '+31%', 0.9 -> '-10%', 14.2 -> '+1320%'."""
    return f"{(ratio - 1) * 100:+.0f}%"


def verdict(metric_label: str, est: Estimate) -> str:
    """A one-line verdict on a ratio: '+310% CPU, significant' / 'no significant difference'."""
    if est.value is None:
        return f"{metric_label}: no ratio (baseline is zero or missing)"
    if est.ci is None:
        return f"{percent(est.value)} {metric_label}, no CI"
    if not est.significant:
        return f"no significant difference in {metric_label} ({percent(est.value)})"
    return f"{percent(est.value)} {metric_label}, significant"


def mean_ci(values: Sequence[float], *, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
            seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap CI of a mean (None below 2 values); the seed makes it reproducible."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    if arr.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, arr.size, size=(n_resamples, arr.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))
