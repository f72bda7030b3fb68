"""A/A and A/B check of the sequential rule `run --quick` and `--budget` stop by (issue 30), on synthetic samples.

`lab/precision.Sequential` looks at the verdicts after 6, 8, 11, 15 and 20 runs per variant, each look at the
Bonferroni level 1 - 5%/5 = 99%, and stops at the first look where the row is resolved (costs, saves, or no cost:
equivalence shown within ±2%). Looking several times can only keep its error rate if each look is stricter; this
script measures it with the product's own statistics (analysis/stats.ratio_ci and judge), per trial:

- A/A (both sides from one distribution): how often a difference (costs or saves) is called at any look, nominal
  <= 5%; how often the row is left unresolved after the last look;
- at the margin (the contender +2% exactly): how often "no cost" is claimed, nominal <= 5%;
- a real +10% change: how often it is called a cost (power) and at which look it stops, on average;
- the exact-count bound (instructions, judged with stats.EXACT_TOLERANCE = 0.1%): counts that repeat within
  0.01% are never called different A/A, a 1% change is always a cost, a 0.2% change is "no cost" (within the
  exact margin of 0.5%).

Noise: lognormal with 2%, 5%, 10% and 20% spread (coefficient of variation), the range a quiet and a busy VM
show. It prints its figures; it is a benchmark, not a test.

Usage: .venv/bin/python bench/seq_sim.py [--trials 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from encbench.analysis import stats
from encbench.lab.precision import Sequential

RESOLVED = (stats.COSTS, stats.SAVES, stats.NO_COST)
SPREADS = (0.02, 0.05, 0.10, 0.20)
CASES = (("A/A", 1.00), ("margin +2%", 1.02), ("real +10%", 1.10))


def one_trial(rng, rule: Sequential, spread: float, ratio: float) -> tuple[str, int]:
    """The verdict the sequential rule stops with and the look (runs per variant) it stopped at."""
    n_max = rule.looks[-1]
    base = np.exp(spread * rng.standard_normal(n_max))
    cont = ratio * np.exp(spread * rng.standard_normal(n_max))
    code = stats.INCONCLUSIVE
    for n in rule.looks:
        est = stats.ratio_ci(base[:n], cont[:n], confidence=rule.confidence)
        code = stats.judge_estimate(est).verdict
        if code in RESOLVED:
            return code, n
    return code, n_max


def sequential_table(trials: int, seed: int) -> list[str]:
    rule = Sequential()
    lines = [f"sequential rule: looks at {', '.join(map(str, rule.looks))} runs per variant, each at "
             f"{rule.confidence:.0%}; {trials} trials per cell",
             f"{'spread':>7} {'case':<11} {'costs':>7} {'saves':>7} {'no cost':>8} {'unresolved':>11} {'mean stop':>10}"]
    rng = np.random.default_rng(seed)
    for spread in SPREADS:
        for name, ratio in CASES:
            codes, stops = [], []
            for _ in range(trials):
                code, n = one_trial(rng, rule, spread, ratio)
                codes.append(code)
                stops.append(n)
            share = {c: codes.count(c) / trials for c in (stats.COSTS, stats.SAVES, stats.NO_COST)}
            unresolved = 1 - sum(share.values())
            lines.append(f"{spread:>7.0%} {name:<11} {share[stats.COSTS]:>7.1%} {share[stats.SAVES]:>7.1%} "
                         f"{share[stats.NO_COST]:>8.1%} {unresolved:>11.1%} {np.mean(stops):>10.1f}")
    lines.append("goals: A/A costs+saves <= 5%; margin +2% 'no cost' <= 5%; real +10% caught where the spread "
                 "allows (20 runs of 20% spread cannot resolve 10%: unresolved, never a wrong verdict)")
    return lines


def exact_table(trials: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed + 1)
    lines = [f"exact counts (instructions): runs repeat within 0.01%; bound {stats.EXACT_TOLERANCE:.1%}, "
             f"{stats.EXACT_MIN_RUNS} runs per side; {trials} trials per cell",
             f"{'change':>7} {'costs':>7} {'saves':>7} {'no cost':>8} {'other':>7}"]
    for change in (0.0, 0.002, 0.01, -0.01):
        codes = []
        for _ in range(trials):
            base = 1e9 * (1 + 1e-4 * rng.random(3))
            cont = 1e9 * (1 + change) * (1 + 1e-4 * rng.random(3))
            codes.append(stats.judge_estimate(stats.ratio_ci(base, cont, exact=True)).verdict)
        share = {c: codes.count(c) / trials for c in (stats.COSTS, stats.SAVES, stats.NO_COST)}
        lines.append(f"{change:>+7.1%} {share[stats.COSTS]:>7.1%} {share[stats.SAVES]:>7.1%} "
                     f"{share[stats.NO_COST]:>8.1%} {1 - sum(share.values()):>7.1%}")
    lines.append("goals: 0.0% and +0.2% never costs/saves; +1% always costs, -1% always saves")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    for line in sequential_table(args.trials, args.seed) + [""] + exact_table(min(args.trials, 500), args.seed):
        print(line)
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
