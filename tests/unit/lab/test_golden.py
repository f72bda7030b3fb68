"""Golden schema test: a real v1 result file, and the analysis it must reproduce.

tests/golden/results-v1.json is a trimmed real result file (see tests/golden/README.md);
tests/golden/results-v1.expected.json holds stable facts of analysis.analyze() on it.
The intervals are analytic (Yuen-Welch t on logs), so CIs and verdicts are deterministic.
The file was written by an older encbench (bootstrap CIs, no verdicts): it must still load,
be re-analysed by today's statistics, and show.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from encbench.analysis import summary as analysis
from encbench.lab import results
from encbench.analysis import stats
from encbench.engines.sqlite.engine import VARIANT_KEYS
from encbench.vocab.variants import label, matrix

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

GOLDEN_DIR = TESTS / "golden"
GOLDEN = GOLDEN_DIR / "results-v1.json"
EXPECTED = GOLDEN_DIR / "results-v1.expected.json"
COMPARISON_KEYS = ("workload", "operation", "metric", "baseline", "contender")


def _r(x):
    """Round to 6 significant digits (None stays None)."""
    return None if x is None else float(f"{x:.6g}")


def expected_facts(analyzed: dict) -> dict:
    """The stable facts of an analysis that the expected file pins down."""
    comps = sorted(analyzed["comparisons"], key=lambda c: tuple(c[k] for k in COMPARISON_KEYS))
    return {
        "comparison_keys": [[c[k] for k in COMPARISON_KEYS] for c in comps],
        "comparisons": [
            {**{k: c[k] for k in COMPARISON_KEYS},
             "ratio": _r(c["ratio"]),
             "ci": [_r(x) for x in c["ci"]] if c["ci"] is not None else None,
             "significant": c["significant"], "verdict": c["verdict"],
             "n_baseline": c["n_baseline"], "n_contender": c["n_contender"]}
            for c in comps
        ],
        "summary_count": len(analyzed["summaries"]),
        "cpu_summaries": sorted(
            ([s["workload"], s["operation"], s["variant"], s["n"], _r(s["mean"]), _r(s["median"])]
             for s in analyzed["summaries"] if s["metric"] == "cpu_s"),
        ),
        "derived": [
            {"workload": d["workload"], "operation": d["operation"], "contender": d["contender"],
             "pages_read": _r(d["pages_read"]), "per_page_cpu_s": _r(d["per_page_cpu_s"]),
             "per_page_cpu_ci": [_r(x) for x in d["per_page_cpu_ci"]] if d["per_page_cpu_ci"] else None,
             "decrypt_mb_per_s_per_core": _r(d["decrypt_mb_per_s_per_core"])}
            for d in analyzed["derived"]
        ],
    }


def write_expected() -> None:
    """Regenerate the expected file (see tests/golden/README.md)."""
    facts = expected_facts(analysis.analyze(results.load(GOLDEN)))
    EXPECTED.write_text(json.dumps(facts, indent=1, ensure_ascii=False) + "\n")


@pytest.fixture(scope="module")
def doc() -> dict:
    return results.load(GOLDEN)


@pytest.fixture(scope="module")
def analyzed(doc) -> dict:
    return analysis.analyze(doc)


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads(EXPECTED.read_text())


def test_golden_file_is_small():
    assert GOLDEN.stat().st_size < 200_000


def test_golden_schema_shape(doc):
    assert doc["schema_version"] == 1
    assert doc["status"] == "complete"
    assert set(doc["workloads"]) == set(doc["config"]["workloads"])
    assert {r["workload"] for r in doc["runs"]} == set(doc["workloads"])
    for run in doc["runs"]:
        assert {"workload", "variant", "variant_label", "round", "warmup", "operations", "open"} <= set(run)
        assert run["variant_label"] == label(run["variant"])
        for op in run["operations"]:
            assert {"operation", "metrics", "extra", "cache", "probe_errors"} <= set(op)
    # the engine's variants are the default matrix of the SQLite engine
    assert doc["engine"]["variants"] == matrix(VARIANT_KEYS, {}, "scan-eq")


def test_analyze_reproduces_expected_facts(analyzed, expected):
    facts = expected_facts(analyzed)
    assert facts["comparison_keys"] == expected["comparison_keys"]
    assert facts["comparisons"] == expected["comparisons"]
    assert facts["summary_count"] == expected["summary_count"]
    assert facts["cpu_summaries"] == expected["cpu_summaries"]
    assert facts["derived"] == expected["derived"]
    assert facts == expected


def test_analyze_matches_analysis_stored_in_file(doc, analyzed):
    # the file holds what an older `encbench run` stored: analyze(doc) with bootstrap CIs. Notes and
    # warnings are prose that may change between versions, so only the numbers are compared.
    def numbers(summaries):
        return [{k: v for k, v in s.items() if k != "warnings"} for s in summaries]

    # later versions may add keys (centre: the value a ratio is made of): the stored ones keep their values
    fresh_summaries = [{k: f.get(k) for k in s} for f, s in zip(analyzed["summaries"], doc["summaries"])]
    assert len(analyzed["summaries"]) == len(doc["summaries"])
    assert numbers(fresh_summaries) == numbers(doc["summaries"])
    # later versions may add keys (pages_basis), reword the method and compute the intervals
    # another way (Welch t since issue 12): the stored point figures stay
    intervals = {"method", "added_cpu_ci", "per_page_cpu_ci", "decrypt_mb_per_s_ci"}
    assert len(analyzed["derived"]) == len(doc["derived"])
    for fresh_d, stored in zip(analyzed["derived"], doc["derived"]):
        assert {k: fresh_d[k] for k in stored if k not in intervals} == {
            k: v for k, v in stored.items() if k not in intervals}
    # every comparison stored then is still made, with every field it had; the ratio is now a
    # ratio of trimmed geometric means, close to the stored ratio of means for these tight runs
    fresh = {(c["workload"], c["operation"], c["metric"], c["contender"]): c for c in analyzed["comparisons"]}
    for c in doc["comparisons"]:
        now = fresh[(c["workload"], c["operation"], c["metric"], c["contender"])]
        assert set(c) <= set(now)
        assert (now["ratio"] is None) == (c["ratio"] is None)
        if c["ratio"] is not None and c["metric"] in ("wall_s", "cpu_s"):
            assert now["ratio"] == pytest.approx(c["ratio"], rel=0.1)
    assert all(isinstance(n, str) and n for n in analyzed["notes"])


def test_every_comparison_is_well_formed(analyzed):
    assert analyzed["comparisons"]
    for c in analyzed["comparisons"]:
        for k in ("workload", "operation", "metric", "baseline", "contender"):
            assert isinstance(c[k], str) and c[k]
        assert c["metric"] in analysis.COMPARED_METRICS
        assert isinstance(c["significant"], bool)
        assert c["verdict"] in stats.VERDICTS and isinstance(c["verdict_text"], str)
        # 3 runs per variant: below the 6 a verdict needs, whatever the interval says (the connection
        # open is timed in the runs of both workloads: 6)
        if c["workload"] != "(open)":
            assert c["verdict"] in (stats.TOO_FEW_RUNS, stats.NO_ESTIMATE)
        assert c["ci"] is None or (len(c["ci"]) == 2 and all(isinstance(x, float) for x in c["ci"]))
        if c["ratio"] is None:
            assert c["ci"] is None and c["significant"] is False
        else:
            assert isinstance(c["ratio"], float) and math.isfinite(c["ratio"])
        if c["ci"] is not None:
            lo, hi = c["ci"]
            assert lo <= c["ratio"] <= hi
            assert c["significant"] == (lo > 1.0 or hi < 1.0)
        assert "encryption=off" in c["baseline"] and "encryption=on" in c["contender"]
        # 3 measured runs per variant; the connection open is timed once per run of
        # each of the 2 workloads
        assert c["n_baseline"] == c["n_contender"] == (6 if c["workload"] == "(open)" else 3)


def test_summaries_exclude_warmups(doc, analyzed):
    warm = sum(1 for r in doc["runs"] if not r["warmup"] and r["workload"] == "scan-like"
               and r["variant_label"] == "encryption=off,cache=cold,page_size=4096")
    s = next(s for s in analyzed["summaries"] if s["workload"] == "scan-like" and s["metric"] == "wall_s"
             and s["variant"] == "encryption=off,cache=cold,page_size=4096")
    assert s["n"] == warm == 3


def test_encryption_costs_cpu_on_cold_scan(analyzed):
    c = next(c for c in analyzed["comparisons"] if c["workload"] == "scan-like" and c["metric"] == "cpu_s"
             and "cache=cold" in c["contender"])
    assert c["ratio"] > 1.5 and c["significant"]  # the interval excludes no change...
    verdict = analysis.row_verdict([x for x in analyzed["comparisons"]
                                    if (x["workload"], x["operation"], x["contender"])
                                    == (c["workload"], c["operation"], c["contender"])])
    assert verdict == "too few runs for a verdict: 3 per side, need 6"  # ...but 3 runs cannot back a verdict


def _c(metric, ratio, ci, ci90, n=6):
    return {"metric": metric, "ratio": ratio, "ci": ci, "ci90": ci90, "significant": ci[0] > 1 or ci[1] < 1,
            "n_baseline": n, "n_contender": n}


def test_row_verdict_three_ways():
    assert analysis.row_verdict([]) == "no comparison"
    costs = [_c("cpu_s", 4.1, [3.9, 4.3], [3.95, 4.25]), _c("wall_s", 1.45, [1.3, 1.6], [1.33, 1.57])]
    assert analysis.row_verdict(costs) == "costs +310.0% CPU [+290.0, +330.0]; costs +45.0% elapsed [+30.0, +60.0]"
    assert analysis.row_code(costs) == "costs"
    free = [_c("cpu_s", 1.003, [0.99, 1.016], [0.992, 1.014]), _c("wall_s", 0.998, [0.985, 1.012], [0.988, 1.009])]
    assert analysis.row_verdict(free) == "no cost: within ±2% (equivalence shown)"
    assert analysis.row_code(free) == "no_cost"
    assert analysis.row_verdict(free, margin_pct=1) .startswith("inconclusive: CPU +0.3% [-1.0, +1.6] is too wide")
    wide = [_c("cpu_s", 1.01, [0.95, 1.07], [0.96, 1.06])]
    assert analysis.row_verdict(wide) == "inconclusive: CPU +1.0% [-5.0, +7.0] is too wide, run longer"
    assert analysis.row_code(wide) == "inconclusive"
    few = [_c("cpu_s", 4.1, [3.9, 4.3], [3.95, 4.25], n=3)]
    assert analysis.row_verdict(few) == "too few runs for a verdict: 3 per side, need 6"
    assert analysis.row_code(few) == "too_few_runs"
    # an engine's own word for a metric (MariaDB: server CPU)
    assert analysis.row_verdict(costs[:1], {"cpu_s": "server CPU"}).startswith("costs +310.0% server CPU")


def test_old_file_still_shows(doc, analyzed):
    from rich.console import Console

    from encbench.report import html as html_report
    from encbench.report import render as report

    console = Console(record=True, width=1000)
    report.render_text(doc, analyzed, console, detail=True)  # the verdict's full sentence: --detail
    text = console.export_text()
    assert "too few runs for a verdict" in text and "Yuen-Welch" in text
    md = report.render_markdown(doc, analyzed, detail=True)
    assert "| scan-like |" in md and "too few runs for a verdict" in md
    shown = json.loads(report.render_json(doc, analyzed))
    for c in shown["comparisons"]:
        assert {"ratio", "ci", "significant", "verdict", "verdict_text", "equivalence"} <= set(c)
    # the comparisons as the old file stored them (no verdict fields) are judged on the way out
    old = json.loads(report.render_json(doc, dict(analyzed, comparisons=doc["comparisons"])))
    assert all(c["verdict"] == "too_few_runs" for c in old["comparisons"]
               if c["ratio"] is not None and c["workload"] != "(open)")
    # 6 opens per variant, but the old file holds no 90% CI for the equivalence test: no verdict either
    assert {c["verdict"] for c in old["comparisons"] if c["workload"] == "(open)"} == {"no_estimate"}
    page = html_report.section(doc, GOLDEN, 0)
    assert "too few runs for a verdict" in page and "<svg" in page


def test_derived_per_page_cost(analyzed):
    assert [d["workload"] for d in analyzed["derived"]] == ["scan-like"]  # reads-only, cold only
    d = analyzed["derived"][0]
    assert d["page_size"] == 4096
    assert d["per_page_cpu_s"] == pytest.approx(d["added_cpu_s"] / d["pages_read"])
    lo, hi = d["per_page_cpu_ci"]
    assert lo <= d["per_page_cpu_s"] <= hi
    assert d["decrypt_mb_per_s_per_core"] == pytest.approx(4096 / d["per_page_cpu_s"] / 1e6)
