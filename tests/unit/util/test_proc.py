"""util/proc: a process is alive only as the one recorded (pid AND start time), and stopping escalates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from encbench.util import proc


def _sleeper(*code: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", "; ".join([*code, "import time", "print('up', flush=True)",
                                                           "time.sleep(600)"])], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "up"  # its handlers are in place
    return p


@pytest.fixture
def sleeper():
    p = _sleeper()
    yield p
    p.kill()
    p.wait()


def test_this_process_is_alive_with_its_own_start_time():
    me = proc.me()
    assert me["pid"] == os.getpid() and isinstance(me["start"], float) and isinstance(me["since_boot"], float)
    assert proc.alive(os.getpid()) and proc.alive(os.getpid(), me["start"])
    assert proc.owner_alive(me) and not proc.owner_dead(me)  # never this process's own record


def test_a_live_pid_with_another_start_time_is_dead(sleeper):
    """pid reuse: the pid runs, but the process that has it started at another time: the owner is dead."""
    start = proc.start_time(sleeper.pid)
    assert proc.owner_alive({"pid": sleeper.pid, "start": start})
    for other in (start - 60, start + 5, 0.0):
        reused = {"pid": sleeper.pid, "start": other}
        assert not proc.alive(sleeper.pid, other)
        assert not proc.owner_alive(reused) and proc.owner_dead(reused)
        assert proc.process(sleeper.pid, other) is None  # never signalled as the recorded one


def test_the_start_in_ticks_since_boot_decides_where_the_clock_moved(sleeper):
    """The epoch start time moves with the clock (the kernel's boot time is whole seconds, recomputed when the clock
    is set): a record 1 s off but with the same start in ticks since boot is the same process; a record with the
    same epoch start but other ticks is a reused pid."""
    me = proc.identity(sleeper.pid)
    assert isinstance(me["since_boot"], float) and proc.owner_alive(me)
    assert proc.owner_alive(dict(me, start=me["start"] + 1.0)) and proc.owner_alive(dict(me, start=me["start"] - 1.0))
    assert proc.owner_dead(dict(me, since_boot=me["since_boot"] - 0.5))
    assert proc.owner_dead(dict(me, since_boot=me["since_boot"] + 0.02))
    assert proc.owner_dead(dict(me, start=me["start"] - 3600))  # an earlier boot's process with these ticks


def test_a_gone_pid_and_a_zombie_are_dead():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    pid = child.pid
    deadline = time.monotonic() + 30
    while proc.running(pid) and time.monotonic() < deadline:  # exited, not reaped yet: a zombie
        time.sleep(0.01)
    assert not proc.running(pid) and os.path.exists(f"/proc/{pid}")  # a zombie is not running
    assert proc.owner_dead({"pid": pid, "start": None})
    child.wait()
    assert proc.owner_dead({"pid": pid, "start": 1.0})


def test_a_record_without_start_time_is_alive_while_its_pid_runs(sleeper):
    assert proc.owner_alive({"pid": sleeper.pid}) and proc.owner_alive({"pid": sleeper.pid, "start": None})


@pytest.mark.parametrize("owner", [None, {}, {"pid": "12"}, {"pid": True}, {"pid": 0}, {"pid": -4}, [1, 2]])
def test_a_malformed_owner_is_never_dead(owner):
    """What cannot be read is never reclaimed."""
    assert proc.owner_pid(owner) is None and proc.owner_alive(owner) and not proc.owner_dead(owner)


def test_stop_escalates_to_sigkill_for_a_process_that_ignores_sigterm():
    stubborn = _sleeper("import signal", "signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    polite = _sleeper()
    try:
        t0 = time.monotonic()
        left = proc.stop([proc.process(stubborn.pid), proc.process(polite.pid)], timeout=1.0)
        assert left == []
        assert polite.wait(10) == -signal.SIGTERM and stubborn.wait(10) == -signal.SIGKILL
        assert time.monotonic() - t0 < 10
    finally:
        for p in (stubborn, polite):
            p.kill()
            p.wait()


def test_stop_pid_never_signals_a_reused_pid(sleeper):
    assert proc.stop_pid(sleeper.pid, 1.0, start=proc.start_time(sleeper.pid) - 60)  # "not running": not ours
    assert sleeper.poll() is None  # untouched
    assert proc.stop_pid(sleeper.pid, 5.0, start=proc.start_time(sleeper.pid))
    assert sleeper.wait(10) == -signal.SIGTERM


def test_kill_and_reap():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    proc.kill_and_reap(child, timeout=0.1)
    assert child.returncode == -signal.SIGKILL
    proc.kill_and_reap(child)  # twice: nothing
    proc.kill_and_reap(None)


def test_stop_child_escalates_and_reaps():
    """One stop-by-escalating-signals for a subprocess child too (PgServer.stop's SIGINT, then SIGKILL)."""
    deaf = _sleeper("import signal", "signal.signal(signal.SIGINT, signal.SIG_IGN)")
    polite = _sleeper()
    proc.stop_child(polite, 5.0, (signal.SIGINT, signal.SIGKILL))
    t0 = time.monotonic()
    proc.stop_child(deaf, 0.5, (signal.SIGINT, signal.SIGKILL))
    assert polite.returncode is not None and polite.returncode != -signal.SIGKILL
    assert deaf.returncode == -signal.SIGKILL and time.monotonic() - t0 < 10
    proc.stop_child(deaf, 1.0)  # ended: nothing
    proc.stop_child(None, 1.0)


def test_kill_tree_kills_what_a_shell_script_started():
    """subprocess.run's clean-up kills the script only: its subshell's sleep (mariadb-install-db's mariadbd) ran
    on. kill_tree leaves none of them."""
    child = subprocess.Popen(["sh", "-c", "(sleep 300; true) & sleep 300 & wait"])
    deadline = time.monotonic() + 10
    while len(psutil.Process(child.pid).children(recursive=True)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    under = psutil.Process(child.pid).children(recursive=True)
    assert len(under) >= 3, under
    proc.kill_tree(child)
    assert child.returncode is not None
    gone, alive = psutil.wait_procs(under, timeout=5)
    assert alive == [], alive
