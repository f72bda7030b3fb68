"""The statistics alone, on synthetic samples: which interval keeps its error rate?

Thousands of synthetic A/A samples (both sides from one distribution) and A/B samples
(the contender 10% slower: every value x 1.10, so a ratio of means, of geometric means
and of medians all equal 1.10) per cell: n = 6, 10, 20, 30 runs per side x three kinds
of noise around 1:
  - normal:    1 + 0.20 z            (20% coefficient of variation, the spread of a noisy VM)
  - lognormal: exp(0.30 z)           (skewed: a long tail of slow runs)
  - outlier:   1 + 0.10 z, and one run of the pair (either side) x 3 (one hiccup)

For each method: the false-positive rate on A/A (the 95% CI excludes 1; nominal 5%),
the coverage of the true ratio on A/B (nominal 95%), and the power at +10% (the CI
excludes 1 on the right side). Methods:
  - boot:  the percentile bootstrap of the ratio of means (encbench before issue 12)
  - logt:  encbench.analysis.stats.ratio_ci: ratio of geometric means, Welch t-interval on logs
  - meant: ratio of means, Welch t by the delta method (encbench's fallback for zeros)
  - hl:    Hodges-Lehmann shift of the logs with the exact Mann-Whitney (Moses) interval

Then the decisions built on the chosen method:
  - equivalence (TOST, 90% CI within ±2%): how often "no cost" is claimed when the true
    change is exactly +2% (must stay <= 5%), and how often it is shown at no change;
  - across files: the ratio of ratios (overhead in B / overhead in A) with the machine
    15% slower during B's invocation: its A/A false-positive rate;
  - the gate `elapsed_overhead>5%` over a family of 20 overheads (Holm, one-sided 5%): how often
    it fails an unchanged build, and how often it catches one workload's encrypted
    variant (2 of the 20: cold and warm) made 30% slower; against the old rule
    (absolute elapsed, point > 5% and bootstrap CI excluding 1).

Usage: .venv/bin/python bench/stats_sim.py [--trials 2000] [--seed 1]
The figures are in docs/RESULTS.md ("How sure is a verdict").
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from functools import lru_cache

import numpy as np

from encbench.analysis import stats

NS = (6, 10, 20, 30)
NOISES = ("normal", "lognormal", "outlier")
EFFECT = 1.10


def draw(rng, noise: str, n: int, scale: float = 1.0, cv: float = 0.20) -> np.ndarray:
    z = rng.standard_normal(n)
    if noise == "normal":
        return scale * (1 + cv * z).clip(min=0.05)
    if noise == "lognormal":
        return scale * np.exp(0.30 * z)
    return scale * (1 + 0.10 * z)


def pair(rng, noise: str, n: int, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    a, b = draw(rng, noise, n), draw(rng, noise, n, ratio)
    if noise == "outlier":
        side, i = rng.integers(2), rng.integers(n)
        (a if side == 0 else b)[i] *= 3.0
    return a, b


# --- the methods: each returns (lo, hi) of a 95% CI of the ratio, or None ---------------------

def boot(a, b, rng, resamples: int = 2000):
    ia = rng.integers(0, a.size, size=(resamples, a.size))
    ib = rng.integers(0, b.size, size=(resamples, b.size))
    r = b[ib].mean(axis=1) / a[ia].mean(axis=1)
    return tuple(np.quantile(r, [0.025, 0.975]))


def logt(a, b, rng):
    return stats.log_contrast([(a, -1), (b, +1)], trim=0.0).ci


def yuen(a, b, rng):
    return stats.ratio_ci(a, b).ci


def meant(a, b, rng):
    """The ratio of means, Welch t on the log of the ratio by the delta method (stats.MEAN_T)."""
    ma, mb = a.mean(), b.mean()
    va, vb = a.var(ddof=1) / (a.size * ma * ma), b.var(ddof=1) / (b.size * mb * mb)
    var = va + vb
    df = var * var / (va * va / (a.size - 1) + vb * vb / (b.size - 1))
    q = stats.sps.t.ppf(0.975, df)
    d, se = math.log(mb / ma), math.sqrt(var)
    return math.exp(d - q * se), math.exp(d + q * se)


@lru_cache(maxsize=None)
def _moses_k(m: int, n: int, alpha: float = 0.05) -> int:
    """The Moses rank: the CI is [D(k), D(mn + 1 - k)] of the sorted pairwise differences."""
    # counts of the Mann-Whitney U under H0, by the classic recurrence
    table = np.zeros((m + 1, n + 1, m * n + 1))
    table[0, :, 0] = 1
    table[:, 0, 0] = 1
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            table[i, j] = table[i, j - 1]
            table[i, j, j:] += table[i - 1, j, : m * n + 1 - j]
    cdf = np.cumsum(table[m, n]) / table[m, n].sum()
    return int((cdf <= alpha / 2).sum())  # k - 1 = the largest u with P(U <= u) <= alpha/2


def hl(a, b, rng):
    d = np.sort((np.log(b)[None, :] - np.log(a)[:, None]).ravel())
    k = _moses_k(a.size, b.size)
    if k == 0:
        return None
    return math.exp(d[k - 1]), math.exp(d[d.size - k])


METHODS = {"boot": boot, "logt": logt, "yuen": yuen, "meant": meant, "hl": hl}


def cell(rng, method, noise: str, n: int, trials: int) -> tuple[float, float, float]:
    fp = cover = power = 0
    for _ in range(trials):
        ci = method(*pair(rng, noise, n, 1.0), rng)
        fp += ci is not None and (ci[0] > 1 or ci[1] < 1)
        ci = method(*pair(rng, noise, n, EFFECT), rng)
        cover += ci is not None and ci[0] <= EFFECT <= ci[1]
        power += ci is not None and ci[0] > 1
    return fp / trials, cover / trials, power / trials


def table_methods(rng, trials: int) -> None:
    print(f"A/A false positives (nominal 5%), coverage of the true ratio at +10% (nominal 95%), power at +10%; "
          f"{trials} trials per cell\n")
    head = f"{'noise':<10} {'n':>3} " + " ".join(f"{m + ' fp/cov/pow':>22}" for m in METHODS)
    print(head)
    for noise in NOISES:
        for n in NS:
            cells = [cell(rng, fn, noise, n, trials) for fn in METHODS.values()]
            print(f"{noise:<10} {n:>3} " + " ".join(f"{100 * fp:6.1f} {100 * cv:6.1f} {100 * pw:6.1f}  "
                                                     for fp, cv, pw in cells), flush=True)
    print()


def table_equivalence(rng, trials: int) -> None:
    print(f"equivalence (TOST, margin ±{stats.DEFAULT_MARGIN_PCT:g}%): P(verdict no_cost); "
          "must be <= 5% at a true +2%")
    print(f"{'noise CV':>9} {'n':>3} {'true +0%':>9} {'true +2%':>9} {'true +1%':>9}")
    for cv in (0.02, 0.05):
        for n in NS:
            shown = []
            for true in (1.0, 1.0 + stats.DEFAULT_MARGIN_PCT / 100, 1.01):
                k = 0
                for _ in range(trials):
                    a = 1 + cv * rng.standard_normal(n)
                    b = true * (1 + cv * rng.standard_normal(n))
                    k += stats.judge_estimate(stats.ratio_ci(a, b)).verdict == stats.NO_COST
                shown.append(k / trials)
            print(f"{100 * cv:8.0f}% {n:>3} " + " ".join(f"{100 * s:8.1f}%" for s in shown), flush=True)
    print()


def table_across(rng, trials: int, family: int = 20, drift: float = 1.15) -> None:
    print(f"across two files, machine {100 * (drift - 1):.0f}% slower during B; normal noise; a family of {family} "
          f"overheads for the gate; {trials} trials")
    for cv in (0.05, 0.20):
        _across(rng, trials, family, drift, cv)
    print()


def _across(rng, trials: int, family: int, drift: float, cv: float) -> None:
    print(f"{'CV':>4} {'n':>3} {'ratio-of-ratios A/A fp':>23} {'gate false alarm':>17} {'gate catches +30%':>18} "
          f"{'old rule false alarm':>21}")
    from encbench.analysis import gate

    cond = gate.parse("elapsed_overhead>5%")  # the rows below are elapsed (wall_s)
    for n in NS:
        fp = alarms = caught = old = 0
        for _ in range(trials):
            rows, rows_slow, old_fail = [], [], False
            for i in range(family):
                base_a, cont_a = draw(rng, "normal", n, 1.0, cv), draw(rng, "normal", n, 1.3, cv)
                base_b, cont_b = draw(rng, "normal", n, drift, cv), draw(rng, "normal", n, 1.3 * drift, cv)
                est = stats.ratio_of_ratios_ci(base_a, cont_a, base_b, cont_b)
                fp += est.significant
                rows.append(_row(est))
                slow = 1.3 if i < 2 else 1.0
                rows_slow.append(_row(stats.ratio_of_ratios_ci(base_a, cont_a, base_b, cont_b * slow)))
                lo, hi = boot(cont_a, cont_b, rng, 500)  # the old gate: absolute elapsed of the contender
                old_fail |= cont_b.mean() / cont_a.mean() > 1.05 and (lo > 1 or hi < 1)
            alarms += bool(gate.evaluate([cond], rows)["failed"])
            caught += bool(gate.evaluate([cond], rows_slow)["failed"])
            old += old_fail
        print(f"{100 * cv:3.0f}% {n:>3} {100 * fp / trials / family:22.1f}% {100 * alarms / trials:16.1f}% "
              f"{100 * caught / trials:17.1f}% {100 * old / trials:20.1f}%", flush=True)


def _row(est: stats.Estimate) -> dict:
    return {"kind": "overhead", "metric": "wall_s", "workload": "w", "operation": "o", "variant": "v",
            "ratio": est.value, "ci": list(est.ci) if est.ci else None, "se_log": est.se, "df": est.df,
            "n_a": est.n_baseline, "n_b": est.n_contender, "floor_pct": 0.0,
            "verdict": stats.judge_estimate(est).verdict}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", choices=("methods", "equivalence", "across"), default=None)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.monotonic()
    if args.only in (None, "methods"):
        table_methods(rng, args.trials)
    if args.only in (None, "equivalence"):
        table_equivalence(rng, args.trials)
    if args.only in (None, "across"):
        table_across(rng, max(args.trials // 4, 100))
    print(f"({time.monotonic() - t0:.0f} s; seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
