"""Issue 29 item 2: the gate judges each row on the metric its workload's verdict rests on.

`overhead` used to mean the elapsed overhead whatever the workload: a TLS storm whose server CPU grew by half
passed it while its table said "costs +50% server CPU", and an oltp mix was judged on its elapsed time per
transaction, not on the throughput its verdict rests on. Now `overhead` (and `change`, its absolute twin) test
each row on its workload's verdict metric (server CPU for a TLS storm, transactions/s for oltp), and
`elapsed_overhead`/`cpu_overhead` keep the old meanings; the gate's lines and JUnit name the metric judged.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET

import pytest

from encbench.analysis import compare, gate, stats
from encbench.report import junit
from encbench.workloads import WORKLOADS

STORM = "storm/messages tls=on"


def _env() -> dict:
    return {"environment": {"cpu": {"logical_cores": 2, "model": "x"}, "kernel": "k", "engine_versions": {}},
            "dataset": {"rows": 1, "seed": 42}, "encbench_version": "test", "config": {}}


def _storm(cpu_on: float) -> dict:
    """A TLS storm, 8 runs a side: TLS doubles elapsed time; its server CPU is `cpu_on` x the plain side's."""
    runs = []
    for tls, wall, cpu in (("off", 1.0, 0.5), ("on", 2.0, 0.5 * cpu_on)):
        for i in range(8):
            jitter = 1 + 0.004 * (i % 4)
            metrics = {"wall_s": wall * jitter, "cpu_s": cpu * jitter, "client_cpu_s": 0.1 * jitter}
            runs.append({"workload": "storm", "variant": {"tls": tls}, "variant_label": f"tls={tls}", "warmup": False,
                         "operations": [{"operation": "messages", "metrics": metrics, "extra": {"messages": 1000}}]})
    return {"runs": runs, **_env(),
            "engine": {"name": "postgres", "axis": "tls", "axis_baseline": "off",
                       "variants": [{"tls": "off"}, {"tls": "on"}], "variant_keys": [{"name": "tls", "applies_when": []}],
                       "metric_words": {"cpu_s": "server CPU", "client_cpu_s": "client CPU"}},
            "workloads": {"storm": WORKLOADS.get("storm").describe()}}


def _oltp(tps_on: float) -> dict:
    """An oltp mix of one second, 8 runs a side: the encrypted side's throughput is `tps_on`; its CPU per
    transaction grows with it, so that the work per second (and the CPU over the window) stays."""
    runs = []
    for enc, tps in (("off", 400.0), ("on", tps_on)):
        for i in range(8):
            jitter = 1 + 0.004 * (i % 4)
            n = int(tps * jitter)
            metrics = {"wall_s": 1.0 + 0.001 * (i % 3), "cpu_s": 0.9 * jitter, "client_cpu_s": 0.1 * jitter}
            runs.append({"workload": "oltp", "variant": {"encryption": enc}, "variant_label": f"encryption={enc}",
                         "warmup": False, "operations": [{"operation": "mix", "metrics": metrics,
                                                          "extra": {"transactions": n, "tps": tps * jitter}}]})
    return {"runs": runs, **_env(),
            "engine": {"name": "sqlite", "axis": "encryption", "axis_baseline": "off",
                       "variants": [{"encryption": "off"}, {"encryption": "on"}],
                       "variant_keys": [{"name": "encryption", "applies_when": []}]},
            "workloads": {"oltp": WORKLOADS.get("oltp").describe()}}


def _rows(out: dict, kind: str) -> dict[str, dict]:
    return {r["metric"] + (f" per {r['per']}" if r.get("per") else ""): r
            for r in out["comparisons"] if r["kind"] == kind and r["workload"] != "(open)"}


def test_a_tls_storm_is_gated_on_its_server_cpu():
    """B's TLS costs +50% more server CPU than A's at the same elapsed time: the table's verdict (server CPU, the
    storm's first verdict metric) costs, and so does the gate's `overhead`; elapsed_overhead still passes."""
    a, b = _storm(1.0), _storm(1.5)
    out = compare.compare(a, b)
    over = _rows(out, "overhead")
    assert over["cpu_s"]["verdict_metric"] and not over["wall_s"].get("verdict_metric")
    assert over["cpu_s"]["ratio"] > 1.45 and over["cpu_s"]["verdict"] == stats.COSTS
    verdict = gate.evaluate([gate.parse("overhead>5%")], out["comparisons"])
    assert verdict["outcome"] == "failed", verdict  # main judged wall_s here: within 5%, passed
    (line,) = verdict["failed"]
    assert line.startswith(f"overhead>5%: {STORM} cpu_s (overhead, its verdict metric) +50.0% [")
    assert "worse by more than 5%" in line
    elapsed = gate.evaluate([gate.parse("elapsed_overhead>5%")], out["comparisons"])
    assert elapsed["outcome"] == "passed" and f"{STORM} wall_s (overhead) " in elapsed["within"][0]
    assert gate.evaluate([gate.parse("cpu_overhead>5%")], out["comparisons"])["outcome"] == "failed"


def test_an_oltp_mix_is_gated_on_its_throughput():
    """B's encrypted mix gets a third fewer transactions done: `overhead` judges tps (a rate: a fall is the cost),
    its line names it; a throughput gain is no failure."""
    a, b = _oltp(360.0), _oltp(240.0)
    out = compare.compare(a, b)
    over = _rows(out, "overhead")
    tps = over["tps"]
    assert tps["verdict_metric"] and tps["higher_is_better"] and tps["verdict"] == stats.COSTS
    assert 0.6 < tps["ratio"] < 0.7
    assert "wall_s per transaction" in over and not over["wall_s per transaction"].get("verdict_metric")
    verdict = gate.evaluate([gate.parse("overhead>5%")], out["comparisons"])
    (line,) = verdict["failed"]
    assert line.startswith("overhead>5%: oltp/mix encryption=on tps (overhead, its verdict metric) -33.3% [")
    # the absolute twin: the same variant's throughput, beyond the default ±25% noise floor
    assert _rows(out, "absolute")["tps"]["verdict_metric"]
    change = gate.evaluate([gate.parse("change>5%")], out["comparisons"])
    assert change["outcome"] == "failed" and "tps (absolute, its verdict metric) -33.3%" in change["failed"][0]
    # a throughput gain passes: the rate's direction is the gate's
    better = gate.evaluate([gate.parse("overhead>5%")], compare.compare(b, a)["comparisons"])
    assert better["outcome"] == "passed" and "tps (overhead, its verdict metric) +50.0%" in better["within"][0]


def test_a_rate_threshold_is_a_fall_of_that_percent():
    cond = gate.parse("overhead>5%")
    assert cond.threshold() == pytest.approx(1.05) and cond.threshold(higher_is_better=True) == pytest.approx(0.95)
    assert gate.parse("overhead>150%").threshold(higher_is_better=True) < 0  # never shown below it: within
    row = {"workload": "w", "operation": "o", "variant": "v", "metric": "qps", "kind": "overhead",
           "verdict_metric": True, "higher_is_better": True, "ratio": 0.5, "ci": [0.45, 0.55], "se_log": 0.04,
           "df": 10.0, "verdict": stats.COSTS, "verdict_text": "costs", "floor_pct": 0, "n_a": 8, "n_b": 8}
    assert gate.evaluate([gate.parse("overhead>150%")], [row])["outcome"] == "passed"
    assert gate.evaluate([gate.parse("overhead>40%")], [row])["outcome"] == "failed"  # 0.5 < 0.6
    assert gate.evaluate([gate.parse("overhead>60%")], [row])["outcome"] == "passed"  # 0.5 > 0.4


def test_junit_names_the_metric_judged_and_writes_the_gates_cases():
    out = compare.compare(_storm(1.0), _storm(1.5))
    conds = [gate.parse("overhead>5%"), gate.parse("elapsed_overhead>5%")]
    judged = gate.cases(conds, out["comparisons"])
    root = ET.fromstring(junit.render(conds, judged, "a.json", "b.json"))
    names = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert set(names) == {"overhead>5% on cpu_s", "elapsed_overhead>5% on wall_s"}
    failure = names["overhead>5% on cpu_s"].find("failure")
    assert failure.get("message") == next(x["line"] for x in judged if x["state"] == gate.OVER)
    assert "on cpu_s (its workload's verdict metric)" in failure.text


def test_the_comparison_is_built_once_with_its_gate(monkeypatch):
    """analysis/compare.build: the gate's cases are computed once and JUnit and the lines read them."""
    calls = []
    real = gate.cases
    monkeypatch.setattr(gate, "cases", lambda *a, **k: calls.append(1) or real(*a, **k))
    a = _storm(1.0)
    cmp = compare.build(a, copy.deepcopy(a), "a.json", "b.json", conditions=[gate.parse("overhead>5%")])
    junit.render(cmp.conditions, cmp.cases, cmp.path_a, cmp.path_b)
    assert len(calls) == 1 and cmp.gate["conditions"] == ["overhead>5%"] and cmp.gate["checked"] == 1
    assert cmp.to_dict()["gate"] is cmp.gate and cmp.to_dict()["a"] == "a.json"
