"""Issue 29 item 4: the HTML report carries everything `show --detail` prints (run context, flagged runs, placement,
precision, notes, warnings), from the same analysis; its charts show the metric each table row leads with."""

from __future__ import annotations

import copy
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

from encbench.analysis import summary as an
from encbench.analysis import rows as table_rows
from encbench.report import html, render

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "results-v1.json"
# the terminal titles of the sections whose "  - " items the HTML must carry: the summary and every section after
# the tables (notes, warnings, every warning, the per-page cost...)
TITLES = {render.SUMMARY[0]} | {s[0] for s in render.SECTIONS + render.DETAIL_SECTIONS}


class _Text(HTMLParser):
    """The text of every <li> and the data-metric of every chart."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[str] = []
        self.metrics: list[str] = []
        self._li: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "li":
            self._li = []
        if tag == "figure" and dict(attrs).get("data-metric"):
            self.metrics.append(dict(attrs)["data-metric"])

    def handle_endtag(self, tag):
        if tag == "li" and self._li is not None:
            self.items.append(" ".join("".join(self._li).split()))
            self._li = None

    def handle_data(self, data):
        if self._li is not None:
            self._li.append(data)


def html_text(page: str) -> _Text:
    parser = _Text()
    parser.feed(page)
    return parser


def detail_lines(text: str) -> list[str]:
    """What `show --detail` prints in its sections (summary, notes, warnings...) and its closing lines (precision, placement,
    run context, the flagged runs): each line whole, its spaces normalised."""
    lines = text.splitlines()
    out, section = [], None
    for line in lines:
        if line in TITLES:
            section = line
        elif line and not line.startswith(" "):
            section = None
        if section and line.startswith("  - "):
            out.append(line[4:])
    reproduce = next(i for i, x in enumerate(lines) if x.startswith("Reproduce: "))
    out += [x for x in lines[reproduce + 1:] if x.strip()]
    return [" ".join(x.split()) for x in out]


def with_context(doc: dict) -> dict:
    """The golden file with the records a run of today writes: placement, precision, run context (runs flagged)."""
    doc = copy.deepcopy(doc)
    measured = list(range(len(doc["runs"])))
    for i in measured:
        doc["runs"][i]["context"] = {"flags": [f"other processes used {1.5 + i % 3 / 10:.2f} cores (> 0.5)"],
                                     "steal_pct": 0.4, "other_load_cores": 1.58}
    doc["placement"] = {"text": "worker on CPU 1; runner, forkserver and a private server on CPU 0 (sched_setaffinity)"}
    doc["run_context"] = {"runs": len(measured), "flagged_runs": measured, "max_steal_pct": 0.4,
                          "median_other_load_cores": 1.58, "max_other_load_cores": 1.8}
    doc["precision"] = {"rows": [{"workload": "scan-like", "operation": "scan", "contender": "encryption=on",
                                  "metric": "cpu_s", "half_width_points": 9.5, "reached": False, "n_baseline": 3,
                                  "n_contender": 3}],
                        "runs_per_variant": {"scan-like": 3}, "widest_points": 9.5, "elapsed_s": 42.0,
                        "target_points": 3.0, "stopped_because": "time budget"}
    return doc


@pytest.fixture(scope="module")
def doc() -> dict:
    return with_context(json.loads(GOLDEN.read_text()))


def test_every_line_show_detail_prints_is_in_the_html(doc):
    console = Console(record=True, width=1000, file=open("/dev/null", "w"))  # noqa: SIM115 (closed with the test)
    render.render_text(doc, an.analyze(doc), console, detail=True)
    printed = detail_lines(console.export_text())
    console.file.close()
    assert any(x.startswith("run context: ") and "other processes' load median 1.58 cores" in x for x in printed)
    assert any(x.startswith("placement: ") for x in printed) and any(x.startswith("precision: ") for x in printed)
    assert any(x.startswith("run 1 (") for x in printed) and any("outlier run(s)" in x for x in printed)
    items = set(html_text(html.section(doc, GOLDEN, 0)).items)
    missing = [x for x in printed if x not in items]
    assert not missing, missing


def test_the_chart_shows_the_metric_the_table_row_leads_with(doc):
    a = an.analyze(doc)
    leads = {r["lead"][0] for t in render.model.shown_tables(doc) for r in table_rows.rows(doc, a, t) if r["lead"]}
    charted = html_text(html.section(doc, GOLDEN, 0)).metrics
    assert charted and set(charted) == leads, (charted, leads)
    # a row judged on elapsed first (verdict_basis 0) is charted on elapsed, whatever its table's axis
    rows = table_rows.rows(doc, a, render.model.shown_tables(doc)[0])
    elapsed_first = [dict(r, lead=("wall_s", "d_elapsed", "elapsed_mean")) for r in rows]
    assert list(html.chart_groups({"axis": "encryption"}, elapsed_first)) == ["wall_s"]
