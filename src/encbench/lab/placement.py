"""CPU placement: the worker on a CPU of its own, everything else of encbench on the others.

With the CPUs this process may use (its affinity) numbered c0 < c1 < ... < cN, the worker
(and the children it starts: pgbench, mariadb-backup, a restarted MariaDB) runs on cN; the
runner, the forkserver and a private server started by the engine run on c0..cN-1. On a
2-CPU machine that is: the worker on CPU 1, the rest on CPU 0. A private server started
after the runner is pinned inherits the runner's CPUs (affinity is inherited at fork), so
the engines need no hook; a server restarted later is started where the one it replaces ran
(engines/local/affinity.py). The timed labs keep this: the client side's CPU is measured on
a CPU of its own, and a server's operations run beside nothing else of encbench.

A run with a workload whose server works as a DBA's does beside its clients (Workload.spreads_server:
the oltp mixes, where sysbench or pgbench drive the server with its background threads flushing,
purging and checkpointing) leaves its private servers on every CPU: the runner is pinned only after
the engine's prepare has started them (`spread`), so a server is never held to the runner's one CPU
while the mix it serves runs next to it. With one CPU, or where sched_setaffinity is refused, nothing is pinned
and the result file says why. Other users' processes are never moved: the pinning keeps the
worker from migrating, it does not reserve the CPU.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, field

from . import worker

METHOD = "sched_setaffinity"


@dataclass
class Placement:
    pinned: bool
    worker_cpus: list[int] = field(default_factory=list)
    rest_cpus: list[int] = field(default_factory=list)
    reason: str = ""
    previous: list[int] | None = None
    spread: bool = False  # the private servers on every CPU (pinned after prepare): Workload.spreads_server

    @property
    def before_prepare(self) -> bool:
        """Pin the runner before the engine starts its servers (they inherit the rest CPUs), or after (every CPU)."""
        return not self.spread

    def describe(self) -> dict:
        if not self.pinned:
            text = f"not pinned ({self.reason})"
        elif self.spread:
            text = (f"worker on CPU {','.join(map(str, self.worker_cpus))}; runner and forkserver on CPU "
                    f"{','.join(map(str, self.rest_cpus))}; any private server on every CPU, as a DBA's serves its "
                    f"clients ({METHOD})")
        else:
            text = (f"worker on CPU {','.join(map(str, self.worker_cpus))}; runner, forkserver and a private server "
                    f"on CPU {','.join(map(str, self.rest_cpus))} ({METHOD})")
        return {"pinned": self.pinned, "worker_cpus": self.worker_cpus, "rest_cpus": self.rest_cpus,
                "server_cpus": (self.previous if self.spread else self.rest_cpus) if self.pinned else None,
                "method": METHOD if self.pinned else None, "reason": self.reason, "text": text,
                "available_cpus": self.previous}


def _affinity() -> list[int] | None:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def choose(enabled: bool, available: list[int] | None = None, spread: bool = False) -> Placement:
    """The placement for these CPUs (default: this process's affinity); not pinned when off or impossible.
    spread: the private servers stay on every CPU (the runner pinned after prepare)."""
    available = _affinity() if available is None else sorted(available)
    if not enabled:
        return Placement(False, reason="--no-pin", previous=available)
    if not available:
        return Placement(False, reason="CPU affinity is not available on this system", previous=available)
    if len(available) < 2:
        return Placement(False, reason=f"only CPU {available[0]} is available: nothing to separate",
                         previous=available)
    return Placement(True, [available[-1]], available[:-1],
                     reason=f"{len(available)} CPUs available: the worker gets the last one", previous=available,
                     spread=spread)


def apply(p: Placement) -> Placement:
    """Pin this process (and so what it starts from now on) to the rest CPUs; refused: not pinned."""
    if not p.pinned:
        return p
    try:
        os.sched_setaffinity(0, p.rest_cpus)
    except OSError as e:
        p.pinned, p.reason = False, f"sched_setaffinity refused: {e.strerror or e}"
    return p


def restore(p: Placement) -> None:
    if p.pinned and p.previous:
        try:
            os.sched_setaffinity(0, p.previous)
        except OSError:
            pass


class _Reporting:
    """The worker's pipe end: adds the process's own CPU and affinity to a successful record."""

    def __init__(self, conn):
        self._conn = conn

    def send(self, message) -> None:
        kind, payload = message
        if kind == "ok" and isinstance(payload, dict):
            me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            payload["process"] = {"cpu_s": me.ru_utime + me.ru_stime, "children_cpu_s": kids.ru_utime + kids.ru_stime,
                                  "cpus": _affinity()}
        self._conn.send(message)

    def close(self) -> None:
        self._conn.close()


def child_main(spec: dict, conn) -> None:
    """Worker entry point: pin to spec["cpus"] first (when given), then worker.child_main."""
    cpus = spec.get("cpus")
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass  # the record's process.cpus says where it ran
    worker.child_main(spec, _Reporting(conn))
