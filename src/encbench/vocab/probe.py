"""What a probe measures: a metric's name and unit, and the processes the work runs in (Target)."""

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
