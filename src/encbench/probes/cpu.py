from __future__ import annotations

import os
import resource

from .base import Metric, Probe, Target

_TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def _stat_ticks(pid: int, children: bool) -> tuple[int, int]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    user, sys_ = int(fields[11]), int(fields[12])  # utime, stime (fields 14, 15)
    if children:
        user, sys_ = user + int(fields[13]), sys_ + int(fields[14])  # cutime, cstime
    return user, sys_


def _schedstat_ns(pid: int, tid: int | str) -> int:
    """Exact CPU time of one thread (/proc/PID/task/TID/schedstat, nanoseconds); 0 once it has gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (FileNotFoundError, ProcessLookupError):
        return 0


def _threads_of(pid: int) -> dict[tuple[int, str], int]:
    """(pid, tid) -> exact CPU time of each live thread of a process, in nanoseconds."""
    return {(pid, tid): _schedstat_ns(pid, tid) for tid in os.listdir(f"/proc/{pid}/task")}


class _Reading:
    """A CPU reading: exact totals where the kernel has them, user/sys ticks to split them.

    The exact total is the sum over a process's live threads, so it loses a thread that exits between two readings
    (a MariaDB server's pool threads come and go: its whole life's CPU vanished from the later reading, and the
    difference went negative). The ticks of /proc/PID/stat keep the exited threads' time: where a thread of the
    earlier reading has gone, the difference is taken from them, at their resolution (one clock tick)."""

    def __init__(self, target: Target):
        self.self_ = target.is_self
        if self.self_:
            # getrusage is exact to the microsecond for the calling process (all threads)
            ru = resource.getrusage(resource.RUSAGE_SELF)
            self.user, self.sys, self.threads = ru.ru_utime, ru.ru_stime, None
            return
        self.user = self.sys = 0.0
        self.threads: dict[tuple[int, str], int] | None = {} if not target.reaped_children else None
        for pid in target.pids:
            u, s = _stat_ticks(pid, target.reaped_children)
            self.user, self.sys = self.user + u * _TICK, self.sys + s * _TICK
            if self.threads is not None:
                self.threads.update(_threads_of(pid))

    def minus(self, before: "_Reading") -> tuple[float, float, float]:
        """(user, sys, resolution): the exact total split in the ticks' proportion, as getrusage does; the ticks
        alone where a thread of the earlier reading has exited since."""
        du, ds = self.user - before.user, self.sys - before.sys
        if self.threads is None or before.threads is None:
            return du, ds, (1e-6 if self.self_ else _TICK)
        if not before.threads.keys() <= self.threads.keys():  # a thread exited: its time is only in the ticks
            return du, ds, _TICK
        total = (sum(self.threads.values()) - sum(before.threads.values())) / 1e9
        if du + ds <= 0:
            return total, 0.0, 1e-6
        return total * du / (du + ds), total * ds / (du + ds), 1e-6


def _threads_ns(threads: list[tuple[int, int]]) -> int:
    return sum(_schedstat_ns(pid, tid) for pid, tid in threads)


def _client_times(process: bool = False) -> tuple[float, float]:
    """The calling thread (the workload's client) plus waited-for children (e.g. pgbench); with
    process=True the whole worker (clients in threads: the hash sessions; the sampler too)."""
    me = resource.getrusage(resource.RUSAGE_SELF if process else resource.RUSAGE_THREAD)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime


class CpuProbe(Probe):
    name = "cpu"
    rank = 1
    description = ("CPU time (user and sys) of the processes doing the work (getrusage or /proc/PID/stat), "
                   "and of the client for a server engine")
    # The resolution depends on the target (getrusage: 1 µs; live processes: the exact
    # schedstat total split by the stat ticks' proportion, 1 µs; reaped children: one clock
    # tick), so each measurement reports its own in cpu_resolution_s.
    metrics = (
        Metric("cpu_s", "s", "CPU"),
        Metric("cpu_user_s", "s", "CPU user"),
        Metric("cpu_sys_s", "s", "CPU sys"),
        Metric("cpu_resolution_s", "s", "CPU clock resolution"),
        Metric("client_cpu_s", "s", "client CPU"),
        Metric("client_cpu_user_s", "s", "client CPU user"),
        Metric("client_cpu_sys_s", "s", "client CPU sys"),
        Metric("thread_cpu_s", "s", "connection thread CPU"),
    )

    def start(self, target: Target) -> None:
        self._before = _Reading(target)
        if target.threads:
            self._t0 = _threads_ns(target.threads)
        if target.client:
            self._cu0, self._cs0 = _client_times(target.client_process)
            # live client processes (a native load driver that outlives the operation): exact, from /proc
            self._live0 = _Reading(Target(pids=target.extra["client_pids"])) if target.extra.get("client_pids") else None

    def stop(self, target: Target) -> dict[str, float]:
        out = {}
        if target.client:
            cu, cs = _client_times(target.client_process)
            du, ds = cu - self._cu0, cs - self._cs0
            if self._live0 is not None:
                lu, ls, _ = _Reading(Target(pids=target.extra["client_pids"])).minus(self._live0)
                du, ds = du + lu, ds + ls
            out = {"client_cpu_user_s": du, "client_cpu_sys_s": ds, "client_cpu_s": du + ds}
        if not target.pids:  # a server on another machine: nothing local to measure
            return out
        if target.threads:
            out["thread_cpu_s"] = (_threads_ns(target.threads) - self._t0) / 1e9
        du, ds, resolution = _Reading(target).minus(self._before)
        return {"cpu_user_s": du, "cpu_sys_s": ds, "cpu_s": du + ds, "cpu_resolution_s": resolution, **out}
