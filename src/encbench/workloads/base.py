from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..vocab.session import Session
from ..errors import BadValueError, UnknownNameError


@dataclass(frozen=True)
class Param:
    """A workload setting a user may change with --param NAME=VALUE."""

    name: str
    description: str
    default: Any
    quick: Any  # the value under --quick
    kind: type = int
    minimum: float = 1
    maximum: float = 10**9

    def parse(self, text: str) -> Any:
        try:
            value = self.kind(text)
        except ValueError:
            raise BadValueError(f"--param {self.name}={text!r} is not a {self.kind.__name__}") from None
        if not self.minimum <= value <= self.maximum:
            raise BadValueError(f"--param {self.name}={value} is out of range",
                                hint=f"use {self.minimum:g} to {self.maximum:g}")
        return value


@dataclass
class Operation:
    """One timed step of a workload. `before`/`after` run outside the timing.

    `run` and `after` may return a dict of extra values (rows, output bytes, checks)
    stored with the operation; `check`, called with the probes' metrics once they have
    stopped, too (e.g. the client's CPU share: drivers/client_share.py).
    """

    name: str
    run: Callable[[], dict | None]
    before: Callable[[], None] | None = None
    after: Callable[[], dict | None] | None = None
    check: Callable[[dict], dict | None] | None = None


# what a row's verdict rests on: the metrics that can move for the workload, in the order they are read
FIXED_WORK = ("cpu_s", "client_cpu_s", "wall_s")  # a fixed amount of work: its time and CPU show the cost


class Workload:
    name: str = ""
    description: str = ""
    # the capability a session needs to serve it: a Protocol of workloads/capabilities.py (engines' sessions are
    # checked against it: capabilities.gaps); Session alone: nothing beyond what every session has
    needs: type = Session
    mutates: bool = False  # True: each run works on its own copy of the data
    reads_only: bool = False  # True: its CPU difference is all page decryption (per-page cost basis)
    rewrites: bool = False  # True: warm, its CPU difference is mostly page encryption (per-page write cost basis)
    params: tuple[Param, ...] = ()
    # True: each run lasts a set time (pgbench -T): its elapsed time is constant by design and its total CPU is
    # bounded by the window, so neither can show a cost; its verdict rests on what it gets done in that time
    fixed_duration: bool = False
    verdict_metrics: tuple[str, ...] = FIXED_WORK  # the analysis judges a row on these, in this order
    # True: a mix a server serves as a DBA's does, its background threads working beside the clients: the private
    # servers of its run stay on every CPU rather than on the runner's (lab/placement.py)
    spreads_server: bool = False

    def describe(self) -> dict:
        return {"description": self.description, "mutates": self.mutates, "reads_only": self.reads_only,
                "rewrites": self.rewrites, "fixed_duration": self.fixed_duration,
                "verdict_metrics": list(self.verdict_metrics)}

    def operations(self, session: Session, scratch: Path, params: dict) -> list[Operation]:  # pragma: no cover
        raise NotImplementedError


# any workload: a CPU profile with perf during the warmup runs (profiler.with_profiles; hash has its own)
COMMON_PARAMS = (Param("profile", "1: record a CPU profile with perf during the warmup runs", 0, 0, minimum=0,
                       maximum=1),)


def resolve_params(workloads: list[Workload], given: list[str], *, quick: bool,
                   engine_workloads: list[Workload] | None = None) -> dict[str, dict]:
    """{workload: {param: value}} from defaults (or quick values) and --param NAME=VALUE.

    A parameter of another workload of the same engine is accepted (and unused), so one
    set of --param works whatever --workload narrows; any other name is an error. Every
    value is checked against the range each workload declaring it gives, used or not
    (`seconds=-1` is refused on a run without oltp too, never ignored).
    """
    known: dict[str, list[Param]] = {}
    for wl in (engine_workloads or workloads):
        for p in (*COMMON_PARAMS, *wl.params):
            known.setdefault(p.name, []).append(p)
    overrides: dict[str, str] = {}
    for spec in given:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip():
            raise BadValueError(f"--param {spec!r} is not NAME=VALUE", hint="e.g. --param messages=50000")
        if name.strip() not in known:
            raise UnknownNameError(f"unknown --param {name.strip()!r} for the workloads chosen",
                                   hint=f"valid: {', '.join(known) or 'none'}")
        overrides[name.strip()] = value.strip()
        for p in known[name.strip()]:
            p.parse(value.strip())
    return {
        wl.name: {p.name: p.parse(overrides[p.name]) if p.name in overrides else (p.quick if quick else p.default)
                  for p in wl.params + tuple(c for c in COMMON_PARAMS if c.name in overrides)}
        for wl in workloads
    }


def spread_ranges(rows: int, count: int, fraction: float) -> list[tuple[int, int]]:
    """`count` id ranges of `fraction` of the rows each, spread evenly over the table."""
    width = max(1, int(rows * fraction))
    step = max(1, (rows - width) // max(1, count - 1)) if count > 1 else 0
    return [(1 + i * step, i * step + width) for i in range(count)]
