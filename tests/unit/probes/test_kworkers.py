"""The kernel-worker probe on a fake /proc (a tmp dir): which threads count, a worker that appears or exits
during the operation, a pid reused, the clock-tick fallback, and the host's non-idle CPU."""

from __future__ import annotations

import pytest

from encbench.probes import PROBES, metric_catalog
from encbench.probes import kworkers as kw

TICK = kw._TICK


def _stat(pid: int, comm: str, ppid: int, utime: int, stime: int, start: int) -> str:
    # fields after the comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    # cutime cstime priority nice threads itrealvalue starttime ...
    return (f"{pid} ({comm}) I {ppid} 0 0 0 -1 69238880 0 0 0 0 {utime} {stime} 0 0 20 0 1 0 {start} "
            "0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0\n")


class FakeProc:
    def __init__(self, root):
        self.root = root
        self.host([100, 5, 50, 1000, 30, 3, 2, 7, 0, 0])

    def thread(self, pid: int, comm: str, *, ppid: int = 2, ticks=(0, 0), ns: int | None = 0, start: int = 10):
        d = self.root / str(pid)
        d.mkdir(exist_ok=True)
        (d / "stat").write_text(_stat(pid, comm, ppid, *ticks, start))
        if ns is None:
            (d / "schedstat").unlink(missing_ok=True)
        else:
            (d / "schedstat").write_text(f"{ns} 0 0\n")

    def gone(self, pid: int):
        for f in (self.root / str(pid)).iterdir():
            f.unlink()
        (self.root / str(pid)).rmdir()

    def host(self, values):
        (self.root / "stat").write_text("cpu  " + " ".join(map(str, values)) + "\ncpu0 1 2 3\nctxt 5\n")


@pytest.fixture
def proc(tmp_path):
    return FakeProc(tmp_path)


def _probe(proc) -> kw.KworkerProbe:
    p = kw.KworkerProbe()
    p.proc = str(proc.root)
    return p


def test_only_kthreadds_kworkers_count_and_new_ones_count_from_zero(proc):
    proc.thread(40, "kworker/u9:0-fscrypt_read_queue", ns=1_000_000_000)
    proc.thread(41, "kworker/0:1H-kblockd", ns=500)
    proc.thread(42, "ksoftirqd/0", ns=7)  # a kernel thread, not a worker
    proc.thread(43, "kworker-lookalike", ppid=1000, ns=9)  # a user process named like one
    proc.thread(1000, "postgres", ppid=1, ns=5)
    p = _probe(proc)
    p.start(None)
    proc.thread(40, "kworker/u9:0-fscrypt_read_queue", ns=3_500_000_000)  # +2.5 s
    proc.thread(42, "ksoftirqd/0", ns=9_000_000_000)
    proc.thread(43, "kworker-lookalike", ppid=1000, ns=9_000_000_000)
    proc.thread(44, "kworker/u9:2-fscrypt_read_queue", ns=250_000_000)  # appeared: all of its 0.25 s
    proc.host([180, 5, 350, 1200, 40, 3, 2, 9, 0, 0])  # +80 user +300 system; idle, iowait, steal left out
    out = p.stop(None)
    assert out["kworker_cpu_s"] == pytest.approx(2.75, abs=1e-6)
    assert out["kworkers_new"] == 1 and out["kworkers_exited"] == 0
    assert out["kworker_cpu_resolution_s"] == 1e-6
    assert out["host_cpu_s"] == pytest.approx(380 * TICK)


def test_a_worker_that_exits_is_counted_as_lost_and_a_reused_pid_is_a_new_worker(proc):
    proc.thread(50, "kworker/u8:1", ns=4_000_000_000)
    proc.thread(51, "kworker/u8:2", ns=2_000_000_000, start=10)
    p = _probe(proc)
    p.start(None)
    proc.gone(50)  # its CPU went with it: not estimated, counted
    proc.thread(51, "kworker/u8:2", ns=300_000_000, start=99)  # the pid of an exited worker, reused
    out = p.stop(None)
    assert out["kworkers_exited"] == 2 and out["kworkers_new"] == 1
    assert out["kworker_cpu_s"] == pytest.approx(0.3)  # the new thread from 0, never a negative difference


def test_without_schedstat_the_clock_ticks_count(proc):
    proc.thread(60, "kworker/1:0", ticks=(0, 10), ns=None)
    p = _probe(proc)
    p.start(None)
    proc.thread(60, "kworker/1:0", ticks=(1, 50), ns=None)
    out = p.stop(None)
    assert out["kworker_cpu_s"] == pytest.approx(41 * TICK)
    assert out["kworker_cpu_resolution_s"] == TICK


def test_a_garbled_or_vanishing_entry_is_skipped(proc):
    proc.thread(70, "kworker/0:0", ns=100)
    (proc.root / "71").mkdir()
    (proc.root / "71" / "stat").write_text("garbage")
    (proc.root / "72").mkdir()  # listed, gone before its stat is read
    assert set(kw.kworkers(proc.root)) == {70}


def test_registered_as_a_default_probe_outside_the_clocks():
    assert PROBES.get("kworkers") is kw.KworkerProbe
    # outermost: its scans of /proc fall in no other probe's window (the io probe's rchar, the clocks)
    assert kw.KworkerProbe.rank < min(cls.rank for name, cls in PROBES.items() if name != "kworkers")
    cat = metric_catalog()
    assert cat["kworker_cpu_s"].unit == "s" and cat["host_cpu_s"].unit == "s"


def test_on_this_machine_the_readings_are_sane():
    p = kw.KworkerProbe()
    p.start(None)
    out = p.stop(None)
    assert out["kworker_cpu_s"] >= 0 and out["host_cpu_s"] >= 0 and out["kworkers_exited"] >= 0
