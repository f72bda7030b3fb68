from __future__ import annotations

import os

from ..vocab.probe import Metric, Target

__all__ = ["Metric", "Probe", "Target", "read_proc_kv", "thread_ids"]


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
