"""issue 30: the run context's accounting of encbench's own CPU (lab/runctx.own_cpu_s) and the other processes'.

A cold MariaDB run restarts its server inside the worker: the new server outlived the worker, went to init and its
CPU was charged to "other processes" (13 of 14 runs of an idle machine flagged at 0.6 cores)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import namedtuple

import psutil
import pytest

from encbench.lab import runctx, runner

Times = namedtuple("Times", "user system children_user children_system")


class FakeProc:
    """A process of a fake tree: its own CPU and its reaped children's, and its descendants."""

    def __init__(self, own: float, reaped: float = 0.0, kids=()):
        self.own, self.reaped, self.kids = own, reaped, list(kids)

    def cpu_times(self):
        return Times(self.own, 0.0, self.reaped, 0.0)

    def children(self, recursive=False):
        return [d for k in self.kids for d in ([k, *k.children(True)] if recursive else [k])]


def test_a_restart_and_a_reaped_worker_inside_the_window_count_once():
    """Before: the runner, the forkserver, a worker and the server the last worker restarted (adopted by the
    forkserver). After: the worker and that server exited, both reaped by the forkserver, and a new server runs.
    Encbench's CPU in the window is what each used in it: 0.2 (worker) + 0.1 (old server) + 0.3 (new server)."""
    worker, old = FakeProc(0.5), FakeProc(2.0)
    before = FakeProc(1.0, kids=[FakeProc(0.2, 4.0, kids=[worker, old])])
    after = FakeProc(1.0, kids=[FakeProc(0.2, 4.0 + 0.7 + 2.1, kids=[FakeProc(0.3)])])
    assert runctx.own_cpu_s(after) - runctx.own_cpu_s(before) == pytest.approx(0.6)


def _stat(user: int, idle: int, steal: int = 0) -> dict:
    line = [user, 0, 0, idle, 0, 0, 0, steal, 0, 0]
    half = [x / 2 for x in line]
    return {"cpu": line, "cpu0": half, "cpu1": half}


def test_busy_is_the_cpus_time_less_idle_not_the_tick_samples():
    """A client and a server answering each other for 1 s on 2 CPUs: their processes ran 0.5 s (the kernel's exact
    run time), the timer tick sampled 0.3 s of user time (short bursts between ticks go unseen), the idle counter
    (exact on a tickless kernel) 1.5 s. Busy is 2 x 1 s - 1.5 s = 0.5 s: nobody else ran, not -0.2 cores."""
    before = runctx.Snapshot(0.0, _stat(1000, 5000), {}, None, 10.0, own_procs=12)
    after = runctx.Snapshot(1.0, _stat(1030, 5150), {}, None, 10.5, own_procs=12)
    c = runctx.delta(before, after, hz=100)
    assert c["busy_cores"] == pytest.approx(0.5) and c["own_cpu_s"] == pytest.approx(0.5)
    assert c["other_cpu_s"] == pytest.approx(0.0) and c["flags"] == []
    # one 10 ms tick per counter of the difference (idle, iowait, steal, 12 processes) over the 1 s run
    assert c["other_load_resolution_cores"] == pytest.approx(0.15)
    s = runctx.summary([{"context": c}])
    assert s["median_other_load_resolution_cores"] == pytest.approx(0.15)


def test_a_snapshot_reads_the_machine_on_both_sides_of_the_tree():
    """/proc/stat read before and after the tree's walk, their mean: the two sums hold at one moment."""
    reads = iter([_stat(1000, 5000), _stat(1002, 5004)])
    clock = iter([10.0, 10.04])
    src = runctx.Sources(clock=lambda: next(clock), stat=lambda: next(reads), mhz=dict, load=lambda: None,
                         own_cpu=lambda: (3.0, 7))
    snap = src.snapshot()
    assert snap.t == 10.0 and snap.stat_t == pytest.approx(10.02) and snap.own_procs == 7
    assert snap.stat["cpu"][:4] == [1001, 0, 0, 5002]


BURN_S = 0.3
SERVER = f"import time\nt = time.process_time()\nwhile time.process_time() - t < {BURN_S}: pass\ntime.sleep(120)"


def _say(q) -> None:
    q.put(0)


def _start_server(q) -> None:
    """As a worker restarts a cold MariaDB (Handle.launch) or PostgreSQL (restart_handle): a server in a session of
    its own, which outlives the worker."""
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    q.put(proc.pid)


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def _wait(cond, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_a_server_a_worker_started_stays_ours_after_the_worker_exits():
    ctx = runner._context()
    q = ctx.Queue()
    first = ctx.Process(target=_say, args=(q,))  # the forkserver up before the window (as after a run's first)
    first.start()
    first.join(60)
    assert q.get(timeout=60) == 0
    start = runctx.own_cpu_s()
    worker = ctx.Process(target=_start_server, args=(q,))
    worker.start()
    pid = q.get(timeout=60)
    worker.join(60)
    server = psutil.Process(pid)
    try:
        _wait(lambda: _cpu(server) >= BURN_S)
        assert server.ppid() != 1 and server in psutil.Process().children(recursive=True)  # adopted, not init's
        used = _cpu(server)  # read first: the server may still be burning (its start-up counts toward BURN_S)
        assert runctx.own_cpu_s() - start >= used
    finally:
        os.kill(pid, signal.SIGTERM)
    _wait(lambda: not psutil.pid_exists(pid))  # reaped by the forkserver: no zombie left behind
    assert runctx.own_cpu_s() - start >= BURN_S  # its CPU now in the forkserver's children's times


def test_the_context_line_gives_the_other_load_with_its_resolution():
    from encbench.analysis import context

    doc = {"runs": [], "run_context": {"runs": 18, "flagged_runs": [], "max_steal_pct": 0.4,
                                       "median_other_load_cores": 0.02, "median_other_load_resolution_cores": 0.03}}
    (line,) = context.run_context_lines(doc)
    assert line.endswith("other processes' load median 0.02 ±0.03 cores"), line
