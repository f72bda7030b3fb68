"""What a session is, what `prepare` is given, a live reader, a report table: the engine vocabulary workloads and the lab share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .probe import Target
from .variants import Variant


@dataclass
class PrepareContext:
    """What `prepare` needs: data size and seed, where to keep data, how to report progress."""

    size_bytes: int
    seed: int
    data_dir: Path
    scratch_dir: Path
    variants: list[Variant]
    regenerate: bool = False
    key: str | None = None
    key_source: str = "default"
    progress: Callable[[str], None] = lambda msg: None
    options: dict[str, Any] = field(default_factory=dict)
    params: dict[str, dict] = field(default_factory=dict)  # workload -> resolved --param values
    data_dir_given: bool = True  # False: data_dir is the default one (--data-dir not given)
    # --meter instructions on a server engine: {"dir": where its processes' callgrind dumps go, "cache_sim": bool,
    # "keep_dir": where a server's log is kept when it does not start under valgrind}; {} otherwise
    meter: dict[str, Any] = field(default_factory=dict)


class Session:
    """One connection in a worker process: what every engine's session has.

    What a workload calls beyond this is declared per workload family as a Protocol in
    workloads/capabilities.py; the engine's `session_class` serves a workload when it
    matches that Protocol (checked structurally, `capabilities.gaps`).
    """

    variant: Variant
    table: str  # the table the workloads read (and copy, when they mutate)
    row_count: int
    open_metrics: dict[str, float]
    info: dict = {}  # stored with the run: e.g. the server's view of the connection's TLS

    def target(self) -> Target:
        """What the probes measure (engine-side PIDs, counters, ...)."""
        raise NotImplementedError

    def set_cache(self, state: str) -> dict:
        """Untimed, before an operation: the cache state the variant asks for (cold, warm)."""
        raise NotImplementedError

    def check_operation(self, variant: Variant, metrics: dict, cache: dict) -> dict | None:
        """After an operation, with the probes' metrics: the engine's proof that it ran as its variant
        says (CheckFailedError if not); values to store, or None. By default nothing is checked."""
        return None

    def close(self) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Table:
    """One side-by-side table of a report: the workloads whose cost of one setting (the axis) it shows.

    An engine measuring one thing has one (built from Engine.axis and friends); MariaDB has
    two: encryption at rest for the at-rest workloads, TLS for the in-transit ones.
    """

    title: str
    axis: str
    baseline: str
    workloads: tuple[str, ...] | None = None  # None: every workload
    columns: tuple[str, ...] | None = None  # report.COLUMNS names; None: the at-rest default
    metric_words: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"title": self.title, "axis": self.axis, "axis_baseline": self.baseline,
                "workloads": list(self.workloads) if self.workloads else None,
                "table_columns": list(self.columns) if self.columns else None, "metric_words": dict(self.metric_words)}


def overlap_s(spans: list[tuple[float, float]]) -> float:
    """How long every session was running at once: the earliest end minus the latest start (<= 0: never)."""
    return min(e for _, e in spans) - max(s for s, _ in spans) if spans else 0.0
