"""What the machine was doing during each run: the signals that explain an outlier.

Taken by the runner just before and just after each run (outside the worker, so nothing
here is inside any measured operation):

- steal: the hypervisor's stolen time, from /proc/stat (all CPUs, and the worker's CPUs when pinned);
- CPU frequency, where readable (cpufreq's scaling_cur_freq, else /proc/cpuinfo "cpu MHz");
- the 1-minute load average at both ends;
- the other processes' CPU: busy time of the whole machine (/proc/stat) minus the CPU of
  encbench's own process tree (this process, the forkserver, the reaped workers, a private
  server and its reaped backends), in cores over the run.

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


def own_cpu_s() -> float:
    """CPU of this process and its descendants, including the children they have reaped."""
    total = 0.0
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


@dataclass
class Snapshot:
    t: float
    stat: dict[str, list[int]] | None
    mhz: dict[int, float]
    load1: float | None
    own_cpu_s: float


@dataclass
class Sources:
    """Where the signals come from (replaceable in tests)."""

    clock: Callable[[], float] = time.monotonic
    stat: Callable[[], dict | None] = read_stat
    mhz: Callable[[], dict] = read_mhz
    load: Callable[[], float | None] = loadavg
    own_cpu: Callable[[], float] = own_cpu_s

    def snapshot(self) -> Snapshot:
        return Snapshot(self.clock(), self.stat(), self.mhz(), self.load(), self.own_cpu())


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
        b0, t0, s0 = busy_total_steal(before.stat["cpu"])
        b1, t1, s1 = busy_total_steal(after.stat["cpu"])
        ncpu = sum(1 for k in after.stat if k != "cpu") or 1
        total = t1 - t0
        out["steal_s"] = (s1 - s0) / hz
        out["steal_pct"] = 100.0 * (s1 - s0) / total if total > 0 else None
        out["busy_cores"] = (b1 - b0) / hz / duration if duration > 0 else None
        own = after.own_cpu_s - before.own_cpu_s
        out["own_cpu_s"] = round(own, 4)
        out["other_cpu_s"] = round((b1 - b0) / hz - own, 4)
        out["other_load_cores"] = out["other_cpu_s"] / duration if duration > 0 else None
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
        out.append(f"other processes used {other:.2f} cores (> {limit:g})")
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
    return {
        "runs": len(ctxs),
        "flagged_runs": flagged,
        "max_steal_pct": max(steal) if steal else None,
        "median_other_load_cores": other[len(other) // 2] if other else None,
        "max_other_load_cores": other[-1] if other else None,
        "thresholds": {"steal_pct": STEAL_PCT, "other_load_share_of_cpus": OTHER_LOAD_SHARE,
                       "frequency_change_pct": FREQ_CHANGE_PCT},
    }
