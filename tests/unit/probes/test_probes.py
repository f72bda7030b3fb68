"""encbench.probes: each probe measures the target it is given, and only that."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from encbench.probes import DEFAULT_PROBES, PROBES, Target, metric_catalog
from encbench.probes.base import read_proc_kv, thread_ids
from encbench.probes.cpu import CpuProbe
from encbench.probes.ctxsw import ContextSwitchProbe
from encbench.probes.io import IoProbe
from encbench.probes.pages import PagesProbe
from encbench.probes.wall import WallProbe


def _burn(cpu_seconds: float = 0.05) -> int:
    """Burn this much CPU time (not wall time: the machine may be busy)."""
    end = time.process_time() + cpu_seconds
    n = 0
    while time.process_time() < end:
        n += sum(range(200))
    return n


def _declared(cls, client: bool = False, threads: bool = False) -> set[str]:
    """The metrics a probe returns; client_* ones only for a client target (server engines),
    thread_* ones only for a target naming its server threads (MariaDB)."""
    return {m.name for m in cls.metrics if (client or not m.name.startswith("client_"))
            and (threads or not m.name.startswith("thread_"))}


def test_cpu_probe_measures_named_threads_apart():
    import threading

    me = (os.getpid(), threading.get_native_id())
    target = Target(pids=[os.getpid()], threads=[me])
    p = CpuProbe()
    p.start(target)
    _burn(0.05)
    out = p.stop(target)
    assert set(out) == _declared(CpuProbe, threads=True)
    assert 0.04 <= out["thread_cpu_s"] <= out["cpu_s"] + 0.005


@pytest.fixture
def data_file(tmp_path):
    p = tmp_path / "data.bin"
    p.write_bytes(os.urandom(256 * 1024))
    return p


def test_registry_has_the_probes():
    assert DEFAULT_PROBES == ["wall", "cpu", "ctxsw", "io", "pages", "sysctx", "net", "waits", "kworkers"]
    assert PROBES.get("cpu") is CpuProbe
    cat = metric_catalog()
    for name in ("wall_s", "cpu_s", "cpu_user_s", "cpu_sys_s", "ctx_voluntary", "ctx_involuntary",
                 "read_bytes", "write_bytes", "read_syscall_bytes", "write_syscall_bytes",
                 "pages_read", "pages_written"):
        assert name in cat
    assert cat["wall_s"].unit == "s" and cat["pages_read"].unit == "pages"
    # the wall clock starts last and stops first; the CPU clock is just outside it; only the instruction count
    # (--meter instructions) is inside the wall clock, so that it counts the operation and nothing of the others
    by_rank = [n for n, cls in sorted(PROBES.items(), key=lambda kv: kv[1].rank)]
    assert by_rank[-3:] == ["cpu", "wall", "instructions"]
    assert PROBES.get("wall").rank > PROBES.get("cpu").rank > PROBES.get("io").rank


def test_target_is_self():
    assert Target(pids=[os.getpid()]).is_self
    assert not Target(pids=[os.getpid(), 1]).is_self
    assert not Target(pids=[1]).is_self


# --- self target --------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [WallProbe, CpuProbe, ContextSwitchProbe, IoProbe], ids=lambda c: c.name)
def test_probe_on_self_returns_declared_metrics(cls, data_file):
    target = Target(pids=[os.getpid()])
    p = cls()
    p.start(target)
    _burn(0.03)
    data_file.read_bytes()
    out = p.stop(target)
    assert set(out) == _declared(cls)
    for name, value in out.items():
        assert isinstance(value, (int, float)), name
        assert value >= 0, name


@pytest.mark.parametrize("cls", [CpuProbe, ContextSwitchProbe], ids=lambda c: c.name)
def test_client_target_adds_client_metrics_of_the_calling_thread(cls):
    target = Target(pids=[os.getpid()], client=True)
    p = cls()
    p.start(target)
    _burn(0.05)
    out = p.stop(target)
    assert set(out) == _declared(cls, client=True)
    if cls is CpuProbe:
        assert out["client_cpu_s"] >= 0.03  # this thread burnt 50 ms of CPU
        assert out["client_cpu_s"] == pytest.approx(out["client_cpu_user_s"] + out["client_cpu_sys_s"])


def test_wall_probe_measures_elapsed():
    p, t = WallProbe(), Target(pids=[os.getpid()])
    p.start(t)
    time.sleep(0.05)
    wall = p.stop(t)["wall_s"]
    assert 0.045 <= wall < 1.0


def test_cpu_probe_on_self_counts_burnt_cpu():
    p, t = CpuProbe(), Target(pids=[os.getpid()])
    p.start(t)
    _burn(0.1)
    out = p.stop(t)
    assert 0.09 <= out["cpu_s"] <= 0.5
    assert out["cpu_s"] == pytest.approx(out["cpu_user_s"] + out["cpu_sys_s"])
    assert out["cpu_user_s"] > out["cpu_sys_s"]


def test_cpu_probe_does_not_count_sleep():
    p, t = CpuProbe(), Target(pids=[os.getpid()])
    p.start(t)
    time.sleep(0.1)
    assert p.stop(t)["cpu_s"] < 0.02


def test_io_probe_on_self_counts_read_syscall_bytes(data_file):
    p, t = IoProbe(), Target(pids=[os.getpid()])
    p.start(t)
    for _ in range(4):
        data_file.read_bytes()
    out = p.stop(t)
    assert out["read_syscall_bytes"] >= 4 * 256 * 1024


def test_ctxsw_probe_on_self_counts_sleeps():
    p, t = ContextSwitchProbe(), Target(pids=[os.getpid()])
    p.start(t)
    for _ in range(20):
        time.sleep(0.001)
    out = p.stop(t)
    assert out["ctx_voluntary"] >= 15


# --- pages probe ------------------------------------------------------------------------

class FakeCounters:
    def __init__(self, *values):
        self.values = list(values)

    def __call__(self):
        return self.values.pop(0)


def test_pages_probe_with_counters_gives_exact_deltas():
    counters = FakeCounters({"pages_read": 10, "pages_written": 2}, {"pages_read": 1502, "pages_written": 2})
    t = Target(pids=[os.getpid()], page_size=4096, extra={"counters": counters})
    p = PagesProbe()
    p.start(t)
    assert p.stop(t) == {"pages_read": 1492, "pages_written": 0}
    assert counters.values == []  # called exactly once at start and once at stop


def test_pages_probe_returns_declared_metrics_with_counters():
    t = Target(pids=[os.getpid()], extra={"counters": FakeCounters({"pages_read": 0, "pages_written": 0},
                                                                    {"pages_read": 3, "pages_written": 7})})
    p = PagesProbe()
    p.start(t)
    out = p.stop(t)
    assert set(out) <= _declared(PagesProbe)
    assert out == {"pages_read": 3, "pages_written": 7}


def test_pages_probe_innodb_counters_are_declared():
    names = {"pages_read", "pages_written", "pages_decrypted", "pages_encrypted", "pool_misses",
             "engine_read_bytes", "engine_written_bytes",
             # MariaDB's files its encryption settings act on (advise's knobs)
             "redo_bytes_written", "binlog_bytes_written", "tmp_files_created", "sort_merge_passes"}
    t = Target(pids=[os.getpid()], extra={"counters": FakeCounters(dict.fromkeys(names, 10),
                                                                    dict.fromkeys(names, 12))})
    p = PagesProbe()
    p.start(t)
    out = p.stop(t)
    assert set(out) == _declared(PagesProbe) == names
    assert all(v == 2 for v in out.values())


def test_pages_probe_keeps_only_keys_present_at_start():
    t = Target(pids=[os.getpid()], extra={"counters": FakeCounters({"pages_read": 5},
                                                                    {"pages_read": 9, "pages_written": 4})})
    p = PagesProbe()
    p.start(t)
    assert p.stop(t) == {"pages_read": 4}


def test_pages_probe_falls_back_to_bytes_read_over_page_size(data_file):
    t = Target(pids=[os.getpid()], page_size=4096)
    p = PagesProbe()
    p.start(t)
    data_file.read_bytes()  # 256 KiB = 64 pages of 4 KiB
    out = p.stop(t)
    assert set(out) == {"pages_read"}
    assert 64 <= out["pages_read"] < 70


def test_pages_probe_without_counters_or_page_size_measures_nothing():
    t = Target(pids=[os.getpid()])
    p = PagesProbe()
    p.start(t)
    assert p.stop(t) == {}


def test_pages_probe_counter_error_propagates():
    def broken():
        raise RuntimeError("db closed")
    with pytest.raises(RuntimeError):
        PagesProbe().start(Target(pids=[os.getpid()], extra={"counters": broken}))


# --- foreign processes (a server backend): read from /proc --------------------------------

BUSY_CHILD = textwrap.dedent("""
    import sys, time
    path = sys.argv[1]
    print("ready", flush=True)
    sys.stdin.readline()             # wait for "go": the probes have started
    while True:
        t = time.process_time()
        while time.process_time() - t < 0.003:
            pass                     # 3 ms of CPU
        time.sleep(0.001)            # a voluntary context switch
        with open(path, "rb") as f:
            f.read()                 # 256 KiB read by syscalls
        print("tick", flush=True)
""")
TICKS = 30


@pytest.fixture
def busy_child(data_file):
    proc = subprocess.Popen([sys.executable, "-c", BUSY_CHILD, str(data_file)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _let_work(proc, ticks: int = TICKS) -> None:
    """Tell the child to go and wait until it has done `ticks` iterations."""
    proc.stdin.write("go\n")
    proc.stdin.flush()
    for _ in range(ticks):
        assert proc.stdout.readline().strip() == "tick"


def test_foreign_probes_read_proc_of_the_target(busy_child):
    target = Target(pids=[busy_child.pid])
    assert not target.is_self
    probes = [CpuProbe(), ContextSwitchProbe(), IoProbe()]
    for p in probes:
        p.start(target)
    _let_work(busy_child)  # this process mostly waits: what is measured is the child's
    out = {}
    for p in probes:
        out.update(p.stop(target))
    assert set(out) == _declared(CpuProbe) | _declared(ContextSwitchProbe) | _declared(IoProbe)
    assert all(v >= 0 for v in out.values())
    assert out["cpu_s"] >= 0.06  # >= 30 x 3 ms, counted in clock ticks
    assert out["cpu_s"] == pytest.approx(out["cpu_user_s"] + out["cpu_sys_s"])
    assert out["ctx_voluntary"] >= TICKS - 1
    assert out["read_syscall_bytes"] >= TICKS * 256 * 1024


def test_cpu_probe_on_sleeping_process_is_zero():
    proc = subprocess.Popen(["sleep", "10"])
    try:
        time.sleep(0.05)
        p, t = CpuProbe(), Target(pids=[proc.pid])
        p.start(t)
        _burn(0.1)  # this process burns CPU; the target does not
        out = p.stop(t)
        # a live process: the exact schedstat total (1 µs resolution), zero while it sleeps
        assert out == {"cpu_user_s": 0.0, "cpu_sys_s": 0.0, "cpu_s": 0.0, "cpu_resolution_s": 1e-6}
    finally:
        proc.kill()
        proc.wait()


def test_cpu_probe_on_several_pids_sums_them(busy_child):
    sleeper = subprocess.Popen(["sleep", "10"])
    try:
        p, t = CpuProbe(), Target(pids=[sleeper.pid, busy_child.pid])
        p.start(t)
        _let_work(busy_child)
        assert p.stop(t)["cpu_s"] >= 0.06
    finally:
        sleeper.kill()
        sleeper.wait()


def test_foreign_probe_on_dead_pid_raises():
    proc = subprocess.Popen(["true"])
    proc.wait()
    t = Target(pids=[proc.pid])
    with pytest.raises(FileNotFoundError):
        CpuProbe().start(t)
    with pytest.raises(FileNotFoundError):
        IoProbe().start(t)


THREAD_CHILD = textwrap.dedent("""
    import os, sys, threading, time
    warmed, stop = threading.Event(), threading.Event()
    def worker():
        for _ in range(300):
            time.sleep(0.0005)   # ~300 voluntary context switches in this thread
        warmed.set()
        stop.wait()
    t = threading.Thread(target=worker)
    t.start()
    warmed.wait()
    print("ready", flush=True)
    sys.stdin.readline()
    stop.set()
    t.join()
    while len(os.listdir("/proc/self/task")) > 1:
        time.sleep(0.001)         # until the kernel has reaped the thread, not just Python
    print("done", flush=True)
    sys.stdin.readline()
""")


def test_ctxsw_foreign_delta_not_negative_when_a_thread_exits():
    proc = subprocess.Popen([sys.executable, "-c", THREAD_CHILD], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        t = Target(pids=[proc.pid])
        assert len(thread_ids(proc.pid)) == 2
        p = ContextSwitchProbe()
        p.start(t)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        out = p.stop(t)
        assert len(thread_ids(proc.pid)) == 1
        assert out["ctx_voluntary"] >= 0
        assert out["ctx_involuntary"] >= 0
    finally:
        proc.kill()
        proc.wait()


# --- helpers ------------------------------------------------------------------------------

def test_read_proc_kv(tmp_path):
    f = tmp_path / "status"
    f.write_text("Name:\tpython\nvoluntary_ctxt_switches:\t12\nVmRSS:\t  1024 kB\nState:\tS (sleeping)\n")
    assert read_proc_kv(str(f)) == {"voluntary_ctxt_switches": 12, "VmRSS": 1024}


def test_thread_ids():
    assert str(os.getpid()) in thread_ids(os.getpid())
    assert thread_ids(2**22 + 12345) == []


_THREAD_CHILD = """
import sys, threading, time
burnt = threading.Event()
def busy():  # burns 0.3 s of CPU, then waits for a line and exits
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
    burnt.set()
    sys.stdin.readline()
threading.Thread(target=busy).start()
burnt.wait()
print("burnt", flush=True)
time.sleep(30)
"""


def test_cpu_probe_keeps_the_time_of_a_thread_that_exits_between_readings():
    """A server's pool thread that exits during a run takes its whole life's CPU out of the live threads' sum: the
    difference must not go negative (it did: a MariaDB run read -1.1 ms of server CPU per transaction)."""
    proc = subprocess.Popen([sys.executable, "-c", _THREAD_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "burnt"
        deadline = time.monotonic() + 10
        p, t = CpuProbe(), Target(pids=[proc.pid])
        p.start(t)
        proc.stdin.write("exit\n")
        proc.stdin.flush()
        while len(os.listdir(f"/proc/{proc.pid}/task")) > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(os.listdir(f"/proc/{proc.pid}/task")) == 1  # the busy thread has gone
        out = p.stop(t)
        assert 0 <= out["cpu_s"] < 0.1  # the thread burnt its time before the first reading
        assert out["cpu_resolution_s"] == pytest.approx(1 / os.sysconf("SC_CLK_TCK"))  # ticks, and it says so
    finally:
        proc.kill()
        proc.wait()
