from __future__ import annotations

import os
import resource

from .base import Metric, Probe, Target

_TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def _cpu_times(target: Target) -> tuple[float, float]:
    if target.is_self:
        # getrusage is exact to the microsecond for the calling process (all threads)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime, ru.ru_stime
    user = sys_ = 0.0
    for pid in target.pids:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        user += int(fields[11]) * _TICK  # utime (field 14)
        sys_ += int(fields[12]) * _TICK  # stime (field 15)
    return user, sys_


class CpuProbe(Probe):
    name = "cpu"
    rank = 1
    description = "CPU time (user and sys) of the processes doing the work (getrusage or /proc/PID/stat)"
    # The resolution depends on the target (getrusage: 1 µs; /proc/PID/stat: one clock
    # tick), so each measurement reports its own in cpu_resolution_s.
    metrics = (
        Metric("cpu_s", "s", "CPU"),
        Metric("cpu_user_s", "s", "CPU user"),
        Metric("cpu_sys_s", "s", "CPU sys"),
        Metric("cpu_resolution_s", "s", "CPU clock resolution"),
    )

    def start(self, target: Target) -> None:
        self._u0, self._s0 = _cpu_times(target)

    def stop(self, target: Target) -> dict[str, float]:
        u, s = _cpu_times(target)
        du, ds = u - self._u0, s - self._s0
        return {"cpu_user_s": du, "cpu_sys_s": ds, "cpu_s": du + ds,
                "cpu_resolution_s": 1e-6 if target.is_self else _TICK}
