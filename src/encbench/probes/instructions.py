"""The instructions probe (`--meter instructions`): the instructions the measured processes executed during
one operation, counted by valgrind's callgrind, with the functions that executed them.

What is counted comes from a meter on the target (`Target.extra["instructions"]`, an `InstructionMeter`):

- the worker itself (SQLite: the engine runs in it): `SelfMeter`. The worker runs under callgrind with
  instrumentation and counting off (lab/meterfork); `start` turns instrumentation on, zeroes the counters
  and turns counting on (client requests), `stop` turns it off and dumps: exactly the instructions
  executed between the two requests, which, the probe being the innermost (highest rank), are the
  operation's and this probe's own few returns;
- a private server started under callgrind: the engine's meter (engines/*/meter.py), which reads the
  dumps its server's processes write between two marker statements.

The reading: instructions (and, with the cache simulation, L1 and last-level misses) as metrics, and the
functions that executed the most instructions (`details()`: stored with the operation, the attribution's
input). A meter that cannot read fails the probe: the runner refuses a metered run without its count.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..host import valgrind
from ..host import callgrind
from .base import Metric, Probe, Target

PROFILE_KEY = "instructions_profile"  # the operation's extra key holding the functions


@dataclass
class Reading:
    """What a meter read for one operation: events summed over its dumps, the functions, how it was counted."""

    counts: dict[str, int]
    functions: list[list] = field(default_factory=list)  # [object, function, instructions], largest first
    method: str = ""
    detail: dict = field(default_factory=dict)  # e.g. the framing subtracted, the processes counted
    pending: str | None = None  # a dump the runner reads after the run (natively: resolve), not yet read

    @classmethod
    def later(cls, path: str, method: str) -> "Reading":
        """A dump read after the run by the runner (`resolve`): parsing it in a process under valgrind is slow."""
        return cls({}, [], method, pending=path)
    @classmethod
    def of(cls, dumps: list[callgrind.Dump], method: str, *, minus: dict[str, int] | None = None,
           limit: int = 200, detail: dict | None = None) -> "Reading":
        """Several dumps (processes, parts) summed; `minus` (a marker statement's own cost) taken off the counts."""
        counts: dict[str, int] = {}
        functions: dict[tuple[str, str], int] = {}
        for d in dumps:
            for e, n in d.totals.items():
                counts[e] = counts.get(e, 0) + n
            for key, costs in d.functions.items():
                functions[key] = functions.get(key, 0) + costs.get(callgrind.INSTRUCTIONS, 0)
        for e, n in (minus or {}).items():
            counts[e] = counts.get(e, 0) - n
        merged = callgrind.Dump("", None, None, "", list(counts), counts,
                                {k: {callgrind.INSTRUCTIONS: v} for k, v in functions.items()})
        top = [[callgrind.object_name(o), f, n] for o, f, n in merged.top(limit)]
        return cls(counts, top, method, dict(detail or {}, **({"subtracted": minus} if minus else {})))

    def metrics(self) -> dict[str, float]:
        if self.pending:
            return {}
        out = {"instructions": float(self.counts.get(callgrind.INSTRUCTIONS, 0))}
        for event, name in callgrind.CACHE_EVENTS.items():
            if event in self.counts:
                out[name] = float(self.counts[event])
        if any(e in self.counts for e in callgrind.CACHE_EVENTS):
            out["l1_misses"] = float(sum(self.counts.get(e, 0) for e in ("I1mr", "D1mr", "D1mw")))
            out["ll_misses"] = float(sum(self.counts.get(e, 0) for e in ("ILmr", "DLmr", "DLmw")))
        return out

    def profile(self) -> dict:
        if self.pending:
            return {"method": self.method, PENDING: self.pending}
        return {"method": self.method, "functions": self.functions, **self.detail}


PENDING = "pending_dump"


def resolve(record: dict) -> dict:
    """A run's record with every dump its worker left for later (`Reading.later`) read: each operation's metrics
    and functions, and the open's; the dumps deleted. Runs in the runner, natively."""
    def read(profile: dict) -> Reading | None:
        path = profile.get(PENDING)
        if not path:
            return None
        try:
            return Reading.of([callgrind.read(path)], profile.get("method", ""))
        finally:
            Path(path).unlink(missing_ok=True)

    for op in record.get("operations", []):
        reading = read(((op.get("extra") or {}).get(PROFILE_KEY)) or {})
        if reading is not None:
            op["metrics"].update(reading.metrics())
            op["extra"][PROFILE_KEY] = reading.profile()
    reading = read(record.get("open_profile") or {})
    if reading is not None:
        record["open"] = dict(record.get("open") or {}, **reading.metrics())
        record["open_profile"] = reading.profile()
    return record


class InstructionMeter:
    """Counts what one target executes between start() and stop()."""

    def start(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def stop(self) -> Reading:  # pragma: no cover - interface
        raise NotImplementedError


class SelfMeter(InstructionMeter):
    """This process, under callgrind started with --instr-atstart=no --collect-atstart=no (lab/meterfork)."""

    METHOD = ("callgrind client requests in the worker: instrumentation and counting turned on just before the "
              "operation and off just after it, one dump per operation")

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)

    def start(self) -> None:
        if not valgrind.running_on_valgrind():
            raise RuntimeError("the worker is not running under valgrind: nothing counts its instructions")
        gc.collect()  # Python's collector runs when its allocation counts say: never inside the count
        gc.disable()
        valgrind.request(valgrind.START_INSTRUMENTATION)
        valgrind.request(valgrind.ZERO_STATS)
        valgrind.request(valgrind.TOGGLE_COLLECT)

    def stop(self) -> Reading:
        valgrind.request(valgrind.TOGGLE_COLLECT)
        valgrind.dump_at(b"encbench-operation")
        valgrind.request(valgrind.STOP_INSTRUMENTATION)
        gc.enable()
        found = callgrind.parts(self.dir, os.getpid())
        if not found:
            raise RuntimeError(f"callgrind wrote no dump in {self.dir}")
        SelfMeter._dumps += 1
        kept = self.dir / f"op-{os.getpid()}-{SelfMeter._dumps}.callgrind"  # read by the runner after the run
        os.replace(found[-1], kept)
        return Reading.later(str(kept), self.METHOD)

    _dumps = 0


class InstructionsProbe(Probe):
    name = "instructions"
    description = ("instructions executed by the measured processes during the operation, counted by valgrind's "
                   "callgrind (only with --meter instructions; with its cache simulation, L1 and last-level misses)")
    rank = 3  # the innermost: started last, stopped first (the wall clock and the CPU clocks see it, not it them)
    default = False  # never among the default probes: --meter instructions adds it
    metrics = (
        Metric("instructions", "", "instructions", resolution=1.0),
        Metric("l1_misses", "", "L1 misses", resolution=1.0),
        Metric("ll_misses", "", "last-level cache misses", resolution=1.0),
        *(Metric(name, "", name.replace("_", " "), resolution=1.0) for name in callgrind.CACHE_EVENTS.values()),
    )

    def start(self, target: Target) -> None:
        self._meter = target.extra.get("instructions")
        self._reading = None
        if self._meter is None:
            raise RuntimeError("nothing counts this target's instructions (no meter on it)")
        self._meter.start()

    def stop(self, target: Target) -> dict[str, float]:
        self._reading = self._meter.stop()
        return self._reading.metrics()

    def details(self) -> dict:
        return {PROFILE_KEY: self._reading.profile()} if getattr(self, "_reading", None) else {}
