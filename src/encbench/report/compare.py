"""`encbench compare A B` in words: the terminal's tables, Markdown, JSON and the gate's lines.

Only formats the comparison object analysis/compare.build made once (its rows with figure, CI, verdict and
metric, its tables, its notes, the gate's verdict): no statistic is computed here, nothing is asked of the
analysis per row.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from ..analysis import stats
from ..analysis.compare import Comparison
from ..analysis.rows import RATES
from ..util.units import fmt_count, fmt_number, fmt_seconds

HEADERS = ["workload", "op", "variant", "metric", "A", "B", "Δ B vs A [95% CI]", "verdict"]
# the terminal's tables, one per kind and metric, made to fit the console (COLUMNS; 100 in a pipe): the row, the
# values of the keys its variants differ in (named once, in the title), the means (or overheads) of A and B in one
# cell, the change, the verdict in a few words (the whole sentence: --format markdown, --json)
TABLE_HEADERS = ("row", "variant", "A → B", "Δ B vs A [95% CI]", "verdict")
TABLE_TITLES = {"absolute": "{word}: B / A of the same variant", "overhead": "{word} overhead: B's encryption overhead "
                                                                         "over A's"}
SHORT_VERDICTS = {stats.COSTS: "costs", stats.SAVES: "saves", stats.INCONCLUSIVE: "inconclusive",
                  stats.TOO_FEW_RUNS: "too few runs", stats.NO_ESTIMATE: "no estimate",
                  stats.WITHHELD: "no verdict: client-bound"}
WHOLE_VERDICTS = "each verdict's whole sentence: --format markdown or --json"
RATE_UNITS = dict(RATES)
SHOWN_UNRESOLVED = 8  # the gate's not-resolved rows printed one a line; the rest counted


def pct(r: dict) -> str:
    """A row's change with its CI: '+12.0% [+3.1, +21.7]'; '-' without a ratio."""
    if r["ratio"] is None:
        return "-"
    ci = f" [{(r['ci'][0] - 1) * 100:+.1f}, {(r['ci'][1] - 1) * 100:+.1f}]" if r["ci"] else ""
    return f"{(r['ratio'] - 1) * 100:+.1f}%{ci}"


def amount(metric: str, x: float | None) -> str:
    """A mean in its metric's unit: seconds (a time per query too), a rate with its unit, a count (instructions)."""
    if x is None:
        return "-"
    if metric.endswith("_s"):
        return fmt_seconds(x)
    if "_us_per_" in metric:
        return fmt_seconds(x / 1e6)
    if metric in RATE_UNITS:
        return f"{fmt_number(x)} {RATE_UNITS[metric]}"
    return fmt_count(x)


def _fmt(r: dict, side: str) -> str:
    if r["kind"] == "overhead":
        x = r[f"overhead_{side}"]
        return "-" if x is None else f"{(x - 1) * 100:+.1f}% overhead"
    return amount(r["metric"], r[f"mean_{side}"])


def _cells(r: dict) -> list[str]:
    metric = r["metric"] + (f" per {r['per']}" if r.get("per") else "")
    metric = f"{metric} overhead" if r["kind"] == "overhead" else metric
    return [r["workload"], r["operation"], r["variant"], metric, _fmt(r, "a"), _fmt(r, "b"), pct(r),
            r["verdict_text"]]


def _sides(r: dict) -> str:
    """A → B: the means ('6.7 → 6.9 ms', one unit when both share it), or the two overheads ('+12.0% → +14.1%')."""
    if r["kind"] == "overhead":
        a, b = (("-" if r[f"overhead_{s}"] is None else f"{(r[f'overhead_{s}'] - 1) * 100:+.1f}%") for s in "ab")
        return f"{a} → {b}"
    (x, _, unit_a), (y, _, unit_b) = (_fmt(r, s).rpartition(" ") for s in "ab")
    return f"{x} → {y} {unit_a}" if x and y and unit_a == unit_b else f"{_fmt(r, 'a')} → {_fmt(r, 'b')}"


def short_verdict(r: dict) -> str:
    if r["verdict"] == stats.NO_COST:
        return f"no cost ±{r['equivalence']['margin_pct']:g}%" if r.get("equivalence") else "no cost"
    return SHORT_VERDICTS.get(r["verdict"], r["verdict"])


def render_table(cmp: Comparison, console: Console) -> None:
    """The terminal's tables (a narrow console folds a cell at its spaces) and the notes."""
    keys = cmp.varying
    for t in cmp.tables:
        title = TABLE_TITLES[t.kind].format(word=t.word) + (f"; variant: {', '.join(keys)}" if keys else "")
        table = Table(header_style="bold", pad_edge=False, title=title, title_justify="left", title_style="bold")
        for header in TABLE_HEADERS:
            table.add_column(header, overflow="fold")
        for r in t.rows:
            table.add_row(f"{r['workload']}/{r['operation']}", cmp.settings[r["variant"]], _sides(r), pct(r),
                          short_verdict(r))
        console.print(table)
    if not cmp.tables:
        console.print("no workload and variant in both files: nothing compared", highlight=False)
    for line in cmp.notes + ([WHOLE_VERDICTS] if cmp.rows else []):
        console.print(f"  - {line}", highlight=False, soft_wrap=not console.is_terminal)


def render(cmp: Comparison, fmt: str) -> str:
    """--format json (the whole document, with the gate's verdict) or markdown (one table and the notes)."""
    if fmt == "json":
        return json.dumps(cmp.to_dict(), indent=1)
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |" for r in cmp.rows]
    lines += [""] + [f"- {n}" for n in cmp.notes]
    return "\n".join(lines)


def gate_lines(cmp: Comparison) -> list[str]:
    """The gate's verdict in lines: OVER rows first, then the not-resolved ones (with the runs that would resolve
    them), the within count, and the outcome: FAILED (exit 17), NOT RESOLVED (exit 23) or passed."""
    verdict = cmp.gate
    lines = [f"FAIL  {line}" for line in verdict["failed"]]
    unresolved = verdict["not_resolved"]
    lines += [f"NOT RESOLVED  {line}" for line in unresolved[:SHOWN_UNRESOLVED]]
    if len(unresolved) > SHOWN_UNRESOLVED:
        lines.append(f"NOT RESOLVED  ... and {len(unresolved) - SHOWN_UNRESOLVED} more (--json lists every one)")
    if verdict["within"]:
        lines.append(f"within the limit: {len(verdict['within'])} comparisons")
    need = f"; about {verdict['runs_needed']} runs per side would resolve the widest" if verdict["runs_needed"] else ""
    state = {"failed": "FAILED",
             "not_resolved": (f"NOT RESOLVED: {len(unresolved)} of {len(unresolved) + len(verdict['within'])} "
                              f"comparisons could not be shown within or over the limit{need}"
                              + (" (nothing could be judged: use more runs)" if verdict["nothing_judged"] else "")),
             }.get(verdict["outcome"], "passed")
    lines.append(f"gate: {state} ({', '.join(verdict['conditions'])}; {verdict['checked']} comparisons checked, "
                 f"{verdict['method']})")
    return lines


def gate_text(lines: list[str], fmt: str) -> str:
    """The gate's lines as printed after the output: a Markdown section of their own, else one a line."""
    if fmt == "markdown":
        return "\n## Gate\n\n" + "\n".join(f"- {line}" for line in lines)
    return "\n".join(lines)
