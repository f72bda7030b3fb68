"""One run: executed in a fresh worker process with a fresh connection.

The runner sends a plain dict (the run spec) and gets a plain dict back; nothing in
here knows an engine, workload or probe by name: they come from the registries.
"""

from __future__ import annotations

import os
import signal
import shutil
import sys
import time
from pathlib import Path

from ..engines import ENGINES
from ..errors import EncbenchError
from ..probes import PROBES
from ..profiling.profiler import with_profiles
from ..workloads import WORKLOADS
from ..probes.instructions import SelfMeter
from ..util import interrupts, liblog


def _measure(op, session, variant: dict, probe_names: list[str], self_meter=None) -> dict:
    if op.before:
        op.before()
    cache = session.set_cache(variant["cache"]) if "cache" in variant else {}
    target = session.target()
    if self_meter is not None and target.is_self:  # --meter instructions: the worker itself is counted
        target.extra.setdefault("instructions", self_meter)
    probes = sorted((PROBES.get(n)() for n in probe_names), key=lambda p: p.rank)
    started, errors, metrics = [], {}, {}
    for p in probes:
        try:
            p.start(target)
            started.append(p)
        except Exception as e:  # a failing probe records nothing, the run goes on
            errors[p.name] = f"{type(e).__name__}: {e}"
    extra = op.run()
    details = {}
    for p in reversed(started):
        try:
            metrics.update(p.stop(target))
            details.update(p.details())
        except Exception as e:
            errors[p.name] = f"{type(e).__name__}: {e}"
    extra = dict(extra) if isinstance(extra, dict) else {}
    extra.update(details)
    # the engine's own proof that the operation ran as its variant says (Session.check_operation)
    extra.update(session.check_operation(variant, metrics, cache) or {})
    if op.check is not None:  # the workload's own reading of the metrics (e.g. the client's CPU share)
        extra.update(op.check(metrics) or {})
    post = op.after() if op.after else None
    if isinstance(post, dict):
        extra.update(post)
    return {
        "operation": op.name,
        "metrics": metrics,
        "extra": extra,
        "cache": cache,
        "probe_errors": errors,
    }


def execute(spec: dict) -> dict:
    engine = ENGINES.get(spec["engine"])
    workload = WORKLOADS.get(spec["workload"])
    variant = spec["variant"]
    scratch = Path(spec["scratch_dir"]) / f"run-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.time()
    meter = _self_meter(spec)
    count_open = meter is not None and spec["meter"].get("open")
    open_profile = None
    try:
        if count_open:  # the open (key derivation) is counted too, its own row "(open)", in one workload's runs
            meter.start()
        session = engine.open_session(spec["setup"], variant, mutable=workload.mutates, scratch_dir=scratch)
        if count_open:
            reading = meter.stop()
            session.open_metrics = dict(session.open_metrics, **reading.metrics())
            open_profile = reading.profile()
        try:
            params = dict(spec.get("params", {}), _warmup=bool(spec.get("warmup")), _metered=bool(spec.get("meter")))
            ops = [_measure(op, session, variant, spec["probes"], meter)
                   for op in with_profiles(workload, session, scratch, params,
                                           workload.operations(session, scratch, params))]
        finally:
            session.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        "worker_pid": os.getpid(),
        "started_at": started,
        "open": session.open_metrics,
        **({"open_profile": open_profile} if open_profile else {}),
        "session": session.info,
        "operations": ops,
    }


def _self_meter(spec: dict):
    """--meter instructions with an engine that runs in the worker (lab/meterfork started it under callgrind):
    the meter of this process; else None."""
    meter = spec.get("meter") or {}
    if meter.get("self_dir"):
        return SelfMeter(meter["self_dir"])
    return None


ORPHANED_EXIT = 96  # the runner died (SIGKILL): nobody to report to, exit quietly after the clean-up
PR_SET_PDEATHSIG = 1
_parent = None


class Orphaned(SystemExit):
    def __init__(self):
        super().__init__(ORPHANED_EXIT)


def _exit_on_sigterm(signum, frame) -> None:
    interrupts.STOP.set()  # what the libraries log while it unwinds is the interruption's (util/liblog)
    if _parent is not None and os.getppid() != _parent:
        raise Orphaned()  # our parent died (PR_SET_PDEATHSIG): no one will read a result
    sys.exit(143)  # SystemExit: finally blocks close the session and remove the scratch files


def _die_with_parent() -> None:
    """SIGTERM when the parent (the forkserver, which exits when the runner dies) goes: the orphan
    stops its run in order (its finally blocks) instead of finishing it for nobody."""
    global _parent
    _parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the broken pipe below still ends it quietly
        pass
    if os.getppid() != _parent:  # the parent died before the request was made
        raise Orphaned()


def _send(conn, message) -> None:
    try:
        conn.send(message)
    except (BrokenPipeError, ConnectionResetError, EOFError):
        raise Orphaned() from None  # the runner is gone: nothing to say, nothing to print


def child_main(spec: dict, conn) -> None:
    """Entry point of a worker process: run, send ("ok", record) or the error back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's to handle
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    liblog.install()
    _die_with_parent()
    try:
        _send(conn, ("ok", execute(spec)))
    except EncbenchError as e:
        _send(conn, ("error", e))
    except Exception as e:
        _send(conn, ("exception", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()
