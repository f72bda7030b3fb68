from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    label: str
    resolution: float | None = None  # smallest step the probe can see, in `unit`
    lower_is_better: bool = True


@dataclass
class Target:
    """The processes doing the work, and what the engine can tell about its pages.

    pids: the engine's side (the worker itself for an embedded engine; server backends,
    or the postmaster when `reaped_children` is set, for a server engine).
    client: True when the worker is a client of a server engine: its own work (the
    calling thread, plus children it has waited for, e.g. pgbench) is measured apart as
    client_* metrics, leaving out any sampler thread.
    reaped_children: count the CPU of children each pid has reaped (cutime/cstime): the
    backends of short connections that came and went during the operation.
    threads: for a threaded server (MariaDB), the server threads serving this connection:
    their CPU is reported apart (thread_cpu_s) from the whole process's.
    """

    pids: list[int]
    page_size: int | None = None
    extra: dict = field(default_factory=dict)
    client: bool = False
    reaped_children: bool = False
    threads: list[tuple[int, int]] = field(default_factory=list)  # (pid, tid): the connection's own server thread
    client_process: bool = False  # the client is the whole worker (sessions in threads), not the calling thread

    @property
    def is_self(self) -> bool:
        return self.pids == [os.getpid()]


class Probe:
    name: str = ""
    description: str = ""
    metrics: tuple[Metric, ...] = ()
    # Probes start in ascending rank and stop in descending rank: the wall clock (highest)
    # sees only the operation, the CPU clock next sees the operation plus the wall probe.
    rank: int = 0
    default: bool = True  # among the probes a run uses without --probe

    def start(self, target: Target) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def stop(self, target: Target) -> dict[str, float]:  # pragma: no cover - interface
        raise NotImplementedError

    def details(self) -> dict:
        """After stop(): what the operation's record keeps beside the metrics (not a metric: e.g. the functions
        the instructions went to); {} by default."""
        return {}


def read_proc_kv(path: str) -> dict[str, int]:
    """Parse 'key: value' files such as /proc/PID/io and /proc/PID/status (integers only)."""
    out: dict[str, int] = {}
    with open(path, "rb") as f:
        for line in f.read().decode().splitlines():
            key, _, value = line.partition(":")
            parts = value.split()
            if parts and parts[0].isdigit():
                out[key.strip()] = int(parts[0])
    return out


def thread_ids(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []
