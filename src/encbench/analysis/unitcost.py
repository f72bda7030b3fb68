"""The unit costs of the encryption bill (analysis/bill.py), taken from result files, each with where it was
measured: the engine, the page size and the cipher of the file, so a cost is never applied to a server it was not
measured on unless the user says so (`encbench estimate --other-setup`).

- page reads: the per-page decrypt cost of cold scans (`derived`, kind read) or of an oltp mix (`--access random`,
  `--workload oltp:SCRIPT`);
- page writes: the best-resolved per-page encrypt cost (`derived`, kind write: a warm rebuild);
- new TLS sessions: the connect lab's added server CPU per connection (tls on vs off);
- bytes over TLS: the bulk lab's added server CPU per byte streamed;
- TLS records sent by the server: the storm lab's added server CPU per notice streamed (one record each, none received);
- TLS records received by the server: no one lab measures them apart (a roundtrip pays one each way):
  `encbench calibrate` fits both at once (analysis/fit.py);
- log bytes, temporary file bytes, TLS resumptions: no lab measures them apart yet (their terms say so).

Every cost is mean(contender) - mean(baseline) of per-run values, Welch t 95% CI (stats.difference_ci).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from . import estimate, stats
from ..errors import IncomparableError
from .bill import TERM_KINDS, UnitCost
from .summary import collect, variants_by_label

# term -> (workload, operation or None: any, the per-run value in seconds per unit from a group, its words)
TRANSIT = {
    "tls_handshakes": ("connect", None, lambda g: [x / 1e6 for x in g.get("cpu_us_per_connection", [])],
                       "added server CPU per connection"),
    "tls_bytes": ("bulk", None, lambda g: [c / b for c, b in zip(g.get("cpu_s", []), g.get("bytes_received", []))
                                            if b], "added server CPU per byte streamed"),
    "tls_records_out": ("storm", "messages", lambda g: [x / 1e6 for x in g.get("cpu_us_per_message", [])],
                        "added server CPU per notice streamed: a record sent"),
}


# term -> what measures its unit cost (a run whose file --from takes), or why nothing does yet
HOW_TO_MEASURE = {
    "reads": "measure it: encbench run --engine {engine} --workload scan-eq --variant cache=cold",
    "writes": "measure it: encbench run --engine {engine} --workload rebuild --variant cache=warm",
    "log_bytes": "no encbench lab measures the cost of a log byte apart yet (a fitted calibration is issue 31's "
                 "next step)",
    "commits": "fit it: encbench calibrate --engine {engine} (its update-one and update-batch mixes write 1 and 8 "
               "pages per commit)",
    "temp_bytes": "measure it: encbench run --engine {engine} --workload sort (a sort spilling to temporary files); "
                  "no per-byte cost is derived from it yet",
    "tls_handshakes": "measure it: encbench run --engine {engine} --workload connect",
    "tls_resumptions": "no encbench lab measures a resumed TLS session apart yet",
    "tls_bytes": "measure it: encbench run --engine {engine} --workload bulk",
    "tls_records_in": "fit it: encbench calibrate --engine {engine} (its roundtrip and storm mixes price a record "
                      "received apart from one sent)",
    "tls_records_out": "measure it: encbench run --engine {engine} --workload storm",
}


def unmeasured(name: str, engine: str) -> UnitCost:
    """The cost of a term no file given measured: none, with what would measure it."""
    return UnitCost(None, None, "", why=f"no measured unit cost in the files given; {HOW_TO_MEASURE[name]}"
                    .format(engine=engine))


@dataclass(frozen=True)
class Setup:
    """What a cost was measured on, or what a target server runs (None: not known)."""

    engine: str
    page_size: int | None = None
    cipher: str | None = None

    def words(self) -> str:
        return ", ".join(x for x in (self.engine, f"{self.page_size}-byte pages" if self.page_size else "",
                                     self.cipher or "") if x)


def _mode(cipher: str | None) -> str | None:
    """The block mode a cipher's words name (CBC, CTR, GCM, XTS), or the words themselves."""
    if not cipher:
        return None
    m = re.search(r"\b(CBC|CTR|GCM|XTS|ECB)\b", cipher.upper().replace("_", " ").replace("-", " "))
    return m.group(1) if m else cipher.lower()


def mismatch(measured: Setup, target: Setup) -> str | None:
    """Why a cost measured on one setup does not price another (engine, page size, cipher), else None."""
    if measured.engine != target.engine:
        return f"it was measured on {measured.engine}, the target is {target.engine}"
    if measured.page_size and target.page_size and measured.page_size != target.page_size:
        return f"it was measured on {measured.page_size}-byte pages, the target's are {target.page_size} bytes"
    a, b = _mode(measured.cipher), _mode(target.cipher)
    if a and b and a != b:
        return f"it was measured with {measured.cipher}, the target runs {target.cipher}"
    return None


def setup_of(doc: dict, entry: Mapping | None = None) -> Setup:
    """The engine, page size and cipher a file's cost entry was measured with."""
    engine = (doc.get("engine") or {}).get("name", "?")
    sizes = [v["page_size"] for v in variants_by_label(doc).values() if v.get("page_size")]
    page = int(entry["page_size"]) if entry and entry.get("page_size") else (
        (doc.get("dataset") or {}).get("page_size") or (int(sizes[0]) if sizes else None))
    raw = (doc.get("calibration") or {}).get("raw_cipher") or {}
    cipher = None
    if entry:
        variant = variants_by_label(doc).get(entry.get("contender"), {})
        cipher = next((r.get("cipher") for k, r in raw.items() if k.split("/")[0] == str(page)), None) \
            if variant.get("encryption") in ("on", None) else variant.get("encryption")
    return Setup(engine, page, cipher)


def _entry_cost(entry: dict, path: str, what: str) -> UnitCost:
    ci = entry.get("per_page_cpu_ci")
    return UnitCost(entry["per_page_cpu_s"], tuple(ci) if ci else None,
                    f"{path}: {entry['workload']}/{entry['operation']} {entry['contender']} ({what})", entry.get("runs"))


def fitted_costs(doc: dict, analysed: Mapping, path: str) -> dict[str, tuple]:
    """term -> (UnitCost, Setup): the read and write costs fitted at once over the file's oltp mixes (fit.py)."""
    from . import fit

    got = fit.fit(doc)
    if got is None:
        return {}
    setup = setup_of(doc, (analysed.get("oltp_costs") or [None])[0])
    where = f"{path}: fitted over {got['runs']} oltp runs in {len(got['cells'])} mixes" + \
        (f", {got['basis_words']}" if got.get("basis_words") else "")
    return {term: (UnitCost(got[f"{k}_us"] / 1e6, tuple(x / 1e6 for x in got[f"{k}_ci_us"]),
                            f"{where} (per page {'read' if k == 'read' else 'written'}, reads and writes at once)",
                            got["runs"] // (2 * len(got["cells"])) or 1), setup)
            for term, k in (("reads", "read"), ("writes", "write"))}


def page_costs(doc: dict, analysed: Mapping, path: str, *, workload=None, access=None) -> dict[str, tuple]:
    """term -> (UnitCost, Setup) for page reads and writes, where the file measured them: fitted over its oltp
    mixes when it has several (unless a workload or sequential reads are asked for), else its per-page entries."""
    fitted = fitted_costs(doc, analysed, path)
    if fitted and not workload and access != "sequential":
        return fitted
    out = {}
    for kind, term in (("read", "reads"), ("write", "writes")):
        if not estimate.candidates(analysed, kind):
            continue
        entry = estimate.pick(analysed, workload if kind == "read" else None, kind=kind, access=access)
        what = "per page read" if kind == "read" else "per page written, a warm rebuild: an upper bound"
        out[term] = (_entry_cost(entry, path, what), setup_of(doc, entry))
    return out


def transit_costs(doc: dict, analysed: Mapping, path: str) -> dict[str, tuple]:
    """term -> (UnitCost, Setup) for the in-transit terms the file's labs measured (tls vs off), best-resolved."""
    groups, variants = collect(doc), variants_by_label(doc)
    engine = Setup((doc.get("engine") or {}).get("name", "?"))
    out = {}
    for term, (workload, operation, per_run, words) in TRANSIT.items():
        found = []
        for c in analysed.get("comparisons") or []:
            if c["workload"] != workload or c["metric"] != "cpu_s" or operation not in (None, c["operation"]):
                continue
            cont, base = variants.get(c["contender"], {}), variants.get(c["baseline"], {})
            if cont.get("tls") in (None, "off") or base.get("tls") != "off":
                continue
            diff = stats.difference_ci(per_run(groups[(workload, c["operation"], c["baseline"])]),
                                       per_run(groups[(workload, c["operation"], c["contender"])]))
            if diff.value is None:
                continue
            found.append(UnitCost(diff.value, tuple(diff.ci) if diff.ci else None,
                                  f"{path}: {workload}/{c['operation']} {c['contender']} vs tls=off ({words})",
                                  min(diff.n_baseline, diff.n_contender)))
        if found:
            best = min(found, key=lambda u: (u.ci[1] - u.ci[0]) / u.value if u.ci and u.value > 0 else float("inf"))
            out[term] = (best, engine)
    return out


def _priced(name: str, cost_setup: tuple | None, target, other_setup: bool):
    """The unit cost of a term for the target (None: none measured); refused when measured on another setup
    unless --other-setup, then a per-page cost is converted through bytes to the target's page size."""
    if cost_setup is None:
        return None
    cost, measured = cost_setup
    why = mismatch(measured, target)
    if why and not other_setup:
        raise IncomparableError(f"the {TERM_KINDS[name].label} cost from {cost.source} does not price this server: "
                                f"{why}", hint="measure it on the target's engine and setup (--from a file of that "
                                               "engine), or --other-setup to use it anyway")
    if why and TERM_KINDS[name].unit == "page" and measured.page_size and target.page_size \
            and measured.page_size != target.page_size and cost.value is not None:
        k = target.page_size / measured.page_size
        cost = replace(cost, value=cost.value * k, ci=tuple(x * k for x in cost.ci) if cost.ci else None,
                       source=f"{cost.source}, x {k:g} for {target.page_size}-byte pages (--other-setup)")
    elif why:
        cost = replace(cost, source=f"{cost.source} (another setup: {why}; --other-setup)")
    return cost


def priced(costs: dict, target, *, other_setup: bool = False) -> dict:
    """term -> the UnitCost that prices it on the target (costs: term -> (UnitCost, Setup) as measured); a cost
    measured on another engine, page size or cipher is refused (IncomparableError) unless other_setup."""
    return {name: _priced(name, costs[name], target, other_setup) if name in costs else unmeasured(name, target.engine)
            for name in TERM_KINDS}
