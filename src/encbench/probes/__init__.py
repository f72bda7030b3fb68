"""Probes: collectors with a small lifecycle (start/stop around one operation).

A probe attaches to the processes doing the work (a Target: the worker itself for an
embedded engine, the server backends for a server engine) and returns flat metrics.
A failing probe records nothing and never aborts the run.
"""

from __future__ import annotations

from ..util.registry import Registry
from .base import Metric, Probe, Target
from .cpu import CpuProbe
from .ctxsw import ContextSwitchProbe
from .instructions import InstructionsProbe
from .io import IoProbe
from .kworkers import KworkerProbe
from .net import NetProbe
from .pages import PagesProbe
from .sysctx import SystemContextSwitchProbe
from .waits import WaitEventProbe
from .wall import WallProbe

PROBES: Registry[type[Probe]] = Registry("probe")
for _cls in (WallProbe, CpuProbe, ContextSwitchProbe, IoProbe, PagesProbe, SystemContextSwitchProbe, NetProbe,
             WaitEventProbe, KworkerProbe, InstructionsProbe):
    PROBES.register(_cls.name, _cls)

DEFAULT_PROBES = [name for name, cls in PROBES.items() if cls.default]  # instructions: --meter instructions adds it


def metric_catalog() -> dict[str, Metric]:
    """Every metric any probe can produce, by name."""
    out: dict[str, Metric] = {}
    for _, cls in PROBES.items():
        for m in cls.metrics:
            out[m.name] = m
    return out


__all__ = ["PROBES", "DEFAULT_PROBES", "Probe", "Target", "Metric", "metric_catalog"]
