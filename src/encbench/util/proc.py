"""Process life, in one place: is a process alive (its pid AND its start time, so a reused pid is never taken for
it), the owner of a record (this process, or a dead or live one), stopping processes by escalating signals, and
killing a child on error.

Owner records (util/owners, util/leftovers, host/memcg, host/encfs/ledger) all hold `me()`: {"pid", "start",
"since_boot"}. An owner is dead when no process has its pid, when the process with its pid is a zombie, or when that
process started at another time (the pid was reused): only then is what it left reclaimed. "start" is seconds since
the epoch (the kernel's boot time, whole seconds that move when the clock is set, plus the start in clock ticks
since boot): it tells a process of an earlier boot, within START_TOLERANCE_S. "since_boot" is the start in clock
ticks since boot, exact: two reads of one process agree to the tick, whatever the clock did. A record without a start
time (never written by this version) is dead only when its pid is gone: a live pid cannot be told apart from it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Iterable

import psutil

START_TOLERANCE_S = 2.0  # "start" = boot time (whole seconds, moved by clock changes: +-1 s) + ticks since boot
TICK_TOLERANCE_S = 0.005  # "since_boot": the same process reads the same number of ticks (0.01 s each)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGKILL)


def start_time(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), or None when there is no such process."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, ValueError, OverflowError):
        return None


def since_boot(pid: int) -> float | None:
    """When process `pid` started, in seconds since boot (/proc/PID/stat's starttime in clock ticks: exact, never
    moved by the clock), or None when there is no such process."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])  # field 22; fields 1-2 are before ")"
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _number(value) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


PF_EXITING = 0x4  # the kernel's task flag: do_exit has begun (set before the process closes its files and sockets)


def running(pid: int) -> bool:
    """A process with this pid exists and has not ended (a zombie has: its parent may not be us) nor begun to end."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            return stat_running(f.read())
    except (OSError, ValueError):
        return False


def stat_running(stat: bytes) -> bool:
    """/proc/PID/stat says the process runs: not a zombie and not exiting. A killed postmaster closes its listening
    socket while it exits and only then becomes a zombie: in between, a client is refused ("the server went away")
    while the state letter still reads as running (test_pg_server_log failed 1 in 5), so the exiting flag counts."""
    try:
        fields = stat.rsplit(b")", 1)[1].split()
        state, flags = fields[0], int(fields[6])
    except (IndexError, ValueError):
        return False
    return state not in (b"Z", b"X") and not flags & PF_EXITING


def alive(pid: int, start: float | None = None, ticks: float | None = None) -> bool:
    """Process `pid` runs and, when `start` (and `ticks`: seconds since boot) is given, is the one that started then
    (not a reused pid)."""
    if not running(pid):
        return False
    if start is not None:
        started = start_time(pid)
        if started is None or abs(started - start) >= START_TOLERANCE_S:
            return False
    if ticks is not None:
        now = since_boot(pid)
        if now is None or abs(now - ticks) >= TICK_TOLERANCE_S:
            return False
    return True


def identity(pid: int) -> dict:
    """What an owner record keeps of a process: its pid and start time, two ways (see the module's docstring)."""
    return {"pid": pid, "start": start_time(pid), "since_boot": since_boot(pid)}


def me() -> dict:
    """This process as an owner record holds it."""
    return identity(os.getpid())


def owner_pid(owner) -> int | None:
    """The pid of a well-formed owner record ({"pid": int, "start": number or None}), else None."""
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int) or isinstance(owner.get("pid"), bool):
        return None
    return owner["pid"] if owner["pid"] > 0 else None


def owner_alive(owner) -> bool:
    """Is the owner of a record still running (pid + start time)? A malformed record counts as alive: what
    cannot be read is never reclaimed."""
    pid = owner_pid(owner)
    if pid is None:
        return True
    return alive(pid, _number(owner.get("start")), _number(owner.get("since_boot")))


def owner_dead(owner) -> bool:
    """What a reclaimer asks: a well-formed record of another process that is gone (never this process's)."""
    pid = owner_pid(owner)
    return pid is not None and pid != os.getpid() and not owner_alive(owner)


def process(pid: int, start: float | None = None, ticks: float | None = None) -> psutil.Process | None:
    """The psutil handle of process `pid` if it runs and (given `start`, `ticks`) is that one; it then refuses to
    signal a later process that reuses the pid."""
    if not alive(pid, start, ticks):
        return None
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def stop(procs: Iterable[psutil.Process], timeout: float, signals: tuple = STOP_SIGNALS) -> list[psutil.Process]:
    """Send each signal in turn (SIGTERM, then SIGKILL) to the processes still running, waiting up to `timeout`
    after each; the processes still running at the end. A pid that was reused is never signalled (psutil checks
    the start time)."""
    left = [p for p in procs if _running(p)]
    for sig in signals:
        if not left:
            break
        for p in left:
            try:
                p.send_signal(sig)
            except psutil.Error:  # gone already, or not ours to signal: the wait below tells
                pass
        deadline = time.monotonic() + timeout
        while left and time.monotonic() < deadline:
            left = [p for p in left if _running(p)]
            if left:
                time.sleep(0.02)
    return [p for p in left if _running(p)]


def stop_pid(pid: int, timeout: float, signals: tuple = STOP_SIGNALS, start: float | None = None) -> bool:
    """stop() of one pid (with its start time when known); True when it no longer runs."""
    p = process(pid, start)
    return p is None or not stop([p], timeout, signals)


def stop_child(proc: subprocess.Popen | None, timeout: float, signals: tuple = STOP_SIGNALS) -> None:
    """stop() of a child started with subprocess: each signal in turn (SIGTERM, then SIGKILL) while it runs,
    waiting up to `timeout` after each; reaped (no zombie). The last signal should be SIGKILL: it is waited for
    without end."""
    if proc is None or proc.poll() is not None:
        return
    for i, sig in enumerate(signals):
        try:
            proc.send_signal(sig)
        except OSError:
            pass
        try:
            proc.wait(None if i == len(signals) - 1 else timeout)
            return
        except subprocess.TimeoutExpired:
            continue


def kill_and_reap(proc: subprocess.Popen | None, timeout: float = 0.0) -> None:
    """A child started with subprocess that must not outlive an error: wait up to `timeout` for it to end,
    then SIGKILL it, and reap it (no zombie)."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.wait(timeout)
        return
    except subprocess.TimeoutExpired:
        pass
    stop_child(proc, 0.0, (signal.SIGKILL,))


def kill_tree(proc: subprocess.Popen | None) -> None:
    """SIGKILL a child and every process under it, then reap the child. A set-up tool that is a shell script
    (mariadb-install-db, whose subshells start mariadbd --bootstrap) leaves its children running when only the
    script is killed: subprocess.run's clean-up on Ctrl-C. Each process is stopped (SIGSTOP) before its
    children are listed, so none forks one more unseen; then all are killed."""
    if proc is None or proc.poll() is not None:
        return
    tree: list[psutil.Process] = []
    try:
        todo = [psutil.Process(proc.pid)]
    except psutil.Error:
        todo = []
    while todo:
        p = todo.pop()
        try:
            p.suspend()
            tree.append(p)
            todo.extend(p.children())
        except psutil.Error:  # gone already
            continue
    stop(tree, 0.0, (signal.SIGKILL,))  # a stopped process dies of SIGKILL too
    kill_and_reap(proc)
