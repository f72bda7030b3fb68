"""A TLS connect row is stated per connection (issue 30 item 2: "a cost in the unit a decision uses: ms per
connection"), and its summary, table and verdict rest on the same figure (issue 29: one metric per question).

Before, connect was judged on the operation's whole server CPU (`cpu_s` of N connections: "TLS connect: costs +42.6 ms
server CPU"), while the table blanked the same figure as "too short to time" (the postmaster's reaped-children clock
ticks) and still said "costs"."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from encbench.analysis import model
from encbench.analysis import summary as an
from encbench.lab import results
from encbench.report import render
from encbench.workloads.connect import Connect

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def _as_run_today(name: str) -> dict:
    """A golden result file as a run of this version records it: the connect workload's verdict metrics now."""
    doc = results.load(GOLDEN / name)
    doc["workloads"]["connect"]["verdict_metrics"] = list(Connect.verdict_metrics)
    return doc


def test_connect_is_judged_per_connection_first():
    assert Connect.verdict_metrics[0] == "cpu_us_per_connection"


def test_the_summary_and_the_table_state_connect_per_connection():
    doc = _as_run_today("postgres-tls.json")
    analysis = an.analyze(doc)
    m = model.build(doc, analysis)
    line = next(x for x in m.summary if "TLS connect" in x)
    assert "per connection" in line, line
    row = next(r for t in m.tables for r in t.rows if r["workload"] == "connect")
    assert row["lead"][0] == "cpu_us_per_connection"
    assert "cpu_us_per_connection" not in row.get("too_short", ())
    console = Console(file=io.StringIO(), width=400, color_system=None)
    render.render_text(doc, analysis, console)
    table_line = next(x for x in console.file.getvalue().splitlines() if x.startswith("│connect"))
    assert "too short to time" not in table_line
    verdict = row["verdict_short"].split()[0]
    assert verdict in line, (verdict, line)
