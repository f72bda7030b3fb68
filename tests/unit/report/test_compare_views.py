"""Issue 29 item 1: `compare A B` renders one comparison object (analysis/compare.build), made once, and its
output is what it was before the split.

tests/golden/compare-*.expected.json hold what encbench printed before (commit 63792e5, when analysis/compare.py
both computed and rendered) for two golden result files, each against a copy whose encrypted (TLS) runs use 30%
more CPU and get 30% less done: the terminal table at 100 columns, Markdown, JSON, CSV and the gate's lines
for `cpu_overhead>5%` and `cpu>10%`. The rows this version adds (the workload's verdict metric when it is
neither elapsed nor CPU: roundtrip's queries/s) and the `verdict_metric` mark are the only difference.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from encbench.analysis import compare, gate
from encbench.lab import results
from encbench.report import compare as words, csvout
from encbench.util.units import fmt_count

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
CASES = {"sqlite-default": set(), "postgres-tls": {("roundtrip", "qps")}}  # file -> (workload, metric) added
CONDITIONS = ("cpu_overhead>5%", "cpu>10%")
FACTOR = 1.3


def slower(doc: dict, factor: float = FACTOR) -> dict:
    """A copy of doc whose encrypted (encryption=on, tls=on) runs use `factor` x the CPU and get 1/factor as
    much done (queries/s)."""
    out = copy.deepcopy(doc)
    for run in out["runs"]:
        v = run["variant"]
        if v.get("encryption") != "on" and v.get("tls") in (None, "off"):
            continue
        for op in run.get("operations", []):
            if "cpu_s" in op.get("metrics", {}):
                op["metrics"]["cpu_s"] *= factor
            for rate in ("qps", "tps"):
                if isinstance(op.get("extra", {}).get(rate), (int, float)):
                    op["extra"][rate] /= factor
    return out


def views(cmp: compare.Comparison) -> dict:
    """Every view of a comparison as `compare` prints it in a pipe (COLUMNS unset: 100)."""
    buf = io.StringIO()
    words.render_table(cmp, Console(file=buf, width=100, force_terminal=False, color_system=None))
    return {"table": buf.getvalue(), "markdown": words.render(cmp, "markdown"), "json": words.render(cmp, "json"),
            "csv": csvout.compare_csv(cmp.out, cmp.path_a, cmp.path_b), "gate": words.gate_lines(cmp)}


@pytest.fixture(scope="module", params=sorted(CASES))
def built(request) -> tuple[str, compare.Comparison]:
    a = results.load(GOLDEN / f"{request.param}.json")
    conds = [gate.parse(c) for c in CONDITIONS]
    return request.param, compare.build(a, slower(a), "a.json", "b.json", conditions=conds)


def _as_before(cmp: compare.Comparison) -> compare.Comparison:
    """The comparison without what this version adds: the rows on a verdict metric that is neither elapsed nor
    CPU, and the `verdict_metric` mark."""
    rows = [{k: v for k, v in r.items() if k != "verdict_metric"} for r in cmp.rows
            if r["metric"] in ("wall_s", "cpu_s")]
    out = {k: v for k, v in cmp.out.items() if k != "gate"}
    return compare.of(dict(out, comparisons=rows), cmp.path_a, cmp.path_b, cmp.conditions)


def test_every_view_is_what_it_was_before_the_split(built):
    name, cmp = built
    expected = json.loads((GOLDEN / f"compare-{name}.expected.json").read_text())
    added = {(r["workload"], r["metric"]) for r in cmp.rows if r["metric"] not in ("wall_s", "cpu_s")}
    assert added == CASES[name]
    got = views(_as_before(cmp))
    for view in ("table", "markdown", "json", "csv", "gate"):
        assert got[view] == expected[view], view
    assert views(cmp)["gate"] == expected["gate"]  # the CPU conditions judge the same rows as before


def test_the_added_rows_are_the_verdict_metrics(built):
    """Each key's row on its workload's first verdict metric is marked, one a kind: CPU for SQLite's scans and
    backups and PostgreSQL's connect (its server CPU), queries/s for the fixed-duration roundtrip, a rate whose
    fall is the cost."""
    name, cmp = built
    marked = [r for r in cmp.rows if r.get("verdict_metric")]
    keys = {(r["workload"], r["operation"], r["variant"], r["kind"]) for r in cmp.rows}
    assert len(marked) == len({(r["workload"], r["operation"], r["variant"], r["kind"]) for r in marked}) == len(keys)
    for r in marked:  # the open: CPU where its runs recorded it, else elapsed (PostgreSQL's: the client's wait)
        wanted = {"roundtrip": ("qps",), "(open)": ("cpu_s", "wall_s")}.get(r["workload"], ("cpu_s",))
        assert r["metric"] in wanted, r
    for r in cmp.rows:
        if r["metric"] == "qps" and r["kind"] == "overhead":
            assert r["higher_is_better"] and r["ratio"] == pytest.approx(1 / FACTOR, rel=1e-9)
            assert r["verdict"] in ("costs", "inconclusive", "too_few_runs"), r  # a fall: never "saves"


def test_every_view_states_the_same_figure_verdict_and_metric(built):
    """The cross-view check of test_cross_view.py, for compare: each row's ratio, CI, verdict and metric are the same
    in --json, the CSV, the Markdown row and the terminal table."""
    import csv

    _, cmp = built
    shown = views(cmp)
    rows = json.loads(shown["json"])["comparisons"]
    records = list(csv.DictReader(io.StringIO(shown["csv"], newline="")))
    md = [line for line in shown["markdown"].splitlines() if line.startswith("| ")][1:]
    assert len(rows) == len(records) == len(md) == len(cmp.rows)
    for r, rec, line in zip(rows, records, md):
        assert (rec["metric"], rec["kind"], rec["verdict"]) == (r["metric"], r["kind"], r["verdict"])
        assert float(rec["ratio"]) == r["ratio"] and [float(rec["ci_low"]), float(rec["ci_high"])] == r["ci"]
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert cells[3].startswith(r["metric"]) and cells[6] == words.pct(r) and cells[7] == r["verdict_text"]
        assert words.pct(r) in shown["table"]


def test_the_table_keeps_within_the_console(built):
    """Issue 30 item 6: every table line within COLUMNS (100 in a pipe), and at 80; a number is never cut."""
    _, cmp = built
    for width in (100, 80):
        buf = io.StringIO()
        words.render_table(cmp, Console(file=buf, width=width, force_terminal=False, color_system=None))
        table = [x for x in buf.getvalue().splitlines() if x[:1] in "┏┃┡│└"]
        assert table and all(cell_len(x) <= width for x in table), max(table, key=cell_len)
    for r in cmp.rows:  # each change and its CI whole in one cell at 100 columns
        assert words.pct(r) in views(cmp)["table"] or r["ratio"] is None


def test_a_count_is_shown_as_a_count_not_seconds():
    """A metered file's instruction rows: A and B's means were printed as seconds (fmt_seconds: '1.5e+07 s')."""
    doc = results.load(GOLDEN / "sqlite-metered.json")
    cmp = compare.build(doc, doc, "a.json", "b.json")
    counted = [r for r in cmp.rows if r["metric"] == "instructions" and r["kind"] == "absolute"]
    assert counted
    for r in counted:
        assert words.amount("instructions", r["mean_a"]) == fmt_count(r["mean_a"])
    assert words.amount("qps", 1234.6) == "1,235 q/s" and words.amount("cpu_s", 0.0123) == "12.3 ms"
    assert words.amount("cpu_us_per_transaction", 250.0) == "250.0 µs"


def write_expected(root: Path = GOLDEN) -> None:
    """Writes compare-*.expected.json from the views of this version with the added rows left out (after a
    deliberate change to compare's output: review the diff)."""
    for name in sorted(CASES):
        a = results.load(root / f"{name}.json")
        cmp = compare.build(a, slower(a), "a.json", "b.json", conditions=[gate.parse(c) for c in CONDITIONS])
        (root / f"compare-{name}.expected.json").write_text(json.dumps(views(_as_before(cmp)), indent=1) + "\n")
