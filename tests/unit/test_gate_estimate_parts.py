"""The regression gate's conditions and the capacity estimate's arithmetic (no server)."""

from __future__ import annotations

import pytest

from encbench import estimate, gate
from encbench.errors import BadValueError, UnknownNameError, UsageError


def test_conditions_parse():
    c = gate.parse("overhead>5%")
    assert (c.metric, c.op, c.percent) == ("wall_s", ">", 5.0)
    assert gate.parse(" cpu >= 10.5 % ").metric == "cpu_s"
    with pytest.raises(UnknownNameError):
        gate.parse("latency>5%")
    for bad in ("overhead>5", "overhead<5%", "5%>overhead", ""):
        with pytest.raises(UsageError):
            gate.parse(bad)


def _comp(metric, ratio, significant, ci=None):
    return {"workload": "w", "operation": "o", "variant": "v", "metric": metric, "ratio": ratio,
            "ci": ci, "significant": significant}


def test_gate_fails_only_on_significant_excess():
    cond = [gate.parse("overhead>5%")]
    assert gate.check(cond, [_comp("wall_s", 1.04, True)]) == []  # within the allowance
    assert gate.check(cond, [_comp("wall_s", 1.20, False)]) == []  # worse, but it could be noise
    assert gate.check(cond, [_comp("cpu_s", 1.50, True)]) == []  # another metric
    failed = gate.check(cond, [_comp("wall_s", 1.20, True, [1.1, 1.3])])
    assert len(failed) == 1 and "+20.0% [+10.0, +30.0]" in failed[0]
    assert gate.check([gate.parse("cpu>=20%")], [_comp("cpu_s", 1.20, True)])


def test_rates():
    assert estimate.parse_rate("25MB/s", what="x") == 25e6
    assert estimate.parse_rate("200 MiB / s", what="x") == 200 * 2**20
    assert estimate.parse_rate("0", what="x") == 0
    for bad in ("-5MB/s", "fast", "5 parsecs/s"):
        with pytest.raises(BadValueError):
            estimate.parse_rate(bad, what="x")


ENTRY = {"workload": "scan-eq", "operation": "scan", "contender": "on", "baseline": "off", "page_size": 4096,
         "per_page_cpu_s": 8.5e-6, "per_page_cpu_ci": [8.1e-6, 9.1e-6]}


def test_seed_003_arithmetic():
    # 25 MB/s of 4 KB pages at 8.5 µs each on 4 cores
    out = estimate.estimate(ENTRY, 25e6, 4, source="given")
    assert out["pages_per_s"] == pytest.approx(25e6 / 4096)
    assert out["added_cores"] == pytest.approx(25e6 / 4096 * 8.5e-6)  # 0.0519 cores
    assert out["share_of_server"] == pytest.approx(25e6 / 4096 * 8.5e-6 / 4)
    assert out["share_ci"] == pytest.approx([25e6 / 4096 * 8.1e-6 / 4, 25e6 / 4096 * 9.1e-6 / 4])
    assert "6,104 pages/s" in out["formula"] and "8.50 µs" in out["formula"]
    with pytest.raises(BadValueError):
        estimate.estimate(ENTRY, 25e6, 0, source="given")


def test_pick_prefers_scan_eq_and_refuses_files_without_cost():
    doc = {"derived": [dict(ENTRY, workload="scan-like"), ENTRY]}
    assert estimate.pick(doc)["workload"] == "scan-eq"
    assert estimate.pick(doc, "scan-like")["workload"] == "scan-like"
    with pytest.raises(BadValueError):
        estimate.pick(doc, "dml")
    with pytest.raises(BadValueError, match="no per-page decrypt cost"):
        estimate.pick({"derived": []})


def test_live_rate_with_a_fake_reader(monkeypatch):
    values = iter([(1000.0, 10.0, "fake"), (1000.0 + 5e6, 10.0 + 1e6, "fake")])

    class Fake:
        def __call__(self):
            return next(values)

        def close(self):
            pass

    monkeypatch.setattr(estimate, "_pg_reader", lambda dsn: Fake())
    clock = iter([0.0, 2.0])
    monkeypatch.setattr(estimate.time, "monotonic", lambda: next(clock))
    out = estimate.live_rate("postgresql://x@y/z", 2.0, sleep=lambda s: None)
    assert out["read_bytes_per_s"] == pytest.approx(2.5e6) and out["write_bytes_per_s"] == pytest.approx(5e5)
    with pytest.raises(UsageError):
        estimate.live_rate("http://nope", 1.0, sleep=lambda s: None)


def test_write_side_needs_a_warm_rebuild():
    write = dict(ENTRY, workload="rebuild", operation="alter-force", kind="write", per_page_cpu_s=2e-5)
    doc = {"derived": [ENTRY, write]}
    assert estimate.pick(doc)["workload"] == "scan-eq"  # the read side never takes the write entry
    assert estimate.pick(doc, kind="write")["workload"] == "rebuild"
    with pytest.raises(BadValueError, match="no per-page write cost"):
        estimate.pick({"derived": [ENTRY]}, kind="write")
