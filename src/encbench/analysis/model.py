"""The one result model every view renders: built once from a result document and its analysis.

`build(doc, analysis)` makes, once: the shown tables with their rows (each row's comparisons, figure, CI,
verdict and the metric it leads with: analysis/rows.py), the headline lines (short and whole), the warnings
(analysis/rowwarnings.py), the run context, the confidence level of every CI, the charts' groups and the words
of the metrics, and the flat records of every comparison (CSV). The terminal summary and table, `show`,
`show --detail`, Markdown, `--json`, the HTML report and its charts, and the CSV only format this object
(report/); none of them computes a statistic or asks the analysis per row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import columncost, instrattr, oltpcost
from . import summary as an
from .headline import lines as headline_lines
from .rows import shown_tables, rows as table_rows
from .rowwarnings import warning_detail_lines, warning_lines
from .words import metric_word


@dataclass
class Table:
    """One table of the report: the engine's table (title, axis, axis_baseline, workloads, table_columns,
    metric_words) and its rows, in order."""

    spec: dict
    rows: list[dict]

    def charts(self) -> list[tuple[str, str, list[dict]]]:
        """(metric, its words, the rows charted on it): each row on its lead metric, the one its Δ column and its
        verdict rest on (else chart_metric: the first metric of its verdict)."""
        groups: dict[str, list[dict]] = {}
        for r in self.rows:
            groups.setdefault(r["lead"][0] if r.get("lead") else r["chart_metric"], []).append(r)
        return [(m, metric_word(m, self.spec.get("metric_words")), mine) for m, mine in groups.items()]


@dataclass
class Model:
    """Everything the views print of one result: made once by build(), read by every renderer."""

    doc: dict
    analysis: an.Analysis
    tables: list[Table]
    level: float  # the confidence of every CI shown (95%, or a sequential run's per-look level)
    margin_pct: float  # the equivalence margin of the 'no cost' verdicts
    summary: list[str]  # the headline, each line within 100 columns
    summary_detail: list[str]  # the headline's whole sentences (show --detail, the HTML report)
    warnings: list[str]  # grouped by cause
    warning_detail: list[str]  # one per row, side and metric
    lab_lines: dict[str, list[str]] = field(default_factory=dict)  # column, oltp, instructions: their sections
    context: list[str] = field(default_factory=list)  # precision, placement, run context, flagged runs

    def records(self) -> list[tuple[str, dict, dict]]:
        """(kind, comparison, its table) of every comparison, placebo twins last: what the CSV writes."""
        return records(self.doc, self.analysis)


def build(doc: dict, analysis) -> Model:
    """The model of a result document and its analysis (an Analysis or its dict): every row, line and figure the
    views show, each made once."""
    analysis = an.Analysis.of(analysis)
    groups = an.collect(doc)
    tables = [Table(t, table_rows(doc, analysis, t, groups)) for t in shown_tables(doc)]
    return Model(
        doc=doc, analysis=analysis, tables=tables, level=an.verdict_confidence(doc), margin_pct=analysis.margin_pct,
        summary=headline_lines(analysis), summary_detail=headline_lines(analysis, True),
        warnings=warning_lines(analysis, doc=doc, tables=[(t.spec, t.rows) for t in tables]),
        warning_detail=warning_detail_lines(analysis),
        lab_lines={"column": columncost.lines(analysis.column_costs), "oltp": oltpcost.lines(analysis.oltp_costs),
                   "instructions": instrattr.lines(analysis.instructions)},
        context=list(analysis.context or []),
    )


def records(doc: dict, analysis) -> list[tuple[str, dict, dict]]:
    """(kind, comparison with its verdict fields, its table) of every comparison of an analysis, placebo twins
    last: the CSV's rows."""
    analysis = an.Analysis.of(analysis)
    out = []
    for kind, comps in (("contender_vs_baseline", analysis.shown_comparisons()),
                        ("placebo_vs_reference", analysis.placebo_comparisons or [])):
        out += [(kind, c, an.table_for(doc["engine"], c["workload"])) for c in comps]
    return out


def of(doc: dict, analysis) -> Model:
    """The model itself when given one, else build(doc, analysis)."""
    return analysis if isinstance(analysis, Model) else build(doc, analysis)
