"""`encbench compare A B --fail-if COND`: a regression gate for CI that does not fire on noise.

A condition is NAME OP PERCENT, e.g. `overhead>5%`, `cpu>=10%`. What each name tests:

- `overhead`: the encryption overhead (contender / baseline inside each file) in B against the same overhead in
  A, each row on the metric its workload's verdict rests on (the first of its `verdict_metrics` that both files
  hold: CPU for a scan, server CPU for a TLS storm or connect, throughput for a fixed-duration roundtrip or oltp
  mix, instructions for a metered run; compare.py marks that row `verdict_metric`): a ratio of ratios whose
  interval comes from both files' runs. A machine that is slower during one invocation slows baseline and
  contender alike, so the drift cancels.
- `elapsed_overhead`, `cpu_overhead`: the same overhead on elapsed time or CPU (`cpu_s`), whatever the workload's
  verdict rests on (a fixed-duration workload's per query: compare.py); `instructions_overhead` on instructions.
- `change`: the same variant's value in B against A, on its workload's verdict metric; `elapsed`, `cpu` (also
  `wall_s`, `cpu_s`), `instructions`: on that metric. Two invocations minutes apart differ by more than their runs
  show (machine state), so a timed change must exceed the threshold on top of a between-invocation noise floor:
  the one measured by `encbench selftest` (`--noise-floor FILE`), else a conservative default of ±25%.

"Worse" follows the metric: a time, CPU or count that grows by more than the threshold, a rate (queries/s,
transactions/s) that falls by more than it.

Every row gets one of three outcomes (issue 23):

- **over the limit** (shown): a one-sided t-test of "true change <= threshold" rejected (on the log of the
  ratio, Welch-Satterthwaite degrees of freedom), with Holm's correction over every row the gate checks, so
  that an unchanged build fails with a probability of at most 5% however many rows there are: exit 17;
- **within the limit** (shown): the mirror test, "true change >= threshold", rejected (Holm over the rows);
- **not resolved at this limit**: neither; the line says how many runs per side would resolve it, from the
  measured spread (the interval narrows as 1/sqrt(runs)). Rows with too few runs, no estimate or a saturated
  client are not resolved either. Exit 23 when no row is over the limit but some are not resolved, so that
  CI can choose to treat "cannot tell" as a failure (the gate used to pass such rows).

Each line (and each JUnit case, report/junit.py) names the metric it judged.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from . import stats
from ..errors import BadValueError, NotMeteredError, ResultFileError, SchemaVersionError, UnknownNameError, UsageError
from ..lab import meter
from ..util import files

VERDICT = "verdict"  # a condition's metric: each row's workload's verdict metric (the row marked verdict_metric)
# condition name -> (comparison kind, metric)
METRICS = {
    "overhead": ("overhead", VERDICT), "change": ("absolute", VERDICT),
    "elapsed_overhead": ("overhead", "wall_s"), "cpu_overhead": ("overhead", "cpu_s"),
    "elapsed": ("absolute", "wall_s"), "wall_s": ("absolute", "wall_s"),
    "cpu": ("absolute", "cpu_s"), "cpu_s": ("absolute", "cpu_s"),
    # exact CPU work (`run --meter instructions`): the same variant's instructions, and their overhead
    "instructions": ("absolute", "instructions"), "instructions_overhead": ("overhead", "instructions"),
}
OVER, WITHIN, NOT_RESOLVED = "failed", "within", "not_resolved"  # a row's outcome (OVER keeps the old name)
ALPHA = 0.05  # the family-wise false-alarm rate of the whole gate
DEFAULT_ABSOLUTE_FLOOR_PCT = 25.0  # without a measured floor: absolute changes below this are not judged
FLOOR_SCHEMA = 1
FLOOR_MAX_BYTES = 1 << 20  # a floor file is a few hundred bytes
_COND = re.compile(r"^\s*([A-Za-z_]+)\s*(>=|>)\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")
UNJUDGED = (stats.TOO_FEW_RUNS, stats.NO_ESTIMATE, stats.WITHHELD)  # withheld: a saturated client


@dataclass(frozen=True)
class Condition:
    text: str
    metric: str  # the compared metric (wall_s, cpu_s, instructions), or VERDICT: each row's verdict metric
    op: str
    percent: float
    kind: str = "absolute"  # "overhead" (ratio of ratios) or "absolute" (the same variant across files)

    def threshold(self, floor_pct: float = 0.0, higher_is_better: bool = False) -> float:
        """The ratio B / A (or overhead B / overhead A) beyond which the condition is broken: above it for a time,
        CPU or count, below it for a rate (`higher_is_better`: throughput that falls by more than the percent)."""
        if higher_is_better:
            return (1 - self.percent / 100) / (1 + floor_pct / 100)
        return (1 + self.percent / 100) * (1 + floor_pct / 100)

    def applies(self, c: dict) -> bool:
        """Does this condition test comparison row `c`? Its kind, and its metric: VERDICT tests the row its
        workload's verdict rests on (compare.py's `verdict_metric`); `instructions` also tests a fixed-duration
        workload's instructions per unit (per query: its total grows with the time it runs)."""
        if c.get("kind", "absolute") != self.kind:
            return False
        if self.metric == VERDICT:
            return bool(c.get("verdict_metric"))
        metric = c["metric"]
        return metric == self.metric or (self.metric == "instructions" and metric.startswith("instructions_per_"))

    @property
    def named(self) -> str:
        """What the condition tests, in words: 'the workload's verdict metric' or its metric's name."""
        return "the workload's verdict metric" if self.metric == VERDICT else self.metric


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


def require_counts(conditions: list[Condition], files: dict[str, dict]) -> None:
    """A condition on a count (`instructions`, `instructions_overhead`) needs both files counted (`run --meter
    instructions`): a file without counts is refused (NotMeteredError, 25), since no number of runs gives it one."""
    counted = [c.text for c in conditions if meter.is_count(c.metric)]  # VERDICT is no count: a file's own metric
    missing = [path for path, doc in files.items() if not meter.is_metered(doc)]
    if counted and missing:
        raise NotMeteredError(f"--fail-if {counted[0]!r}: {' and '.join(missing)} "
                              f"{'holds' if len(missing) == 1 else 'hold'} no instruction counts",
                              hint="run with --meter instructions (encbench run --meter instructions ...), or gate "
                                   "timed figures: --fail-if 'overhead>5%'")


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


def judged_metric(c: dict) -> str:
    """The metric a row judges, as its lines name it: 'cpu_s', 'qps', 'wall_s per query' (a fixed-duration
    workload's times per query: compare.py)."""
    return c["metric"] + (f" per {c['per']}" if c.get("per") else "")


def _where(c: dict, cond: Condition) -> str:
    what = "overhead" if c.get("kind") == "overhead" else "absolute"
    basis = ", its verdict metric" if cond.metric == VERDICT else ""
    return f"{c['workload']}/{c['operation']} {c['variant']} {judged_metric(c)} ({what}{basis})"


def runs_to_resolve(c: dict, threshold: float, alpha: float = ALPHA) -> int | None:
    """Runs per side that would put the one-sided bound on the right side of the threshold, from the measured
    spread (the log ratio's standard error shrinks as 1/sqrt(runs)); None when the estimate sits on the limit
    or there is no spread to go by."""
    ratio, se, n = c.get("ratio"), c.get("se_log"), min(c.get("n_a") or 0, c.get("n_b") or 0)
    if not ratio or ratio <= 0 or se is None or se <= 0 or n < 2 or threshold <= 0:
        return None
    distance = abs(math.log(ratio) - math.log(threshold))
    if distance == 0:
        return None
    z = stats.t_ppf(1 - alpha, max(n - 1, 1))
    return max(n + 1, math.ceil(n * (z * se / distance) ** 2))


def _p_values(c: dict, threshold: float) -> tuple[float | None, float | None]:
    """(p over, p within) of a comparison against a threshold ratio: the one-sided t-tests; for an exact count's
    bound (stats.exact_contrast) 0 or 1, as its bound lies wholly beyond (short of) the threshold or not. A rate
    (`higher_is_better`) is over when it is below the threshold: tested as its inverse, the time per unit of work
    (the log ratio's spread is the same)."""
    ratio, ci = c["ratio"], c.get("ci")
    if c.get("higher_is_better"):
        if threshold <= 0:  # a fall of 100% or more: no rate can be shown below it
            return 1.0, 0.0
        threshold = 1 / threshold
        ratio = 1 / ratio if ratio else None
        ci = [1 / ci[1], 1 / ci[0]] if ci and ci[0] and ci[1] else None
    if c.get("exact") and ci:
        low, high = ci
        return (0.0 if low > threshold else 1.0), (0.0 if high < threshold else 1.0)
    p = stats.p_above(ratio, c.get("se_log"), c.get("df"), threshold)
    return p, None if p is None else 1.0 - p


def _test_words(x: dict, p: float, n: int) -> str:
    """How a row's outcome was shown: the test's p, or an exact count's bound."""
    if x["comparison"].get("exact"):
        return "an exact count: its bound lies wholly on that side"
    return f"one-sided p = {p:.2g}, Holm over {n} tests"


def cases(conditions: list[Condition], comparisons: list[dict], *, alpha: float = ALPHA) -> list[dict]:
    """Each condition on each comparison it applies to, in order: {condition, comparison, metric, p, p_within,
    state, runs_needed, line}.

    metric: the metric judged (judged_metric); state: "failed" (over the limit: B shown worse than allowed, after
    Holm over every checked case), "within" (shown within the limit, the mirror test, Holm likewise), or
    "not_resolved" (neither; or too few runs, no estimate, withheld: `unjudged` then says why); line: what
    evaluate() reports for it.
    """
    out = []
    for cond in conditions:
        for c in comparisons:
            if not cond.applies(c):
                continue
            p = p_in = None
            if c.get("verdict") not in UNJUDGED:
                p, p_in = _p_values(c, _threshold(cond, c))
            x = {"condition": cond, "comparison": c, "metric": judged_metric(c), "p": p, "p_within": p_in,
                 "state": NOT_RESOLVED, "runs_needed": None, "unjudged": p is None}
            if p is None:
                need = stats.MIN_RUNS if c.get("verdict") == stats.TOO_FEW_RUNS else None
                x["runs_needed"] = need
                x["line"] = (f"{cond.text}: {_where(c, cond)}: not resolved: {c.get('verdict_text') or 'no estimate'}"
                             + (f" ({need} runs per side at least)" if need else ""))
            out.append(x)
    _judge(out, alpha)
    return out


def _threshold(cond: Condition, c: dict) -> float:
    return cond.threshold(c.get("floor_pct") or 0, bool(c.get("higher_is_better")))


def _judge(out: list[dict], alpha: float) -> None:
    """The tested cases' states and lines: over, within (each Holm over every tested case), or not resolved."""
    tests = [x for x in out if x["p"] is not None]
    over = stats.holm([x["p"] for x in tests], alpha)
    within = stats.holm([x["p_within"] for x in tests], alpha)
    for x, bad, fine in zip(tests, over, within):
        cond, c = x["condition"], x["comparison"]
        floor = c.get("floor_pct") or 0
        beyond = f" on top of a ±{floor:g}% noise floor" if floor else ""
        measured = f"{_where(c, cond)} {stats.pct(c['ratio'])} {stats.ci_text(c['ci'])}"
        if bad:
            x["state"] = OVER
            x["line"] = (f"{cond.text}: {measured}, worse by more than {cond.percent:g}%{beyond} "
                         f"({_test_words(x, x['p'], len(tests))})")
        elif fine:
            x["state"] = WITHIN
            x["line"] = (f"{cond.text}: {measured}, within {cond.percent:g}%{beyond} "
                         f"({_test_words(x, x['p_within'], len(tests))})")
        else:
            x["runs_needed"] = runs_to_resolve(c, _threshold(cond, c), alpha)
            need = (f"about {x['runs_needed']} runs per side would resolve it (from the measured spread)"
                    if x["runs_needed"] else "its estimate sits on the limit: more runs will not settle it")
            x["line"] = (f"{cond.text}: {measured}: not resolved at {cond.percent:g}%{beyond}: neither shown over "
                         f"nor within it; {need}")


METHOD = ("one-sided Welch t-tests on the log ratio against the threshold, over and within, each Holm-Bonferroni "
          "over all checked comparisons (family-wise {alpha:.0%})")


def summarize(judged: list[dict], *, alpha: float = ALPHA) -> dict:
    """{outcome, failed: [line], within: [line], not_resolved: [line], not_judged: [line] (the unresolved rows
    that could not be tested at all), runs_needed, checked: n, alpha, method} of cases() (what --json prints).

    outcome: "failed" when any row is over the limit, else "not_resolved" when any row is, else "passed"."""
    lines = {state: [x["line"] for x in judged if x["state"] == state] for state in (OVER, WITHIN, NOT_RESOLVED)}
    outcome = "failed" if lines[OVER] else NOT_RESOLVED if lines[NOT_RESOLVED] or not judged else "passed"
    return {"outcome": outcome, "failed": lines[OVER], "within": lines[WITHIN], "not_resolved": lines[NOT_RESOLVED],
            "not_judged": [x["line"] for x in judged if x["unjudged"]],
            "runs_needed": max((x["runs_needed"] for x in judged if x["runs_needed"]), default=None),
            "checked": sum(1 for x in judged if not x["unjudged"]), "alpha": alpha,
            "method": METHOD.format(alpha=alpha)}


def evaluate(conditions: list[Condition], comparisons: list[dict], *, alpha: float = ALPHA) -> dict:
    """summarize(cases(...)): the gate's verdict on these comparisons."""
    return summarize(cases(conditions, comparisons, alpha=alpha), alpha=alpha)


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
