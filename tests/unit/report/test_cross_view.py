"""Issue 29 (done when, first bullet): for real result files, every view states the same figure for the same
comparison: the summary, the table (compact and --detail), the notes, --json, the HTML report and the CSV give
the same value, the same CI, the same verdict and the same metric."""

from __future__ import annotations

import copy
import csv
import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

from encbench.analysis import model, summary as an
from encbench.lab import results
from encbench.report import csvout, html, render
from encbench.util.units import fmt_bytes, fmt_change, fmt_seconds

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
FILES = ("results-v1.json", "sqlite-default.json", "postgres-tls.json", "sqlite-oltp.json", "mariadb-atrest.json",
         "sqlite-metered.json", "advise-kdf-iter.json")


class _Cells(HTMLParser):
    """Every <tr> of the results tables as its cells' text, the data-metric of every chart, every <li>."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.metrics: list[str] = []
        self.items: list[str] = []
        self._cell: list[str] | None = None
        self._li: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "li":
            self._li = []
        elif tag == "figure" and dict(attrs).get("data-metric"):
            self.metrics.append(dict(attrs)["data-metric"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "li" and self._li is not None:
            self.items.append("".join(self._li))
            self._li = None

    def handle_data(self, data):
        for part in (self._cell, self._li):
            if part is not None:
                part.append(data)


class Views:
    """Every view of one result file, rendered as a user gets it."""

    def __init__(self, name: str) -> None:
        self.path = GOLDEN / name
        self.doc = results.load(self.path)
        self.analysis = an.analyze(self.doc)
        self.model = model.build(self.doc, self.analysis)
        self.json = json.loads(render.render_json(self.doc, self.analysis))
        self.csv = list(csv.DictReader(io.StringIO(csvout.show_csv(self.doc, self.analysis))))
        self.text = self._text(detail=False)
        self.detail = self._text(detail=True)
        self.html = _Cells()
        self.html.feed(html.section(self.doc, self.path, 0))

    def _text(self, detail: bool) -> str:
        console = Console(file=io.StringIO(), width=400, color_system=None)
        render.render_text(self.doc, self.analysis, console, detail=detail)
        return console.file.getvalue()

    def comparison(self, wl: str, op: str, contender: str, metric: str, baseline: str | None = None) -> dict:
        (c,) = [c for c in self.json["comparisons"] if (c["workload"], c["operation"], c["contender"], c["metric"])
                == (wl, op, contender, metric) and baseline in (None, c["baseline"])]
        return c

    def rows(self):
        return [r for t in self.model.tables for r in t.rows]


@pytest.fixture(scope="module", params=FILES)
def views(request) -> Views:
    return Views(request.param)


def _number(x: str):
    return float(x) if x != "" else None


def test_json_and_csv_state_the_same_comparisons(views):
    by_key = {(r["workload"], r["operation"], r["baseline"], r["contender"], r["metric"]): r for r in views.csv
              if r["kind"] == csvout.KIND_COMPARISON}
    assert len(by_key) == len(views.json["comparisons"])
    for c in views.json["comparisons"]:
        row = by_key[(c["workload"], c["operation"], c["baseline"], c["contender"], c["metric"])]
        assert _number(row["ratio"]) == c["ratio"]
        assert [_number(row["ci_low"]), _number(row["ci_high"])] == (c["ci"] or [None, None])
        assert row["verdict"] == c["verdict"] and row["verdict_text"] == c["verdict_text"]


def _lead_cell(r: dict, c: dict) -> str:
    return "too short to time" if c["metric"] in r["too_short"] else fmt_change(c["ratio"], c["ci"])


def test_the_table_terminal_detail_and_html_state_the_json_figure_of_each_row(views):
    html_rows = [" | ".join(cells) for cells in views.html.rows]
    for r in views.rows():
        metric = r["lead"][0]
        c = views.comparison(r["workload"], r["operation"], r["contender"], metric, r["baseline"])
        cell = _lead_cell(r, c)
        line = [x for x in views.text.splitlines() if f" {r['operation']} " in x and cell in x
                and r["setting_short"] in x and r["verdict_short"] in x]
        assert line, (cell, r["verdict_short"], views.text)
        assert f"{render.head(r['lead'][1], views.model.level)}: {cell}" in views.detail
        assert any(r["operation"] in h and f" | {cell} | " in f" | {h} | " and r["verdict"] in h
                   for h in html_rows), (cell, r["verdict"])


def test_the_row_verdict_names_the_metric_that_decided_it(views):
    """One metric per question: the short verdict is the lead metric's own, or it names the metric that decided
    the row with that metric's figure (as --json and the CSV judge it)."""
    for r in views.rows():
        code = r["verdict_code"]
        if code not in ("costs", "saves"):
            continue
        lead = views.comparison(r["workload"], r["operation"], r["contender"], r["lead"][0], r["baseline"])
        if r["verdict_short"] == code:
            assert lead["verdict"] == code
            continue
        words = r["verdict_short"].split(" ", 2)
        decided = [c for c in r["comparisons"].values() if c["verdict"] == code
                   and an.metric_word(c["metric"], _table_of(views, r).get("metric_words")) == words[2]]
        assert decided, r["verdict_short"]
        assert words[1] == f"{render.fmt_number((decided[0]['ratio'] - 1) * 100, True, 0)}%"


def _table_of(views, r: dict) -> dict:
    return next(t.spec for t in views.model.tables if r in t.rows)


def test_the_chart_shows_each_row_on_its_table_lead_metric(views):
    leads = {r["lead"][0] for r in views.rows()}
    assert set(views.html.metrics) <= leads | {r["chart_metric"] for r in views.rows()}


def _summary_lines(views) -> list[dict]:
    return [h for h in views.json.get("headline") or [] if (h.get("lead") or {}).get("resolved")]


def test_the_summary_states_the_figure_and_verdict_the_table_does(views):
    rows = {(r["workload"], r["operation"], r["contender"]): r for r in views.rows()}
    for h in _summary_lines(views):
        lead = h["lead"]
        assert h["text"] in views.text and h.get("detail", h["text"]) in views.html.items  # the HTML: the sentence
        key = (lead["workload"], lead["operation"], lead["contender"])
        (source,) = [x for x in h["rows"] if (x["workload"], x["operation"], x["contender"]) == key]
        if "metric" in lead:
            c = views.comparison(*key, lead["metric"], source["baseline"])
            if not lead["percent"]:
                assert lead["value"] == pytest.approx(lead["baseline_centre"] * (c["ratio"] - 1))
                assert lead["ci"] == pytest.approx([lead["baseline_centre"] * (x - 1) for x in c["ci"]])
            assert c["verdict"] in ("costs", "saves", "no_cost")
        if key in rows:  # a row of the table (the connection open is a note, not a row)
            assert source["verdict"] == rows[key]["verdict_code"], (h["text"], rows[key]["verdict_short"])
            if "metric" in lead and lead["metric"] != rows[key]["lead"][0]:  # another metric decided: in words
                word = an.metric_word(lead["metric"], _table_of(views, rows[key]).get("metric_words"))
                assert word in rows[key]["verdict_short"], (h["text"], rows[key]["verdict_short"])


def test_every_summary_line_judges_its_rows_as_the_table_does(views):
    """A line is never 'not resolved' (or inconclusive) where the table resolves one of its rows: each row of a
    line carries the verdict of the table's row (warm reads 'inconclusive' beside a table row 'costs +23% elapsed')."""
    rows = {(r["workload"], r["operation"], r["contender"]): r for r in views.rows()}
    for h in views.json.get("headline") or []:
        for x in h.get("rows") or []:
            key = (x["workload"], x["operation"], x["contender"])
            if key in rows:
                assert x["verdict"] == rows[key]["verdict_code"], (h["text"], rows[key]["verdict_short"])
        resolved = [x for x in h.get("rows") or [] if x["verdict"] in ("costs", "saves", "no_cost")]
        if resolved and h.get("lead") is not None:
            assert h["lead"].get("resolved"), h["text"]


def test_a_line_whose_rows_disagree_says_so(views):
    """issue 30: never one row's verdict leading a line another row contradicts ('backups: costs ...; 2 of 4
    rows cost' where one saves)."""
    for h in _summary_lines(views):
        resolved = {x["verdict"] for x in h["rows"] if x["verdict"] in ("costs", "saves", "no_cost")}
        if len(resolved) > 1:
            head = h["text"].split(": ", 1)[1]
            assert head.startswith("verdicts differ ("), h["text"]


def test_the_per_page_figure_is_the_derived_one(views):
    for h in _summary_lines(views):
        lead = h["lead"]
        if "per_page" not in lead:
            continue
        kind = "write" if "write" in lead["per_page"] else "read"
        (d,) = [d for d in views.json["derived"] if (d["workload"], d["operation"], d["contender"], d["kind"])
                == (lead["workload"], lead["operation"], lead["contender"], kind)]
        assert (d["per_page_cpu_s"], d["per_page_cpu_ci"]) == (lead["value"], lead["ci"])
        assert f"{fmt_seconds(d['per_page_cpu_s'])} per {d['page_size']}-byte page" in views.text


def test_the_connection_open_note_and_the_summary_state_one_figure_per_variant(views):
    """The note gives each variant's open time as the figure its comparisons rest on; the summary's
    '(X without)' is the plain variant's figure in the note."""
    opens = {s["variant"]: s for s in views.json["summaries"] if s["workload"] == "(open)" and s["metric"] == "wall_s"}
    notes = [n for n in views.json["notes"] if n.startswith("connection open")]
    if not opens:
        return
    (note,) = notes
    for variant, s in opens.items():
        assert f"{variant}: {fmt_seconds(s['centre'])} ({s['n']} runs)" in note
    assert " ".join(note.split()) in " ".join(views.detail.split())  # the terminal wraps it at its width
    assert note in views.html.items
    for h in _summary_lines(views):
        lead = h["lead"]
        if lead["workload"] == "(open)" and lead.get("metric") == "wall_s":
            base = views.comparison("(open)", "connect", lead["contender"], "wall_s")["baseline"]
            assert lead["baseline_centre"] == opens[base]["centre"]
            assert f"({fmt_seconds(lead['baseline_centre'])} without)" in h["text"]
        elif lead["workload"] == "(open)" and lead.get("metric", "").startswith("instructions"):  # a count, no time
            assert "instructions per connection" in h["text"] and " s without" not in h["text"], h["text"]


def test_the_cold_cache_note_states_each_variants_own_figure(views):
    """issue 29 item 3: the bytes read per cold operation are a figure per variant (plain and encrypted reads are
    two figures), the note their lowest to highest, never one mean over both."""
    per: dict[str, list[float]] = {}
    for run in views.doc["runs"]:
        for op in [] if run.get("warmup") else run.get("operations", []):
            if op.get("cache", {}).get("cache") == "cold" and "read_bytes" in op["metrics"] \
                    and "restart_s" not in op["cache"]:
                per.setdefault(run["variant_label"], []).append(op["metrics"]["read_bytes"])
    if not per:
        return
    means = sorted(sum(v) / len(v) for v in per.values())
    (note,) = [n for n in views.json["notes"] if n.startswith("cache=cold: OS page cache dropped")]
    low, high = fmt_bytes(means[0]), fmt_bytes(means[-1])
    assert (f"on average {low} to {high} read from storage per operation, per variant" if low != high
            else f"on average {low} read from storage per operation") in note, note


def test_the_columns_name_the_confidence_really_used():
    """issue 30: a sequential run's CIs are 99%: the Δ column header says so, in the terminal, --detail and HTML."""
    v = Views("sqlite-default.json")
    doc = copy.deepcopy(v.doc)
    doc["config"]["sequential"] = {"confidence": 0.99}
    a = an.analyze(doc)
    assert {c.get("confidence") for c in a.comparisons} == {0.99}
    console = Console(file=io.StringIO(), width=400, color_system=None)
    render.render_text(doc, a, console)
    text = console.file.getvalue()
    assert "Δ CPU [99% CI]" in text and "[95% CI]" not in text
    page = html.section(doc, v.path, 0)
    assert "Δ elapsed [99% CI]" in page and "[95% CI]" not in page
