"""issue 14 item 1: the headline summary (analysis/headline.py). Every number in it is the analysis'
(the golden file's, and a copy whose encrypted runs are scaled: the summary follows); its words follow
the verdicts (fabricated comparisons, judged by the real judge); it is shown first by every renderer
and carried by show --json."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from rich.console import Console

from encbench.analysis import headline, lead, stats
from encbench.analysis import rows as table_rows
from encbench.analysis import summary as an
from encbench.report import html, render

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")
GOLDEN = TESTS / "golden" / "results-v1.json"
COLD = "encryption=on,cache=cold,page_size=4096,kdf_iter=256000,key=passphrase"


def _line(a: an.Analysis, label: str) -> dict:
    found = [x for x in a.headline if x["label"] == label]
    assert len(found) == 1, [x["label"] for x in a.headline]
    return found[0]


def _comparison(a: an.Analysis, workload, operation, contender, metric) -> dict:
    return next(c for c in a.comparisons if (c["workload"], c["operation"], c["contender"], c["metric"])
                == (workload, operation, contender, metric))


def _summary(a: an.Analysis, workload, operation, variant, metric) -> dict:
    return next(s for s in a.summaries if (s["workload"], s["operation"], s["variant"], s["metric"])
                == (workload, operation, variant, metric))


def _pct(x: float) -> str:
    return f"{(x - 1) * 100:+.0f}%"


# -- the golden file: the lines, with the analysis' numbers -----------------------------------

def test_the_golden_files_lines(analysis):
    assert [x["label"] for x in analysis.headline] == ["cold reads", "warm reads", "backups", "opening a connection"]
    assert {x["lab"] for x in analysis.headline} == {"at rest"}
    assert all(x["detail"].startswith(x["label"] + ": ") for x in analysis.headline)
    assert headline.lines(analysis, detail=True) == [x["detail"] for x in analysis.headline]
    # issue 25: the summary printed first fits 100 columns with its bullet; the sentence is show --detail's
    assert headline.lines(analysis) == [x["text"] for x in analysis.headline]
    assert all(len(x["text"]) <= headline.WIDTH and x["text"].startswith(x["label"] + ": ") for x in analysis.headline)
    # 3 runs per side: nothing resolved but the open (6 opens per side), and nothing else is quoted (issue 30 item 2)
    for label in ("cold reads", "warm reads", "backups"):
        assert _line(analysis, label)["text"] == f"{label}: not resolved: run longer, or --budget"
    opening = _line(analysis, "opening a connection")
    c = _comparison(analysis, "(open)", "connect", opening["lead"]["contender"], "wall_s")
    base = _summary(analysis, "(open)", "connect", c["baseline"], "wall_s")["centre"]  # what the ratio divides by
    added, ci = base * (c["ratio"] - 1), [base * (x - 1) for x in c["ci"]]  # ms per connection, never +28000%
    assert opening["text"] == (f"opening a connection: costs +{added * 1e3:.1f} ms per connection [+{ci[0] * 1e3:.1f}, "
                               f"+{ci[1] * 1e3:.1f}] ({base * 1e6:.1f} µs without)"), opening["text"]
    assert opening["lead"]["value"] == pytest.approx(added) and opening["lead"]["ci"] == pytest.approx(ci)


def _short(row) -> str:
    return f"{(row['ratio'] - 1) * 100:+.0f}%" if abs(row["ratio"] - 1) >= 0.1 else f"{(row['ratio'] - 1) * 100:+.1f}%"


def test_cold_reads_carry_the_cpu_comparison_and_the_per_page_cost(analysis):
    cold = _line(analysis, "cold reads")
    c = _comparison(analysis, "scan-like", "scan", COLD, "cpu_s")
    assert cold["metric"] == "cpu_s" and len(cold["rows"]) == 1
    row = cold["rows"][0]
    assert (row["ratio"], row["ci"], row["verdict"]) == (c["ratio"], c["ci"], c["verdict"])
    assert cold["verdict"] == stats.TOO_FEW_RUNS  # 3 runs per variant
    ci = [f"{(x - 1) * 100:+.0f}" for x in c["ci"]]
    assert f"cold reads: {_pct(c['ratio'])} CPU [{ci[0]}, {ci[1]}]" in cold["detail"]
    assert "too few runs for a verdict (3 per side, need 6)" in cold["detail"]
    d = analysis.derived[0]
    (fig,) = cold["figures"]
    assert (fig["value"], fig["ci"], fig["mb_per_s_per_core"]) == (
        d["per_page_cpu_s"], d["per_page_cpu_ci"], d["decrypt_mb_per_s_per_core"])
    assert f"= {d['decrypt_mb_per_s_per_core']:,.0f} MB/s per core" in cold["detail"]
    assert f"{d['percent_of_raw_cipher']:.0f}%" in cold["detail"] and "per 4 KB page" in cold["detail"]
    assert d["raw_cipher_flag"] in cold["detail"]  # the upper end of its CI is not possible: said so


def test_backups_and_the_open(analysis):
    backups = _line(analysis, "backups")
    # CPU leads, as in the table (issue 29 item 2: one metric per question, the workload's verdict metrics)
    assert backups["metric"] == "cpu_s" and len(backups["rows"]) == 4
    ratios = [_comparison(analysis, "backup", r["operation"], r["contender"], "cpu_s")["ratio"]
              for r in backups["rows"]]
    assert backups["range"] == [min(ratios), max(ratios)]
    assert f"{_pct(min(ratios))} to {_pct(max(ratios))} CPU over 4 rows" in backups["detail"]
    (comp,) = backups["figures"]  # only the zstd backup compresses
    plain = (_summary(analysis, "backup", "to-file+zstd", "encryption=off,cache=cold,page_size=4096", "backup_bytes")
             ["mean"] / _summary(analysis, "backup", "to-file+zstd", "encryption=off,cache=cold,page_size=4096",
                                 "output_bytes")["mean"])
    assert comp["operation"] == "to-file+zstd" and comp["baseline"][0] == pytest.approx(plain)
    assert f"to-file+zstd compresses 1.00x encrypted vs {plain:.2f}x plain" in backups["detail"]
    opening = _line(analysis, "opening a connection")
    # each variant's centre: the figure its comparison (and the line's own '+X per connection') rests on
    centres = [_summary(analysis, "(open)", "connect", r["contender"], "wall_s")["centre"] for r in opening["rows"]]
    assert opening["figures"][0]["value"] == [min(centres), max(centres)]
    assert opening["verdict"] == stats.COSTS  # 6 opens per side: enough for a verdict
    assert opening["detail"].startswith(f"opening a connection: {min(centres) * 1e3:.1f} ms to ")
    assert "costs +" in opening["detail"]


def test_show_json_carries_it_and_the_file_does_not_store_it(analysis):
    shown = json.loads(json.dumps(analysis.to_dict()))
    assert shown["headline"] == analysis.headline
    assert "headline" not in analysis.stored()
    assert an.Analysis.from_dict(shown).headline == analysis.headline


# -- the analysis input changes, the summary follows -----------------------------------------------

def _scaled(doc: dict, factor: float) -> dict:
    """A copy whose encrypted runs took `factor` times the CPU and time they did."""
    out = copy.deepcopy(doc)
    for run in out["runs"]:
        if run["variant"].get("encryption") == "on":
            for op in run.get("operations", []):
                for metric in ("cpu_s", "cpu_user_s", "cpu_sys_s", "wall_s"):
                    if metric in op.get("metrics", {}):
                        op["metrics"][metric] *= factor
            if run.get("open"):
                run["open"]["wall_s"] *= factor
    return out


def test_the_summary_follows_the_runs(doc, analysis):
    changed = an.analyze(_scaled(doc, 2.0))
    before, after = _line(analysis, "cold reads"), _line(changed, "cold reads")
    assert after["rows"][0]["ratio"] == pytest.approx(2 * before["rows"][0]["ratio"])
    assert after["detail"] != before["detail"] and _pct(after["rows"][0]["ratio"]) in after["detail"]
    assert after["figures"][0]["value"] > before["figures"][0]["value"]  # more CPU per page decrypted
    assert _line(changed, "opening a connection")["figures"][0]["value"][0] == pytest.approx(
        2 * _line(analysis, "opening a connection")["figures"][0]["value"][0])
    # and the run's own stored analysis, read back as `run` does, has the same summary as `show`
    stored = an.Analysis.from_doc({**doc, **analysis.stored()})
    assert stored.headline == analysis.headline


# -- the words follow the verdicts --------------------------------------------------------------

def _comp(workload: str, contender: str, ratio: float, ci, ci90, n: int = 10, metric: str = "cpu_s",
          baseline: str | None = None, operation: str = "scan") -> dict:
    base = baseline or ",".join(p if not p.startswith(("encryption=", "tls=")) else p.split("=")[0] + "=off"
                                for p in contender.split(","))
    c = {"workload": workload, "operation": operation, "metric": metric, "baseline": base, "contender": contender,
         "ratio": ratio, "ci": ci, "ci90": ci90, "n_baseline": n, "n_contender": n, "excluded": 0}
    return dict(c, **an.judged(c))


WARM = "encryption=on,cache=warm"
CASES = {  # verdict -> (ratio, 95% CI, 90% CI, runs per side)
    stats.COSTS: (1.30, [1.20, 1.40], [1.22, 1.38], 10),
    stats.SAVES: (0.80, [0.75, 0.85], [0.76, 0.84], 10),
    stats.NO_COST: (1.002, [0.991, 1.013], [0.993, 1.011], 10),
    stats.INCONCLUSIVE: (1.02, [0.95, 1.10], [0.96, 1.08], 10),
    stats.TOO_FEW_RUNS: (1.02, [0.95, 1.10], [0.96, 1.08], 3),
}
WORDS = {stats.COSTS: "warm reads: costs +30% CPU [+20, +40]",
         stats.SAVES: "warm reads: saves -20% CPU [-25, -15]",
         stats.NO_COST: "warm reads: no cost: within ±2% (equivalence shown): +0.2% CPU [-0.9, +1.3]",
         stats.INCONCLUSIVE: "warm reads: inconclusive: +2.0% CPU [-5.0, +10.0] is too wide, run longer",
         stats.TOO_FEW_RUNS: "warm reads: +2.0% CPU [-5.0, +10.0]; too few runs for a verdict (3 per side, need 6)"}


@pytest.mark.parametrize("verdict", list(CASES))
def test_the_words_follow_the_verdict(verdict):
    ratio, ci, ci90, n = CASES[verdict]
    c = _comp("scan-eq", WARM, ratio, ci, ci90, n)
    assert c["verdict"] == verdict  # the case is what it says (judged by stats.judge)
    (line,) = an.Analysis(None, None, "sqlite", [], [c], [], [], []).with_headline().headline
    assert (line["label"], line["verdict"], line["verdicts"]) == ("warm reads", verdict, {verdict: 1})
    assert line["detail"] == WORDS[verdict]
    assert ("no cost" in line["detail"]) == (verdict == stats.NO_COST)


def test_rows_that_disagree_are_a_mixed_line_with_both_estimates():
    comps = [_comp("scan-eq", WARM, *CASES[stats.NO_COST]), _comp("scan-like", WARM, *CASES[stats.COSTS])]
    (line,) = an.Analysis(None, None, "sqlite", [], comps, [], [], []).with_headline().headline
    assert line["verdict"] == headline.MIXED and line["verdicts"] == {stats.NO_COST: 1, stats.COSTS: 1}
    assert "+0.2% CPU [-0.9, +1.3] (scan-eq/scan), +30% [+20, +40] (scan-like/scan)" in line["detail"]
    assert "verdicts differ: costs in 1 (scan-like/scan), no cost in 1 (scan-eq/scan) of 2 rows" in line["detail"]
    assert not line["detail"].startswith("warm reads: no cost")


def test_a_rejudged_analysis_gets_a_rejudged_summary():
    c = _comp("scan-eq", WARM, 1.03, [1.01, 1.05], [1.015, 1.045])
    a = an.Analysis(None, None, "sqlite", [], [c], [], [], []).with_headline()
    assert a.headline[0]["verdict"] == stats.COSTS
    wide = a.rejudged(5.0)  # within ±5%: equivalence shown
    assert wide.headline[0]["verdict"] == stats.NO_COST and "within ±5%" in wide.headline[0]["detail"]


def test_tls_names_the_cheapest_and_the_dearest_suite():
    suites = {"TLS_AES_128_GCM_SHA256": 1.10, "TLS_AES_256_GCM_SHA384": 1.25, "TLS_CHACHA20_POLY1305_SHA256": 1.40}
    comps = [_comp("storm", f"tls={s}", r, [r - 0.05, r + 0.05], [r - 0.04, r + 0.04], metric="wall_s",
                   operation="queries") for s, r in suites.items()]
    (line,) = an.Analysis(None, None, "postgres", [], comps, [], [], []).with_headline().headline
    assert (line["lab"], line["label"], line["verdict"]) == ("in transit", "TLS storm", stats.COSTS)
    assert line["range"] == [1.10, 1.40]
    assert ("costs +10% to +40% elapsed over 3 rows (cheapest: tls=TLS_AES_128_GCM_SHA256 +10% [+5, +15]; "
            "dearest: tls=TLS_CHACHA20_POLY1305_SHA256 +40% [+35, +45])") in line["detail"]


def test_storm_ranks_its_suites_per_operation():
    """storm's messages and its loop-only control are two operations: each ranks the suites on its own line."""
    comps = [_comp("storm", f"tls={s}", r, [r - 0.05, r + 0.05], [r - 0.04, r + 0.04], metric="wall_s", operation=op)
             for op, rs in (("messages", (1.5, 1.2)), ("loop-only", (1.01, 1.02))) for s, r in zip("AB", rs)]
    lines = an.Analysis(None, None, "postgres", [], comps, [], [], []).with_headline().headline
    assert [(x["label"], x["range"]) for x in lines] == [("TLS storm messages", [1.2, 1.5]),
                                                        ("TLS storm loop-only", [1.01, 1.02])]
    assert "cheapest: tls=B +20% [+15, +25]; dearest: tls=A +50% [+45, +55]" in lines[0]["detail"]


def test_the_hash_sweep_line_reads_scaling_hash_costs_and_profiles():
    from dataclasses import replace

    from test_analysis_object import _sweep_doc

    a = an.analyze(_sweep_doc())
    (line,) = a.headline
    top = next(e for e in a.scaling if (e["operation"], e["sessions"]) == ("hash", 2))
    cost = a.hash_costs[0]
    assert (line["lab"], line["label"], line["verdict"]) == ("hash sweep", "hash sweep, sha256", None)
    figures = {f["name"]: f for f in line["figures"]}
    assert (figures["efficiency"]["value"], figures["efficiency"]["ci"]) == (top["efficiency"], top["efficiency_ci"])
    assert figures["degradation"]["value"] == top["degradation"]
    assert figures["function_us_per_row"]["value"] == cost["function_us_per_row"]
    assert (f"at 2 sessions efficiency {top['efficiency']:.2f} [{top['efficiency_ci'][0]:.2f}, "
            f"{top['efficiency_ci'][1]:.2f}]") in line["detail"]
    assert f"({cost['times_raw']:.1f}x the raw hash on this CPU)" in line["detail"]
    assert "profile" not in figures  # its one profile is an error: nothing to say
    profile = {"function": "sha256", "sessions": 2, "libcrypto_share": 0.42, "lock_share": 0.05,
               "top_functions": [["sha256_block_data_order", 0.31], ["memcpy", 0.04]]}
    (line,) = replace(a, profiles=[profile]).with_headline().headline
    assert ("the server's CPU at 2 sessions: libcrypto 42%, locks 5% (top: sha256_block_data_order 31%, memcpy 4%)"
            in line["detail"])


def test_a_row_without_the_setting_the_others_vary_is_named_by_its_label():
    """Opens of a server engine: two with a cache setting, one (the hash workload's server) without (PostgreSQL's: a
    MariaDB at-rest summary has no open line, test_an_at_rest_mariadb_summary_has_no_connection_open_line)."""
    comps = [_comp("(open)", f"encryption=on{suffix}", r, [r - 0.1, r + 0.1], [r - 0.08, r + 0.08], metric="wall_s",
                   operation="connect") for suffix, r in ((",cache=cold", 1.2), (",cache=warm", 1.3), ("", 1.6))]
    (line,) = an.Analysis(None, None, "postgres", [], comps, [], [], []).with_headline().headline
    assert line["label"] == "opening a connection"
    assert "(lowest: cache=cold +20% [+10, +30]; highest: encryption=on +60% [+50, +70])" in line["detail"]


def test_an_empty_analysis_has_no_headline():
    assert an.Analysis(None, None, "sqlite", [], [], [], [], []).with_headline().headline is None


# -- shown first --------------------------------------------------------------------------------

def test_every_renderer_shows_it_first(doc, analysis, tmp_path):
    console = Console(record=True, width=100)
    render.render_text(doc, analysis, console)
    text = console.export_text()
    assert text.startswith("Summary\n  - cold reads: ")
    md = render.render_markdown(doc, analysis)
    assert md.index("## Summary") < md.index("- encbench ") < md.index("| workload")
    assert all(f"- {line}" in md for line in headline.lines(analysis))
    page = html.render([(GOLDEN, doc)])
    first = page.index("class=\"lines summary\"")
    assert first < page.index("class=\"meta\"><li>encbench") < page.index("<table")
    assert "cold reads: " in page[first:page.index("</ul>", first)]


# -- leak-check and tls-scan: one line each ----------------------------------------------------

def test_the_leak_check_line_follows_the_report():
    from encbench.vocab.leakcheck import Finding, LeakReport

    clean = LeakReport("sqlite", "SQLCipher on", 48, scanned_files=3, scanned_bytes=100,
                       control={"configuration": "plain SQLite", "found_in": ["db (main database)"]})
    assert headline.leak_check_line(clean) == (
        "no leak: canary in none of the 3 files scanned; the control finds it: the scan sees a leak")
    blind = LeakReport("sqlite", "SQLCipher on", 48, scanned_files=3, control={"configuration": "plain", "found_in": []})
    assert "this scan proves nothing" in headline.leak_check_line(blind)
    finding = Finding(path="pg_wal/000000010000000000000001", role="WAL", occurrences=2, fix="x")
    leaky = LeakReport("postgres", "no encryption at rest", 48, scanned_files=9, findings=[finding, finding])
    assert headline.leak_check_line(leaky) == ("LEAK: plaintext canary on disk in 2 of 9 files; WAL; although no "
                                               "encryption at rest")
    for report in (clean, blind, leaky):  # issue 25: "Summary: " and the line within 100 columns
        assert len(headline.leak_check_line(report)) <= lead.ONE_LINE


def test_the_tls_scan_line_names_grades_drift_and_the_measured_suites():
    result = {"target": "127.0.0.1:5432", "protocols": ["TLSv1.2", "TLSv1.3"],
              "suites": {"TLSv1.3": [{"suite": "TLS_AES_256_GCM_SHA384", "grade": "A"}],
                         "TLSv1.2": [{"suite": "AES256-SHA", "grade": "C"}]}}
    assert headline.tls_scan_line(result) == "127.0.0.1:5432: TLSv1.2, TLSv1.3; 2 suites, worst C; 1 weak: AES256-SHA"
    many = dict(result, suites={"TLSv1.2": [{"suite": f"S{i}", "grade": "C"} for i in range(5)]})
    assert "5 weak: S0, S1 and 3 more" in headline.tls_scan_line(many)
    assert "; no change from the baseline" in headline.tls_scan_line(result, ["note: x"])
    assert "; 1 change(s) from the baseline" in headline.tls_scan_line(result, ["suite added: X"])
    ranking = [{"tls": "TLS_AES_256_GCM_SHA384", "storm elapsed": {"ratio": 1.12, "ci": [1.08, 1.16]}},
               {"tls": "AES256-SHA", "storm elapsed": {"ratio": 1.31, "ci": [1.25, 1.37]}},
               {"tls": "X", "storm elapsed": None}]
    measured = headline.tls_scan_line(result, None, {"ranking": ranking})
    assert "; storm +12% to +31% with TLS" in measured, measured
    assert all(len(x) <= lead.ONE_LINE for x in (measured, headline.tls_scan_line(many)))


# -- issue 30 item 2: only what resolved, in the unit a decision uses, with its CI ---------------------------------

summary_line_problems = lead.rule_breaks


def _with_medians(comps: list[dict], medians: dict[str, float]) -> an.Analysis:
    """An analysis of these comparisons whose baselines' medians (per workload) are known."""
    sums = [{"workload": c["workload"], "operation": c["operation"], "variant": c["baseline"], "metric": c["metric"],
             "median": medians[c["workload"]]} for c in comps]
    return an.Analysis(None, None, "sqlite", sums, comps, [], [], []).with_headline()


SHORT = {stats.COSTS: "warm reads: costs +3.0 ms CPU [+2.0, +4.0]",
         stats.SAVES: "warm reads: saves -2.0 ms CPU [-2.5, -1.5]",
         stats.NO_COST: "warm reads: no cost (±2%): +20.0 µs CPU [-90.0, +130.0]",
         stats.INCONCLUSIVE: "warm reads: not resolved: run longer, or --budget",
         stats.TOO_FEW_RUNS: "warm reads: not resolved: run longer, or --budget"}


@pytest.mark.parametrize("verdict", list(CASES))
def test_the_short_line_quotes_only_what_resolved_in_its_unit(verdict):
    """A resolved row: the baseline's median (10 ms of CPU) times the change and its CI, in ms; an unresolved one:
    the one phrase, never its estimate."""
    ratio, ci, ci90, n = CASES[verdict]
    (line,) = _with_medians([_comp("scan-eq", WARM, ratio, ci, ci90, n)], {"scan-eq": 0.010}).headline
    assert line["text"] == SHORT[verdict]
    assert summary_line_problems(line["text"]) == []


def test_a_mixed_line_leads_with_its_best_resolved_row_and_counts_the_rest():
    comps = [_comp("scan-eq", WARM, *CASES[stats.COSTS]), _comp("scan-like", WARM, 1.5, [1.1, 1.9], [1.15, 1.85]),
             _comp("dml", WARM, *CASES[stats.INCONCLUSIVE], operation="select")]
    (line,) = _with_medians(comps, {"scan-eq": 0.010, "scan-like": 0.040, "dml": 0.005}).headline
    # scan-eq's CI is the narrowest for its size ([+20, +40] against [+10, +90]); the unresolved row is only counted
    assert line["text"] == "warm reads: costs +3.0 ms CPU [+2.0, +4.0] (scan-eq/scan); 2 of 3 rows cost", line["text"]
    assert line["lead"]["workload"] == "scan-eq" and line["lead"]["value"] == pytest.approx(0.003)


def _page(workload: str, operation: str, value_us: float, ci_us, kind: str = "write") -> dict:
    return {"workload": workload, "operation": operation, "contender": f"{WARM},x={workload}{operation}",
            "baseline": "encryption=off,cache=warm", "kind": kind, "per_page_cpu_s": value_us * 1e-6,
            "per_page_cpu_ci": [x * 1e-6 for x in ci_us], "page_size": 4096}


def test_per_page_figures_come_from_the_best_resolved_row():
    """Not "39.3 µs to 96.2 µs per 4 KB page" where 96.2 comes from [17.7, 174.7] over 538 pages: the narrowest CI's
    row alone; a per-page CI that crosses zero (MariaDB's [-9.7, 43.1]) is not quoted."""
    derived = [_page("rebuild", "reindex", 96.2, [17.7, 174.7]), _page("rebuild", "vacuum", 39.3, [31.2, 47.4])]
    comps = [_comp("rebuild", d["contender"], 1.5, [1.2, 1.8], [1.25, 1.75], operation=d["operation"])
             for d in derived]
    a = an.Analysis(None, None, "sqlite", [], comps, derived, [], []).with_headline()
    (line,) = a.headline
    assert line["text"] == ("writes: costs 39.3 µs CPU per 4 KB page written [31.2, 47.4] (rebuild/vacuum, upper "
                            "bound)"), line["text"]
    crossing = [_page("rebuild", "vacuum", 16.7, [-9.7, 43.1])]
    comps = [_comp("rebuild", crossing[0]["contender"], 1.5, [1.2, 1.8], [1.25, 1.75], operation="vacuum")]
    sums = [{"workload": "rebuild", "operation": "vacuum", "variant": comps[0]["baseline"], "metric": "cpu_s",
             "median": 0.2}]
    (line,) = an.Analysis(None, None, "sqlite", sums, comps, crossing, [], []).with_headline().headline
    assert "per 4 KB page" not in line["text"] and line["text"] == "writes: costs +100.0 ms CPU [+40.0, +160.0]"


def test_opening_a_connection_is_ms_per_connection_never_a_percentage_of_a_plain_open():
    """Not "costs +88057% elapsed [+76082, +101915]": the time each connection adds, with its CI, and a plain one."""
    c = _comp("(open)", "encryption=on", 881.57, [761.82, 1020.15], [780.0, 1000.0], metric="wall_s",
              operation="connect")
    (line,) = _with_medians([c], {"(open)": 0.000455}).headline
    assert line["text"] == "opening a connection: costs +400.7 ms per connection [+346.2, +463.7] (455.0 µs without)"
    assert summary_line_problems(line["text"]) == []
    assert "costs +400.7 ms per connection [+346.2, +463.7]" in line["detail"] and "%" not in line["detail"]


def test_numbers_never_read_minus_zero_or_plus_minus():
    from encbench.report import render as r
    from encbench.util.units import fmt_change

    assert fmt_change(0.997, [0.996, 1.004]) == "-0.3% [-0.4, +0.4]" and fmt_change(1.0, [0.99999, 1.0]) == "0% [0, 0]"
    write = {"kind": "write", "workload": "rebuild", "operation": "reindex", "contender": "encryption=on",
             "added_cpu_s": -0.0008428, "pages_read": 538.0, "pages_basis": "pages_written", "page_size": 4096,
             "per_page_cpu_s": -1.57e-6, "per_page_cpu_ci": [-5e-6, 2e-6]}
    (text,) = r.derived_lines(an.Analysis(None, None, "sqlite", [], [], [write], [], []))
    assert "+-" not in text and ": -842.8 µs CPU for 538 pages written" in text, text


def test_the_golden_and_a_scaled_copy_keep_the_rules(doc, analysis):
    for a in (analysis, an.analyze(_scaled(doc, 2.0)), an.analyze(_scaled(doc, 0.999))):
        assert {line["text"]: summary_line_problems(line["text"]) for line in a.headline} == {
            line["text"]: [] for line in a.headline}


def test_the_summary_judges_each_row_as_the_table_does():
    """issue 29 item 2: warm reads "inconclusive: -4.8% to +3.8% CPU" in the summary while the table's row said
    "costs +23% elapsed"; backups inconclusive on elapsed in the summary, "-35% saves" on CPU in the table. Each row
    is now judged on its verdict metrics in the table's order, its figure in the metric that decided it."""
    from encbench.report import render

    cpu = _comp("scan-like", WARM, 1.05, [0.91, 1.21], [0.93, 1.18])  # CPU inconclusive
    wall = _comp("scan-like", WARM, 1.23, [1.10, 1.38], [1.12, 1.35], metric="wall_s")  # elapsed costs
    for i, c in enumerate((cpu, wall)):
        c["verdict_basis"] = (0, 2)[i]
    a = _with_medians([cpu, wall], {"scan-like": 0.040})
    (line,) = a.headline
    assert table_rows.short_verdict([cpu, wall], shown_metric="cpu_s") == "costs +23% elapsed"  # the table's words
    assert line["text"] == "warm reads: costs +9.2 ms elapsed [+4.0, +15.2], CPU not resolved", line["text"]
    saves = _comp("backup", WARM, 0.65, [0.47, 0.90], [0.5, 0.85], operation="to-file+zstd")  # CPU saves
    slow = _comp("backup", WARM, 1.02, [0.8, 1.3], [0.83, 1.25], metric="wall_s", operation="to-file+zstd")
    saves["verdict_basis"], slow["verdict_basis"] = 0, 2
    (line,) = _with_medians([saves, slow], {"backup": 0.400}).headline
    assert table_rows.short_verdict([saves, slow], shown_metric="cpu_s") == "saves"
    assert line["text"] == "backups: saves -140.0 ms CPU [-212.0, -40.0]", line["text"]  # CPU leads, as in the table


def test_an_at_rest_mariadb_summary_has_no_connection_open_line():
    """issue 30: InnoDB derives no key per connection and one server holds the encrypted and the plain table, so the
    open (17.2 vs 17.1 ms) answers no question of the at-rest lab: no summary line, not even "not resolved"; its
    comparisons and its note stay. SQLite's open (the key derivation) keeps its line."""
    from encbench.lab import results

    maria = an.analyze(results.load(TESTS / "golden" / "mariadb-atrest.json"))
    assert any(c["workload"] == "(open)" for c in maria.comparisons)
    assert any(n.startswith("connection open (") for n in maria.notes)
    labels = [x["label"] for x in maria.headline]
    assert "opening a connection" not in labels and "(open)" not in labels and "cold reads" in labels
    sqlite = an.analyze(results.load(TESTS / "golden" / "sqlite-default.json"))
    assert "opening a connection" in [x["label"] for x in sqlite.headline]
