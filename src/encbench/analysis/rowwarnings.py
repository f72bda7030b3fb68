"""The warnings on the figures a user reads (the rows' elapsed and CPU, or the metrics their verdicts rest on),
grouped by cause: how many rows, which (named as the table names them), what to do. Made once per result
(analysis/model.py); the views print these lines as they are."""

from __future__ import annotations

import re
from collections import defaultdict

from . import stats
from . import summary as an
from .rows import rows, shown_tables
from ..lab import meter


# warnings grouped by cause: (pattern of stats.warnings_for's text, what the rows are, what to do); a warning
# no pattern matches is printed as it is
WARNING_CAUSES = (
    (re.compile(r": \d+ non-finite value"), "have values that are not finite (NaN or Inf), left out of every "
     "statistic", "see which with `encbench show FILE --detail`; the probe or the run misbehaved"),
    (re.compile(r": no runs$"), "have no finite run", "run again"),
    (re.compile(r": unstable, stdev is"), f"unstable (stdev >= {stats.UNSTABLE_CV:.0%} of the mean)",
     "run with --precision 3% or --runs 20, on a quieter machine"),
    (re.compile(r": too short to time"), "too short to time (mean < 100x the probe's resolution)",
     "use a larger --size, or --param repeat=N"),
    (re.compile(r": \d+ outlier run"), f"have outlier runs (modified Z-score > {stats.OUTLIER_Z:g})",
     "see what else ran (run context in `encbench show FILE --json`), or add runs (--runs 20)"),
)
FEW_RUNS = " runs (< "  # stats.warnings_for's few-runs warning: folded into one line per run count


def _warned(analysis: an.Analysis) -> list[dict]:
    """The summaries behind the table's figures of the compared rows: the metrics their verdicts rest on (elapsed
    and CPU for fixed work; throughput and CPU per query for a fixed-duration run), or elapsed and CPU."""
    rows_: dict = defaultdict(list)
    for c in analysis.comparisons:
        if (c["workload"], c["operation"]) != an.OPEN:
            rows_[(c["workload"], c["operation"], c["contender"], c["baseline"])].append(c)
    keys = {(wl, op, v, c["metric"]) for (wl, op, cont, base), cs in rows_.items()
            for c in (an.basis_of(cs) or [x for x in cs if x["metric"] in ("wall_s", "cpu_s")]) for v in (cont, base)}
    return [s for s in analysis.summaries if (s["workload"], s["operation"], s["variant"], s["metric"]) in keys]


def _row_names(doc: dict | None, analysis: an.Analysis,
               tables: list[tuple[dict, list[dict]]] | None = None) -> dict[tuple[str, str, str], list[str]]:
    """(workload, operation, variant label) -> the names of the table rows it is a side of (`tables`: the shown
    tables with their rows, when the caller made them)."""
    out: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    if doc is None:  # no document: the rows named by the contender's label
        for c in analysis.comparisons:
            for v in (c["baseline"], c["contender"]):
                out[(c["workload"], c["operation"], v)].append(f"{c['workload']}/{c['operation']} {c['contender']}")
        return out
    if tables is None:
        many = len(shown_tables(doc)) > 1
        tables = [(t, rows(doc, analysis, t if many else None)) for t in shown_tables(doc)]
    for _, mine in tables:
        for r in mine:
            name = f"{r['workload']}/{r['operation']}" + (f" {r['setting_short']}" if r["setting"] != "-" else "")
            for v in (r["baseline"], r["contender"]):
                out[(r["workload"], r["operation"], v)].append(name)
    return out


def _named(names: list[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more (`encbench show FILE --detail` lists them)"
                    if len(names) > limit else "")


def warning_lines(analysis: an.Analysis, limit: int = 6, doc: dict | None = None,
                  tables: list[tuple[dict, list[dict]]] | None = None) -> list[str]:
    """The warnings on the table's figures (elapsed, CPU), one line per cause: how many rows, which (the first
    `limit`), what to do. With the document the rows are named as the table names them."""
    analysis = an.Analysis.of(analysis)
    shown = _warned(analysis)
    names = _row_names(doc, analysis, tables)
    few = sorted({s["n"] for s in shown if s["n"] < stats.MIN_RUNS  # a count that repeats needs 2 (stats.repeats)
                  and not (meter.is_count(s["metric"]) and s["n"] >= stats.EXACT_MIN_RUNS
                           and not any("too few" in w for w in s["warnings"]))})
    out = [f"only {', '.join(map(str, few))} run(s) per variant: too few for a verdict (it takes "
           f"{stats.MIN_RUNS} per side); use --runs 10"] if few else []
    by_cause: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # cause -> row -> metrics
    other = []
    for s in shown:
        for w in s["warnings"]:
            if FEW_RUNS in w:
                continue
            cause = next((i for i, (pattern, _, _) in enumerate(WARNING_CAUSES) if pattern.search(w)), None)
            if cause is None:
                other.append(w)
                continue
            for name in names.get((s["workload"], s["operation"], s["variant"])) or [
                    f"{s['workload']}/{s['operation']} {s['variant']}"]:
                by_cause[cause][name].add(an.metric_word(s["metric"]))
    for cause, found in sorted(by_cause.items()):
        _, what, todo = WARNING_CAUSES[cause]
        if len(found) == 1 and what.startswith("have "):  # one row has, several have
            what = "has " + what.removeprefix("have ")
        listed = [f"{name} ({', '.join(sorted(metrics))})" for name, metrics in found.items()]
        out.append(f"{len(found)} row{'s' if len(found) != 1 else ''} {what}: {todo}. Rows: {_named(listed, limit)}")
    return out + other


def warning_detail_lines(analysis: an.Analysis) -> list[str]:
    """Every warning on the table's figures, one per row, side and metric (`show --detail`)."""
    return [w for s in _warned(an.Analysis.of(analysis)) for w in s["warnings"]]
