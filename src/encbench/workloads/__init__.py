"""Workloads: the seeds' experiments, each a list of timed operations."""

from __future__ import annotations

from ..registry import Registry
from .backup import Backup
from .base import Operation, Workload
from .dml import Dml
from .rebuild import Rebuild
from .scan_eq import ScanEq
from .scan_like import ScanLike

WORKLOADS: Registry[Workload] = Registry("workload")
for _cls in (ScanLike, ScanEq, Dml, Rebuild, Backup):
    WORKLOADS.register(_cls.name, _cls())

__all__ = ["WORKLOADS", "Workload", "Operation"]
