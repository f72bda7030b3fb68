"""The precision-driven stopping rule (fake clock), the per-run context signals (fake /proc), CPU placement."""

from __future__ import annotations

import pytest

from encbench.lab import placement
from encbench.lab import precision
from encbench.lab import runctx
from encbench.analysis import context
from encbench.errors import BadValueError


class FakeClock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def row(wl: str, hw: float | None, metric: str = "wall_s") -> dict:
    return {"workload": wl, "operation": "op", "contender": "encryption=on", "metric": metric, "ratio": 1.2,
            "ci": None if hw is None else [1.2 - hw / 100, 1.2 + hw / 100], "half_width_points": hw,
            "n_baseline": 6, "n_contender": 6}


# -- the stopping rule ----------------------------------------------------------------------------

def test_half_width_is_the_furthest_side_in_points():
    assert precision.half_width_points(1.31, [1.26, 1.38]) == pytest.approx(7.0)
    assert precision.half_width_points(1.0, None) is None


def test_stops_at_the_precision_target():
    clock = FakeClock()
    b = precision.Budget(5.0, 120.0, clock=clock)
    rows = [row("scan", 4.0), row("dml", 9.0), row("dml", 3.0, "cpu_s")]
    assert b.next_round(rows, {"scan": 1.0, "dml": 2.0}) == ["dml"]  # only the workload still too wide
    assert b.stopped_because is None
    rows = [row("scan", 4.0), row("dml", 5.0), row("dml", 3.0, "cpu_s")]  # 5.0 <= 5: reached
    assert b.next_round(rows, {"scan": 1.0, "dml": 2.0}) == []
    assert b.stopped_because == "precision reached"


def test_stops_at_the_time_budget():
    clock = FakeClock()
    b = precision.Budget(1.0, 60.0, clock=clock)
    rows = [row("scan", 10.0), row("dml", 10.0)]
    rounds = 0
    while True:
        chosen = b.next_round(rows, {"scan": 4.0, "dml": 6.0})
        if not chosen:
            break
        rounds += 1
        clock.t += sum({"scan": 4.0, "dml": 6.0}[w] for w in chosen)  # the rounds take what they cost
        assert b.elapsed() <= 60.0  # never past the deadline
    assert b.stopped_because == "time budget"
    assert rounds == 6  # 6 x 10 s fit in 60 s
    assert b.elapsed() == pytest.approx(60.0)


def test_a_round_that_would_overrun_is_not_started_but_a_cheaper_one_is():
    clock = FakeClock()
    b = precision.Budget(1.0, 10.0, clock=clock)
    clock.t += 7.0
    assert b.next_round([row("dml", 10.0), row("scan", 10.0)], {"dml": 5.0, "scan": 2.0}) == ["scan"]


def test_a_row_without_ci_keeps_its_workload_going():
    b = precision.Budget(5.0, 100.0, clock=FakeClock())
    assert b.next_round([row("scan", None)], {"scan": 1.0}) == ["scan"]


def test_max_time_alone_uses_the_time_and_no_target_means_no_reached_flags():
    clock = FakeClock()
    b = precision.Budget(None, 10.0, clock=clock)
    assert b.next_round([row("scan", 0.1)], {"scan": 3.0}) == ["scan"]  # no target: time decides
    clock.t += 9.0
    assert b.next_round([row("scan", 0.1)], {"scan": 3.0}) == []
    doc = precision.document([row("scan", 0.1)], b, {"scan": 9})
    assert doc["rows"][0]["reached"] is None and doc["not_reached"] == 0
    assert doc["stopped_because"] == "time budget"


def test_fixed_runs_never_add_rounds():
    b = precision.Budget(None, None, clock=FakeClock())
    assert b.next_round([row("scan", 50.0)], {"scan": 1.0}) == []
    assert b.stopped_because == "fixed number of runs"


def test_precision_alone_has_a_cap():
    clock = FakeClock()
    b = precision.Budget(1.0, None, clock=clock)
    clock.t += precision.DEFAULT_CAP_S - 0.5
    assert b.next_round([row("scan", 9.0)], {"scan": 1.0}) == []
    assert b.stopped_because == "time budget"


def test_document_and_lines_name_the_rows_not_reached():
    clock = FakeClock()
    b = precision.Budget(5.0, 100.0, clock=clock)
    clock.t += 42
    b.stopped_because = "time budget"
    rows = [row("scan", 3.0), row("dml", 8.5, "cpu_s")]
    doc = {"precision": precision.document(rows, b, {"scan": 12, "dml": 6})}
    p = doc["precision"]
    assert p["not_reached"] == 1 and p["widest_points"] == 8.5 and p["elapsed_s"] == 42
    assert [r["reached"] for r in p["rows"]] == [True, False]
    text = "\n".join(context.precision_lines(doc))
    assert "reached by 1 of 2" in text and "6-12 runs per variant" in text
    assert "not reached: dml/op encryption=on CPU: ±8.5 points" in text


@pytest.mark.parametrize("text,seconds", [("120s", 120), ("5m", 300), ("90", 90), ("1.5h", 5400)])
def test_parse_duration(text, seconds):
    assert precision.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "5x", "0s", "-3m", ""])
def test_parse_duration_refuses(text):
    with pytest.raises(BadValueError):
        precision.parse_duration(text)


def test_parse_points():
    assert precision.parse_points("5%") == 5.0 and precision.parse_points(" 2.5 ") == 2.5
    for bad in ("five", "0%", "-1"):
        with pytest.raises(BadValueError):
            precision.parse_points(bad)


# -- the rounds the runner adds -----------------------------------------------------------------

def test_extra_rounds_continue_abba_and_cost_the_slowest_run():
    from encbench.lab import runner

    a, b_ = {"encryption": "off"}, {"encryption": "on"}
    p = runner.Plan(None, [], [a, b_], [], {}, {"scan": [a, b_]})
    assert [i["variant"] for i in runner.round_items(p, "scan", 6)] == [a, b_]
    assert [i["variant"] for i in runner.round_items(p, "scan", 7)] == [b_, a]
    runs = [{"workload": "scan", "variant_label": lbl, "warmup": w, "context": {"duration_s": d}}
            for lbl, w, d in (("encryption=off", True, 9.0), ("encryption=off", False, 1.0),
                              ("encryption=on", False, 3.0), ("encryption=on", False, 2.0))]
    doc = {"runs": runs}
    assert runner.measured_rounds(doc, p) == {"scan": 1}
    spent = {"scan": [1.5, 3.5, 2.5]}  # what each measured run cost, all of it (warmups are never in it)
    assert runner.round_costs(spent, p)["scan"] == pytest.approx(2 * 3.5)  # at the slowest run's pace
    assert runner.round_costs({}, p)["scan"] == 0.0  # nothing measured yet
    assert runner.runs_per_variant(doc) == {"scan": 1}


# -- per-run context --------------------------------------------------------------------------------

def stat(user: int, idle: int, steal: int, cpu1=(0, 0, 0)) -> dict:
    line = [user, 0, 0, idle, 0, 0, 0, steal, 0, 0]
    return {"cpu": line, "cpu0": line, "cpu1": [cpu1[0], 0, 0, cpu1[1], 0, 0, 0, cpu1[2], 0, 0]}


def snap(t, st, mhz=None, own=0.0, load=0.5):
    return runctx.Snapshot(t, st, mhz or {0: 2600.0, 1: 2600.0}, load, own)


def test_context_quiet_run_is_not_flagged():
    before = snap(0.0, stat(1000, 5000, 0, (500, 2500, 0)))
    after = snap(1.0, stat(1100, 5100, 0, (590, 2510, 0)), own=0.9)  # 1 s busy, 0.9 s ours
    c = runctx.delta(before, after, worker_cpus=[1], hz=100)
    assert c["duration_s"] == 1.0 and c["steal_pct"] == 0
    assert c["other_cpu_s"] == pytest.approx(0.1) and c["other_load_cores"] == pytest.approx(0.1)
    assert c["flags"] == []


def test_context_flags_steal_other_load_and_frequency():
    before = snap(0.0, stat(1000, 5000, 0, (500, 2500, 0)), mhz={0: 2600.0, 1: 2600.0})
    after = snap(2.0, stat(1300, 5050, 50, (600, 2500, 20)), mhz={0: 2600.0, 1: 1800.0}, own=0.5)
    c = runctx.delta(before, after, worker_cpus=[1], hz=100)
    assert c["steal_s"] == 0.5
    assert c["worker_cpu_steal_pct"] == pytest.approx(100 * 20 / 120)
    assert c["other_cpu_s"] == pytest.approx(2.5) and c["other_load_cores"] == pytest.approx(1.25)
    text = "; ".join(c["flags"])
    assert "steal 16.7%" in text and "other processes used 1.25 ±0.01 cores (> 0.5)" in text and "2600 -> 1800 MHz" in text
    s = runctx.summary([{"context": c}, {"context": runctx.delta(before, before)}, {}])
    assert s["runs"] == 2 and s["flagged_runs"] == [0]


def test_context_without_proc_stat_still_has_duration():
    c = runctx.delta(snap(0.0, None, mhz={}), snap(0.5, None, mhz={}))
    assert c["duration_s"] == 0.5 and "steal_pct" not in c and c["flags"] == []


def test_read_mhz_falls_back_to_cpuinfo(tmp_path):
    (tmp_path / "cpu0").mkdir()
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\ncpu MHz\t\t: 2596.1\n\nprocessor\t: 1\ncpu MHz\t\t: 1200.0\n")
    assert runctx.read_mhz(str(tmp_path), str(info)) == {0: 2596.1, 1: 1200.0}
    (tmp_path / "cpu0" / "cpufreq").mkdir()
    (tmp_path / "cpu0" / "cpufreq" / "scaling_cur_freq").write_text("3400000\n")
    assert runctx.read_mhz(str(tmp_path), str(info)) == {0: 3400.0}


def test_real_sources_read_this_machine():
    s = runctx.Sources().snapshot()
    assert s.stat is None or "cpu" in s.stat
    assert s.own_cpu_s > 0


# -- placement --------------------------------------------------------------------------------------

def test_two_cpus_worker_on_the_second():
    p = placement.choose(True, [0, 1])
    assert p.pinned and p.worker_cpus == [1] and p.rest_cpus == [0]
    assert "worker on CPU 1" in p.describe()["text"]


def test_more_cpus_worker_on_the_last():
    p = placement.choose(True, [2, 3, 5, 7])
    assert p.worker_cpus == [7] and p.rest_cpus == [2, 3, 5]


def test_one_cpu_or_off_is_not_pinned_and_says_why():
    one = placement.choose(True, [3])
    assert not one.pinned and "only CPU 3" in one.describe()["text"]
    off = placement.choose(False, [0, 1])
    assert not off.pinned and off.describe()["reason"] == "--no-pin"
    assert placement.apply(off) is off  # nothing to do
