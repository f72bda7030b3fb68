"""encbench.lab.worker._measure: probes around one operation; a failing probe never aborts it."""

from __future__ import annotations

import os

import pytest

from encbench.engines.base import Session
from encbench.lab import worker
from encbench.probes import DEFAULT_PROBES, PROBES, Probe, Target
from encbench.probes.base import Metric
from encbench.workloads.base import Operation


class FakeSession(Session):
    def __init__(self, log):
        self.log = log

    def set_cache(self, state):
        self.log.append(f"cache:{state}")
        return {"cache": state, "os_cache_dropped": state == "cold"}

    def target(self):
        return Target(pids=[os.getpid()])


def make_probe(name, rank=0, *, fail_start=False, fail_stop=False, log=None):
    class P(Probe):
        metrics = (Metric(f"{name}_m", "count", name),)

        def start(self, target):
            log.append(f"start:{name}")
            if fail_start:
                raise OSError(f"{name} cannot start")

        def stop(self, target):
            log.append(f"stop:{name}")
            if fail_stop:
                raise RuntimeError(f"{name} cannot stop")
            return {f"{name}_m": 1}

    P.name, P.rank = name, rank
    return P


@pytest.fixture
def log():
    return []


def _patch(monkeypatch, probes):
    table = {p.name: p for p in probes}
    monkeypatch.setattr(worker.PROBES, "get", lambda n: table[n])


def _op(log, result=None):
    return Operation(
        "scan",
        run=lambda: (log.append("run"), result)[1],
        before=lambda: log.append("before"),
        after=lambda: log.append("after"),
    )


def test_measure_collects_metrics_and_order(monkeypatch, log):
    _patch(monkeypatch, [make_probe("a", 0, log=log), make_probe("clock", 2, log=log), make_probe("b", 1, log=log)])
    out = worker._measure(_op(log, {"rows_returned": 29}), FakeSession(log), {"cache": "cold"},
                          ["clock", "a", "b"])
    assert out == {
        "operation": "scan",
        "metrics": {"a_m": 1, "b_m": 1, "clock_m": 1},
        "extra": {"rows_returned": 29},
        "cache": {"cache": "cold", "os_cache_dropped": True},
        "probe_errors": {},
    }
    # before and the cache drop come first; probes start by ascending rank and stop in reverse
    assert log == ["before", "cache:cold", "start:a", "start:b", "start:clock", "run",
                   "stop:clock", "stop:b", "stop:a", "after"]


def test_probe_failing_at_start_is_recorded_and_run_goes_on(monkeypatch, log):
    _patch(monkeypatch, [make_probe("good", log=log), make_probe("bad", fail_start=True, log=log)])
    out = worker._measure(_op(log), FakeSession(log), {}, ["good", "bad"])
    assert "run" in log and "after" in log
    assert out["metrics"] == {"good_m": 1}
    assert out["probe_errors"] == {"bad": "OSError: bad cannot start"}
    assert "stop:bad" not in log  # a probe that did not start is not stopped


def test_probe_failing_at_stop_is_recorded_others_still_stopped(monkeypatch, log):
    _patch(monkeypatch, [make_probe("a", 0, log=log), make_probe("bad", 1, fail_stop=True, log=log),
                         make_probe("c", 2, log=log)])
    out = worker._measure(_op(log), FakeSession(log), {}, ["a", "bad", "c"])
    assert out["metrics"] == {"a_m": 1, "c_m": 1}
    assert out["probe_errors"] == {"bad": "RuntimeError: bad cannot stop"}
    assert log[-4:] == ["stop:c", "stop:bad", "stop:a", "after"]


def test_all_probes_failing_still_runs(monkeypatch, log):
    _patch(monkeypatch, [make_probe("x", fail_start=True, log=log), make_probe("y", fail_stop=True, log=log)])
    out = worker._measure(_op(log), FakeSession(log), {}, ["x", "y"])
    assert out["metrics"] == {}
    assert set(out["probe_errors"]) == {"x", "y"}


def test_no_cache_key_no_cache_call_and_non_dict_extra(monkeypatch, log):
    _patch(monkeypatch, [make_probe("a", log=log)])
    out = worker._measure(Operation("w", run=lambda: 42), FakeSession(log), {"encryption": "on"}, ["a"])
    assert out["cache"] == {}
    assert out["extra"] == {}
    assert not any(x.startswith("cache:") for x in log)


def test_measure_with_real_probes():
    op = Operation("burn", run=lambda: {"n": sum(range(200_000))})
    out = worker._measure(op, FakeSession([]), {}, DEFAULT_PROBES)  # instructions: only under valgrind
    assert out["probe_errors"] == {}
    for name in ("wall_s", "cpu_s", "ctx_voluntary", "read_bytes", "read_syscall_bytes"):
        assert out["metrics"][name] >= 0
    assert out["metrics"]["wall_s"] > 0
    assert out["extra"] == {"n": sum(range(200_000))}


def test_unknown_probe_name_is_an_error_before_running():
    from encbench.errors import UnknownNameError
    ran = []
    with pytest.raises(UnknownNameError):
        worker._measure(Operation("w", run=lambda: ran.append(1)), FakeSession([]), {}, ["nope"])
    assert ran == []
