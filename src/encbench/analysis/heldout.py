"""What the held-out check found (issue 31): the bill's error on peer mixes it never saw, in words, per engine and
setup, for `encbench estimate` to print beside every bill.

bench/estimate_heldout.py calibrates the unit costs on encbench's own mixes only, runs the peers' own mixes
(sysbench on MariaDB, pgbench on PostgreSQL, the TPC-B-like mix on SQLCipher) encrypted and plain, and sets the
added CPU measured per transaction beside the bill predicted from each mix's counters. Its findings (`-o`) are
shipped as package data, `encbench/data/heldout.json`: per engine and setup, the mixes, the median and worst
|error| with the interval their mixes' CIs bound, the date, the machine and its load. This module only reads and
words them; it computes no figure.
"""

from __future__ import annotations

import json
from importlib import resources

from ..engines import ENGINES  # each engine declares its setups (Engine.heldout_setups)
from ..errors import UnknownNameError
from .calibration import VERSION as MODEL_VERSION

DATA = "heldout.json"


def load(text: str | None = None) -> dict | None:
    """The shipped findings (or these, as JSON text); None where there are none or they do not parse."""
    try:
        raw = text if text is not None else resources.files("encbench").joinpath("data", DATA).read_text()
        doc = json.loads(raw)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("checks"), list) else None


def setup_for(engine: str, side: str) -> str | None:
    """The setup a bill of this engine and side prices (e.g. postgres at rest: fscrypt), or None."""
    try:
        found = ENGINES.get(engine)
    except UnknownNameError:  # an engine this encbench does not know: no check
        return None
    return (getattr(found, "heldout_setups", None) or {}).get(side)


def find(doc: dict | None, engine: str, setup: str | None) -> dict | None:
    if not doc or setup is None:
        return None
    return next((c for c in doc["checks"] if c.get("engine") == engine and c.get("setup") == setup), None)


def _pct(x: float) -> str:
    return f"{x:.0f}%"


def words(engine: str, setup: str | None, doc: dict | None = None) -> str:
    """'checked on 2 peer mixes it never saw: median |error| 9% [4, 14], worst 18% [11, 25] (...)' or 'not checked
    on this engine/setup'; doc: the findings (default the shipped ones)."""
    doc = doc if doc is not None else load()
    c = find(doc, engine, setup)
    what = f"{engine}, {setup}" if setup else engine
    if c is None:
        return f"held-out check ({what}): not checked on this engine/setup"
    s = c.get("summary") or {}
    where = _where(doc)
    if not s.get("checked"):
        return (f"held-out check ({what}): {s.get('mixes', 0)} peer mixes run, none with an error figure (the "
                f"added CPU measured did not resolve in {s.get('added_cpu_unresolved', 0)}, the bill predicted in "
                f"{s.get('bill_unresolved', 0)}: a unit cost's CI reaches zero or a rate is not counted){where}")
    m, w = s["median_ci_pct"], s["worst_ci_pct"]
    mixes = "peer mix" if s["checked"] == 1 else "peer mixes"
    unresolved = (f"; {s['unresolved']} more not resolved (the added CPU measured or the bill predicted)"
                  if s.get("unresolved") else "")
    return (f"held-out check ({what}): checked on {s['checked']} {mixes} it never saw: median |error| "
            f"{_pct(s['median_abs_error_pct'])} [{m[0]:.0f}, {m[1]:.0f}], worst {_pct(s['worst_abs_error_pct'])} "
            f"[{w[0]:.0f}, {w[1]:.0f}]{unresolved}{where}")


def _where(doc: dict) -> str:
    """' (2026-11-28, 2 cores, 1.8 cores of other load; docs/estimate.md)': when and on what it was measured."""
    machine, load = doc.get("machine") or {}, doc.get("load") or {}
    parts = [x for x in (doc.get("date", "").split(" ")[0],
                         f"{machine['cores']} cores" if machine.get("cores") else "",
                         f"{load['other_load_cores_median']:.1f} cores of other load"
                         if load.get("other_load_cores_median") is not None else "") if x]
    quick = "a --quick smoke run, not a figure; " if doc.get("quick") else ""
    checked = doc.get("calibration_version", 1)  # findings written before the field: the first model's
    older = (f"of an earlier model (calibration version {checked}; this bill's is {MODEL_VERSION}): re-run "
             "bench/estimate_heldout.py; " if checked < MODEL_VERSION else "")
    return f" ({quick}{older}{', '.join(parts)}; docs/estimate.md)" if parts or quick or older else ""


def beside_bill(engine: str, sides, doc: dict | None = None) -> str:
    """The check's line(s) for a bill of this engine over these sides ('at rest', 'in transit'), one per setup."""
    doc = doc if doc is not None else load()
    sides = sorted(set(sides)) or ["at rest"]
    return "\n".join(words(engine, setup_for(engine, side), doc) if setup_for(engine, side)
                     else f"held-out check ({engine}, {side}): not checked on this engine/setup" for side in sides)
