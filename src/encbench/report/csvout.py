"""CSV exports: `encbench show FILE --format csv` and `encbench compare A B --format csv`.

One row per comparison, for spreadsheets, pandas and dashboards. The column names are
stable (SHOW_FIELDS, COMPARE_FIELDS: new columns are only ever added at the end), the
quoting is RFC 4180 (the standard csv module, CRLF line ends, a field quoted when it holds
a comma, a quote or a line break), numbers are written as they are computed (a ratio is
a float such as 1.0731..., never "+7%"), and a value that does not exist is an empty cell.

Ratios are contender / baseline (show) or B / A (compare); ci_low/ci_high is the 95% CI
and ci90_low/ci90_high the 90% CI that the "no cost" (equivalence) verdict uses.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Iterable

from ..analysis import model, stats
from ..analysis.rows import RATES
from ..probes import metric_catalog

SHOW_FIELDS = (
    "workload", "operation", "table", "axis", "baseline", "contender", "kind", "metric", "unit",
    "n_baseline", "n_contender", "mean_baseline", "mean_contender",
    "ratio", "ci_low", "ci_high", "ci90_low", "ci90_high", "significant", "margin_pct",
    "verdict", "verdict_text", "method",
)
COMPARE_FIELDS = (
    "workload", "operation", "variant", "kind", "baseline", "contender", "baseline_variant", "metric", "unit",
    "n_baseline", "n_contender", "mean_baseline", "mean_contender", "overhead_baseline", "overhead_contender",
    "ratio", "ci_low", "ci_high", "ci90_low", "ci90_high", "significant", "floor_pct", "floor_source", "margin_pct",
    "verdict", "verdict_text", "method",
)
# show's kinds: a contender against its baseline variant, or a placebo twin against its reference (A/A)
KIND_COMPARISON, KIND_PLACEBO = "contender_vs_baseline", "placebo_vs_reference"


def _cell(value: Any) -> Any:
    """What a cell holds: '' for a value that does not exist (None, NaN, inf), the number itself otherwise."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    return value


def _unit(m, metric: str) -> str:
    """A metric's unit: the probe catalog's, else a rate's as analysis/rows.RATES names it (qps: q/s, tps: txn/s)."""
    return (m.unit if m else "") or dict(RATES).get(metric, "")


def _interval(ci, prefix: str) -> dict:
    lo, hi = (ci[0], ci[1]) if ci else (None, None)
    return {f"{prefix}_low": lo, f"{prefix}_high": hi}


def _margin(comps: list[dict], given: float | None) -> float:
    """The equivalence margin the verdicts were judged with: given, else the one a verdict records."""
    if given is not None:
        return given
    found = [c["equivalence"]["margin_pct"] for c in comps if c.get("equivalence")]
    return found[0] if found else stats.DEFAULT_MARGIN_PCT


def _write(fields: tuple[str, ...], rows: Iterable[dict]) -> str:
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    w.writeheader()
    for row in rows:
        w.writerow({k: _cell(row.get(k)) for k in fields})
    return buf.getvalue()


def show_rows(doc: dict, analysis, margin_pct: float | None = None) -> list[dict]:
    """One dict per comparison of the analysis (placebo twins last, model.records), keyed by SHOW_FIELDS; the
    margin is the one given, else the one the verdicts were judged with."""
    found = analysis.analysis if isinstance(analysis, model.Model) else analysis
    margin = margin_pct if margin_pct is not None else _margin(list(found["comparisons"]), None)
    summary = {(s["workload"], s["operation"], s["variant"], s["metric"]): s for s in found["summaries"]}
    catalog = metric_catalog()
    out = []
    for kind, c, t in model.records(doc, found):
        base = summary.get((c["workload"], c["operation"], c["baseline"], c["metric"])) or {}
        cont = summary.get((c["workload"], c["operation"], c["contender"], c["metric"])) or {}
        m = catalog.get(c["metric"])
        out.append({
            "workload": c["workload"], "operation": c["operation"], "table": t.get("title") or "",
            "axis": t["axis"], "baseline": c["baseline"], "contender": c["contender"], "kind": kind,
            "metric": c["metric"], "unit": base.get("unit") or cont.get("unit") or _unit(m, c["metric"]),
            "n_baseline": c.get("n_baseline"), "n_contender": c.get("n_contender"),
            "mean_baseline": base.get("mean"), "mean_contender": cont.get("mean"),
            "ratio": c.get("ratio"), **_interval(c.get("ci"), "ci"), **_interval(c.get("ci90"), "ci90"),
            "significant": c.get("significant"), "margin_pct": margin,
            "verdict": c.get("verdict"), "verdict_text": c.get("verdict_text"), "method": c.get("method"),
        })
    return out


def show_csv(doc: dict, analysis, margin_pct: float | None = None) -> str:
    """`show --format csv`: SHOW_FIELDS, one row per comparison."""
    return _write(SHOW_FIELDS, show_rows(doc, analysis, margin_pct))


def compare_rows(out: dict, path_a: str, path_b: str) -> list[dict]:
    """One dict per row of compare.compare() (absolute and overhead), keyed by COMPARE_FIELDS."""
    catalog = metric_catalog()
    margin = _margin(out["comparisons"], out.get("margin_pct"))
    rows = []
    for r in out["comparisons"]:
        m = catalog.get(r["metric"])
        rows.append({
            "workload": r["workload"], "operation": r["operation"], "variant": r["variant"], "kind": r["kind"],
            "baseline": path_a, "contender": path_b, "baseline_variant": r.get("baseline_variant"),
            "metric": r["metric"], "unit": _unit(m, r["metric"]),  # of the means; overhead_* are ratios
            "n_baseline": r.get("n_a"), "n_contender": r.get("n_b"),
            "mean_baseline": r.get("mean_a"), "mean_contender": r.get("mean_b"),
            "overhead_baseline": r.get("overhead_a"), "overhead_contender": r.get("overhead_b"),
            "ratio": r.get("ratio"), **_interval(r.get("ci"), "ci"), **_interval(r.get("ci90"), "ci90"),
            "significant": r.get("significant"), "floor_pct": r.get("floor_pct"),
            "floor_source": r.get("floor_source"), "margin_pct": margin,
            "verdict": r.get("verdict"), "verdict_text": r.get("verdict_text"), "method": r.get("method"),
        })
    return rows


def compare_csv(out: dict, path_a: str, path_b: str) -> str:
    """`compare A B --format csv`: COMPARE_FIELDS, one row per comparison; baseline = A, contender = B."""
    return _write(COMPARE_FIELDS, compare_rows(out, path_a, path_b))
