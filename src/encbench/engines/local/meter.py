"""What the private servers' meters share (`--meter instructions`): a server under callgrind writes its dumps in a
directory (`cg.<pid>.<N>`, and `cg.<pid>` as a process exits); an operation is counted between two marker
statements (a `--dump-before` on a function only the marker runs: MarkedBackend), or, for connections that came
and went inside it, whole once they have exited (ChurnedBackends). The engines' own meters (postgres/meter.py,
mariadb/meter.py) say which function marks, what a connection's set-up is and which threads count.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ...probes.instructions import InstructionMeter, Reading
from ...host import callgrind

WAIT_S = 120  # a process under valgrind ends its dump or its exit this much later at most
FRAMING_MARKS = 3  # markers in a row: the dump between the last two is the markers' own cost


def _newest(directory: Path, pid: int) -> Path | None:
    found = callgrind.parts(directory, pid)
    return found[-1] if found else None


def _wait_for(cond: Callable[[], bool], timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class MarkedBackend(InstructionMeter):
    """One process's dumps between marker statements: sent by `mark` (the worker's own connection) or by the
    client itself (mark=None: a native driver, which ran FRAMING_MARKS markers before it was ready). `key`: what
    one framing is measured for (a process; a connection of a threaded server)."""

    METHOD = ("the process under callgrind, counted between two marker statements (a dump as each starts), their "
              "own constant cost (measured on the connection) subtracted")
    _framing: dict[tuple, dict[str, int]] = {}  # the markers' own cost, per key

    def __init__(self, directory: str | Path, pid: int, mark: Callable[[], None] | None, *, key=None,
                 method: str = ""):
        self.dir, self.pid, self.mark = Path(directory), pid, mark
        self.key = (str(directory), pid, key)
        self.method = method or self.METHOD
        self._before: Path | None = None

    def _frame(self) -> dict[str, int]:
        key = self.key
        if key not in self._framing:
            if self.mark is not None:
                for _ in range(FRAMING_MARKS):
                    self.mark()
            newest = _newest(self.dir, self.pid)
            if newest is None:
                raise RuntimeError(f"backend {self.pid} wrote no dump at its markers in {self.dir}")
            self._framing[key] = callgrind.read(newest).totals
        return self._framing[key]

    def start(self) -> None:
        self.framing = self._frame()
        if self.mark is not None:
            self.mark()
        self._before = _newest(self.dir, self.pid)

    def stop(self) -> Reading:
        if self.mark is not None:
            self.mark()
        if not _wait_for(lambda: _newest(self.dir, self.pid) != self._before):
            raise RuntimeError(f"backend {self.pid} wrote no dump at the operation's end marker")
        dump = callgrind.read(_newest(self.dir, self.pid))
        return Reading.of([dump], self.method, minus=self.framing, detail={"processes": 1})


class ChurnedBackends(InstructionMeter):
    """The processes of connections opened and closed inside the operation (a forking server's backends), counted
    whole once they have exited: `backends()` -> [(pid, whether the connection's set-up counts)]; the set-up ends
    with the dump whose trigger names `setup_trigger`."""

    METHOD = ("each backend of the operation's own connections under callgrind, counted from the end of its "
              "set-up to its exit")
    METHOD_SETUP = "each backend of the operation's own connections under callgrind, counted whole (set-up included)"

    def __init__(self, directory: str | Path, backends: Callable[[], list[tuple[int, bool]]], setup_trigger: str):
        self.dir, self.backends, self.setup_trigger = Path(directory), backends, setup_trigger

    def start(self) -> None:
        pass

    def stop(self) -> Reading:
        found = self.backends()
        if not found:
            raise RuntimeError("the operation opened no connection to count")
        dumps, setup = [], False
        for pid, with_setup in found:
            final = callgrind.final(self.dir, pid)
            if not _wait_for(lambda: _complete(final)):
                raise RuntimeError(f"backend {pid} did not write its last dump within {WAIT_S} s of the operation")
            parts = [callgrind.read(p) for p in callgrind.parts(self.dir, pid)] + [callgrind.read(final)]
            if not with_setup:
                ends = [i for i, d in enumerate(parts) if self.setup_trigger in d.trigger]
                parts = parts[ends[0] + 1:] if ends else parts
            setup = setup or with_setup
            dumps += parts
        return Reading.of(dumps, self.METHOD_SETUP if setup else self.METHOD, detail={"processes": len(found)})


def _complete(path: Path) -> bool:
    """A process's last dump, whole (callgrind writes `totals:` last)."""
    try:
        return path.stat().st_size > 0 and "\ntotals:" in path.read_text(errors="replace")[-4096:]
    except OSError:
        return False
