"""`encbench compare A B --fail-if COND`: a regression gate for CI that does not fire on noise.

A condition is NAME OP PERCENT, e.g. `overhead>5%`, `cpu>=10%`. What each name tests:

- `overhead`, `cpu_overhead`: the encryption overhead (contender / baseline inside each file,
  elapsed or CPU) in B against the same overhead in A: a ratio of ratios whose interval
  comes from both files' runs. A machine that is slower during one invocation slows
  baseline and contender alike, so the drift cancels.
- `elapsed`, `cpu` (also `wall_s`, `cpu_s`): the same variant's absolute time in B against
  A. Two invocations minutes apart differ by more than their runs show (machine state),
  so the change must exceed the threshold on top of a between-invocation noise floor:
  the one measured by `encbench selftest` (`--noise-floor FILE`), else a conservative
  default of ±25%.

A comparison fails when B is shown to be worse by more than the threshold: a one-sided
t-test of "true change <= threshold" (on the log of the ratio, Welch-Satterthwaite
degrees of freedom), with Holm's correction over every comparison the gate checks, so
that an unchanged build fails with a probability of at most 5% however many rows there
are. Comparisons with too few runs for a verdict are listed as not judged; a gate that
could judge nothing fails (it cannot vouch for the build).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from . import stats
from ..errors import BadValueError, ResultFileError, SchemaVersionError, UnknownNameError, UsageError

# condition name -> (comparison kind, metric)
METRICS = {
    "overhead": ("overhead", "wall_s"), "cpu_overhead": ("overhead", "cpu_s"),
    "elapsed": ("absolute", "wall_s"), "wall_s": ("absolute", "wall_s"),
    "cpu": ("absolute", "cpu_s"), "cpu_s": ("absolute", "cpu_s"),
}
ALPHA = 0.05  # the family-wise false-alarm rate of the whole gate
DEFAULT_ABSOLUTE_FLOOR_PCT = 25.0  # without a measured floor: absolute changes below this are not judged
FLOOR_SCHEMA = 1
FLOOR_MAX_BYTES = 1 << 20  # a floor file is a few hundred bytes
_COND = re.compile(r"^\s*([A-Za-z_]+)\s*(>=|>)\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")
UNJUDGED = (stats.TOO_FEW_RUNS, stats.NO_ESTIMATE, stats.WITHHELD)  # withheld: a saturated client


@dataclass(frozen=True)
class Condition:
    text: str
    metric: str  # the compared metric (wall_s, cpu_s)
    op: str
    percent: float
    kind: str = "absolute"  # "overhead" (ratio of ratios) or "absolute" (the same variant across files)

    def threshold(self, floor_pct: float = 0.0) -> float:
        """The ratio B / A (or overhead B / overhead A) above which the condition is broken."""
        return (1 + self.percent / 100) * (1 + floor_pct / 100)

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
    kind, metric = METRICS[name]
    return Condition(text.strip(), metric, op, float(value), kind)


def parse_margin(text: str | None) -> float:
    """--margin PCT: the equivalence margin in percent (default stats.DEFAULT_MARGIN_PCT)."""
    if text is None:
        return stats.DEFAULT_MARGIN_PCT
    try:
        value = float(str(text).strip().rstrip("%"))
    except ValueError:
        value = math.nan
    if not (0 < value < 100):
        raise BadValueError(f"--margin {text!r} is not a percentage between 0 and 100",
                            hint=f"e.g. --margin 2 (the default: {stats.DEFAULT_MARGIN_PCT:g}%)")
    return value


def _where(c: dict) -> str:
    what = "overhead" if c.get("kind") == "overhead" else "absolute"
    return f"{c['workload']}/{c['operation']} {c['variant']} {c['metric']} ({what})"


def cases(conditions: list[Condition], comparisons: list[dict], *, alpha: float = ALPHA) -> list[dict]:
    """Each condition on each comparison it applies to, in order: {condition, comparison, p, state, line}.

    state: "failed" (B shown worse than allowed, after Holm over every checked case), "passed",
    or "not_judged" (too few runs, no estimate, withheld); line: what evaluate() reports for it.
    """
    out = []
    for cond in conditions:
        for c in comparisons:
            if c["metric"] != cond.metric or c.get("kind", "absolute") != cond.kind:
                continue
            p = None
            if c.get("verdict") not in UNJUDGED:
                p = stats.p_above(c["ratio"], c.get("se_log"), c.get("df"), cond.threshold(c.get("floor_pct") or 0))
            out.append({"condition": cond, "comparison": c, "p": p, "state": "not_judged" if p is None else "passed",
                        "line": f"{cond.text}: {_where(c)}: {c.get('verdict_text') or 'no estimate'}"})
    tests = [x for x in out if x["p"] is not None]
    for x, bad in zip(tests, stats.holm([x["p"] for x in tests], alpha)):
        cond, c, p = x["condition"], x["comparison"], x["p"]
        floor = c.get("floor_pct") or 0
        beyond = f" on top of a ±{floor:g}% noise floor" if floor else ""
        x["state"] = "failed" if bad else "passed"
        outcome = "worse by more than" if bad else "not shown worse by more than"
        x["line"] = (f"{cond.text}: {_where(c)} {stats.pct(c['ratio'])} {stats.ci_text(c['ci'])}, {outcome} "
                     f"{cond.percent:g}%{beyond} (one-sided p = {p:.2g}, Holm over {len(tests)} tests)")
    return out


def evaluate(conditions: list[Condition], comparisons: list[dict], *, alpha: float = ALPHA) -> dict:
    """{failed: [line], not_judged: [line], checked: n, tests: n, alpha, method} for these comparisons."""
    judged = cases(conditions, comparisons, alpha=alpha)
    return {"failed": [x["line"] for x in judged if x["state"] == "failed"],
            "not_judged": [x["line"] for x in judged if x["state"] == "not_judged"],
            "checked": sum(1 for x in judged if x["state"] != "not_judged"), "alpha": alpha,
            "method": "one-sided Welch t-test on the log ratio against the threshold, Holm-Bonferroni over all "
                      f"checked comparisons (family-wise {alpha:.0%})"}


def check(conditions: list[Condition], comparisons: list[dict]) -> list[str]:
    """One line per comparison that breaks a condition; [] when the gate passes."""
    return evaluate(conditions, comparisons)["failed"]


# --- the noise floor file (written by `encbench selftest`) -------------------------------------

def floor_document(metrics: dict[str, float], overhead: dict[str, float] | None = None, **info) -> dict:
    """The floor file's content: {"schema": 1, "metrics": {"wall_s": {"floor_pct": 7.5}, ...}, ...}.

    `metrics`: per metric, the between-invocation change (percent) that machine drift alone
    reaches for the same variant; `overhead`: the same for the overheads (optional, default
    0: drift cancels in them). Other keys (machine, date, method) are kept as information.
    """
    doc = {"schema": FLOOR_SCHEMA, "metrics": {k: {"floor_pct": float(v)} for k, v in metrics.items()}}
    if overhead:
        doc["overhead"] = {k: {"floor_pct": float(v)} for k, v in overhead.items()}
    return dict(doc, **info)


def load_floor(path) -> dict:
    """{"absolute": {metric: pct}, "overhead": {metric: pct}, "path": str} from a floor file, checked.

    Missing, not a regular file, too large, not JSON, or JSON that is no floor file (no integer "schema"):
    ResultFileError (6); a floor file of another schema: SchemaVersionError (7)."""
    from ..util import files

    path = Path(path)
    hint = "write one with `encbench selftest --save-floor FILE`"
    text = files.read_text(path, what="noise floor file", limit=FLOOR_MAX_BYTES, error=ResultFileError, hint=hint)
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ResultFileError(f"noise floor file {path} is not readable JSON: {str(e).splitlines()[0][:120]}",
                              hint=hint) from None
    if not isinstance(doc, dict) or isinstance(doc.get("schema"), bool) or not isinstance(doc.get("schema"), int):
        raise ResultFileError(f"{path} is not a noise floor file (no \"schema\" number)", hint=hint)
    if doc["schema"] != FLOOR_SCHEMA:
        raise SchemaVersionError(f"noise floor file {path}: schema {doc['schema']!r}, this encbench reads "
                                 f"{FLOOR_SCHEMA}", hint="write it again with this version's `encbench selftest`")
    out = {"path": str(path)}
    for section, key in (("metrics", "absolute"), ("overhead", "overhead")):
        entries = doc.get(section, {})
        if not isinstance(entries, dict):
            raise BadValueError(f"noise floor file {path}: {section!r} must be an object of metrics")
        out[key] = {}
        for metric, entry in entries.items():
            value = entry.get("floor_pct") if isinstance(entry, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise BadValueError(f"noise floor file {path}: {section}.{metric}.floor_pct must be a finite "
                                    f"percentage >= 0, not {value!r}")
            out[key][metric] = float(value)
    if not out["absolute"] and not out["overhead"]:
        raise BadValueError(f"noise floor file {path}: no metric has a floor_pct")
    return out
