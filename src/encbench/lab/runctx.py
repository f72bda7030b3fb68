"""What the machine was doing during each run: the signals that explain an outlier.

Taken by the runner just before and just after each run (outside the worker, so nothing
here is inside any measured operation):

- steal: the hypervisor's stolen time, from /proc/stat (all CPUs, and the worker's CPUs when pinned);
- CPU frequency, where readable (cpufreq's scaling_cur_freq, else /proc/cpuinfo "cpu MHz");
- the 1-minute load average at both ends;
- the other processes' CPU: busy time of the whole machine minus the CPU of encbench's own process tree (this
  process, the forkserver, the reaped workers, a private server and its reaped backends, a server a worker
  restarted: the forkserver adopts it, forkserver_init; a gocryptfs daemon encbench mounted: it runs in the
  foreground, a child of this process, host/encfs/gocryptfs), in cores over the run, with its resolution.

Busy time is the CPUs' time over the run less their idle, iowait and stolen time from /proc/stat: on a tickless
kernel those are measured exactly, while /proc/stat's user and system time are samples taken at the timer tick,
which miss short bursts of work (a client and a server answering each other: the PostgreSQL roundtrip's
"other processes' load median -0.10 cores" on an idle machine). The tree's CPU is the kernel's exact run time
per process. Both are read as counters in clock ticks (10 ms at USER_HZ 100): `other_load_resolution_cores`
says what that truncation allows, one tick per counter that enters the difference, over the run.

A run whose context changed is flagged (`FLAGS`), with the figure that tripped it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil

from ..host.procstat import busy_total_steal, read_stat

HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
STEAL_PCT = 5.0  # % of the run's CPU time stolen by the hypervisor
OTHER_LOAD_SHARE = 0.25  # of the machine's CPUs: 0.5 cores on 2 CPUs
FREQ_CHANGE_PCT = 10.0


def read_mhz(root: str = "/sys/devices/system/cpu", cpuinfo: str = "/proc/cpuinfo") -> dict[int, float]:
    """MHz per CPU: cpufreq where the kernel exposes it, else the "cpu MHz" lines; {} when neither."""
    out: dict[int, float] = {}
    for d in sorted(Path(root).glob("cpu[0-9]*")):
        try:
            out[int(d.name[3:])] = int((d / "cpufreq" / "scaling_cur_freq").read_text()) / 1000
        except (OSError, ValueError):
            continue
    if out:
        return out
    try:
        cpu = None
        for line in Path(cpuinfo).read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "processor":
                cpu = int(value)
            elif key == "cpu MHz" and cpu is not None:
                out[cpu] = float(value)
    except (OSError, ValueError):
        return {}
    return out


def mhz_source(root: str = "/sys/devices/system/cpu") -> str:
    if any(Path(root).glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        return "cpufreq scaling_cur_freq"
    return "/proc/cpuinfo cpu MHz (as the hypervisor reports it; may not move)"


def own_cpu(root=None) -> tuple[float, int]:
    """CPU of this process (or `root`) and its descendants, including the children they have reaped, and how many
    processes that sum read.

    A sum over the tree at one moment, compared between two moments: a descendant that exits and is reaped inside
    the window moves from its own entry into its reaper's children's times, whole, so nothing is counted twice or
    lost. That holds only if what leaves is reaped inside the tree: a private server a worker restarted outlives the
    worker, and the forkserver adopts it (forkserver_init: a child subreaper) rather than init; and only for what
    stays in it: a daemon that forks away leaves it, so gocryptfs's is run in the foreground (host/encfs/gocryptfs)."""
    total, read = 0.0, 0
    me = root if root is not None else psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        total += t.user + t.system + t.children_user + t.children_system
        read += 1
    return total, read


def own_cpu_s(root=None) -> float:
    """own_cpu's seconds alone."""
    return own_cpu(root)[0]


def loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


@dataclass
class Snapshot:
    t: float
    stat: dict[str, list[float]] | None
    mhz: dict[int, float]
    load1: float | None
    own_cpu_s: float
    stat_t: float | None = None  # the clock when `stat` holds (None: t)
    own_procs: int = 0  # the processes own_cpu_s summed


def _mean_stat(a: dict | None, b: dict | None) -> dict | None:
    """Two /proc/stat reads as one at the moment between them (each counter's mean)."""
    if not a or not b:
        return a or b
    return {k: [(x + y) / 2 for x, y in zip(a[k], b[k])] for k in a if k in b}


@dataclass
class Sources:
    """Where the signals come from (replaceable in tests)."""

    clock: Callable[[], float] = time.monotonic
    stat: Callable[[], dict | None] = read_stat
    mhz: Callable[[], dict] = read_mhz
    load: Callable[[], float | None] = loadavg
    own_cpu: Callable[[], tuple[float, int]] = own_cpu

    def snapshot(self) -> Snapshot:
        """/proc/stat read on both sides of the tree's walk, their mean taken: the machine's counters and the
        tree's then hold at the same moment (the walk's own CPU, which only the tree's sum would hold at the end of
        a run and only /proc/stat's at its start, no longer pushes the difference either way)."""
        t0, first = self.clock(), self.stat()
        own, procs = self.own_cpu()
        second, t1 = self.stat(), self.clock()
        return Snapshot(t0, _mean_stat(first, second), self.mhz(), self.load(), own, (t0 + t1) / 2, procs)


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def delta(before: Snapshot, after: Snapshot, *, worker_cpus: list[int] | None = None,
          hz: int = HZ) -> dict:
    """The run's context from two snapshots, with its flags."""
    duration = after.t - before.t
    out: dict = {"duration_s": round(duration, 4)}
    ncpu = None
    if before.stat and after.stat and "cpu" in before.stat and "cpu" in after.stat:
        _, t0, s0 = busy_total_steal(before.stat["cpu"])
        _, t1, s1 = busy_total_steal(after.stat["cpu"])
        ncpu = sum(1 for k in after.stat if k != "cpu") or 1
        total = t1 - t0
        out["steal_s"] = (s1 - s0) / hz
        out["steal_pct"] = 100.0 * (s1 - s0) / total if total > 0 else None
        busy = busy_s(before, after, ncpu, hz)
        out["busy_cores"] = busy / duration if duration > 0 else None
        own = after.own_cpu_s - before.own_cpu_s
        out["own_cpu_s"] = round(own, 4)
        out["other_cpu_s"] = round(busy - own, 4)
        out["other_load_cores"] = out["other_cpu_s"] / duration if duration > 0 else None
        # one tick per counter in the difference: idle, iowait, steal, and each process of the tree
        ticks = len(NOT_BUSY) + max(before.own_procs, after.own_procs)
        out["other_load_resolution_cores"] = round(ticks / hz / duration, 4) if duration > 0 else None
        if worker_cpus:
            per = [(busy_total_steal(before.stat[f"cpu{c}"]), busy_total_steal(after.stat[f"cpu{c}"]))
                   for c in worker_cpus if f"cpu{c}" in before.stat and f"cpu{c}" in after.stat]
            wt = sum(a[1] - b[1] for b, a in per)
            ws = sum(a[2] - b[2] for b, a in per)
            out["worker_cpu_steal_pct"] = 100.0 * ws / wt if wt > 0 else None
    cpus = worker_cpus or sorted(set(before.mhz) & set(after.mhz))
    out["mhz_start"] = _mean(before.mhz.get(c) for c in cpus)
    out["mhz_end"] = _mean(after.mhz.get(c) for c in cpus)
    out["load1_start"], out["load1_end"] = before.load1, after.load1
    out["flags"] = flags(out, ncpu)
    return out


NOT_BUSY = (3, 4, 7)  # /proc/stat's idle, iowait and steal fields: exact on a tickless kernel


def busy_s(before: Snapshot, after: Snapshot, ncpu: int, hz: int = HZ) -> float:
    """The machine's busy CPU time between two snapshots: the CPUs' time over the interval less what they spent
    idle, waiting for I/O or stolen (not /proc/stat's user and system samples: module docstring)."""
    wall = (after.stat_t if after.stat_t is not None else after.t) - (
        before.stat_t if before.stat_t is not None else before.t)
    quiet = sum(after.stat["cpu"][i] - before.stat["cpu"][i] for i in NOT_BUSY
                if i < min(len(before.stat["cpu"]), len(after.stat["cpu"])))
    return ncpu * wall - quiet / hz


def flags(ctx: dict, ncpu: int | None) -> list[str]:
    """Plain words for each signal over its threshold."""
    out = []
    steal = ctx.get("worker_cpu_steal_pct")
    steal = steal if steal is not None else ctx.get("steal_pct")
    if steal is not None and steal > STEAL_PCT:
        out.append(f"steal {steal:.1f}% of the CPU time (> {STEAL_PCT:g}%)")
    other = ctx.get("other_load_cores")
    limit = OTHER_LOAD_SHARE * (ncpu or 1)
    if other is not None and other > limit:
        res = ctx.get("other_load_resolution_cores")
        out.append(f"other processes used {other:.2f}" + (f" ±{res:.2f}" if res is not None else "")
                   + f" cores (> {limit:g})")
    a, b = ctx.get("mhz_start"), ctx.get("mhz_end")
    if a and b and abs(b - a) / a * 100 > FREQ_CHANGE_PCT:
        out.append(f"CPU frequency moved {a:.0f} -> {b:.0f} MHz (> {FREQ_CHANGE_PCT:g}%)")
    return out


def summary(runs: list[dict]) -> dict:
    """Counts for the document: runs with a context, flagged runs, the worst steal and other load."""
    ctxs = [(i, r["context"]) for i, r in enumerate(runs) if isinstance(r.get("context"), dict)]
    flagged = [i for i, c in ctxs if c.get("flags")]
    steal = [c["steal_pct"] for _, c in ctxs if c.get("steal_pct") is not None]
    other = sorted(c["other_load_cores"] for _, c in ctxs if c.get("other_load_cores") is not None)
    resolution = sorted(c["other_load_resolution_cores"] for _, c in ctxs
                        if c.get("other_load_resolution_cores") is not None)
    return {
        "runs": len(ctxs),
        "flagged_runs": flagged,
        "max_steal_pct": max(steal) if steal else None,
        "median_other_load_cores": other[len(other) // 2] if other else None,
        "max_other_load_cores": other[-1] if other else None,
        "median_other_load_resolution_cores": resolution[len(resolution) // 2] if resolution else None,
        "thresholds": {"steal_pct": STEAL_PCT, "other_load_share_of_cpus": OTHER_LOAD_SHARE,
                       "frequency_change_pct": FREQ_CHANGE_PCT},
    }
