from __future__ import annotations

import resource

from .base import Metric, Probe, Target, read_proc_kv, thread_ids


def _per_thread(target: Target) -> dict[tuple[int, str], tuple[int, int]]:
    """(pid, tid) -> (voluntary, involuntary) for every thread alive now.

    /proc/PID/status counts the main thread only, so every task is read. A thread that
    exits during the operation takes its count with it: its switches after the start
    are not seen (an undercount, never a negative delta).
    """
    out = {}
    for pid in target.pids:
        for tid in thread_ids(pid):
            try:
                kv = read_proc_kv(f"/proc/{pid}/task/{tid}/status")
            except (FileNotFoundError, ProcessLookupError):
                continue
            out[(pid, tid)] = (kv.get("voluntary_ctxt_switches", 0), kv.get("nonvoluntary_ctxt_switches", 0))
    return out


class ContextSwitchProbe(Probe):
    name = "ctxsw"
    description = "voluntary and involuntary context switches of the processes doing the work"
    metrics = (
        Metric("ctx_voluntary", "count", "vol. ctx switches", resolution=1),
        Metric("ctx_involuntary", "count", "invol. ctx switches", resolution=1),
        Metric("client_ctx_voluntary", "count", "client vol. ctx switches", resolution=1),
        Metric("client_ctx_involuntary", "count", "client invol. ctx switches", resolution=1),
    )

    @staticmethod
    def _client(process: bool = False) -> tuple[int, int]:
        me = resource.getrusage(resource.RUSAGE_SELF if process else resource.RUSAGE_THREAD)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_nvcsw + kids.ru_nvcsw, me.ru_nivcsw + kids.ru_nivcsw

    def start(self, target: Target) -> None:
        if target.client:
            self._client0 = self._client(target.client_process)
        if target.is_self:
            ru = resource.getrusage(resource.RUSAGE_SELF)  # all threads, exited ones included
            self._self0 = (ru.ru_nvcsw, ru.ru_nivcsw)
        else:
            self._threads0 = _per_thread(target)

    def stop(self, target: Target) -> dict[str, float]:
        out = {}
        if target.client:
            v, i = self._client(target.client_process)
            out = {"client_ctx_voluntary": v - self._client0[0], "client_ctx_involuntary": i - self._client0[1]}
        # a postmaster's reaped children take their switch counts with them: none reported
        engine = {} if target.reaped_children or not target.pids else self._engine(target)
        return {**engine, **out}

    def _engine(self, target: Target) -> dict[str, float]:
        if target.is_self:
            ru = resource.getrusage(resource.RUSAGE_SELF)
            return {"ctx_voluntary": ru.ru_nvcsw - self._self0[0], "ctx_involuntary": ru.ru_nivcsw - self._self0[1]}
        vol = invol = 0
        for key, (v, i) in _per_thread(target).items():
            v0, i0 = self._threads0.get(key, (0, 0))  # a thread born during the operation starts at 0
            vol += v - v0
            invol += i - i0
        return {"ctx_voluntary": vol, "ctx_involuntary": invol}
