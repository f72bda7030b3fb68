"""What encryption costs a real transaction mix, and the per-page model checked against it (issue 22).

For every oltp comparison (a script, a memory share, a clients count; encrypted against plain), from the runs:

- the added CPU per transaction (server side: cpu_us_per_transaction, contender minus baseline, Welch CI);
- the physical page reads and writes per transaction of the encrypted runs, and so the added CPU per page read
  in this workload (an upper bound where the mix also writes);
- **the estimate checked**: the per-page cost a scan measured (the same file's cold scan-eq/scan-like, or one
  given: `encbench estimate --from SCANS --check OLTP`) times this workload's own page reads (and, where a
  per-page write cost was measured, its page writes) is what `encbench estimate --read-rate` would predict;
  set beside the added CPU measured, with the error in percent and its CI (delta method on logs). What the model
  leaves unexplained is named (`misses`): the per-call set-up of random single-page reads that a sequential
  scan amortizes, writes and WAL/redo, background threads.

Computed once by analysis.summary.analyze (`Analysis.oltp_costs`); renderers word these entries.
"""

from __future__ import annotations

import math

from . import stats
from .words import metric_word
from ..util.units import fmt_number
from ..engines import engine_named

WORKLOAD = "oltp"
MIN_READS_PER_TXN = 0.05  # below this a mix barely reads from storage: no cost per page read is derived
WRITES_THAT_COUNT = 0.1  # page writes per transaction from which unpriced writes are named first in the misses
Z95 = 1.959964
SCANS = ("scan-eq", "scan-like")  # the per-page read costs the estimate takes by default, best first


def _mean_ci(values) -> tuple[float | None, list[float] | None]:
    s = stats.summarize(values or [])
    if s is None:
        return None, None
    ci = stats.mean_ci(values)
    return s.mean, list(ci) if ci else None


def _se_log(value: float | None, ci) -> float | None:
    """The standard error of log(value) from a symmetric 95% CI (delta method); None when it cannot be had."""
    if value is None or value <= 0 or not ci or ci[0] <= 0:
        return None
    return (ci[1] - ci[0]) / (2 * Z95 * value)


def scan_costs(derived: list[dict]) -> dict[str, dict]:
    """kind -> the per-page cost a scan (read) or a warm rebuild (write) measured, the best one of each."""
    out = {}
    reads = [d for d in derived if d.get("kind", "read") == "read" and d["workload"] in SCANS
             and d.get("per_page_cpu_s") is not None]
    reads.sort(key=lambda d: SCANS.index(d["workload"]))
    if reads:
        out["read"] = reads[0]
    writes = [d for d in derived if d.get("kind") == "write" and d.get("per_page_cpu_s") is not None]
    if writes:
        out["write"] = writes[0]
    return out


def _name(d: dict) -> str:
    return f"{d['workload']}/{d['operation']} {d['contender']}"


def check(entry: dict, costs: dict[str, dict], source: str = "") -> dict | None:
    """The per-page model's prediction for one oltp entry, beside its measured added CPU per transaction."""
    read = costs.get("read")
    if read is None or entry["added_cpu_us_per_txn"] is None:
        return None
    per_read_us, read_ci = read["per_page_cpu_s"] * 1e6, read.get("per_page_cpu_ci")
    reads, writes = entry["pages_read_per_txn"] or 0.0, entry["pages_written_per_txn"] or 0.0
    parts = {"reads": per_read_us * reads}
    write = costs.get("write")
    if write is not None and writes:
        parts["writes"] = write["per_page_cpu_s"] * 1e6 * writes
    predicted = sum(parts.values())
    measured, m_ci = entry["added_cpu_us_per_txn"], entry["added_cpu_us_per_txn_ci"]
    out = {"per_page_source": (source + ": " if source else "") + _name(read)
           + (f"; writes: {_name(write)}" if "writes" in parts else ""),
           "per_page_read_us": per_read_us, "per_page_read_ci_us": [x * 1e6 for x in read_ci] if read_ci else None,
           "predicted_us_per_txn": predicted, "measured_us_per_txn": measured, "measured_ci_us": m_ci,
           "parts_us_per_txn": parts, "tps": entry["tps_contender"],
           "predicted_added_cores": predicted * entry["tps_contender"] / 1e6 if entry["tps_contender"] else None,
           "measured_added_cores": measured * entry["tps_contender"] / 1e6 if entry["tps_contender"] else None,
           "error_pct": None, "error_ci_pct": None,
           "method": "predicted = the per-page cost x this workload's page reads (+ writes x the per-page write cost "
                     "where one was measured) per transaction, what `encbench estimate --read-rate` predicts at this "
                     "workload's read rate; error = predicted / measured - 1, its 95% CI by the delta method on logs"}
    # an error is a figure only where both sides resolved: a per-page cost or an added CPU whose CI holds 0 has no
    # size to compare (its point estimate may be anything in that interval); the check says why instead
    unresolved = [what for what, ci in (("the scans' per-page read cost", read_ci), ("the mix's added CPU", m_ci))
                  if ci and ci[0] <= 0]
    out["per_page_resolved"] = not (read_ci and read_ci[0] <= 0)  # else its prediction is no figure either
    if unresolved:
        out["unresolved"] = (" and ".join(unresolved) + " not resolved (the 95% CI holds 0): no error to give; "
                             "add runs (--runs) or a longer mix (--param seconds=...)")
    elif measured > 0 and predicted > 0:
        out["error_pct"] = 100 * (predicted / measured - 1)
        ses = [_se_log(per_read_us, out["per_page_read_ci_us"]), _se_log(measured, m_ci),
               _se_log(reads, entry.get("pages_read_per_txn_ci"))]
        if all(s is not None for s in ses):
            se = math.sqrt(sum(s * s for s in ses))
            out["error_ci_pct"] = [100 * (predicted / measured * math.exp(-Z95 * se) - 1),
                                   100 * (predicted / measured * math.exp(Z95 * se) - 1)]
    out["misses"] = misses(entry, out)
    return out


def misses(entry: dict, c: dict) -> list[str]:
    """What the per-page model leaves out, in words, where its prediction falls short of (or beyond) the truth."""
    if c["error_pct"] is None:
        if c.get("unresolved"):
            return []
        return [] if c["measured_us_per_txn"] > 0 else ["the measured added CPU is not above zero: nothing to explain"]
    rest = c["measured_us_per_txn"] - c["predicted_us_per_txn"]
    share = rest / c["measured_us_per_txn"]
    ci = c.get("error_ci_pct")
    if ci and ci[0] <= 0 <= ci[1]:
        return []  # the model and the truth agree within the noise
    out = []
    if share > 0:
        unexplained = f"{rest:.1f} µs per transaction ({share:.0%} of the added CPU) is not in the per-page model"
        why = []
        writes = entry["pages_written_per_txn"] or 0.0
        unpriced_writes = writes >= WRITES_THAT_COUNT and "writes" not in c["parts_us_per_txn"]
        if unpriced_writes:  # said first: a write mix's added CPU is mostly its writes when they are not priced
            why.append(f"{writes:.2f} page writes per transaction with no measured per-page write cost (a warm "
                       "rebuild in the same file measures one): writes and WAL/redo are not in the prediction")
        if entry["pages_read_per_txn"] and entry.get("added_cpu_us_per_page_read") and not unpriced_writes:
            ratio = entry["added_cpu_us_per_page_read"] / c["per_page_read_us"]
            if ratio > 1:
                why.append(f"a random single-page read pays {ratio:.1f}x the scan's per-page cost here (per-call set-up "
                           "of the cipher that a sequential scan amortizes over many pages)")
        why.append("background threads (page cleaners, checkpointer, log writer) and the engine's own page code")
        out.append(unexplained + ": " + "; ".join(why))
    else:
        out.append(f"the model predicts {-rest:.1f} µs per transaction more than measured ({-share:.0%}): the scan's "
                   "per-page cost is higher than what this mix pays per page (its reads may be served by a cache the "
                   "scan bypassed, or its writes are deferred beyond the window)")
    return out


def oltp_costs(doc: dict, groups, comps: list[dict], derived: list[dict], baseline_for) -> list[dict]:
    """One entry per oltp comparison's contender: the added CPU per transaction, per page read, the check."""
    engine = engine_named(doc["engine"]["name"])
    cpu_word = metric_word("cpu_s", engine.metric_words if engine else None)
    out = []
    costs = scan_costs(derived)
    seen = set()
    for c in comps:
        if c["workload"] != WORKLOAD or c["metric"] != "cpu_us_per_transaction":
            continue
        key = (c["operation"], c["contender"], c["baseline"])
        if key in seen:
            continue
        seen.add(key)
        base = groups[(WORKLOAD, c["operation"], c["baseline"])]
        cont = groups[(WORKLOAD, c["operation"], c["contender"])]
        variant = next((r["variant"] for r in doc["runs"] if r["variant_label"] == c["contender"]), {})
        kernel = bool(engine) and variant.get("encryption") in engine.kernel_worker_crypto
        basis = [_with_kworkers(g) if kernel else g["cpu_us_per_transaction"] for g in (base, cont)]
        if any(b is None for b in basis):  # a file without the kworkers probe: the server's CPU alone
            basis, kernel = [base["cpu_us_per_transaction"], cont["cpu_us_per_transaction"]], False
        diff = stats.difference_ci(*basis)
        reads, reads_ci = _mean_ci(cont.get("pages_read_per_transaction"))
        writes, _ = _mean_ci(cont.get("pages_written_per_transaction"))
        tps_b, _ = _mean_ci(base.get("tps"))
        tps_c, _ = _mean_ci(cont.get("tps"))
        entry = {"workload": WORKLOAD, "operation": c["operation"], "baseline": c["baseline"], "cpu_word": cpu_word,
                 "contender": c["contender"], "script": variant.get("script"), "memory": variant.get("memory"),
                 "clients": variant.get("clients"), "page_size": _page_size(doc, cont),
                 "added_cpu_us_per_txn": diff.value, "added_cpu_us_per_txn_ci": list(diff.ci) if diff.ci else None,
                 "pages_read_per_txn": reads, "pages_read_per_txn_ci": reads_ci, "pages_written_per_txn": writes,
                 "tps_baseline": tps_b, "tps_contender": tps_c,
                 "added_cpu_us_per_page_read": None, "added_cpu_us_per_page_read_ci": None,
                 "cpu_basis": "cpu_s + kworker_cpu_s" if kernel else "cpu_s",
                 "method": "mean server CPU per transaction encrypted - plain (Welch t 95% CI; with the kernel "
                           "workers' CPU where the filesystem decrypts in them: fscrypt); per page read: over the "
                           "encrypted runs' mean physical page reads per transaction"}
        if reads and reads >= MIN_READS_PER_TXN and diff.value is not None:
            entry["added_cpu_us_per_page_read"] = diff.value / reads
            entry["added_cpu_us_per_page_read_ci"] = [x / reads for x in diff.ci] if diff.ci else None
            entry["includes_writes"] = bool(writes)
        read = costs.get("read")
        if read is not None and entry["added_cpu_us_per_page_read"] is not None \
                and not (read.get("per_page_cpu_ci") and read["per_page_cpu_ci"][0] <= 0):  # a resolved scan cost
            entry["scan_per_page_us"] = read["per_page_cpu_s"] * 1e6
            entry["times_scan"] = entry["added_cpu_us_per_page_read"] / entry["scan_per_page_us"] \
                if entry["scan_per_page_us"] > 0 else None
        entry["estimate_check"] = check(entry, costs)
        out.append(entry)
    return out


def _with_kworkers(group: dict) -> list[float] | None:
    """Per run: (server + kernel-worker CPU) per transaction in µs (fscrypt decrypts in kernel workers), or None."""
    cpu, kw, n = group.get("cpu_s"), group.get("kworker_cpu_s"), group.get("transactions")
    if not cpu or not kw or not n or not len(cpu) == len(kw) == len(n):
        return None
    return [1e6 * (c + k) / t for c, k, t in zip(cpu, kw, n) if t]


def _page_size(doc: dict, group: dict) -> int | None:
    sizes = group.get("page_size")
    if sizes:
        return int(sizes[0])
    return (doc.get("dataset") or {}).get("page_size")


def per_page_entries(entries: list[dict]) -> list[dict]:
    """The oltp costs as `derived` per-page read entries (kind read, access random), which `encbench estimate
    --access random` takes: the cost of a random single-page read, measured in a real mix."""
    out = []
    for e in entries:
        if e["added_cpu_us_per_page_read"] is None:
            continue
        ci = e["added_cpu_us_per_page_read_ci"]
        out.append({"workload": WORKLOAD, "operation": e["operation"], "baseline": e["baseline"], "script": e.get("script"),
                    "contender": e["contender"], "page_size": e["page_size"], "pages_read": e["pages_read_per_txn"],
                    "pages_basis": "pages_read per transaction", "added_cpu_s": e["added_cpu_us_per_txn"] / 1e6,
                    "added_cpu_ci": [x / 1e6 for x in e["added_cpu_us_per_txn_ci"]]
                    if e["added_cpu_us_per_txn_ci"] else None,
                    "per_page_cpu_s": e["added_cpu_us_per_page_read"] / 1e6,
                    "per_page_cpu_ci": [x / 1e6 for x in ci] if ci else None,
                    "decrypt_mb_per_s_per_core": (e["page_size"] / (e["added_cpu_us_per_page_read"] / 1e6) / 1e6
                                                  if e["page_size"] and e["added_cpu_us_per_page_read"] > 0 else None),
                    "decrypt_mb_per_s_ci": None, "kind": "read", "access": "random",
                    "includes_writes": e.get("includes_writes", False),
                    "method": e["method"] + (" (the mix also writes: an upper bound)" if e.get("includes_writes")
                                             else "")})
    return out


def label_of(entry: dict) -> str:
    """'oltp_read_only, 25% in memory, 2 clients'."""
    parts = [entry.get("script") or entry["operation"]]
    if entry.get("memory"):
        parts.append(f"{entry['memory']} in memory")
    if entry.get("clients"):
        parts.append(f"{entry['clients']} client{'s' if entry['clients'] != '1' else ''}")
    return ", ".join(parts)




def compared(e: dict) -> str:
    """'encryption=on vs off': the setting in which contender and baseline differ."""
    base = dict(p.split("=", 1) for p in e["baseline"].split(",") if "=" in p)
    cont = dict(p.split("=", 1) for p in e["contender"].split(",") if "=" in p)
    diff = [k for k in cont if k in base and base[k] != cont[k]]  # keys only the contender has (kdf_iter) follow
    return ", ".join(f"{k}={cont[k]} vs {base[k]}" for k in diff) or f"{e['contender']} vs {e['baseline']}"


def _f(x: float | None, fmt: str = "{:,.1f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _ci(ci, fmt: str = "{:,.1f}") -> str:
    return f" [{fmt.format(ci[0])}, {fmt.format(ci[1])}]" if ci else ""


def lines(entries: list[dict] | None) -> list[str]:
    """The report's words for `oltp_costs`: per entry, the throughput and CPU per transaction, the page reads per
    transaction, the added CPU per page read beside the scans', and the per-page estimate's check with its parts."""
    out = []
    for e in entries or []:
        head = (f"{label_of(e)}, {compared(e)}: {_f(e['tps_baseline'])} -> "
                f"{_f(e['tps_contender'])} transactions/s; {_f(e['added_cpu_us_per_txn'], '{:+,.1f}')} µs "
                f"{e.get('cpu_word', 'CPU')} per transaction{_ci(e['added_cpu_us_per_txn_ci'])}; {_f(e['pages_read_per_txn'], '{:.2f}')} page reads "
                f"and {_f(e['pages_written_per_txn'], '{:.2f}')} page writes per transaction")
        if e["added_cpu_us_per_page_read"] is not None:
            head += (f"; {_f(e['added_cpu_us_per_page_read'])} µs per page read"
                     f"{_ci(e['added_cpu_us_per_page_read_ci'])}" + (" (writes included: an upper bound)"
                                                                    if e.get("includes_writes") else ""))
        else:
            head += f"; no cost per page read (fewer than {MIN_READS_PER_TXN} page reads per transaction)"
        out.append(head)
        c = e.get("estimate_check")
        if not c:
            out.append(f"{label_of(e)}: no per-page estimate to check (no cold scan-eq/scan-like in this file: add "
                       "--workload scan-eq, or `encbench estimate --from SCANS --check THIS`)")
            continue
        if c.get("per_page_resolved") is False:  # an unresolved per-page cost predicts nothing: no figure from it
            out.append(f"{label_of(e)}: the estimate not checked ({c['per_page_source']}): {c['unresolved']}")
            continue
        parts = ", ".join(f"{k} {_f(v)} µs" for k, v in c["parts_us_per_txn"].items())
        text = (f"{label_of(e)}: the estimate checked ({c['per_page_source']}, {_f(c['per_page_read_us'], '{:.2f}')} µs per page): "
                f"predicts {_f(c['predicted_us_per_txn'])} µs per transaction ({parts}) where "
                f"{_f(c['measured_us_per_txn'])}{_ci(c['measured_ci_us'])} were measured")
        if c["error_pct"] is not None:
            err = c["error_ci_pct"]
            text += (f": error {fmt_number(c['error_pct'], True, 0)}%"
                     + (f" [{fmt_number(err[0], True, 0)}, {fmt_number(err[1], True, 0)}]" if err else ""))
        elif c.get("unresolved"):
            text += f": {c['unresolved']}"
        if c.get("predicted_added_cores") is not None:
            text += (f"; at {_f(c['tps'])} transactions/s: {c['predicted_added_cores']:.4f} cores predicted, "
                     f"{c['measured_added_cores']:.4f} measured")
        out.append(text)
        out += [f"{label_of(e)}: the model misses: {m}" for m in c["misses"]]
    return out
