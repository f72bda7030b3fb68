"""The column workload's per-row cost beside the raw cipher (issue 16 item 3): for every method and operation that
encrypts or decrypts each row, the CPU per row on the side that does the cipher work (the server for an
in-database method, the client for a client method, the process on an embedded engine), what it adds over `none`,
and this CPU's raw cost of the method's cipher per value (calibration.raw_column_cipher, host/rawcolumn).

The added CPU includes the cipher's work, so it cannot be below it: a figure that comes out below is flagged
(host/rawcipher.beyond_reference, as the per-page costs are) and given no multiple of the raw cost.

`column_costs` is computed once, by analysis.summary.analyze (`Analysis.column_costs`, in `show --json` and the
result file); `lines` words those entries for the report (terminal, Markdown, HTML) and computes nothing.
"""

from __future__ import annotations

import math

from ..host.rawcipher import CI_ABOVE, CONTRADICTS, UNRESOLVED, beyond_reference
from ..vocab.variants import label
from . import stats
from ..engines.column_base import IN_DATABASE_CIPHERS, cipher_of

WORKLOAD = "column"
BASELINE = "none"
DIRECTION = {"insert": "encrypt", "read": "decrypt", "update": "encrypt"}  # every row through the cipher once
PART_WORDS = {"s2k-sha1": "S2K (iterated SHA-1)", "aes-256-cfb-encrypt": "AES-256-CFB", "aes-256-cfb-decrypt": "AES-256-CFB",
              "sha1": "SHA-1 (MDC)"}  # host/rawcolumn.WORK's primitives in words
SIDE_WORDS = {"server": "server CPU", "client": "client CPU", "process": "CPU"}


def _side(method: str, group: dict, in_database: bool) -> tuple[str, str]:
    """(side, its per-row metric): the server's CPU for an in-database method, else the client's where it is
    measured apart, else the process's (an embedded engine)."""
    if in_database:
        return "server", "cpu_us_per_row"
    if "client_cpu_us_per_row" in group:
        return "client", "client_cpu_us_per_row"
    return "process", "cpu_us_per_row"


def _rate(us: float) -> float:
    return 1e6 / us if us > 0 else math.inf


def _rates(ci) -> list[float] | None:
    return [_rate(ci[1]), _rate(ci[0])] if ci else None


def _flag(added: float, added_ci, raw: float, raw_ci) -> tuple[str | None, str | None]:
    """(beyond_reference's standing, what it means for the added CPU in words; None: plausible)."""
    standing = beyond_reference(_rate(added), _rates(added_ci), _rate(raw), _rates(raw_ci))
    r = f"{fmt_us(raw)} µs{fmt_ci(raw_ci)}"
    if standing == CONTRADICTS:
        return standing, (f"contradicts its reference: {fmt_us(added)} µs{fmt_ci(added_ci)} added per row is below this CPU's raw "
                f"cipher work per value ({r}), which is not possible: one of the two figures is wrong")
    if standing == UNRESOLVED:
        return standing, (f"not resolved: {fmt_us(added)} µs added per row is below the raw cipher work per value ({r}), which is "
                "not possible, and the CIs overlap: noise; run longer")
    if standing == CI_ABOVE:
        return standing, "the lower end of its CI is below the raw cipher work per value, which is not possible"
    return None, None


def fmt_us(x: float) -> str:
    """Three significant digits below 1 µs (a cipher call is a few ns), one decimal to 100, then none."""
    return f"{x:.3g}" if abs(x) < 1 else f"{x:,.1f}" if abs(x) < 100 else f"{x:,.0f}"


def fmt_times(x: float) -> str:
    return f"{x:,.1f}" if abs(x) < 100 else f"{x:,.0f}"


def fmt_ci(ci) -> str:
    return f" [{fmt_us(ci[0])}, {fmt_us(ci[1])}]" if ci else ""


def _references(doc: dict) -> dict[str, dict]:
    """method -> its raw reference (by the methods each names; a file before that: by the method's cipher name)."""
    refs = (doc.get("calibration") or {}).get("raw_column_cipher") or {}
    out = {m: r for r in refs.values() for m in r.get("methods", [])}
    for run in doc["runs"]:
        method = run["variant"].get("method")
        if run["workload"] == WORKLOAD and method and method not in out and cipher_of(method) in refs:
            out[method] = refs[cipher_of(method)]
    return out


def column_costs(doc: dict, groups, baseline_for) -> list[dict]:
    """One entry per column method (not `none`) and operation of DIRECTION: CPU per row (mean, t CI), added over
    `none` (Welch CI), the raw reference per value with its parts, and times raw or a flag.
    baseline_for is analysis.summary's (passed in: summary imports this module)."""
    refs = _references(doc)
    variants = {}
    for run in doc["runs"]:
        if run["workload"] == WORKLOAD and not run.get("warmup") and "method" in run["variant"]:
            variants[run["variant_label"]] = run["variant"]
    out = []
    for vl, variant in sorted(variants.items(), key=lambda kv: kv[0]):
        method = variant["method"]
        if method == BASELINE:
            continue
        base = baseline_for(variant, doc["engine"], WORKLOAD)
        base_label = label(base) if base else label({**variant, "method": BASELINE})
        for op, direction in DIRECTION.items():
            cont, base = groups.get((WORKLOAD, op, vl)), groups.get((WORKLOAD, op, base_label))
            if not cont:
                continue
            side, metric = _side(method, cont, method in IN_DATABASE_CIPHERS)
            values = cont.get(metric) or []
            s = stats.summarize(values)
            if s is None:
                continue
            ci = stats.mean_ci(values)
            entry = {"workload": WORKLOAD, "operation": op, "method": method, "contender": vl, "baseline": base_label,
                     "direction": direction, "side": side, "metric": metric, "runs": s.n,
                     "cpu_us_per_row": s.mean, "cpu_us_per_row_ci": list(ci) if ci else None,
                     "added_us_per_row": None, "added_us_per_row_ci": None}
            if base and base.get(metric):
                diff = stats.difference_ci(base[metric], values)
                entry["added_us_per_row"] = diff.value
                entry["added_us_per_row_ci"] = list(diff.ci) if diff.ci else None
            ref = refs.get(method)
            if ref and (ref.get(direction) or {}).get("us_per_call"):
                _set_beside(entry, ref)
            out.append(entry)
    return out


def _set_beside(entry: dict, ref: dict) -> None:
    raw = ref[entry["direction"]]
    entry.update(reference=ref["algorithm"], reference_cipher=ref.get("cipher"), raw_us_per_value=raw["us_per_call"],
                 raw_us_per_value_ci=raw.get("ci"), raw_method=ref.get("method"),
                 raw_parts={name: p["us_per_call"] for name, p in (ref.get("parts") or {}).items()
                            if p.get("us_per_call") and _in_direction(name, entry["direction"])})
    added = entry["added_us_per_row"]
    if added is None:
        return
    standing, flag = _flag(added, entry["added_us_per_row_ci"], raw["us_per_call"], raw.get("ci"))
    if flag:
        entry["raw_cipher_flag"], entry["raw_cipher_standing"] = flag, standing
    if standing not in (CONTRADICTS, UNRESOLVED):  # as for pages: the multiple, with a note when its CI is not possible
        entry["times_raw"] = added / raw["us_per_call"]


def _in_direction(part: str, direction: str) -> bool:
    """A part named for the other direction (aes-256-cfb-decrypt on encrypt) is not this direction's."""
    other = "decrypt" if direction == "encrypt" else "encrypt"
    return not part.endswith(other)


def name_of(entry: dict) -> str:
    """The method, or the variant's label when it has other keys (sessions=1,method=pg-pgp)."""
    return entry["method"] if entry["contender"] == f"method={entry['method']}" else entry["contender"]


def lines(entries: list[dict] | None) -> list[str]:
    """The report's lines from the analysis' column_costs: one per method and operation, then what the raw
    references are."""
    out = []
    for e in entries or []:
        name = name_of(e)
        line = (f"{name} {e['operation']} ({e['direction']}): {fmt_us(e['cpu_us_per_row'])} µs per row of "
                f"{SIDE_WORDS[e['side']]}{fmt_ci(e['cpu_us_per_row_ci'])}")
        if e["added_us_per_row"] is not None:
            added = e["added_us_per_row"]
            line += f", {'+' if added >= 0 else '-'}{fmt_us(abs(added))} µs over {BASELINE}{fmt_ci(e['added_us_per_row_ci'])}"
        if "raw_us_per_value" in e:
            parts = e.get("raw_parts") or {}
            split = (" = " + " + ".join(f"{fmt_us(v)} µs {PART_WORDS.get(k, k)}"
                                        for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
                     if len(parts) > 1 else "")
            line += (f"; its cipher work on this CPU: {fmt_us(e['raw_us_per_value'])} µs per value"
                     f"{fmt_ci(e['raw_us_per_value_ci'])}{split} ({e['reference']})")
            if "times_raw" in e:
                line += f"; the added CPU is {fmt_times(e['times_raw'])}x it"
        if e.get("raw_cipher_flag"):
            line += f"; {e['raw_cipher_flag']}"
        out.append(line)
    if out:
        out.append("raw cipher work per value: an in-database method's in C (its primitives in bulk x the bytes per "
                   "value, its key derivation per call; the per-value context set-up, key schedule, random IV or salt "
                   "and framing are left in the engine's share), a client method's per call from Python as the "
                   "workload makes it; added = mean with the method - mean with none, Welch t 95% CI; "
                   "calibration.raw_column_cipher in the result file")
    return out
