"""Issue 21 item 1: a row's verdict rests on a metric that can move for its workload.

A fixed-duration run (roundtrip: pgbench -T) lasts the same time whatever TLS costs, and its total server CPU
is bounded by that window; what TLS costs shows in queries/s and CPU per query. The fabricated runs below are
the issue's case: elapsed and total CPU constant, throughput -34%, CPU per query +50%.
"""

from __future__ import annotations

from rich.console import Console

from encbench.analysis import compare, gate, headline, stats, summary as an
from encbench.analysis import rows as table_rows
from encbench.report import html, render
from encbench.workloads import WORKLOADS
from encbench.workloads.base import FIXED_WORK

QPS = {"off": 10_000.0, "on": 6_600.0}  # -34% throughput with TLS


def _roundtrip_doc(qps: dict[str, float] = QPS, *, recorded: bool = True) -> dict:
    runs = []
    for tls in ("off", "on"):
        for i in range(8):
            wall, cpu = 3.0 * (1 + 0.001 * (i % 3)), 1.0 * (1 + 0.01 * (i % 4))  # both constant by design
            q = qps[tls] * (1 + 0.01 * (i % 5))
            runs.append({"workload": "roundtrip", "variant": {"tls": tls, "clients": "1"},
                         "variant_label": f"tls={tls},clients=1", "warmup": False,
                         "operations": [{"operation": "select-by-pk",
                                         "metrics": {"wall_s": wall, "cpu_s": cpu, "client_cpu_s": 0.4 * cpu},
                                         "extra": {"queries": int(q * wall), "qps": q,
                                                   "latency_p95_ms": 1000 / q * 1.5}}]})
    doc = {"runs": runs, "environment": {"cpu": {"logical_cores": 2, "model": "test", "flags": {}}, "kernel": "x"},
           "engine": {"name": "postgres", "axis": "tls", "axis_baseline": "off",
                      "variants": [{"tls": "off", "clients": "1"}, {"tls": "on", "clients": "1"}],
                      "variant_keys": [{"name": "tls", "applies_when": []}, {"name": "clients", "applies_when": []}],
                      "table_columns": ["workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu",
                                        "d_server_cpu", "client_cpu", "d_client_cpu", "server_per_unit", "rate",
                                        "d_rate", "verdict"],
                      "metric_words": {"cpu_s": "server CPU", "client_cpu_s": "client CPU"}},
           "workloads": {"roundtrip": {"params": {"seconds": 3}}}, "config": {"command": None, "size_bytes": 0},
           "encbench_version": "test", "status": "complete", "schema_version": 1}
    if recorded:
        doc["workloads"]["roundtrip"].update(WORKLOADS.get("roundtrip").describe())
    return doc


def test_every_fixed_duration_workload_rests_on_what_can_move():
    for name, wl in WORKLOADS.items():
        assert wl.verdict_metrics, name
        assert set(wl.verdict_metrics) <= set(an.COMPARED_METRICS), name  # each one is compared with a CI
        if wl.fixed_duration:
            assert not set(wl.verdict_metrics) & set(FIXED_WORK), name  # its time is set, its CPU bounded
    assert WORKLOADS.get("roundtrip").fixed_duration
    assert WORKLOADS.get("roundtrip").verdict_metrics[0] == "qps"


def test_the_roundtrip_headline_says_what_throughput_lost():
    for recorded in (True, False):  # a file from before the field is judged by the workload as defined now
        a = an.analyze(_roundtrip_doc(recorded=recorded))
        (line,) = [x for x in a.headline if x["label"] == "TLS roundtrip"]
        assert line["metric"] == "qps" and line["verdict"] == stats.COSTS, line
        assert line["detail"].startswith("TLS roundtrip: costs -34% throughput"), line["detail"]
        assert "elapsed" not in line["detail"] and "no cost" not in line["detail"], line["detail"]
        assert "+52% server CPU per query" in line["detail"] and "p95 latency" in line["detail"], line["detail"]
        assert line["text"].startswith("TLS roundtrip: costs -34% throughput") and len(line["text"]) <= 96


def test_a_line_leads_with_the_metric_that_resolved():
    """Throughput too noisy to call (a busy machine), CPU per query +50%: the line leads with what the row's
    verdict says (costs, CPU per query), never with an inconclusive throughput while a figure to act on exists."""
    doc = _roundtrip_doc()
    for run in doc["runs"]:
        op = run["operations"][0]
        i = doc["runs"].index(run) % 8
        tls = run["variant"]["tls"]
        q = 10_000.0 * (1 + 0.6 * (i % 2)) * (0.97 if tls == "on" else 1.0)  # ±30%: throughput not resolved
        queries = int(q * op["metrics"]["wall_s"])
        op["extra"].update(queries=queries, qps=q)
        op["metrics"]["cpu_s"] = queries * (150e-6 if tls == "on" else 100e-6) * (1 + 0.005 * (i % 3))
    a = an.analyze(doc)
    (line,) = [x for x in a.headline if x["label"] == "TLS roundtrip"]
    by_metric = {c["metric"]: c["verdict"] for c in a.comparisons if c["workload"] == "roundtrip"}
    assert by_metric["qps"] == stats.INCONCLUSIVE and by_metric["cpu_us_per_query"] == stats.COSTS, by_metric
    assert line["metric"] == "cpu_us_per_query" and line["verdict"] == stats.COSTS, line
    # in the unit a decision uses: µs of server CPU per query, with the CI (the baseline's 100 µs x +50%)
    assert line["text"].startswith("TLS roundtrip: costs +50.2 µs server CPU per query [+49.3, +51.2]"), line["text"]
    assert "throughput" in line["detail"]  # the throughput is still said, beside it


def test_the_row_verdict_and_the_table_lead_with_throughput():
    doc = _roundtrip_doc()
    a = an.analyze(doc)
    comps = [c for c in a.comparisons if c["workload"] == "roundtrip"]
    assert [c["metric"] for c in an.basis_of(comps)] == ["qps", "cpu_us_per_query", "client_cpu_us_per_query"]
    assert an.row_code(comps) == stats.COSTS
    verdict = an.row_verdict(comps, doc["engine"]["metric_words"])
    assert "throughput" in verdict and "server CPU per query" in verdict and "elapsed" not in verdict, verdict
    (row,) = table_rows.rows(doc, a, an.tables(doc["engine"])[0])
    assert row["lead"][0] == "qps"
    assert render.compact_columns(an.tables(doc["engine"])[0], [row])[3:5] == ["rate_mean", "d_rate"]
    console = Console(record=True, width=160)
    render.render_text(doc, a, console)
    text = console.export_text()
    assert "Δ throughput" in text and "mean server CPU" not in text, text
    assert "per query (a fixed-duration run" in text, text  # where the overhead went: per query, not per window


def test_the_html_chart_of_a_fixed_duration_row_is_its_throughput():
    doc = _roundtrip_doc()
    rows = table_rows.rows(doc, an.analyze(doc), an.tables(doc["engine"])[0])
    assert list(html.chart_groups({"axis": "tls"}, rows)) == ["qps"]


def test_the_gate_catches_a_throughput_loss_of_a_fixed_duration_run():
    before = _roundtrip_doc({"off": 10_000.0, "on": 9_000.0})
    after = _roundtrip_doc({"off": 10_000.0, "on": 6_000.0})  # the encrypted side lost a third more
    out = compare.compare(before, after)
    over = [r for r in out["comparisons"] if r["kind"] == "overhead" and r["metric"] == "wall_s"]
    assert over and all(r["per"] == "query" for r in over)
    assert over[0]["ratio"] > 1.4  # time per query: 1/0.6 over 1/0.9
    failed = gate.check([gate.parse("elapsed_overhead>5%")], out["comparisons"])
    assert failed and "wall_s per query (overhead)" in failed[0], failed
    # `overhead` judges the row on roundtrip's verdict metric: its queries/s, a third fewer (issue 29 item 2)
    failed = gate.check([gate.parse("overhead>5%")], out["comparisons"])
    assert failed and "qps (overhead, its verdict metric) -33.3%" in failed[0], failed


def test_fixed_work_keeps_cpu_client_cpu_elapsed():
    assert [m for m, _ in an.VERDICT_METRICS] == list(FIXED_WORK)
    spec = headline.LineSpec("x", ("storm",), metrics=("wall_s", "cpu_s"))
    comps = [{"metric": m, "verdict_basis": i} for i, m in enumerate(FIXED_WORK)]
    assert headline.lead_metric(spec, comps) == ("wall_s", False)
