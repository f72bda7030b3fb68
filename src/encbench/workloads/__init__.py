"""Workloads: the seeds' experiments, each a list of timed operations."""

from __future__ import annotations

from ..util.registry import Registry
from .backup import Backup
from .base import Operation, Workload
from .bulk import Bulk
from .column import Column
from .connect import Connect
from .dml import Dml
from .hash import Hash
from .oltp import Oltp
from .rebuild import Rebuild
from .roundtrip import Roundtrip
from .scan_eq import ScanEq
from .scan_like import ScanLike
from .sort import Sort
from .storm import Storm

WORKLOADS: Registry[Workload] = Registry("workload")
for _cls in (ScanLike, ScanEq, Dml, Rebuild, Backup, Storm, Roundtrip, Bulk, Connect, Hash, Column, Oltp, Sort):
    WORKLOADS.register(_cls.name, _cls())

__all__ = ["WORKLOADS", "Workload", "Operation"]
