from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..engines.base import Session


@dataclass
class Operation:
    """One timed step of a workload. `before`/`after` run outside the timing.

    `run` and `after` may return a dict of extra values (rows, output bytes, checks)
    stored with the operation.
    """

    name: str
    run: Callable[[], dict | None]
    before: Callable[[], None] | None = None
    after: Callable[[], dict | None] | None = None


class Workload:
    name: str = ""
    description: str = ""
    mutates: bool = False  # True: each run works on its own copy of the data
    reads_only: bool = False  # True: its CPU difference is all page decryption (per-page cost basis)

    def describe(self) -> dict:
        return {"description": self.description, "mutates": self.mutates, "reads_only": self.reads_only}

    def operations(self, session: Session, scratch: Path) -> list[Operation]:  # pragma: no cover
        raise NotImplementedError


def spread_ranges(rows: int, count: int, fraction: float) -> list[tuple[int, int]]:
    """`count` id ranges of `fraction` of the rows each, spread evenly over the table."""
    width = max(1, int(rows * fraction))
    step = max(1, (rows - width) // max(1, count - 1)) if count > 1 else 0
    return [(1 + i * step, i * step + width) for i in range(count)]
