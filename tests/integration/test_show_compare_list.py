"""`encbench show`, `compare` and `list` on real result files."""

from __future__ import annotations

import json

import pytest

from integration_helpers import assert_one_line_error

pytestmark = pytest.mark.integration

SUMMARY_KEYS = {"workload", "operation", "variant", "metric", "n", "mean", "median", "stdev", "min", "max"}
COMPARISON_KEYS = {"workload", "operation", "metric", "baseline", "contender", "ratio", "ci", "significant", "verdict",
                   "verdict_text", "equivalence", "ci90"}
VERDICTS = {"costs", "saves", "no_cost", "inconclusive", "too_few_runs", "no_estimate", "withheld"}


# -- show ---------------------------------------------------------------------------------

def test_show_table(encbench, happy):
    _, _, path = happy
    res = encbench("show", str(path))
    assert res.returncode == 0, str(res)
    assert res.stderr == ""
    for word in ("scan-eq", "scan-like", "cache=cold", "verdict", "status complete"):
        assert word in res.stdout, str(res)


def test_show_starts_with_the_summary(encbench, happy):
    """issue 14 item 1: the headline summary comes first, the same lines as show --json's `headline`."""
    _, _, path = happy
    res = encbench("show", str(path))
    assert res.returncode == 0, str(res)
    shown = json.loads(encbench("show", str(path), "--json").stdout)["headline"]
    assert [x["label"] for x in shown][:2] == ["cold reads", "warm reads"]  # scan-eq and scan-like, both caches
    first = res.stdout.splitlines()[:len(shown) + 2]
    assert first[0] == "Summary" and first[1:-1] == [f"  - {x['text']}" for x in shown], str(res)
    assert first[-1].startswith("encbench ")  # then the header, then the table
    cold = next(x for x in shown if x["label"] == "cold reads")
    assert {r["workload"] for r in cold["rows"]} == {"scan-eq", "scan-like"} and len(cold["figures"]) >= 1


def test_show_markdown(encbench, happy):
    _, _, path = happy
    res = encbench("show", str(path), "--format", "markdown")
    assert res.returncode == 0, str(res)
    assert res.stdout.startswith("# encbench results")
    assert "| workload |" in res.stdout
    assert "| scan-eq |" in res.stdout and "| scan-like |" in res.stdout
    assert "\x1b[" not in res.stdout  # no terminal escapes in markdown


@pytest.mark.parametrize("flags", [("--json",), ("--format", "json")])
def test_show_json(encbench, happy, flags):
    _, doc, path = happy
    res = encbench("show", str(path), *flags)
    assert res.returncode == 0, str(res)
    shown = json.loads(res.stdout)
    assert shown["schema_version"] == 1 and shown["status"] == "complete"
    assert shown["summaries"] and shown["comparisons"]
    for s in shown["summaries"]:
        assert SUMMARY_KEYS <= set(s), s
    for c in shown["comparisons"]:
        assert COMPARISON_KEYS <= set(c), c
    scans = [c for c in shown["comparisons"] if c["workload"] in ("scan-eq", "scan-like")]
    assert scans and all(c["verdict"] in VERDICTS for c in scans)
    # 3 runs per variant: the interval is shown, the verdict is not given (a --quick run gets none either)
    assert {c["verdict"] for c in scans} <= {"too_few_runs", "no_estimate"}
    assert all(c["verdict_text"].startswith("too few runs for a verdict: 3 per side, need 6")
               for c in scans if c["verdict"] == "too_few_runs")
    # recomputed from the runs, the same comparisons as stored in the file
    key = lambda c: (c["workload"], c["operation"], c["metric"], c["contender"])  # noqa: E731
    assert sorted(map(key, shown["comparisons"])) == sorted(map(key, doc["comparisons"]))
    assert len(shown["derived"]) == len(doc["derived"])


def test_show_margin(encbench, happy):
    _, _, path = happy
    res = encbench("show", str(path), "--json", "--margin", "5")
    assert res.returncode == 0, str(res)
    margins = {c["equivalence"]["margin_pct"] for c in json.loads(res.stdout)["comparisons"] if c["equivalence"]}
    assert margins <= {5.0}
    res = encbench("show", str(path), "--margin", "5", "--format", "markdown", "--detail")  # the full verdicts
    table = [line for line in res.stdout.splitlines() if line.startswith("|")]  # the summary may say the open costs
    assert "too few runs for a verdict" in res.stdout and not any("costs +" in line for line in table)
    assert "within ±5%" in res.stdout  # the header explains the verdicts with the margin in force
    assert_one_line_error(encbench("show", str(path), "--margin", "abc"), 4)


# -- list ---------------------------------------------------------------------------------

def test_list(encbench):
    res = encbench("list")
    assert res.returncode == 0, str(res)
    for word in ("engines:", "workloads:", "variants:", "probes:", "sqlite", "scan-eq", "backup",
                 "sqlite:encryption", "pages"):
        assert word in res.stdout, str(res)


def test_list_json(encbench):
    res = encbench("list", "--json")
    assert res.returncode == 0, str(res)
    data = json.loads(res.stdout)
    assert {"engines", "workloads", "variants", "probes"} <= set(data)
    assert "sqlite" in data["engines"]
    assert {"scan-like", "scan-eq", "dml", "rebuild", "backup"} <= set(data["workloads"])
    assert {"sqlite:encryption", "sqlite:cache", "sqlite:page_size"} <= set(data["variants"])
    assert {"wall", "cpu", "pages"} <= set(data["probes"])


# -- compare ------------------------------------------------------------------------------

def test_compare_same_data(encbench, happy, second):
    a, b = happy[2], second[2]
    res = encbench("compare", str(a), str(b))
    assert res.returncode == 0, str(res)
    assert "Traceback" not in res.stdout + res.stderr
    for word in ("scan-eq", "verdict", "B vs A", "variant: encryption, cache", "on, cold"):  # keys named once
        assert word in res.stdout, str(res)
    # scan-like is only in A
    assert "in one file only" in res.stdout


def test_compare_same_data_json(encbench, happy, second):
    res = encbench("compare", str(happy[2]), str(second[2]), "--json")
    assert res.returncode == 0, str(res)
    out = json.loads(res.stdout)
    assert out["blocking_differences"] == [] and out["forced"] is False
    rows = out["comparisons"]
    assert rows and all(r["workload"] != "scan-like" for r in rows)
    for r in rows:
        assert {"workload", "operation", "variant", "metric", "kind", "ratio", "ci", "significant", "verdict"} <= set(r)
        assert r["kind"] in ("absolute", "overhead") and r["verdict"] in VERDICTS
        if r["workload"] == "scan-eq":
            assert (r["n_a"], r["n_b"]) == (3, 2), r  # the warmups of A left out
            assert r["verdict"] == "too_few_runs"
    assert any(r["kind"] == "overhead" for r in rows)
    assert any(x.startswith("scan-like/scan") for x in out["only_in_a"])


@pytest.fixture(scope="module")
def other_size(encbench, data_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("size3") / "size3.json"
    res = encbench("run", "--size", "3MB", "--runs", "2", "--warmups", "0", "--workload", "scan-eq",
                   "--variant", "cache=warm", "--data-dir", str(data_dir), "-o", str(path))
    assert res.returncode == 0, str(res)
    return path


def test_compare_different_size_refused(encbench, second, other_size):
    res = encbench("compare", str(second[2]), str(other_size))
    line = assert_one_line_error(res, 9)
    assert "rows" in line and "--force" in line
    assert res.stdout == ""


def test_compare_different_size_forced(encbench, second, other_size):
    res = encbench("compare", str(second[2]), str(other_size), "--force")
    assert res.returncode == 0, str(res)
    assert "FORCED" in res.stdout
    assert "scan-eq" in res.stdout


def test_compare_missing_file(encbench, happy, tmp_path):
    res = encbench("compare", str(happy[2]), str(tmp_path / "nope.json"))
    assert_one_line_error(res, 6)


def test_report_carries_what_show_detail_prints(encbench, happy, tmp_path):
    """issue 29 item 4: on a real run, every line of show --detail's notes, warnings and closing lines (precision,
    placement, run context, flagged runs) is an item of the HTML report; the charts show the rows' lead metrics."""
    import html
    import re

    _, doc, path = happy
    shown = encbench("show", str(path), "--detail")
    out = tmp_path / "r.html"
    made = encbench("report", str(path), "-o", str(out))
    assert shown.returncode == 0 and made.returncode == 0, str(shown) + str(made)
    lines = shown.stdout.splitlines()
    titles = ("Notes", "Warnings", "Every warning (per row, side and metric)")
    wanted, section = [], None
    for line in lines:
        section = line if line in titles else (None if line and not line.startswith(" ") else section)
        if section and line.startswith("  - "):
            wanted.append(line[4:])
    closing = lines[next(i for i, x in enumerate(lines) if x.startswith("Reproduce: ")) + 1:]
    assert any(x.startswith("run context: ") for x in closing) and any(x.startswith("placement: ") for x in closing)
    wanted += [x for x in closing if x.strip()]
    page = out.read_text()
    items = {" ".join(html.unescape(re.sub(r"<[^>]+>", "", x)).split()) for x in re.findall(r"<li>(.*?)</li>", page, re.S)}
    missing = [x for x in wanted if " ".join(x.split()) not in items]
    assert not missing, missing
    leads = {c["metric"] for c in doc["comparisons"] if c.get("verdict_basis") == 0 and c["workload"] != "(open)"}
    assert set(re.findall(r'class="plot overhead" data-metric="([^"]+)"', page)) == leads
