"""The calibration file `encbench calibrate -o FILE` writes and `encbench estimate --from FILE` reads (issue 31):
every term of the bill with its fitted unit cost and 95% CI and what it was fitted from, or why it has none (absent on
this engine, not fitted by the design, refused on a --dsn server, or fitted but not resolved: with the runs that
would resolve it).

    {"format": "encbench-calibration", "version": 2, "engine", "created_at", "command", "setup",
     "results": {"at_rest": PATH|null, "in_transit": PATH|null}, "fits": {"at_rest": FIT|null, "in_transit": FIT|null},
     "costs": {TERM: {"value_s", "ci_s", "fitted_from", "runs", "why"}}, "absent": {TERM: WHY}, "resolved",
     "fitted_resolved"}

FIT: fit.solve's summary (method, runs, cells, degrees of freedom; at rest its "basis": the CPU metrics summed and
what a page read was counted from, fit.Basis). A cost with a value whose CI reaches zero has
"why" set too (bill.UnitCost.unresolved's words); `resolved` is true only when every term that is not absent is; `fitted_resolved` when every term the design
ran and fitted is (calibrate's exit code: the terms it could not run are said, not failed).

Version 2 prices TLS records received and sent by the server apart (`tls_records_in`, `tls_records_out`); a version 1
file's one `tls_messages` cost (a message either way) still loads: read as before, that one cost prices a record
each way, and its source says so (`costs_of`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..engines import engine_named  # each engine declares its terms (Engine.calibration_absent, ...)
from ..errors import ResultFileError
from . import fit
from .bill import OLD_MESSAGES, TERM_KINDS, TLS_RECORDS, UnitCost
from ..util import files

FORMAT = "encbench-calibration"
VERSION = 2
READS = (1, 2)  # the versions this encbench loads (1: one tls_messages cost, read as before: `costs_of`)
OLD_MESSAGES_WORDS = ("a calibration from before TLS records were priced apart (version 1): its one cost per message "
                      "either way prices a record received and a record sent alike, as it did (their errors are one "
                      "error, counted twice as independent: the bill's CI is narrower than it should be); calibrate "
                      "again to fit them apart")
SIDES = {"at_rest": ("at rest", fit.ATREST_WORDS), "in_transit": ("in transit", fit.TRANSIT_WORDS)}


def engine_facts(engine: str) -> tuple[dict, dict]:
    """(absent, not fitted): term -> why, as the engine's registry entry declares them (Engine.calibration_absent,
    calibration_not_fitted); none for an engine this encbench does not know."""
    e = engine_named(engine)
    return (dict(e.calibration_absent), dict(e.calibration_not_fitted)) if e else ({}, {})


def _runs_per_variant(doc: dict | None) -> int | None:
    return ((doc or {}).get("config") or {}).get("runs")


def _side_costs(side: str, doc: dict | None, got: dict | None, path, refused: str | None, not_fitted: dict) -> dict:
    """term -> cost entry for one side's terms."""
    words = SIDES[side][1]
    out = {}
    for term, per in words.items():
        if term in not_fitted or refused:  # a term the design never fits says so first, with what would measure it
            out[term] = {"value_s": None, "ci_s": None, "fitted_from": None, "runs": None,
                         "why": not_fitted.get(term) or refused}
            continue
        c = (got or {}).get("costs", {}).get(term, {"why": "no runs"})
        source = f"fitted {per} over {got['runs']} runs in {len(got['cells'])} mixes of {path}" if got else None
        if source and got.get("basis_words"):  # fscrypt: the kernel workers' CPU and the kernel's page reads
            source += f" ({got['basis_words']})"
        if "why" in c:
            out[term] = {"value_s": None, "ci_s": None, "fitted_from": source, "runs": _runs_per_variant(doc),
                         "why": f"{c['why']} ({source})" if source else c["why"]}
            continue
        cost = UnitCost(c["value"], tuple(c["ci"]), source, _runs_per_variant(doc))
        out[term] = {"value_s": c["value"], "ci_s": list(c["ci"]), "fitted_from": source,
                     "runs": _runs_per_variant(doc), "why": cost.unresolved()}
    return out


def build(engine: str, setup: dict, sides: dict, *, command: str = "", refused: dict | None = None) -> dict:
    """The calibration document. sides: side -> (result document or None, its path); refused: side -> why that
    side was not run (e.g. --dsn at rest)."""
    absent, not_fitted = engine_facts(engine)
    refused = refused or {}
    fits, results, costs = {}, {}, {}
    for side in SIDES:
        doc, path = sides.get(side, (None, None))
        terms = [t for t in SIDES[side][1] if t not in not_fitted and t not in absent]
        got = (fit.fit_atrest(doc, terms) if side == "at_rest" else fit.fit_transit(doc, terms)) if doc else None
        fits[side] = {k: v for k, v in got.items() if k not in ("costs", "basis_words")} if got else None
        results[side] = str(path) if path else None
        why_refused = refused.get(side) or (None if doc else "this side was not run")
        costs.update(_side_costs(side, doc, got, path, why_refused, not_fitted))
    for term in TERM_KINDS:  # a term neither side's design fits (temporary file bytes, resumptions): said why
        if term not in costs:
            costs[term] = {"value_s": None, "ci_s": None, "fitted_from": None, "runs": None,
                           "why": not_fitted.get(term, "no calibrated mix measures it")}
    for term in absent:
        costs.pop(term, None)
    costs = {t: costs[t] for t in TERM_KINDS if t in costs}
    fitted = [c for c in costs.values() if c["fitted_from"]]  # the terms the design ran and fitted
    return {"format": FORMAT, "version": VERSION, "engine": engine,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": command, "setup": setup,
            "results": results, "fits": fits, "costs": costs, "absent": {t: absent[t] for t in TERM_KINDS if t in absent},
            "resolved": all(c["why"] is None for c in costs.values()),
            "fitted_resolved": bool(fitted) and all(c["why"] is None for c in fitted)}


def is_calibration(path) -> bool:
    """Whether a file is a calibration document (its first bytes name the format). Opened without blocking and read
    only when what was opened is a regular file (as util/files.read_regular does): a FIFO or a device is not one,
    and the result-file reader then refuses it in one line."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        if files.kind_of(os.fstat(fd).st_mode):
            return False
        try:
            head = f.read(200)
        except OSError:
            return False
    return FORMAT.encode() in head


def load(path) -> dict:
    """A calibration document, checked for its format and version; one ResultFileError naming what is wrong."""
    text = files.read_text(Path(path), what="calibration file", limit=16 << 20, error=ResultFileError)
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ResultFileError(f"{path} is not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ResultFileError(f"{path} is not an encbench calibration file (no \"format\": \"{FORMAT}\")")
    if doc.get("version") not in READS or not isinstance(doc.get("costs"), dict):
        raise ResultFileError(f"{path}: calibration version {doc.get('version')!r}; this encbench reads "
                              f"{', '.join(map(str, READS))}",
                              hint="run encbench calibrate again with this encbench")
    absent = doc.get("absent") or {}
    if OLD_MESSAGES in absent:  # version 1: messages absent here (an embedded engine): so are the records
        absent = {**{t: absent[OLD_MESSAGES] for t in TLS_RECORDS}, **absent}
    doc["absent"] = {t: w for t, w in absent.items() if t in TERM_KINDS}
    return doc


def costs_of(doc: dict, path) -> dict:
    """term -> (UnitCost, Setup) of a calibration document, as unitcost.priced takes them: a fitted cost with its
    CI (unresolved ones keep their figure; the bill says why), a term without one with its reason."""
    from .unitcost import Setup

    s = doc.get("setup") or {}
    out = {}
    for term, c in _terms(doc["costs"]):
        side = TERM_KINDS[term].side
        setup = Setup(doc["engine"], s.get("page_size"), s.get("cipher")) if side == "at rest" else Setup(doc["engine"])
        if c.get("value_s") is None:
            cost = UnitCost(None, None, str(path), why=f"{c.get('why') or 'not fitted'} (calibration {path})")
        else:
            cost = UnitCost(c["value_s"], tuple(c["ci_s"]) if c.get("ci_s") else None,
                            f"calibration {path}, {c.get('fitted_from') or ''}", c.get("runs"))
        out[term] = (cost, setup)
    return out


def _terms(costs: dict):
    """(term, cost entry) of a calibration's terms this encbench bills; a version 1 file's tls_messages as a record
    each way, its words saying so (where a file names the records too, theirs are kept)."""
    for term, c in costs.items():
        if term in TERM_KINDS:
            yield term, c
        elif term == OLD_MESSAGES:
            old = dict(c, fitted_from=f"{c.get('fitted_from') or ''} ({OLD_MESSAGES_WORDS})")
            yield from ((t, old) for t in TLS_RECORDS if t not in costs)


def lines(doc: dict, path) -> list[str]:
    """calibrate's words: each term's cost with its CI and what it was fitted from, or why it has none."""
    out = [f"{path}: {doc['engine']} calibration ({'resolved' if doc['resolved'] else 'NOT RESOLVED'})"]
    for side, fitted in (doc.get("fits") or {}).items():
        if fitted:
            out.append(f"  {SIDES[side][0]}: {fitted['runs']} runs in {len(fitted['cells'])} mixes "
                       f"({'; '.join(fitted['cells'])}), {fitted['df']} degrees of freedom")
    for term, c in _terms(doc["costs"]):
        label = TERM_KINDS[term].label
        if c["value_s"] is None:
            out.append(f"  {label}: NOT RESOLVED: {c['why']}")
            continue
        fig = _figure(term, c)
        out.append(f"  {label}: {fig}" + (f": NOT RESOLVED: {c['why']}" if c["why"] else ""))
        out.append(f"      {c['fitted_from']}")
    for term, why in doc["absent"].items():
        out.append(f"  {TERM_KINDS[term].label}: absent ({why})")
    out.append(f"method: {fit.METHOD}")
    return out


def _figure(term: str, c: dict) -> str:
    """'412 µs [380, 450] per page': a fitted cost with its CI and unit."""
    from .bill import fmt_cost

    return fmt_cost(c["value_s"], c["ci_s"]) + f" per {TERM_KINDS[term].unit}"


def figures(doc: dict) -> list[str]:
    """Each fitted cost's figure with its CI and unit (`lines` prints them): what a wrapped line keeps whole."""
    return [_figure(term, c) for term, c in doc["costs"].items() if c["value_s"] is not None]
