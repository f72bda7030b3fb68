from __future__ import annotations

import resource

from .base import Metric, Probe, Target, read_proc_kv, thread_ids


def _switches(target: Target) -> tuple[int, int]:
    if target.is_self:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_nvcsw, ru.ru_nivcsw
    vol = invol = 0
    for pid in target.pids:
        for tid in thread_ids(pid):  # /proc/PID/status counts the main thread only
            try:
                kv = read_proc_kv(f"/proc/{pid}/task/{tid}/status")
            except FileNotFoundError:
                continue
            vol += kv.get("voluntary_ctxt_switches", 0)
            invol += kv.get("nonvoluntary_ctxt_switches", 0)
    return vol, invol


class ContextSwitchProbe(Probe):
    name = "ctxsw"
    description = "voluntary and involuntary context switches of the processes doing the work"
    metrics = (
        Metric("ctx_voluntary", "count", "vol. ctx switches", resolution=1),
        Metric("ctx_involuntary", "count", "invol. ctx switches", resolution=1),
    )

    def start(self, target: Target) -> None:
        self._v0, self._i0 = _switches(target)

    def stop(self, target: Target) -> dict[str, float]:
        v, i = _switches(target)
        return {"ctx_voluntary": v - self._v0, "ctx_involuntary": i - self._i0}
