"""Precision-driven runs: how wide each headline comparison's CI is, and when to stop adding rounds.

The precision of a comparison is the half-width of its CI in percentage points of the ratio:
the furthest the CI reaches from the estimate on either side (+31% [+26, +38] is ±7 points).
The headline metrics are elapsed (wall_s) and CPU (cpu_s) of every workload operation's
encrypted-vs-plain comparison (a fixed-duration workload's: its own verdict metrics, throughput and CPU per query); the connection open is not targeted (its ratio is a
key derivation against almost nothing: hundreds of times, whose points mean little).

`Budget` is the stopping rule: after the planned rounds, another round of a workload is added
while one of its rows is wider than the target and the round, at the pace measured so far,
still ends before the deadline. The clock is injected so the rule is testable without waiting.

`Sequential` (`run --quick`, `--budget`) runs each workload until its verdicts resolve or the budget is spent: a
group-sequential rule with planned looks at LOOKS runs per variant (at least 6) and the 5% error rate split equally
over them (Bonferroni: each look's verdicts at 99%), so that stopping at the first look where every row of the
workload is resolved (costs, saves or no cost) keeps the stated error rate; the result file's verdicts are judged at
that level (config.sequential). A workload still unresolved at the last look, or whose next round would overrun the
budget, stops there and says so: not resolved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ..analysis import summary as analysis
from ..analysis import stats
from ..errors import BadValueError
from ..vocab.variants import label

HEADLINE = (("wall_s", "elapsed"), ("cpu_s", "CPU"))
DEFAULT_CAP_S = 600.0  # --precision without --max-time: never more than this
MIN_RUNS = 6  # per variant: the verdict minimum
LOOKS = (6, 8, 11, 15, 20)  # --quick / --budget: runs per variant at which the verdicts are looked at
SEQUENTIAL_ALPHA = 0.05  # the error rate of a sequential verdict, over all its looks
RESOLVED, BUDGET_SPENT, LAST_LOOK = "resolved", "budget spent", "not resolved at the last look"
NOTHING = "nothing compared"  # a workload without a contender and its baseline: more rounds would not give a verdict


@dataclass(frozen=True)
class Sequential:
    """The sequential rule: verdicts looked at after `looks` runs per variant, each look at alpha / len(looks)."""

    looks: tuple[int, ...] = LOOKS
    alpha: float = SEQUENTIAL_ALPHA

    @property
    def confidence(self) -> float:
        return 1 - self.alpha / len(self.looks)

    def is_look(self, n: int) -> bool:
        return n in self.looks or n >= self.looks[-1]

    def describe(self) -> dict:
        return {"looks": list(self.looks), "alpha": self.alpha, "confidence": self.confidence,
                "method": f"group-sequential, Bonferroni: {self.alpha:.0%} split over {len(self.looks)} planned looks "
                          f"at {', '.join(map(str, self.looks))} runs per variant; each look's verdicts at "
                          f"{self.confidence:.0%}; a workload stops at the first look where all its rows are resolved"}


def row_codes(doc: dict) -> dict[str, list[str]]:
    """Each workload's row verdicts (stats.VERDICTS), judged at the file's verdict confidence (config.sequential):
    one per (operation, contender), the connection open and placebo twins left out."""
    groups = analysis.collect(doc)
    comps = analysis.comparisons(doc, groups)
    rows: dict[tuple[str, str, str], list[dict]] = {}
    for c in comps:
        if (c["workload"], c["operation"]) != analysis.OPEN and not c.get("placebo"):
            rows.setdefault((c["workload"], c["operation"], c["contender"]), []).append(c)
    out: dict[str, list[str]] = {}
    for (wl, _, _), cs in rows.items():
        out.setdefault(wl, []).append(analysis.row_code(cs))
    return out


def resolved(codes: list[str]) -> bool:
    """Is every row of a workload resolved (costs, saves, no cost; withheld: more runs would not change it)?"""
    return bool(codes) and all(c in (stats.COSTS, stats.SAVES, stats.NO_COST, stats.WITHHELD) for c in codes)


def targeted(doc: dict, workload: str) -> tuple[tuple[str, str], ...]:
    """(metric, word) whose CIs the precision targets: elapsed and CPU of fixed work; a fixed-duration run's own
    verdict metrics (throughput, CPU per query: its elapsed time is set, its CPU bounded by the window)."""
    if analysis.fixed_duration(doc, workload):
        return tuple((m, analysis.metric_word(m)) for m in analysis.verdict_metrics(doc, workload))
    return HEADLINE


def half_width_points(ratio: float | None, ci) -> float | None:
    """The CI's furthest reach from the ratio, in percentage points (None without a CI)."""
    if ratio is None or not ci:
        return None
    return 100.0 * max(ratio - ci[0], ci[1] - ratio)


def rows(doc: dict) -> list[dict]:
    """One row per (workload, operation, contender, headline metric) with its CI's half-width."""
    groups = analysis.collect(doc)
    engine, variants = doc["engine"], analysis.variants_by_label(doc)
    out = []
    for (wl, op, vl), metrics in groups.items():
        if (wl, op) == analysis.OPEN or vl not in variants:
            continue
        base_variant = analysis.baseline_for(variants[vl], engine, wl)
        base = groups.get((wl, op, label(base_variant))) if base_variant is not None else None
        if not base:
            continue
        for metric, word in targeted(doc, wl):
            if metric not in metrics or metric not in base:
                continue
            est = stats.ratio_ci(base[metric], metrics[metric])
            out.append({"workload": wl, "operation": op, "contender": vl, "metric": metric, "word": word,
                        "ratio": est.value, "ci": list(est.ci) if est.ci else None,
                        "half_width_points": half_width_points(est.value, est.ci),
                        "n_baseline": len(base[metric]), "n_contender": len(metrics[metric])})
    return out


def reached(row: dict, target: float | None) -> bool | None:
    """True/False against the target; None without a target. A row without a CI has not reached it."""
    if target is None:
        return None
    hw = row["half_width_points"]
    return hw is not None and hw <= target


def imprecise_workloads(rows_: list[dict], target: float | None) -> list[str]:
    """Workloads with a row wider than the target (every workload when there is no target: time decides)."""
    seen: dict[str, None] = {}
    for r in rows_:
        if target is None or not reached(r, target):
            seen.setdefault(r["workload"])
    return list(seen)


@dataclass
class Budget:
    """The stopping rule: a target (points, or None: run until the time is up) and a deadline.

    `max_time_s` counts from `start` (the beginning of `encbench run`, data preparation
    included: it is the time the user waits). The planned minimum rounds always run.
    """

    target: float | None
    max_time_s: float | None
    clock: Callable[[], float] = time.monotonic
    start: float = field(default=None)  # type: ignore[assignment]
    stopped_because: str | None = None
    sequential: Sequential | None = None  # --quick / --budget: until the verdicts resolve (next_sequential)
    outcomes: dict = field(default_factory=dict)  # sequential: workload -> {"stopped": why, "runs": n}

    def __post_init__(self) -> None:
        if self.start is None:
            self.start = self.clock()

    @property
    def adaptive(self) -> bool:
        return self.target is not None or self.max_time_s is not None or self.sequential is not None

    def fits(self, cost_s: float) -> bool:
        """Does work of this cost, started now, end before the deadline? (Always, without a time limit.)"""
        return self.max_time_s is None or self.clock() + cost_s <= self.deadline

    def next_sequential(self, codes: dict[str, list[str]], done: dict[str, int],
                        round_cost_s: dict[str, float]) -> list[str]:
        """The workloads to give one more round under the sequential rule; [] when every one has stopped.

        At a look (Sequential.is_look) a workload whose rows are all resolved stops ("resolved"), as does one at the
        last look ("not resolved at the last look"); between looks, and at a look that did not resolve, it gets
        another round if that round, at its measured cost, ends before the deadline, else it stops ("budget
        spent")."""
        now, chosen = self.clock(), []
        for wl, n in done.items():
            if wl in self.outcomes:
                continue
            if n >= self.sequential.looks[0] and wl not in codes:
                self.outcomes[wl] = {"stopped": NOTHING, "runs": n}
                continue
            if self.sequential.is_look(n) and (resolved(codes.get(wl, [])) or n >= self.sequential.looks[-1]):
                self.outcomes[wl] = {"stopped": RESOLVED if resolved(codes.get(wl, [])) else LAST_LOOK, "runs": n}
                continue
            cost = round_cost_s.get(wl, 0.0)
            if self.max_time_s is not None and now + cost > self.deadline:
                self.outcomes[wl] = {"stopped": BUDGET_SPENT, "runs": n}
                continue
            chosen.append(wl)
            now += cost
        if not chosen:
            states = {o["stopped"] for o in self.outcomes.values()}
            self.stopped_because = RESOLVED if states == {RESOLVED} else ", ".join(sorted(states)) or "fixed"
        return chosen

    @property
    def deadline(self) -> float:
        cap = self.max_time_s if self.max_time_s is not None else DEFAULT_CAP_S
        return self.start + cap

    def elapsed(self) -> float:
        return self.clock() - self.start

    def next_round(self, rows_: list[dict], round_cost_s: dict[str, float]) -> list[str]:
        """The workloads to give one more round, in order; [] when done (and why, in stopped_because).

        A workload is chosen while one of its rows is wider than the target and its next round,
        at its measured cost, fits before the deadline; costs add up within the pass.
        """
        if not self.adaptive:
            self.stopped_because = "fixed number of runs"
            return []
        wanted = imprecise_workloads(rows_, self.target)
        if not wanted:
            self.stopped_because = "precision reached"
            return []
        now, chosen = self.clock(), []
        for wl in wanted:
            cost = round_cost_s.get(wl, 0.0)
            if now + cost <= self.deadline:
                chosen.append(wl)
                now += cost
        if not chosen:
            self.stopped_because = "time budget"
        return chosen


def document(rows_: list[dict], budget: Budget, runs_per_variant: dict[str, int]) -> dict:
    """What the result file stores as doc["precision"]."""
    target = budget.target
    out_rows = [dict({k: r[k] for k in ("workload", "operation", "contender", "metric", "ratio", "ci",
                                        "half_width_points", "n_baseline", "n_contender")},
                     reached=reached(r, target)) for r in rows_]
    return {
        "target_points": target,
        **({"sequential": dict(budget.sequential.describe(), outcomes=budget.outcomes)} if budget.sequential else {}),
        "max_time_s": budget.max_time_s,
        "elapsed_s": round(budget.elapsed(), 3),
        "stopped_because": budget.stopped_because,
        "runs_per_variant": runs_per_variant,
        "rows": out_rows,
        "not_reached": sum(1 for r in out_rows if r["reached"] is False),
        "widest_points": max((r["half_width_points"] for r in out_rows if r["half_width_points"] is not None),
                             default=None),
        "method": "half-width = the CI's furthest reach from the ratio, in percentage points (stats.ratio_ci)",
    }


def plan_text(workloads: dict[str, list[str]], budget_s: float | None, sequential: Sequential) -> str:
    """The plan a sequential run prints first: what is measured, the rule, the budget."""
    what = "; ".join(f"{wl} ({' vs '.join(vs)})" for wl, vs in workloads.items())
    cap = f", within a budget of {clock_text(budget_s)}" if budget_s else ""
    return (f"plan: {what}: {sequential.looks[0]} runs per variant, then more (up to {sequential.looks[-1]}) until "
            f"the verdict resolves{cap}; the time estimate follows the first round")


def estimate_text(round_cost_s: dict[str, float], done: dict[str, int], sequential: Sequential,
                  remaining_s: float | None) -> str:
    """After a workload's first round: the time its minimum and its maximum take at this machine's measured pace."""
    parts = []
    for wl, cost in round_cost_s.items():
        left = max(0, sequential.looks[0] - done.get(wl, 0))
        parts.append(f"{wl}: a round takes {cost:.1f} s here, {sequential.looks[0]} runs per variant about "
                     f"{clock_text(cost * left)} more, {sequential.looks[-1]} about "
                     f"{clock_text(cost * max(0, sequential.looks[-1] - done.get(wl, 0)))}")
    left = f"; budget left {clock_text(remaining_s)}" if remaining_s is not None else ""
    return "estimate: " + "; ".join(parts) + left


def clock_text(seconds: float | None) -> str:
    """75 -> '1:15', 42 -> '42 s'."""
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(round(max(0.0, seconds))), 60)
    return f"{minutes}:{secs:02d}" if minutes else f"{secs} s"


_DURATION_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(text: str, *, what: str = "--max-time", minimum: float = 1.0, maximum: float = 86400.0) -> float:
    """'120s', '5m', '1.5h' or a number of seconds -> seconds."""
    raw = str(text).strip().lower()
    number = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(number):].strip()
    try:
        value = float(number) * _DURATION_UNITS[unit]
    except (ValueError, KeyError):
        raise BadValueError(f"{what} {text!r} is not a duration", hint="use e.g. 120s, 5m or 1h") from None
    if not minimum <= value <= maximum:
        raise BadValueError(f"{what} {text!r} is out of range", hint=f"use {minimum:g} s to {maximum / 3600:g} h")
    return value


def parse_points(text: str, *, what: str = "--precision") -> float:
    """'5%' or '5' -> 5.0 (the CI half-width in percentage points)."""
    raw = str(text).strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise BadValueError(f"{what} {text!r} is not a percentage", hint="use e.g. 5% (±5 points)") from None
    if not 0.1 <= value <= 1000:
        raise BadValueError(f"{what} {text!r} is out of range", hint="use 0.1% to 1000%")
    return value
