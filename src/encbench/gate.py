"""`encbench compare A B --fail-if COND`: a regression gate for CI.

A condition is METRIC OP PERCENT, e.g. `overhead>5%`, `cpu>=10%`, `elapsed>3%`. It is
checked on every comparison of that metric (same workload, operation and variant in both
files), B against A: it fails when B is worse than A by more than the threshold, and the
difference is significant (the bootstrap 95% CI of the ratio excludes no change), so that
noise alone never fails a build. `overhead` is the elapsed time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import UnknownNameError, UsageError

METRICS = {"overhead": "wall_s", "elapsed": "wall_s", "wall_s": "wall_s", "cpu": "cpu_s", "cpu_s": "cpu_s"}
_COND = re.compile(r"^\s*([A-Za-z_]+)\s*(>=|>)\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")


@dataclass(frozen=True)
class Condition:
    text: str
    metric: str  # the compared metric (wall_s, cpu_s)
    op: str
    percent: float

    def exceeded(self, ratio: float) -> bool:
        change = round((ratio - 1) * 100, 9)  # 1.2 - 1 is 0.19999...: compare what the user reads
        return change >= self.percent if self.op == ">=" else change > self.percent


def parse(text: str) -> Condition:
    m = _COND.match(text)
    if not m:
        raise UsageError(f"--fail-if {text!r} is not METRIC>PERCENT",
                         hint="e.g. --fail-if 'overhead>5%' or --fail-if 'cpu>=10%'")
    name, op, value = m.groups()
    if name not in METRICS:
        raise UnknownNameError(f"--fail-if: unknown metric {name!r}", hint=f"valid: {', '.join(METRICS)}")
    return Condition(text.strip(), METRICS[name], op, float(value))


def check(conditions: list[Condition], comparisons: list[dict]) -> list[str]:
    """One line per comparison that breaks a condition; [] when the gate passes."""
    out = []
    for cond in conditions:
        for c in comparisons:
            if c["metric"] != cond.metric or c["ratio"] is None:
                continue
            if cond.exceeded(c["ratio"]) and c["significant"]:
                ci = f" [{(c['ci'][0] - 1) * 100:+.1f}, {(c['ci'][1] - 1) * 100:+.1f}]" if c["ci"] else ""
                out.append(f"{cond.text}: {c['workload']}/{c['operation']} {c['variant']} {c['metric']} "
                           f"{(c['ratio'] - 1) * 100:+.1f}%{ci}, significant")
    return out
