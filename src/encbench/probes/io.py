from __future__ import annotations

from .base import Metric, Probe, Target, read_proc_kv

_KEYS = {"read_bytes": "read_bytes", "write_bytes": "write_bytes", "rchar": "read_syscall_bytes", "wchar": "write_syscall_bytes"}


def _io(target: Target) -> dict[str, int]:
    total = dict.fromkeys(_KEYS.values(), 0)
    for pid in target.pids:
        kv = read_proc_kv(f"/proc/{pid}/io")
        for src, dst in _KEYS.items():
            total[dst] += kv.get(src, 0)
    return total


class IoProbe(Probe):
    name = "io"
    description = "bytes read/written from storage (read_bytes: physical) and by syscalls (rchar), /proc/PID/io"
    metrics = (
        Metric("read_bytes", "B", "read from storage", resolution=4096),
        Metric("write_bytes", "B", "written to storage", resolution=4096),
        Metric("read_syscall_bytes", "B", "read by syscalls", resolution=1),
        Metric("write_syscall_bytes", "B", "written by syscalls", resolution=1),
    )

    def start(self, target: Target) -> None:
        self._before = _io(target)

    def stop(self, target: Target) -> dict[str, float]:
        if target.reaped_children or not target.pids:
            return {}  # reaped children's I/O is not in the parent's /proc/PID/io; no local pids: nothing
        after = _io(target)
        return {k: after[k] - self._before[k] for k in after}
