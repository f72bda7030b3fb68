"""estimate --live: a server's own counters, sampled over one read-only connection, turned into the rate of each
term of the encryption bill (analysis/bill.py). One sampler per server engine, in that engine's `live.py`.

A rate is (units per second or None, where it was read, why there is none); a term that does not apply to the
engine or to this server's setup is absent with its reason (never a zero rate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

RateReading = tuple  # (value per second | None, source, why | None)
# the bill's commits term (a write transaction's own encryption cost, SQLite's) on a server engine: its commit writes
# log records, which the log term prices per byte (absent there, never a zero)
COMMITS_AS_LOG = "a commit's encryption here is its log records' (WAL / redo), priced by the log bytes term"


@dataclass
class LiveRates:
    rates: dict[str, RateReading]
    absent: dict[str, str]
    facts: dict  # the target's setup: engine, page_size, cipher (or None), version
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


class LiveSampler:
    """`sample()` -> counter name -> value so far; `watch()`, called every WATCH_S in between: what only a look at
    the moment shows (the sessions connected and whether each is on TLS), kept in `seen`; `rates(first, last,
    seconds, all_tls)` -> LiveRates; `facts` the server's setup read once at connect; `close()`. Every statement
    it runs is a read. `look`, where given, is called every LOOK_S between watches: a cheap look at the host (the
    server's sockets' counters, host/sockets.py) that a short connection would slip between two watches of."""

    WATCH_S = 0.2
    LOOK_S = 0.02

    def __init__(self, conn, sample: Callable, rates: Callable, facts: dict, watch: Callable | None = None,
                 look: Callable | None = None):
        self.conn, self._sample, self._rates, self.facts, self._watch = conn, sample, rates, facts, watch
        self.look = look
        self.seen: dict = {}

    def sample(self) -> dict[str, float]:
        return self._sample(self.conn)

    def watch(self) -> None:
        if self._watch is not None:
            self._watch(self.conn, self.seen)

    def rates(self, first: dict, last: dict, seconds: float, all_tls: bool) -> LiveRates:
        return self._rates(first, last, seconds, all_tls, dict(self.facts, seen=self.seen))

    def close(self) -> None:
        self.conn.close()


def per_second(first: dict, last: dict, name: str, seconds: float) -> float:
    return (last.get(name, 0.0) - first.get(name, 0.0)) / seconds
