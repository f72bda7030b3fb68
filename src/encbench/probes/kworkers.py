"""CPU time of the kernel's worker threads, and of the whole machine, over one operation.

Some work done for a process runs in no thread of it: fscrypt decrypts a file's pages in kernel
worker threads (the ext4 read path queues them on the fscrypt_read_queue workqueue, served by
`kworker/u*` threads), so neither the server's CPU nor the client's holds it. This probe sums the
CPU time of every kernel thread (a child of kthreadd, pid 2) whose name starts with "kworker",
before and after the operation: exact nanoseconds from /proc/PID/schedstat where the kernel has
them, else the utime + stime clock ticks of /proc/PID/stat.

- a kworker that appears during the operation counts from 0 (it did not exist before);
- one that exits during the operation takes its CPU time with it: `kworkers_exited` says how many did
  (its time is lost, never estimated); a pid reused by a new thread is told apart by its start time;
- the workers serve the whole machine: what else runs (another process's I/O) is in it too, so a
  per-page cost is the difference against a baseline measured the same way (analysis/summary.py).

`host_cpu_s` is the broader figure: the non-idle CPU of the whole machine from /proc/stat (user,
nice, system, irq, softirq; not idle, iowait or steal), all cores, over the same interval.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .base import Metric, Probe, Target

_TICK = 1.0 / os.sysconf("SC_CLK_TCK")
KTHREADD_PID = 2
PREFIX = b"kworker"
HOST_BUSY_FIELDS = (0, 1, 2, 5, 6)  # /proc/stat cpu: user nice system [idle iowait] irq softirq [steal guest...]


@dataclass(frozen=True)
class Worker:
    start: int  # start time in clock ticks since boot: a pid reused by another thread is another worker
    ns: int | None  # schedstat's exact run time, None where the kernel has none
    ticks: int  # utime + stime


def _parse_stat(raw: bytes) -> tuple[bytes, list[bytes]] | None:
    """(comm, the fields after it) of a /proc/PID/stat line; None when it does not parse."""
    open_, close = raw.find(b"("), raw.rfind(b")")
    if open_ < 0 or close < open_:
        return None
    return raw[open_ + 1:close], raw[close + 1:].split()


def kworkers(proc: str | Path = "/proc") -> dict[int, Worker]:
    """pid -> Worker for every kernel worker thread now (kthreadd's children named kworker*)."""
    proc = Path(proc)
    out: dict[int, Worker] = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            parsed = _parse_stat((proc / name / "stat").read_bytes())
        except OSError:  # gone since the listing
            continue
        if parsed is None:
            continue
        comm, fields = parsed
        # fields[0] is the state (field 3): ppid is field 4, utime/stime 14/15, starttime 22
        if len(fields) < 20 or not comm.startswith(PREFIX) or fields[1] != str(KTHREADD_PID).encode():
            continue
        try:
            ns: int | None = int((proc / name / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            ns = None
        out[int(name)] = Worker(start=int(fields[19]), ns=ns, ticks=int(fields[11]) + int(fields[12]))
    return out


def host_busy_ticks(proc: str | Path = "/proc") -> int:
    """Non-idle clock ticks of all cores since boot (/proc/stat's cpu line)."""
    with open(Path(proc) / "stat", "rb") as f:
        for line in f:
            if line.startswith(b"cpu "):
                values = line.split()[1:]
                return sum(int(values[i]) for i in HOST_BUSY_FIELDS if i < len(values))
    raise OSError("no cpu line in /proc/stat")


def kworker_delta(before: dict[int, Worker], after: dict[int, Worker]) -> dict[str, float]:
    """The CPU the kernel workers spent between two snapshots, how many appeared and how many exited."""
    exact = all(w.ns is not None for w in (*before.values(), *after.values()))
    total, new = 0.0, 0
    for pid, w in after.items():
        old = before.get(pid)
        if old is None or old.start != w.start:
            old, new = None, new + 1
        if exact:
            total += (w.ns - (old.ns if old else 0)) / 1e9
        else:
            total += (w.ticks - (old.ticks if old else 0)) * _TICK
    exited = sum(1 for pid, w in before.items() if pid not in after or after[pid].start != w.start)
    return {"kworker_cpu_s": total, "kworkers_new": new, "kworkers_exited": exited,
            "kworker_cpu_resolution_s": 1e-6 if exact else _TICK}


class KworkerProbe(Probe):
    name = "kworkers"
    description = ("CPU time of the kernel's worker threads (kworker*, where fscrypt decrypts) and non-idle CPU of the "
                   "whole machine (/proc/stat), over the operation")
    metrics = (
        Metric("kworker_cpu_s", "s", "kernel worker CPU", resolution=1e-6),
        Metric("kworkers_new", "count", "kernel workers started", resolution=1),
        Metric("kworkers_exited", "count", "kernel workers exited (their CPU lost)", resolution=1),
        Metric("kworker_cpu_resolution_s", "s", "kernel worker CPU clock resolution"),
        Metric("host_cpu_s", "s", "host CPU (all cores, non-idle)", resolution=_TICK),
    )
    # rank -1: started first and stopped last, so its own scans of /proc (a few ms, hundreds of small reads) are
    # in no other probe's window (not in the io probe's read_syscall_bytes of an embedded engine's worker, nor
    # in the clocks); host_cpu_s is read inside the scans (after the first, before the second): not in it either
    rank = -1
    proc = "/proc"

    def start(self, target: Target) -> None:
        self._workers = kworkers(self.proc)
        self._host = host_busy_ticks(self.proc)

    def stop(self, target: Target) -> dict[str, float]:
        host = host_busy_ticks(self.proc)
        out = kworker_delta(self._workers, kworkers(self.proc))
        out["host_cpu_s"] = (host - self._host) * _TICK
        return out
