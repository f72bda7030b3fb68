"""What an engine declares for `encbench advise`: its knobs, the costs each one changes (analysis/advise.py), and
the sweeps that measure them (lab/advise.py runs them).

Plain data, importable by the engines without the analysis behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Cost:
    """A cost a knob changes: rows of a workload (and operation, or any), one metric, in a scope of settings."""

    workload: str
    metric: str = "cpu_s"
    operation: str | None = None
    scope: tuple[tuple[str, str], ...] = ()  # other settings the rows must have (cache=cold)
    what: str = ""  # in words: "a cold scan's CPU", "the connection open"


@dataclass(frozen=True)
class Knob:
    key: str  # the variant key
    label: str  # what it is, in words: "page HMAC algorithm"
    default: str  # the engine's default value: every other value is compared with it
    costs: tuple[Cost, ...]  # the first with data in the files is the one ranked; the others are shown beside
    gives_up: dict[str, str] = field(default_factory=dict)  # value -> what it gives up, one plain line ("" none)
    weakens: frozenset[str] = frozenset()  # values that weaken protection: never a plain win
    # how a DBA sets a value: the text, or value -> the exact setting of that value ("sha1" -> "PRAGMA
    # cipher_hmac_algorithm = HMAC_SHA1"): setting_of()
    setting: str | Callable[[str], str] = ""
    server_side: bool = False  # on a --dsn server: needs --allow-reconfigure
    # (entry, analysis context) -> a sentence on where the saving comes from, or None
    explain: Callable[[dict, dict], str | None] | None = None

    def setting_of(self, value: str) -> str:
        """How a DBA sets this value: the knob's setting made for the value, or its one text."""
        return self.setting(str(value)) if callable(self.setting) else self.setting


@dataclass(frozen=True)
class Sweep:
    name: str  # the file's name and what the progress line says: "hmac" -> advise-hmac.json
    knob: str  # the variant key it varies
    workloads: tuple[str, ...]
    variants: tuple[str, ...]  # --variant filters: the knob's values, plus whatever fixes the rest
    params: tuple[str, ...] = ()  # --param NAME=VALUE
    runs: int | None = None  # None: the advise run's --runs


# -- what an explanation reads ---------------------------------------------------------------------------------

def per_page_read_us(entry: dict, ctx: dict, contender: str) -> float | None:
    """The per-page read cost (µs) one contender of an advise entry's file measured in the entry's workload (its
    analysis' derived entries), or None: what a knob's explain() sets beside the value's saving."""
    derived = (ctx.get("analyses") or {}).get(entry["file"], {}).get("derived") or []
    found = [d["per_page_cpu_s"] for d in derived if d["contender"] == contender and d.get("kind", "read") == "read"
             and d["workload"] == entry["workload"]]
    return found[0] * 1e6 if found else None
