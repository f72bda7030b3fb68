"""Short warm operations repeated inside one timed interval, so that each timed interval lasts
long enough to time on a noisy machine (about 100 ms at the default size).

Only warm runs repeat: a repetition of a cold operation would find the cache warm. The
operation returns {"repeat": N}; the runner (runner.per_operation) divides the run's metrics
back by N, keeps the totals as `metrics_total` and records `repeat: N` on the operation.
Statistics stay across runs: a run gives one value, the mean of its N repetitions.
"""

from __future__ import annotations

from typing import Callable

from .base import Param


def param(default: int) -> Param:
    return Param("repeat", "warm runs: the operation N times in one timed interval, values divided back by N "
                           "(cold runs: once)", default, default, minimum=1, maximum=1000)


def times(session, params: dict) -> int:
    """How often to repeat now: the parameter in a warm run, else once."""
    warm = session.variant.get("cache") == "warm"
    return int(params.get("repeat", 1)) if warm else 1


def repeated(n: int, fn: Callable[[], dict | None]) -> Callable[[], dict]:
    """fn run n times back to back; its last result, plus {"repeat": n} when n > 1."""
    def run() -> dict:
        out = None
        for _ in range(n):
            out = fn()
        out = dict(out or {})
        if n > 1:
            out["repeat"] = n
        return out

    return run
