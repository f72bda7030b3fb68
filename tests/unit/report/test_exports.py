"""issue 14 item 4: the CSV export (report/csvout.py) and the gate's JUnit XML (report/junit.py),
parsed back with csv.DictReader and xml.etree; no engine (the CLI is tested in
tests/integration/test_exports_cli.py on real runs)."""

from __future__ import annotations

import copy
import csv
import io
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from encbench.analysis import compare, gate, stats
from encbench.analysis import summary as an
from encbench.errors import OutputError
from encbench.lab import results
from encbench.report import compare as compare_words, csvout, junit

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

GOLDEN = TESTS / "golden" / "results-v1.json"


@pytest.fixture(scope="module")
def golden() -> dict:
    return results.load(GOLDEN)


def _read(text: str) -> list[dict]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    return list(reader), reader.fieldnames


def test_show_csv_has_one_row_per_comparison_with_stable_columns(golden):
    analysis = an.analyze(golden)
    rows, fields = _read(csvout.show_csv(golden, analysis))
    assert tuple(fields) == csvout.SHOW_FIELDS
    assert {"workload", "operation", "baseline", "contender", "metric", "ratio", "ci_low", "ci_high",
            "verdict"} <= set(fields)
    assert len(rows) == len(analysis["comparisons"]) > 0
    for row, c in zip(rows, analysis["comparisons"]):
        assert (row["workload"], row["operation"], row["baseline"], row["contender"], row["metric"]) == (
            c["workload"], c["operation"], c["baseline"], c["contender"], c["metric"])  # commas quoted, read back
        if c["ratio"] is None:  # no estimate: empty cells, never a made-up number
            assert row["ratio"] == row["ci_low"] == row["ci_high"] == ""
            continue
        assert float(row["ratio"]) == c["ratio"]  # the number as computed, not "+190%"
        assert [float(row["ci_low"]), float(row["ci_high"])] == c["ci"]
        assert row["verdict"] == c["verdict"] and row["verdict"] in stats.VERDICTS
        assert int(row["n_baseline"]) == c["n_baseline"] and row["axis"] == "encryption"
        assert float(row["margin_pct"]) == stats.DEFAULT_MARGIN_PCT
    cold = next(r for r in rows if r["workload"] == "scan-like" and r["metric"] == "wall_s" and "cold" in r["contender"])
    assert cold["unit"] == "s" and float(cold["mean_contender"]) > float(cold["mean_baseline"]) > 0


def test_show_csv_empty_cells_and_rfc4180_quoting(golden):
    analysis = an.analyze(golden)
    c = dict(analysis["comparisons"][0], ci=None, ci90=None, ratio=float("nan"),
             verdict_text='no estimate: "odd", two\nlines')
    text = csvout.show_csv(golden, dict(analysis, comparisons=[c]), margin_pct=5.0)
    assert text.endswith("\r\n") and '"no estimate: ""odd"", two\nlines"' in text
    rows, _ = _read(text)
    assert len(rows) == 1
    row = rows[0]
    assert row["ratio"] == row["ci_low"] == row["ci_high"] == row["ci90_low"] == ""  # none: an empty cell
    assert row["verdict_text"] == 'no estimate: "odd", two\nlines' and row["margin_pct"] == "5.0"


def test_show_csv_follows_the_analysis(golden):
    """The cells come from the analysis: other runs, other numbers."""
    doc = copy.deepcopy(golden)
    for run in doc["runs"]:
        if run["variant"].get("encryption") == "on":
            for op in run.get("operations", []):
                op["metrics"]["wall_s"] *= 2
    before = {(r["workload"], r["operation"], r["contender"]): float(r["ratio"])
              for r in _read(csvout.show_csv(golden, an.analyze(golden)))[0]
              if r["metric"] == "wall_s" and (r["workload"], r["operation"]) != an.OPEN}
    after = {(r["workload"], r["operation"], r["contender"]): float(r["ratio"])
             for r in _read(csvout.show_csv(doc, an.analyze(doc)))[0]
             if r["metric"] == "wall_s" and (r["workload"], r["operation"]) != an.OPEN}
    assert before.keys() == after.keys() and len(before) >= 6
    for key in before:
        assert after[key] == pytest.approx(2 * before[key], rel=1e-9)


def test_compare_csv_rows(golden):
    out = compare.compare(golden, golden)
    rows, fields = _read(csvout.compare_csv(out, "a.json", "b.json"))
    assert tuple(fields) == csvout.COMPARE_FIELDS and len(rows) == len(out["comparisons"]) > 0
    kinds = {r["kind"] for r in rows}
    assert kinds == {"absolute", "overhead"}
    for row, r in zip(rows, out["comparisons"]):
        assert (row["baseline"], row["contender"], row["variant"]) == ("a.json", "b.json", r["variant"])
        assert float(row["ratio"]) == pytest.approx(1.0)  # a file against itself
        assert row["verdict"] == r["verdict"]
        if r["kind"] == "overhead":
            assert row["baseline_variant"] and float(row["overhead_baseline"]) == r["overhead_a"]
        else:
            assert row["baseline_variant"] == "" and row["overhead_baseline"] == ""


# -- JUnit ---------------------------------------------------------------------------------------

def _comp(workload, ratio, se, verdict="costs", kind="overhead", metric="cpu_s"):
    lo, hi = ratio * math.exp(-2.2 * se), ratio * math.exp(2.2 * se)
    return {"workload": workload, "operation": "scan", "variant": "encryption=on,cache=cold", "metric": metric,
            "kind": kind, "ratio": ratio, "ci": [lo, hi], "se_log": se, "df": 10.0, "verdict": verdict,
            "verdict_text": "too few runs for a verdict: 3 per side, need 6" if verdict == stats.TOO_FEW_RUNS
            else verdict, "floor_pct": 0.0, "n_a": 6, "n_b": 6}


def _cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    return {(tc.get("classname"), tc.get("name")): tc for tc in root.iter("testcase")}


def test_junit_one_case_per_condition_and_row(tmp_path):
    conds = [gate.parse("cpu_overhead>5%"), gate.parse("elapsed_overhead>5%")]
    comps = [_comp("bad", 1.30, 0.02), _comp("fine", 1.01, 0.005), _comp("few", 2.0, 0.02, stats.TOO_FEW_RUNS),
             _comp("bad", 1.30, 0.02, metric="wall_s")]
    path = junit.write(tmp_path / "gate.xml", conds, gate.cases(conds, comps), "a.json", "b.json")
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert (root.tag, suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "testsuites", "4", "2", "1", "0")
    cases = _cases(root)
    assert set(cases) == {("bad/scan/encryption=on,cache=cold", "cpu_overhead>5% on cpu_s"),
                          ("fine/scan/encryption=on,cache=cold", "cpu_overhead>5% on cpu_s"),
                          ("few/scan/encryption=on,cache=cold", "cpu_overhead>5% on cpu_s"),
                          ("bad/scan/encryption=on,cache=cold", "elapsed_overhead>5% on wall_s")}
    failure = cases[("bad/scan/encryption=on,cache=cold", "cpu_overhead>5% on cpu_s")].find("failure")
    assert "+30.0% [" in failure.get("message") and "worse by more than 5%" in failure.get("message")
    assert failure.get("message") in gate.evaluate(conds, comps)["failed"]  # the gate's own words and verdict
    fine = cases[("fine/scan/encryption=on,cache=cold", "cpu_overhead>5% on cpu_s")]
    assert fine.find("failure") is None and fine.find("error") is None and "+1.0%" in fine.find("system-out").text
    assert "within 5%" in fine.find("system-out").text
    error = cases[("few/scan/encryption=on,cache=cold", "cpu_overhead>5% on cpu_s")].find("error")  # not resolved: an error
    assert "not resolved: too few runs for a verdict: 3 per side, need 6" in error.get("message")
    assert not list(root.iter("skipped"))
    props = {(p.get("name"), p.get("value")) for p in suite.iter("property")}
    assert {("a", "a.json"), ("b", "b.json"), ("condition", "cpu_overhead>5%")} <= props
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_junit_nothing_judged_is_an_error_per_row_like_the_gate(golden):
    out = compare.compare(golden, golden)  # 3 runs per variant: nothing can be judged
    conds = [gate.parse("overhead>5%")]
    root = ET.fromstring(junit.render(conds, gate.cases(conds, out["comparisons"]), "a.json", "a.json"))
    cases = _cases(root)
    assert cases and all("too few runs" in tc.find("error").get("message") for tc in cases.values())
    suite = root.find("testsuite")
    assert (suite.get("failures"), suite.get("errors")) == ("0", str(len(cases)))


def test_junit_passing_gate_has_no_failure():
    conds = [gate.parse("elapsed_overhead>5%")]
    root = ET.fromstring(junit.render(conds, gate.cases(conds, [_comp("w", 0.99, 0.01, metric="wall_s")]), "a", "b"))
    assert root.find("testsuite").get("tests") == "1"
    assert root.find("testsuite").get("failures") == "0" and not list(root.iter("failure"))
    assert root.find("testsuite").get("errors") == "0" and not list(root.iter("error"))


def test_junit_bad_path_is_an_output_error(tmp_path):
    with pytest.raises(OutputError, match="the JUnit file") as ei:
        junit.check_writable(tmp_path / "missing-dir" / "gate.xml")
    assert ei.value.exit_code == 5
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match="is a directory"):
        junit.write(tmp_path / "d", [gate.parse("overhead>5%")], [], "a", "b")


def test_compare_markdown_escapes_a_pipe_in_a_cell(golden):
    """--format markdown renders in a ticket: a '|' inside a cell must not split it (GitHub's table rule)."""
    from markdown_it import MarkdownIt

    out = compare.compare(golden, golden)
    out["comparisons"] = [dict(out["comparisons"][0], variant="tls=a|b")]
    md = MarkdownIt("commonmark").enable("table")
    text = compare_words.render(compare.of(out, "a", "b"), "markdown")
    tokens = md.parse(text)
    header = sum(t.type == "th_open" for t in tokens)
    cells = [t for t in tokens if t.type == "td_open"]
    assert header == len(compare_words.HEADERS) == len(cells)
    assert "<td>tls=a|b</td>" in md.render(text)


def test_docs_list_the_csv_columns_as_they_are():
    """docs/RESULTS.md names the columns in their order: a renamed or moved column fails here."""
    text = " ".join((TESTS.parent / "docs" / "RESULTS.md").read_text().split())
    assert "`" + ", ".join(csvout.SHOW_FIELDS) + "`" in text
    assert "`" + ", ".join(csvout.COMPARE_FIELDS) + "`" in text
    assert csvout.KIND_COMPARISON in text and csvout.KIND_PLACEBO in text
