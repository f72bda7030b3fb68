"""`encbench estimate`: the pieces of the encryption bill that are not the bill itself (analysis/bill.py).

- the per-page cost entries of an analysis (`candidates`, `pick`: the one asked for, measured the way the user's
  workload reads, or the best-resolved write row) and why one is no figure (`unresolved`, with the runs that would
  resolve it from the spread it was measured with);
- the rates: given on the command line (`parse_rate`, `given_rate`) or sampled from a live server's own counters
  (`live_rates`: each engine's sampler, engines/*/live.py);
- the bill of the terms that have a rate (`make_bill`) and its first line (`model_line`).

A per-page cost is measured on one engine, page size and cipher (analysis/unitcost.py): the estimate prices a
server with it only when the target matches, unless told (`--other-setup`).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence

from ..errors import BadValueError, UsageError
from .bill import TERM_KINDS, UnitCost, runs_hint
from ..util.redact import redact
from ..util.units import _UNITS, fmt_bytes
from ..engines import ENGINES, engine_for_dsn

_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*(?:/\s*s)?\s*$")
PREFERRED = ("scan-eq", "scan-like")  # scan-eq: the lightest query, its added CPU is all decryption


# The highest read or write rate accepted: 10 TB/s. Pages read from storage land in memory, and
# the largest two-socket servers move about 1 TB/s to and from DRAM (24 DDR5 channels); even a
# rack of NVMe drives (~14 GB/s each on PCIe 5.0) stays far below. A rate above this is a typo.
MAX_RATE = 10e12
MIN_PAGE_BYTES = 512  # a rate in pages, when the page size is not known, is checked at the smallest page
MAX_COUNT = 1e9  # sessions, messages... per second: a billion is past any server's


def parse_rate(text: str, *, what: str) -> float:
    """'25MB/s' -> 25e6 bytes per second (MB = 10^6, MiB = 2^20); a plain number is bytes/s."""
    m = _RATE_RE.match(str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise BadValueError(f"{what} {text!r} is not a rate", hint="use e.g. 25MB/s, 200MiB/s or 1GB/s (>= 0)")
    rate = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not rate <= MAX_RATE:
        raise BadValueError(f"{what} {text[:40]!r} is {fmt_bytes(rate) if rate < 1e30 else f'{rate:.3g} B'}/s, more than "
                            f"any server reads or writes ({fmt_bytes(MAX_RATE)}/s: a large server's memory bandwidth "
                            "is about 1 TB/s)", hint="give the server's physical rate, e.g. 25MB/s")
    return rate


ACCESS = ("sequential", "random")  # how the user's workload reads: full scans, or random single pages (OLTP)


def candidates(analysis: Mapping, kind: str = "read") -> list[dict]:
    """Every per-page cost entry of an analysis: the scans' and rebuilds' (`derived`, sequential) and the oltp
    mixes' (`oltp_costs`, random single-page reads)."""
    from .oltpcost import per_page_entries

    derived = [dict(d, access=d.get("access", "sequential")) for d in analysis.get("derived") or []
               if d.get("per_page_cpu_s") is not None and d.get("kind", "read") == kind]
    if kind == "read":
        derived += per_page_entries(analysis.get("oltp_costs") or [])
    return derived


def pick(analysis: Mapping, workload: str | Sequence[str] | None = None, *, kind: str = "read",
         access: str | None = None) -> dict:
    """The per-page cost entry to use (`_pick`), with the runs per side it was measured with (`runs`)."""
    entry = _pick(analysis, workload, kind=kind, access=access)
    return dict(entry, runs=runs_of(analysis, entry))


def _pick(analysis: Mapping, workload: str | Sequence[str] | None = None, *, kind: str = "read",
          access: str | None = None) -> dict:
    """The per-page cost entry to use: the workload asked for (of a list: the first the file has), else the one
    measured the way the user's workload
    reads (`access`: sequential = scan-eq, else scan-like; random = an oltp mix, the most pages read per
    transaction first), else scan-eq, else the first. kind "write": the warm rebuild's per-page encrypt cost.
    `analysis`: summary.Analysis, or any mapping with its "derived" (and "oltp_costs") lists."""
    derived = candidates(analysis, kind)
    if kind == "write":
        if not derived:
            raise BadValueError("the result file has no per-page write cost (no warm rebuild runs with both "
                                "encryption=off and on)", hint="run e.g. `encbench run --workload rebuild "
                                                               "--variant cache=warm` and use that file")
        return best_resolved(derived)
    if not derived:
        raise BadValueError("the result file has no per-page decrypt cost (no cold at-rest runs with both "
                            "encryption=off and on)",
                            hint="run e.g. `encbench run --workload scan-eq --variant cache=cold` and use that file")
    wanted = [workload] if isinstance(workload, str) else list(workload or [])  # a list: the first the file has
    if wanted:
        chosen = [d for name in wanted for d in derived if _named(d, name)]
        if not chosen:
            raise BadValueError(f"the result file has no per-page cost for workload {', '.join(map(repr, wanted))}",
                                hint=f"it has: {', '.join(sorted({_name_of(d) for d in derived}))}")
        return chosen[0]
    if access:
        chosen = [d for d in derived if d["access"] == access]
        if not chosen:
            other = "an oltp run (--workload oltp)" if access == "random" else "cold scans (--workload scan-eq)"
            raise BadValueError(f"the result file has no per-page cost measured with {access} reads",
                                hint=f"measure {other} on the engine, or use --access "
                                     f"{'sequential' if access == 'random' else 'random'}")
        if access == "random":  # the mix that reads the most pages per transaction: its cost is the least diluted
            return max(chosen, key=lambda d: d.get("pages_read") or 0)
        derived = chosen
    for name in PREFERRED:
        for d in derived:
            if d["workload"] == name:
                return d
    return derived[0]


def _named(d: dict, name: str) -> bool:
    """`oltp` names every mix of the workload, `oltp:oltp_point_select` one mix (its script, else its operation)."""
    wl, _, mix = name.partition(":")
    return d["workload"] == wl and (not mix or mix in (d.get("script"), d["operation"]))


def _name_of(d: dict) -> str:
    return f"{d['workload']}:{d['script']}" if d.get("script") else d["workload"]


def relative_width(d: dict) -> float:
    """The 95% CI's half-width over the per-page cost (inf where it is not above zero or has no CI)."""
    ci, v = d.get("per_page_cpu_ci"), d.get("per_page_cpu_s") or 0.0
    return (ci[1] - ci[0]) / 2 / v if ci and v > 0 else math.inf


def best_resolved(entries: list[dict]) -> dict:
    """The best-resolved per-page cost: the narrowest CI relative to its cost, then the most pages per run."""
    return min(entries, key=lambda d: (relative_width(d), -(d.get("pages_read") or 0)))


def runs_of(analysis: Mapping, entry: dict) -> int | None:
    """The runs per side behind a per-page cost: its CPU comparison's smaller side."""
    for c in analysis.get("comparisons") or []:
        if (c["workload"], c["operation"], c["contender"]) == (entry["workload"], entry["operation"],
                                                               entry["contender"]):
            return min(c.get("n_baseline") or 0, c.get("n_contender") or 0) or None
    return None


def unresolved(entry: dict) -> str | None:
    """Why a per-page cost is no figure to act on: not above zero, or its CI reaches zero; else None."""
    per_page, ci = entry["per_page_cpu_s"], entry.get("per_page_cpu_ci")
    where = f"{entry['workload']}/{entry['operation']} {entry['contender']}"
    hint = runs_hint(UnitCost(per_page, tuple(ci) if ci else None, where, entry.get("runs")))
    if per_page <= 0:
        return (f"the per-page cost measured by {where} is not above zero ({per_page * 1e6:+.2f} µs"
                f"{_ci_us(ci)}): encryption's cost is not resolved there; {hint}")
    if ci and ci[0] <= 0:
        return (f"the per-page cost measured by {where}, {per_page * 1e6:.2f} µs, has a 95% CI{_ci_us(ci)} that "
                f"reaches zero: not resolved; {hint}")
    return None


def _ci_us(ci) -> str:
    return f" [{ci[0] * 1e6:.2f}, {ci[1] * 1e6:.2f}]" if ci else ""


# -- the bill: every term's rate (live or given) times its unit cost (issue 31) -------------------

MODEL = "model: added CPU = the sum of each term's rate x its measured unit cost; includes: {inc}; leaves out: {left}"
ALWAYS_LEFT_OUT = "work no counter separates (background threads), CPU speed differences between machines"


def live_rates(dsn: str, seconds: float, *, all_tls: bool = False, sleep=time.sleep):
    """Every bill term's rate, sampled from the server's own counters over `seconds` (read-only)."""
    engine = engine_for_dsn(dsn)
    if engine is None:
        schemes = " or ".join(f"{e.dsn_schemes[0]}://" for _, e in ENGINES.items() if e.dsn_schemes)
        raise UsageError(f"--live {redact(dsn)!r} is not a {schemes} DSN")
    sampler = engine.live_rates_reader(dsn)
    try:
        first = sampler.sample()
        t0 = time.monotonic()
        look = getattr(sampler, "look", None)
        while (left := seconds - (time.monotonic() - t0)) > 0:
            sampler.watch()
            if look is None:
                sleep(min(sampler.WATCH_S, max(left, 0.0)))
            else:
                _looking(look, min(sampler.WATCH_S, left), sampler.LOOK_S, sleep)
        last = sampler.sample()
        out = sampler.rates(first, last, time.monotonic() - t0, all_tls)
        for k in ("seen", "sockets", "sockets_why"):  # the sampler's working state, not facts of the server
            out.facts.pop(k, None)
        return out
    finally:
        sampler.close()


def _looking(look, span: float, every: float, sleep) -> None:
    """`look()` every `every` seconds for `span` seconds (the sampler's looks at the host between two watches)."""
    end = time.monotonic() + span
    while True:
        look()
        left = end - time.monotonic()
        if left <= 0:
            return
        sleep(min(every, left))


def make_bill(costs: dict, rates: dict, absent: dict, cores: int):
    """The bill of the terms that have a rate: each its unit cost (costs: term -> UnitCost, `priced`) times its
    rate (term -> bill.Rate); terms absent here keep their reason."""
    from .bill import bill, term

    terms = [term(name, costs.get(name), rates[name]) for name in TERM_KINDS if name in rates]
    return bill(terms, cores, {k: v for k, v in absent.items() if k not in rates})


def model_line(b) -> str:
    """The estimate's first line: the terms its model includes, and what it leaves out (absent or not given)."""
    named = {t.name for t in b.terms}
    inc = ", ".join(TERM_KINDS[k].label for k in TERM_KINDS if k in named) or "nothing"
    absent = [TERM_KINDS[k].label for k in TERM_KINDS if k in b.absent]
    missing = [TERM_KINDS[k].label for k in TERM_KINDS if k not in named and k not in b.absent]
    left = ([f"{', '.join(absent)} (absent here: see below)"] if absent else []) + \
        ([f"{', '.join(missing)} (no rate: --rate TERM=RATE)"] if missing else []) + [ALWAYS_LEFT_OUT]
    return MODEL.format(inc=inc, left="; ".join(left))


_COUNT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*(?:/\s*s)?\s*$")


def split_rate(text: str) -> tuple[str, str]:
    """'reads=412/s' -> ('reads', '412/s'); an unknown term is one line naming the known ones."""
    name, sep, value = str(text).partition("=")
    if name.strip() == "tls_messages":
        raise BadValueError(f"--rate {text[:60]!r}: tls_messages is now two terms, priced apart",
                            hint="give --rate tls_records_in=RATE (records the server received: its clients' "
                                 "requests) and --rate tls_records_out=RATE (records it sent)")
    if not sep or name.strip() not in TERM_KINDS or not value.strip():
        raise BadValueError(f"--rate {text[:60]!r} is not TERM=RATE",
                            hint=f"TERM is one of {', '.join(TERM_KINDS)}; e.g. --rate tls_handshakes=35/s")
    return name.strip(), value.strip()


def given_rate(name: str, text: str, option: str, page_size: int | None):
    """A rate from the command line as a bill.Rate in the term's unit per second: bytes for byte terms, pages for
    page terms (a byte rate over the target's page size, or a plain count), else a count."""
    from .bill import Rate

    unit = TERM_KINDS[name].unit
    count = _COUNT_RE.match(text)
    given = f"given: {option} {name + '=' if option == '--rate' else ''}{text}"
    if unit == "page" and count:
        pages = float(count.group(1))
        if not pages * (page_size or MIN_PAGE_BYTES) <= MAX_RATE:  # as many bytes as a server could move, at most
            raise BadValueError(f"{option} {text[:40]!r} pages per second is more than any server reads or writes "
                                f"({fmt_bytes(MAX_RATE)}/s: a large server's memory bandwidth is about 1 TB/s)",
                                hint="give the server's physical rate, e.g. 25MB/s or 6000 (pages per second)")
        return Rate(pages, f"{given} (pages per second)")
    if unit in ("page", "byte"):
        value = parse_rate(text, what=option)
        if unit == "byte":
            return Rate(value, given)
        if not page_size:  # no rate, said on its term (a cost refused for another setup is said first)
            return Rate(None, given, "a byte rate, and the target's page size is not known: "
                                                         "give --page-size, or the rate in pages per second")
        return Rate(value / page_size, f"{given} / {page_size:,} B per page")
    if not count:
        raise BadValueError(f"{option} {name}={text[:40]!r} is not a count per second", hint="e.g. 35/s or 35")
    value = float(count.group(1))
    if not value <= MAX_COUNT:
        raise BadValueError(f"{option} {name}={text[:40]!r} is more than a server does per second (at most "
                            f"{MAX_COUNT:.0e})", hint="give the server's rate, e.g. 35/s")
    return Rate(value, given)
