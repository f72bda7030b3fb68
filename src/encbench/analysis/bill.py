"""The encryption bill of a server (issue 31): the CPU encryption adds, as a sum of terms, each a measured unit
cost times a measured rate.

    added cores = sum over terms of  rate (units/s) x unit cost (CPU-s per unit)

A term is one kind of work encryption does: page reads decrypted, page writes encrypted, log and temporary file
bytes encrypted (at rest); TLS sessions opened, bytes carried, and records received and sent by the server (in
transit: a record the server receives, a client's request, costs it a wake-up, the record's reads and a decrypt, far
more than one it sends, so the two are priced apart). A term that does not apply
to an engine or a setup is absent (with the reason), never a zero. A term whose unit cost does not resolve (missing,
not above zero, or a CI reaching zero) or whose rate could not be read leaves the bill "not resolved", naming the
term and what would resolve it: there is then no total, never a partial or negative one.

The total's 95% CI is by the delta method: each term's 95% half-width is taken as 1.96 standard errors of its unit
cost; the rates are counts of every event in the sampled window, taken as exact (whether the window is typical of
the server is a question no interval answers); the terms' errors are independent (measured in different runs), so
their variances add.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

Z95 = 1.959964
METHOD = ("delta method: each unit cost's 95% half-width taken as 1.96 standard errors, the rates (counts of every "
          "event in the sampled window) as exact, the terms' variances added")


@dataclass(frozen=True)
class TermKind:
    """What a term counts: its name in options and JSON, its words, the unit of its rate, and its side."""

    name: str
    label: str  # "page reads"
    unit: str  # what one unit of the rate is: "page", "byte", "session", "record"
    side: str  # "at rest" or "in transit"


TERM_KINDS = {k.name: k for k in (
    TermKind("reads", "page reads", "page", "at rest"),
    TermKind("writes", "page writes", "page", "at rest"),
    TermKind("log_bytes", "log bytes", "byte", "at rest"),
    TermKind("commits", "write transactions (commits)", "commit", "at rest"),
    TermKind("temp_bytes", "temporary file bytes", "byte", "at rest"),
    TermKind("tls_handshakes", "new TLS sessions (full handshakes)", "session", "in transit"),
    TermKind("tls_resumptions", "resumed TLS sessions", "session", "in transit"),
    TermKind("tls_bytes", "bytes over TLS", "byte", "in transit"),
    TermKind("tls_records_in", "TLS records received by the server", "record", "in transit"),
    TermKind("tls_records_out", "TLS records sent by the server", "record", "in transit"),
)}
# the one in-transit term of a calibration file from before records were priced apart (calibration VERSION 1): a
# message either way, in and out alike
OLD_MESSAGES = "tls_messages"
TLS_RECORDS = ("tls_records_in", "tls_records_out")


@dataclass(frozen=True)
class UnitCost:
    """A measured CPU cost per unit (seconds), its 95% CI, where it was measured, and how many runs per side."""

    value: float | None
    ci: tuple[float, float] | None
    source: str
    runs: int | None = None
    why: str | None = None  # set when there is no measured cost at all

    def unresolved(self) -> str | None:
        """Why this cost is no figure to act on (with what would resolve it), else None."""
        if self.value is None:
            return self.why or f"no measured cost ({self.source})"
        if self.value <= 0 or not self.ci or self.ci[0] <= 0:
            return (f"its cost {fmt_cost(self.value, self.ci)} is not resolved "
                    f"(the 95% CI {'reaches' if self.value > 0 else 'is not above'} zero); {runs_hint(self)}")
        return None


def runs_hint(cost: UnitCost) -> str:
    """What would resolve a cost, from the spread it was measured with: the runs per side that shrink its 95%
    half-width to half the cost (the half-width falls as 1/sqrt(runs)), or a larger data size."""
    if not cost.ci:
        return "measure it with at least 2 runs per side"
    half = (cost.ci[1] - cost.ci[0]) / 2
    size = cost.value if cost.value and cost.value > 0 else max(cost.ci[1], 0) / 2  # the cost to tell from zero
    if size <= 0 or half <= 0:
        return "no cost above zero was seen: encryption's cost is below what these runs can tell apart"
    n = cost.runs or 6
    factor = (half / (0.5 * size)) ** 2
    need = max(n + 1, math.ceil(n * factor))
    return (f"at this spread about {need} runs per side would resolve it ({n} now), or a data size about "
            f"{max(2, math.ceil(factor))}x larger per run")


@dataclass(frozen=True)
class Rate:
    """A measured rate (units per second) and where it was read; value None: it could not be read (why)."""

    value: float | None
    source: str
    why: str | None = None


@dataclass(frozen=True)
class Term:
    name: str
    unit_cost: float | None
    ci: tuple[float, float] | None
    cost_source: str
    rate: float | None
    rate_source: str
    why: str | None = None  # not resolved: why, and what would resolve it

    @property
    def kind(self) -> TermKind:
        return TERM_KINDS[self.name]

    @property
    def cores(self) -> float | None:
        if self.why:
            return None
        return 0.0 if self.rate == 0 else self.rate * self.unit_cost

    @property
    def cores_ci(self) -> tuple[float, float] | None:
        if self.why:
            return None
        if self.rate == 0:  # no event in the window: nothing to pay, whatever the unit cost
            return (0.0, 0.0)
        return (self.rate * self.ci[0], self.rate * self.ci[1])

    def to_dict(self) -> dict:
        return {"name": self.name, "label": self.kind.label, "side": self.kind.side, "unit": self.kind.unit,
                "unit_cost_s": self.unit_cost, "unit_cost_ci": list(self.ci) if self.ci else None,
                "cost_source": self.cost_source, "rate_per_s": self.rate, "rate_source": self.rate_source,
                "added_cores": self.cores, "added_cores_ci": list(self.cores_ci) if self.cores_ci else None,
                "resolved": self.why is None, "why": self.why}


def term(name: str, cost: UnitCost | None, rate: Rate) -> Term:
    """One term of the bill; not resolved when its cost or its rate is."""
    if name not in TERM_KINDS:
        raise ValueError(f"unknown bill term {name!r}")
    label = TERM_KINDS[name].label
    why = None
    parts = []
    if rate.value is None:
        parts.append(f"no rate ({rate.why or rate.source})")
    elif rate.value < 0:
        parts.append(f"the rate read is negative ({rate.value:g}/s from {rate.source}): a counter was reset")
    if rate.value != 0:  # 0 x any cost is 0: the term resolves whether or not its cost did
        if cost is None:
            parts.append("no measured unit cost in the files given")
        elif cost.unresolved():
            parts.append(cost.unresolved())
    if parts:
        why = f"{label}: " + "; and ".join(parts)
    return Term(name, cost.value if cost else None, tuple(cost.ci) if cost and cost.ci else None,
                cost.source if cost else "", rate.value, rate.source, why)


@dataclass
class Bill:
    terms: list[Term]
    cores: int  # the server's cores, for the share
    absent: dict[str, str] = field(default_factory=dict)  # term name -> why it does not apply here
    total: float | None = None  # added cores
    ci: tuple[float, float] | None = None
    resolved: bool = False
    reasons: list[str] = field(default_factory=list)
    method: str = METHOD

    @property
    def share(self) -> float | None:
        return None if self.total is None else self.total / self.cores

    def to_dict(self) -> dict:
        return {"resolved": self.resolved, "added_cores": self.total, "added_cores_ci": list(self.ci) if self.ci else None,
                "cores": self.cores, "share_of_server": self.share,
                "share_ci": [x / self.cores for x in self.ci] if self.ci else None, "reasons": list(self.reasons),
                "terms": [t.to_dict() for t in self.terms],
                "absent": [{"name": k, "label": TERM_KINDS[k].label, "why": v} for k, v in self.absent.items()],
                "method": self.method}


def bill(terms: list[Term], cores: int, absent: dict[str, str] | None = None) -> Bill:
    """The bill of these terms: the total and its CI when every term resolved, else the reasons it did not."""
    if cores < 1:
        raise ValueError("cores must be at least 1")
    out = Bill(list(terms), cores, dict(absent or {}))
    out.reasons = [t.why for t in terms if t.why]
    if not terms:
        out.reasons.append("no term applies: nothing to bill (every term is absent here)")
    if out.reasons:
        return out
    out.total = sum(t.cores for t in terms)
    var = sum(((t.cores_ci[1] - t.cores_ci[0]) / (2 * Z95)) ** 2 for t in terms)
    se = math.sqrt(var)
    out.ci = (out.total - Z95 * se, out.total + Z95 * se)
    out.resolved = True
    return out


# -- words ----------------------------------------------------------------------------------------

_SCALES = ((1e-3, 1e3, "ms"), (1e-6, 1e6, "µs"), (0.0, 1e9, "ns"))


def fmt_cost(seconds: float | None, ci=None) -> str:
    """A unit cost with its CI in one unit, the one that reads best for the larger of the two: '14.2 µs [12.9, 15.6]'."""
    if seconds is None:
        return "n/a"
    big = max([abs(seconds)] + [abs(x) for x in (ci or ())])
    _, mult, unit = next(s for s in _SCALES if big >= s[0])
    text = f"{seconds * mult:.3g} {unit}"
    return text + (f" [{ci[0] * mult:.3g}, {ci[1] * mult:.3g}]" if ci else "")
