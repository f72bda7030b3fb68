"""The default table's columns and short verdicts, warnings grouped by cause, and the run's ETA (issue 14)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from encbench.analysis import stats
from encbench.analysis import summary as an
from encbench.analysis import rowwarnings
from encbench.cli.run import RunClock
from encbench.analysis import rows as table_rows
from encbench.report import render

GOLDEN = next(p for p in Path(__file__).resolve().parents if (p / "golden").is_dir()) / "golden" / "results-v1.json"


def _comp(metric, ratio, ci, ci90, n=6):
    c = {"workload": "w", "operation": "o", "metric": metric, "baseline": "b", "contender": "c", "ratio": ratio,
         "ci": ci, "ci90": ci90, "n_baseline": n, "n_contender": n}
    return dict(c, **an.judged(c, word=an.VERDICT_WORDS[metric]))


def test_short_verdicts_follow_the_row_code():
    costs = [_comp("cpu_s", 3.66, [3.2, 4.2], [3.3, 4.1]), _comp("wall_s", 2.9, [2.5, 3.3], [2.6, 3.2])]
    assert table_rows.short_verdict(costs) == "costs +266% CPU"
    assert table_rows.short_verdict(costs, {"cpu_s": "server CPU"}) == "costs +266% server CPU"
    assert table_rows.short_verdict(costs, shown_metric="cpu_s") == "costs"  # the Δ column shows the CPU's figure
    assert table_rows.short_verdict(costs, shown_metric="client_cpu_s") == "costs +266% CPU"
    free = [_comp("cpu_s", 1.003, [0.99, 1.016], [0.992, 1.014])]
    assert table_rows.short_verdict(free) == "no cost (±2%)"
    assert table_rows.short_verdict([_comp("cpu_s", 1.01, [0.95, 1.07], [0.96, 1.06])]) == "inconclusive"
    assert table_rows.short_verdict([_comp("cpu_s", 3.0, [2.5, 3.5], [2.6, 3.4], n=3)]) == "too few runs"
    # CPU saves, elapsed costs: the row costs, and the verdict names the metric that costs
    mixed = [_comp("cpu_s", 0.8, [0.7, 0.9], [0.72, 0.88]), _comp("wall_s", 1.3, [1.2, 1.4], [1.22, 1.38])]
    assert table_rows.short_verdict(mixed, shown_metric="cpu_s") == "costs +30% elapsed"
    assert table_rows.short_verdict([dict(costs[0], withheld="no verdict: the client is saturated")]) \
        == "no verdict: client-bound"


def test_long_settings_get_an_alias_and_a_legend():
    suites = ("TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384", "TLSv1.3:TLS_AES_256_GCM_SHA384")
    variants = [{"tls": "off"}, {"tls": "on"}] + [{"tls": s, "clients": "1"} for s in suites]
    aliases = table_rows._aliases(variants, {"tls", "clients"})
    assert aliases == {("tls", suites[0]): "tls#1", ("tls", suites[1]): "tls#2"}
    assert table_rows._short_setting("tls", suites[1], "tls", aliases) == "tls#2"
    assert table_rows._short_setting("tls", "on", "tls", aliases) == "tls=on"  # 'on' says nothing alone
    assert table_rows._short_setting("encryption", "fscrypt", "encryption", aliases) == "fscrypt"
    assert table_rows._short_setting("sessions", "4", "sessions", aliases) == "sessions=4"
    assert render.legend_line([{"legend": {"tls#2": suites[1]}}, {"legend": {"tls#1": suites[0]}}]) \
        == f"tls#1 = {suites[0]}; tls#2 = {suites[1]}"
    assert render.legend_line([{"legend": {"tls#10": "a"}}, {"legend": {"tls#2": "b"}}]) == "tls#2 = b; tls#10 = a"


def test_compact_columns_from_the_declared_ones():
    row = {"comparisons": {"cpu_s": {}, "wall_s": {}}}
    at_rest = {"table_columns": None}
    assert render.compact_columns(at_rest, [row]) == ["workload", "op", "variant_short", "cpu_mean", "d_cpu",
                                                      "verdict_short"]
    declared = {"table_columns": ["workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu",
                                  "client_cpu", "d_client_cpu", "verdict"]}
    assert render.compact_columns(declared, [row])[3:5] == ["server_cpu_mean", "d_server_cpu"]
    # an external server: no server CPU measured, the client's is the headline
    client_only = {"comparisons": {"client_cpu_s": {}, "wall_s": {}}}
    assert render.compact_columns(declared, [client_only])[3:5] == ["client_cpu_mean", "d_client_cpu"]
    assert all(c in render.COLUMNS for c in render.compact_columns(declared, [row]))


def _with_warnings(analysis: an.Analysis, warnings: dict[tuple[str, str], list[str]]) -> an.Analysis:
    """The golden analysis with these warnings on (workload, metric) summaries instead of its own."""
    summaries = [dict(s, warnings=warnings.get((s["workload"], s["metric"]), [])) for s in analysis.summaries]
    return an.Analysis.of(dict(analysis.to_dict(), summaries=summaries))


def test_warnings_are_grouped_by_cause_with_their_rows():
    doc = json.loads(GOLDEN.read_text())
    analysis = an.analyze(doc)
    every_kind = {}  # one of each warning stats.warnings_for writes, on real values
    for values, resolution in (([1.0, float("nan"), 1.0], None), ([1.0, 2.0, 1.0, 3.0, 1.0, 2.0], None),
                               ([1e-6] * 6, 1e-7), ([1.0, 1.01, 0.99, 1.0, 1.02, 5.0], None)):
        for w in stats.warnings_for(values, label="x/y v cpu_s", resolution=resolution):
            every_kind[re.sub(r"[\d.]+", "N", w.split(": ", 1)[1])[:16]] = w
    assert len(every_kind) >= 4
    kinds = list(every_kind.values())
    grouped = rowwarnings.warning_lines(_with_warnings(analysis, {("backup", "cpu_s"): kinds, ("backup", "wall_s"): kinds,
                                                             ("scan-like", "cpu_s"): kinds}), doc=doc)
    lines = [line for line in grouped if not line.startswith("only ")]
    few = [w for w in kinds if " runs (< " in w]  # folded into the one 'only N runs' line
    assert len(lines) == len(kinds) - len(few)  # one line per cause, none left as a raw per-row line
    assert not any(line.startswith("x/y") for line in lines)
    unstable = next(line for line in lines if "unstable" in line)
    assert unstable.startswith("6 rows unstable (stdev >= 10% of the mean): run with --precision 3% or --runs 20")
    assert "scan-like/scan cache=cold (CPU)" in unstable and "backup/to-file cache=warm (CPU, elapsed)" in unstable
    assert "and 0 more" not in unstable
    # every warning is still there, one per row, side and metric, with --detail
    assert len(rowwarnings.warning_detail_lines(_with_warnings(analysis, {("backup", "cpu_s"): kinds}))) \
        == len(kinds) * sum(1 for s in analysis.summaries if s["workload"] == "backup" and s["metric"] == "cpu_s")


def test_eta_comes_from_the_runs_done():
    t = [100.0]
    clock = RunClock(now=lambda: t[0])
    clock.update(0, 6, measuring=False)  # preparing: no pace yet
    assert clock.eta_s() is None and clock.eta_text() == "ETA after the first run"
    clock.update(0, 6, measuring=True)  # the first run starts at t=100
    t[0] = 130.0
    assert clock.eta_s() is None
    clock.update(2, 6, measuring=True)  # 2 runs in 30 s: 4 left take 60 s
    assert clock.eta_s() == 60.0 and clock.eta_text() == "ETA 1:00"
    t[0] = 160.0
    clock.update(3, 8, measuring=True)  # --precision added rounds: 5 left at 20 s each
    assert clock.eta_s() == 100.0


def test_a_time_too_short_to_time_is_no_figure():
    """issue 30 item 2: PostgreSQL's connect server CPU "313.3 → 456.7 ms" on rows a warning calls too short to
    time: the cells say so instead of the figures."""
    from encbench.lab import results

    doc = results.load(GOLDEN)
    a = an.analyze(doc)
    cold = "encryption=on,cache=cold,page_size=4096,kdf_iter=256000,key=passphrase"
    for s in a.summaries:
        if (s["workload"], s["operation"], s["variant"], s["metric"]) == ("scan-like", "scan", cold, "cpu_s"):
            s["warnings"] = s["warnings"] + [f"scan-like/scan {cold} cpu_s: too short to time, mean 0.01 is < 100x "
                                             "the probe's resolution 0.01"]
    rows = {(r["workload"], r["operation"], r["contender"]): r for r in table_rows.rows(doc, a)}
    short, other = rows[("scan-like", "scan", cold)], rows[("backup", "to-file", cold)]
    for col in ("cpu_mean", "d_cpu", "cpu"):
        assert render.COLUMNS[col][1](short) == "too short to time", col
        assert render.COLUMNS[col][1](other) != "too short to time", col
    assert render.COLUMNS["elapsed_mean"][1](short) != "too short to time"  # the elapsed time was long enough
