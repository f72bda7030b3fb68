"""Issue 30 item 10: PostgreSQL oltp's `show --detail` printed "read from storage (pages): - -> -" while its summary
gave 2.19 page reads per transaction. The detail's cell now states the figure the summary and oltp_costs use."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from encbench.analysis import summary as an
from encbench.analysis import rowwarnings
from encbench.engines.postgres.engine import OLTP_COLUMNS
from encbench.report import render


def _runs(reads_per_txn: dict[str, float]) -> list[dict]:
    runs = []
    for tls in ("off", "on"):
        for i in range(6):
            n = 4000 + 10 * i
            variant = {"tls": tls, "script": "tpcb-like", "memory": "25%", "clients": "1"}
            runs.append({"workload": "oltp", "variant": variant, "variant_label": ",".join(f"{k}={v}" for k, v in
                                                                                        variant.items()),
                         "warmup": False, "operations": [{"operation": "mix", "metrics": {
                             "wall_s": 10.0, "cpu_s": n * (420e-6 if tls == "off" else 470e-6) * (1 + 0.01 * i),
                             "client_cpu_s": n * 50e-6, "pages_read": n * reads_per_txn[tls] * (1 + 0.01 * (i % 3)),
                             "pages_written": n * 0.5},
                             "extra": {"transactions": n, "tps": n / 10.0, "page_size": 8192, "memory_held": 1}}]})
    return runs


def _doc() -> dict:
    table = {"title": "OLTP (pgbench's scripts): TLS vs none", "axis": "tls", "axis_baseline": "off",
             "workloads": ["oltp"], "table_columns": list(OLTP_COLUMNS),
             "metric_words": {"cpu_s": "server CPU", "client_cpu_s": "client CPU"}}
    return {"schema_version": 1, "encbench_version": "test", "status": "complete",
            "environment": {"cpu": {"logical_cores": 2, "model": "test", "flags": {}}, "kernel": "x"},
            "config": {"command": None, "size_bytes": 0}, "dataset": {"page_size": 8192},
            "engine": {"name": "postgres", "axis": "tls", "axis_baseline": "off", "tables": [table],
                       "variant_keys": [{"name": k, "applies_when": []} for k in ("tls", "script", "memory", "clients")]},
            "workloads": {"oltp": {"fixed_duration": True,
                                   "verdict_metrics": ["tps", "cpu_us_per_transaction", "client_cpu_us_per_transaction"]}},
            "runs": _runs({"off": 2.05, "on": 2.19})}


def test_detail_reads_are_the_summarys_reads_per_transaction():
    doc = _doc()
    a = an.analyze(doc)
    (cost,) = a.oltp_costs
    console = Console(record=True, width=200)
    render.render_text(doc, a, console, detail=True)
    text = console.export_text()
    (line,) = [x.strip() for x in text.splitlines() if x.strip().startswith("read from storage (pages):")]
    assert line.endswith(f"→ {cost['pages_read_per_txn']:.2f} per transaction"), line
    assert "-" not in line.split(":", 1)[1], line
    assert f"{cost['pages_read_per_txn']:.2f}" == "2.21"  # 2.19 x the runs' jitter: the mean the summary states



def test_one_row_has_outlier_runs_several_have(monkeypatch):
    """'1 row have outlier runs' was read in a quick run: the verb follows the count."""
    import json

    from encbench.analysis import rowwarnings, summary as an
    from encbench.report import render

    golden = Path(__file__).resolve().parents[2] / "golden" / "results-v1.json"
    analysis = an.analyze(json.loads(golden.read_text()))

    def rows(n):
        return [{"workload": "scan-like", "operation": "scan", "variant": f"v{i}", "metric": "cpu_s", "n": 10,
                 "warnings": ["cpu_s: 1 outlier run (modified Z-score 4.1)"]} for i in range(n)]

    monkeypatch.setattr(rowwarnings, "_warned", lambda a: rows(1))
    [line] = rowwarnings.warning_lines(analysis)
    assert line.startswith("1 row has outlier runs"), line
    monkeypatch.setattr(rowwarnings, "_warned", lambda a: rows(2))
    [line] = rowwarnings.warning_lines(analysis)
    assert line.startswith("2 rows have outlier runs"), line
