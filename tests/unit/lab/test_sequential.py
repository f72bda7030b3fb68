"""Issue 30 item 1: `run --quick` / `--budget` run each workload until its verdicts resolve or the budget is spent.

The stopping rule (lab/precision.Sequential, Budget.next_sequential) on fake verdicts and a fake clock; the
analysis judging a sequential file's verdicts at the per-look level; the plan and estimate lines; the CLI's choice
of the engine's question.
"""

from __future__ import annotations

import pytest

from encbench.analysis import context, stats
from encbench.analysis import summary as an
from encbench.lab import precision
from encbench.lab.precision import BUDGET_SPENT, LAST_LOOK, RESOLVED, Budget, Sequential


class Clock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def budget(max_time: float | None = 150.0, clock=None) -> Budget:
    return Budget(None, max_time, clock=clock or Clock(), sequential=Sequential())


def test_the_rule_splits_five_percent_over_its_looks():
    seq = Sequential()
    assert seq.looks[0] == precision.MIN_RUNS == 6 and seq.confidence == pytest.approx(1 - 0.05 / len(seq.looks))
    assert [n for n in range(1, 30) if seq.is_look(n)] == [6, 8, 11, 15] + list(range(20, 30))
    assert "Bonferroni" in seq.describe()["method"] and seq.describe()["confidence"] == seq.confidence


def test_a_workload_stops_at_the_first_look_where_every_row_resolved():
    b = budget()
    assert b.next_sequential({"scan": [stats.COSTS, stats.NO_COST]}, {"scan": 6}, {"scan": 2.0}) == []
    assert b.outcomes == {"scan": {"stopped": RESOLVED, "runs": 6}} and b.stopped_because == RESOLVED


def test_an_unresolved_row_adds_rounds_and_between_looks_nothing_is_judged():
    b = budget()
    unresolved = {"rt": [stats.COSTS, stats.INCONCLUSIVE]}
    assert b.next_sequential(unresolved, {"rt": 6}, {"rt": 5.0}) == ["rt"]
    # at 7 runs (no look) even resolved rows do not stop it: the error rate holds only at the planned looks
    assert b.next_sequential({"rt": [stats.COSTS]}, {"rt": 7}, {"rt": 5.0}) == ["rt"]
    assert b.next_sequential({"rt": [stats.COSTS]}, {"rt": 8}, {"rt": 5.0}) == []
    assert b.outcomes["rt"] == {"stopped": RESOLVED, "runs": 8}


def test_too_few_runs_is_not_resolved_and_the_last_look_ends_it():
    b = budget(None)
    assert b.next_sequential({"w": [stats.TOO_FEW_RUNS]}, {"w": 6}, {"w": 1.0}) == ["w"]
    assert b.next_sequential({"w": [stats.INCONCLUSIVE]}, {"w": 20}, {"w": 1.0}) == []
    assert b.outcomes["w"] == {"stopped": LAST_LOOK, "runs": 20}


def test_the_budget_stops_a_round_that_would_end_after_it():
    clock = Clock()
    b = budget(60.0, clock)
    clock.t += 50.0
    assert b.next_sequential({"w": [stats.INCONCLUSIVE]}, {"w": 6}, {"w": 8.0}) == ["w"]  # ends at 58 s
    clock.t += 8.0
    assert b.next_sequential({"w": [stats.INCONCLUSIVE]}, {"w": 7}, {"w": 8.0}) == []
    assert b.outcomes["w"] == {"stopped": BUDGET_SPENT, "runs": 7} and b.stopped_because == BUDGET_SPENT
    assert not b.fits(8.0) and b.fits(1.0)


def test_two_workloads_share_the_budget_and_each_says_how_it_ended():
    clock = Clock()
    b = budget(20.0, clock)
    codes = {"a": [stats.INCONCLUSIVE], "b": [stats.INCONCLUSIVE]}
    assert b.next_sequential(codes, {"a": 6, "b": 6}, {"a": 12.0, "b": 12.0}) == ["a"]  # b's round would overrun
    assert b.outcomes == {"b": {"stopped": BUDGET_SPENT, "runs": 6}}
    lines = context.sequential_lines(precision.document([], b, {"a": 7, "b": 6}))
    assert lines[0] == "  b: not resolved: budget spent after 6 runs per variant (run longer: --budget, or without --quick)"
    assert lines[-1].startswith("  verdicts at 99%: group-sequential")


def test_a_sequential_file_is_judged_at_the_per_look_level():
    base, cont = [1.00, 1.02, 0.98, 1.01, 0.99, 1.00], [1.05, 1.07, 1.03, 1.06, 1.04, 1.05]
    doc95 = {"config": {}}
    doc99 = {"config": {"sequential": Sequential().describe()}}
    assert an.verdict_confidence(doc95) == stats.CONFIDENCE
    assert an.verdict_confidence(doc99) == pytest.approx(0.99)
    wide = stats.ratio_ci(base, cont, confidence=an.verdict_confidence(doc99))
    narrow = stats.ratio_ci(base, cont)
    assert wide.ci[0] < narrow.ci[0] and wide.ci[1] > narrow.ci[1]


def test_plan_and_estimate_say_what_and_how_long_from_the_measured_pace():
    plan = precision.plan_text({"roundtrip": ["tls=off", "tls=on"]}, 150.0, Sequential())
    assert plan.startswith("plan: roundtrip (tls=off vs tls=on): 6 runs per variant, then more (up to 20)")
    assert "within a budget of 2:30" in plan
    est = precision.estimate_text({"roundtrip": 5.0}, {"roundtrip": 1}, Sequential(), 140.0)
    assert est == ("estimate: roundtrip: a round takes 5.0 s here, 6 runs per variant about 25 s more, 20 about "
                   "1:35; budget left 2:20")


def test_quick_alone_asks_the_engines_question_and_with_a_workload_is_a_smoke_run(monkeypatch):
    from encbench.cli import run as run_cli
    from encbench.cli.parser import build_parser
    from encbench.lab import runner

    seen = {}

    def stop(config):
        seen["config"] = config
        raise SystemExit(0)

    monkeypatch.setattr(runner, "plan", stop)
    parser = build_parser()
    for argv in (["run", "--quick"], ["run", "--engine", "postgres", "--quick"], ["run", "--quick", "--workload", "dml"],
                 ["run", "--budget", "90s", "--workload", "dml"]):
        args = parser.parse_args(argv)
        with pytest.raises(SystemExit):
            run_cli.cmd_run(args, argv)
        c = seen.pop("config")
        seen[" ".join(argv)] = (c.workloads, c.variant_filters, c.runs, c.sequential, c.budget_s)
    assert seen["run --quick"] == (["scan-like"], ["cache=cold"], 6, True, 150.0)
    assert seen["run --engine postgres --quick"] == (["roundtrip"], ["tls=off,on", "clients=1"], 6, True, 150.0)
    assert seen["run --quick --workload dml"] == (["dml"], [], 3, False, None)
    assert seen["run --budget 90s --workload dml"] == (["dml"], [], 6, True, 90.0)


def test_advise_budget_shares_what_is_left_and_skips_what_no_longer_fits(monkeypatch, tmp_path):
    from encbench.vocab.knob import Sweep
    from encbench.lab import advise, runner

    clock, seen, said = Clock(0.0), [], []

    def execute(config):
        seen.append((config.budget_s, config.sequential))
        clock.t += 50.0  # each sweep takes 50 s
        return {}

    monkeypatch.setattr(runner, "execute", execute)
    sweeps = [Sweep(f"s{i}", f"knob{i}", ("scan-eq",), ("cache=warm",)) for i in range(3)]
    settings = advise.Settings(engine="sqlite", runs=6, warmups=0, size_bytes=1, seed=42, data_dir=tmp_path,
                               out_dir=tmp_path, budget_s=105.0)
    out = advise.run(settings, sweeps, progress=said.append, clock=clock)
    assert [s for s, _ in seen] == [pytest.approx(35.0), pytest.approx(27.5)] and all(q for _, q in seen)
    assert len(out) == 2 and said[-1] == "budget spent: 1 sweep(s) not run (knob2)"


def test_a_workload_with_nothing_to_compare_stops_at_the_first_look():
    b = budget()
    assert b.next_sequential({}, {"w": 6}, {"w": 1.0}) == []
    assert b.outcomes["w"] == {"stopped": precision.NOTHING, "runs": 6}


def test_a_budget_spent_before_the_first_run_still_says_so():
    b = budget(None)
    b.outcomes["scan-eq"] = {"stopped": BUDGET_SPENT, "runs": 0}
    b.stopped_because = BUDGET_SPENT
    lines = context.precision_lines({"precision": precision.document([], b, {})})
    assert lines[0].startswith("precision: no CI yet over 0 elapsed/CPU comparisons, no measured run, ")
    assert lines[1] == ("  scan-eq: not resolved: budget spent after 0 runs per variant (run longer: --budget, or "
                        "without --quick)")


def test_quick_with_runs_is_a_smoke_run(monkeypatch):
    from encbench.cli import run as run_cli
    from encbench.cli.parser import build_parser
    from encbench.lab import runner

    seen = []

    def stop(config):
        seen.append(config)
        raise SystemExit(0)

    monkeypatch.setattr(runner, "plan", stop)
    argv = ["run", "--quick", "--runs", "1", "--warmups", "0"]
    with pytest.raises(SystemExit):
        run_cli.cmd_run(build_parser().parse_args(argv), argv)
    assert seen[0].runs == 1 and not seen[0].sequential and seen[0].budget_s is None


def test_the_outcome_words_analysis_prints_are_the_runners():
    """analysis/context words a sequential outcome by its value (it imports nothing of lab/): the values it knows."""
    assert (precision.RESOLVED, precision.NOTHING) == ("resolved", "nothing compared")
