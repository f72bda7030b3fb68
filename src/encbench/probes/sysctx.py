from __future__ import annotations

from .base import Metric, Probe, Target


def _ctxt() -> int:
    with open("/proc/stat", "rb") as f:
        for line in f:
            if line.startswith(b"ctxt "):
                return int(line.split()[1])
    raise OSError("no ctxt line in /proc/stat")


class SystemContextSwitchProbe(Probe):
    name = "sysctx"
    description = "context switches of the whole machine (/proc/stat ctxt), client, server and kernel together"
    metrics = (Metric("system_ctx_switches", "count", "system ctx switches", resolution=1),)

    def start(self, target: Target) -> None:
        self._c0 = _ctxt()

    def stop(self, target: Target) -> dict[str, float]:
        return {"system_ctx_switches": _ctxt() - self._c0}
