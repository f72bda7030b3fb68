"""From raw runs to summaries, comparisons, derived figures and notes.

Everything here is recomputed from the runs stored in a result file, so `show` works on
a partial file and an older file is re-analysed by the current statistics.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from . import columncost, instrattr, oltpcost, stats
from .context import lines as context_lines
from .groups import (  # noqa: F401 (read as an.*: every caller's one import)
    OPEN, PAGES_PER_UNIT, PER_UNIT, _normalize, baseline_for, centre, collect, per_unit, table_for, tables,
    variants_by_label)
from .notes import notes, open_notes  # noqa: F401 (read as an.*)
from .perpage import (  # noqa: F401 (read as an.*)
    KWORKER_METHOD, _in_kernel_workers, _kernel_worker_part, _raw_reference_applies, _uncounted, _with_kworkers,
    derived, kernel_cipher, kernel_cipher_notes, write_costs)
from .words import METRIC_WORDS, VERDICT_METRICS, VERDICT_WORDS, metric_word  # noqa: F401 (read as an.*)
from ..drivers.client_share import notes as client_notes, withheld_reason
from ..probes import metric_catalog
from ..profiling import profiler
from ..lab import meter
from ..vocab.variants import label, placebo_note, placebo_reference, placebo_twin
from ..workloads import WORKLOADS
from ..vocab.sweep import COLUMN_OP, SWEPT, SWEPT_OPERATIONS
from ..workloads.column import SESSIONS_NOTE

COMPARED_METRICS = (
    "wall_s", "cpu_s", "cpu_user_s", "cpu_sys_s", "ctx_voluntary", "ctx_involuntary",
    "read_bytes", "write_bytes", "pages_read",
    "client_cpu_s", "client_ctx_voluntary", "client_ctx_involuntary", "system_ctx_switches",
    "write_syscall_bytes", "read_syscall_bytes", "qps", "mb_per_s", "connections_per_s",
    "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "rows_per_s",
    "net_bytes_sent", "net_bytes_received", "net_segments_out", "net_segments_in",
    "tps",
    *(f"{p}_us_per_{u}" for _, u in (("queries", "query"), ("messages", "message"), ("connections", "connection"),
                                      ("rows_hashed", "row"), ("transactions", "transaction"))
      for p in ("cpu", "client_cpu")),
    "pages_read_per_transaction", "pages_written_per_transaction",
    # --meter instructions (lab/meter.py): the count, per unit of what was done, and the cache simulation's misses
    "instructions", *(f"instructions_per_{u}" for _, u in (("queries", "query"), ("messages", "message"),
                                                            ("connections", "connection"), ("rows_hashed", "row"),
                                                            ("transactions", "transaction"))),
    "l1_misses", "ll_misses",
)
HIGHER_IS_BETTER = frozenset({"qps", "tps", "mb_per_s", "connections_per_s", "rows_per_s"})  # rates: less is a cost


def _workload_fact(doc: dict, workload: str, name: str):
    """A workload's declared fact (verdict_metrics, fixed_duration) as the file records it, else as this version
    defines the workload (a file from before the field), else None."""
    recorded = ((doc.get("workloads") or {}).get(workload) or {}).get(name)
    if recorded is not None:
        return recorded

    return getattr(WORKLOADS.get(workload), name) if workload in WORKLOADS else None


def fixed_duration(doc: dict, workload: str) -> bool:
    """Does each run of this workload last a set time (pgbench -T), so that its elapsed time cannot move?"""
    return bool(_workload_fact(doc, workload, "fixed_duration"))


def verdict_metrics(doc: dict, workload: str) -> tuple[str, ...]:
    """The metrics a workload's rows are judged on, in order: as the file records them (workloads[].verdict_metrics),
    else as this version defines the workload (a file from before the field: roundtrip's queries/s, not its
    constant elapsed), else fixed work's."""
    found = _workload_fact(doc, workload, "verdict_metrics")
    return tuple(found) if found else tuple(m for m, _ in VERDICT_METRICS)


def basis_metrics(doc: dict, workload: str, operation: str) -> tuple[str, ...]:
    """The metrics the rows of this workload and operation are judged on, in order (verdict_metrics); the
    connection open's: its CPU, client CPU and elapsed time, or a metered run's instructions."""
    if (workload, operation) != OPEN:
        return verdict_metrics(doc, workload)
    return meter.OPEN_VERDICT if meter.is_metered(doc) else tuple(m for m, _ in VERDICT_METRICS)


def summaries(groups) -> list[dict]:
    catalog = metric_catalog()
    out = []
    for (wl, op, vl), metrics in groups.items():
        for metric, values in metrics.items():
            s = stats.summarize(values)
            m = catalog.get(metric)
            resolution = m.resolution if m else None
            if metric.startswith("cpu_") and metric != "cpu_resolution_s" and metrics.get("cpu_resolution_s"):
                resolution = max(metrics["cpu_resolution_s"])
            exact = meter.is_count(metric) and stats.repeats(values)  # a count that repeats: 2 runs show it
            warn = stats.warnings_for(values, label=f"{wl}/{op} {vl} {metric}",
                                      resolution=resolution if metric.endswith("_s") else None,
                                      min_runs=stats.EXACT_MIN_RUNS if exact else stats.MIN_RUNS)
            if s is None:  # every value was NaN or Inf: nothing to summarize, the warning says so
                s = stats.Summary(0, None, None, None, None, None)
            out.append({"workload": wl, "operation": op, "variant": vl, "metric": metric,
                        "unit": m.unit if m else "", **s.to_dict(), "centre": centre(values), "warnings": warn})
    return out


def catalog_word(metric: str) -> str:
    """The word a comparison is judged with by default: its probe's label, else its name."""
    m = metric_catalog().get(metric)
    return m.label if m else metric


def judged(c: dict, margin_pct: float = stats.DEFAULT_MARGIN_PCT, word: str | None = None) -> dict:
    """The verdict fields of a comparison (verdict, verdict_text, equivalence) for this margin."""
    if word is None:
        word = catalog_word(c["metric"])
    if c.get("withheld"):  # a saturated client: what was timed is the client (drivers/client_share.py)
        return {"verdict": stats.WITHHELD, "verdict_text": c["withheld"], "equivalence": None}
    j = stats.judge(c["ratio"], c["ci"], c.get("ci90"), c.get("n_baseline", 0), c.get("n_contender", 0), word=word,
                    margin_pct=margin_pct, higher_is_better=c["metric"] in HIGHER_IS_BETTER,
                    excluded=c.get("excluded", 0), exact=bool(c.get("exact")))
    return {"verdict": j.verdict, "verdict_text": j.text, "equivalence": j.equivalence}


def rejudge(comps: list[dict], margin_pct: float) -> list[dict]:
    """Comparisons with their verdicts for another equivalence margin (the intervals stay)."""
    return [dict(c, **judged(c, margin_pct)) for c in comps]


def comparisons(doc: dict, groups, margin_pct: float = stats.DEFAULT_MARGIN_PCT) -> list[dict]:
    """Contender vs baseline per metric: ratio, 95% CI, significant (the CI excludes 1), 90% CI, verdict.

    n_baseline / n_contender count the finite values used; `excluded` the NaN/Inf ones left out.
    """
    engine, variants = doc["engine"], variants_by_label(doc)
    reference = placebo_reference(list(variants.values()))
    confidence = verdict_confidence(doc)
    out = []
    for (wl, op, vl), metrics in groups.items():
        twin_of = placebo_twin(variants[vl], reference)  # a placebo twin: A/A, against its reference only
        base_variant = twin_of if twin_of is not None else baseline_for(variants[vl], engine, wl)
        if base_variant is None:
            continue
        base = groups.get((wl, op, label(base_variant)))
        if not base:
            continue
        # a saturated client (drivers/client_share.py), or an engine memory that did not hold its share: no verdict
        withheld = withheld_reason(base, metrics) or memory_withheld(base, metrics)
        basis = basis_metrics(doc, wl, op)
        for metric in COMPARED_METRICS:
            if metric not in metrics or metric not in base:
                continue
            est = stats.ratio_ci(base[metric], metrics[metric], exact=meter.is_count(metric),
                                 confidence=confidence)
            c = {
                "workload": wl, "operation": op, "metric": metric,
                "baseline": label(base_variant), "contender": vl,
                "ratio": est.value, "ci": list(est.ci) if est.ci else None, "significant": est.significant,
                "n_baseline": est.n_baseline, "n_contender": est.n_contender,
                "ci90": list(est.ci90) if est.ci90 else None, "se_log": est.se, "df": est.df,
                "excluded": est.excluded, "method": est.method,
                **({"verdict_basis": basis.index(metric)} if metric in basis else {}),
                **({"exact": True} if est.exact else {}),
                **({"confidence": confidence} if confidence != stats.CONFIDENCE else {}),
                **({"placebo": True} if twin_of is not None else {}),
                **({"withheld": withheld} if withheld else {}),
            }
            out.append(dict(c, **judged(c, margin_pct)))
    return out


def verdict_confidence(doc: dict) -> float:
    """The confidence of the file's verdicts: 95%, or a sequential run's per-look level (lab/precision.Sequential,
    stored as config.sequential.confidence: `run --quick`, `--budget`)."""
    seq = (doc.get("config") or {}).get("sequential") or {}
    level = seq.get("confidence") if isinstance(seq, dict) else None
    return float(level) if isinstance(level, (int, float)) and 0.5 < level < 1 else stats.CONFIDENCE


def basis_of(comps: list[dict]) -> list[dict]:
    """A row's comparisons its verdict rests on (verdict_basis: its workload's verdict metrics), in that order;
    comparisons stored before the field: CPU, client CPU, elapsed (what every workload was judged on then)."""
    if any("verdict_basis" in c for c in comps):
        return sorted((c for c in comps if "verdict_basis" in c), key=lambda c: c["verdict_basis"])
    by_metric = {c["metric"]: c for c in comps}
    return [by_metric[m] for m, _ in VERDICT_METRICS if m in by_metric]


def memory_withheld(base: dict, cont: dict) -> str | None:
    """Why an oltp comparison gets no verdict: a run whose engine memory did not hold the variant's share of the
    data (workloads/oltp.memory_held: its pool, its page reads per transaction), on either side."""
    parts = [f"{side} {int(len(g['memory_held']) - sum(g['memory_held']))} of {len(g['memory_held'])} runs"
             for side, g in (("baseline", base), ("contender", cont)) if g.get("memory_held")
             and sum(g["memory_held"]) < len(g["memory_held"])]
    if not parts:
        return None
    return ("no verdict: the engine's memory did not hold the share asked for in " + "; ".join(parts)
            + " (the runs' memory_not_held says why: show --json)")


def row_judgements(comps: list[dict], words: dict[str, str] | None = None,
                    margin_pct: float | None = None) -> list[tuple[str, dict]]:
    """(metric, comparison with its verdict fields) of the metrics a row's verdict rests on (basis_of)."""
    out = []
    for c in basis_of(comps):
        metric = c["metric"]
        word = metric_word(metric, words)
        if margin_pct is None and "verdict" in c and "ci90" in c and word == catalog_word(metric):
            out.append((metric, c))
        else:  # another word or margin, or a comparison stored before verdicts: judged again
            margin = margin_pct if margin_pct is not None else (
                (c.get("equivalence") or {}).get("margin_pct", stats.DEFAULT_MARGIN_PCT))
            out.append((metric, dict(c, **judged(c, margin, word))))
    return out


def row_verdict(comps: list[dict], words: dict[str, str] | None = None, margin_pct: float | None = None) -> str:
    """The three-way verdict of a table row from its CPU, client CPU and elapsed comparisons.

    'costs +310.0% CPU [+290.1, +330.5]; costs +45.0% elapsed [...]' when any is shown to
    cost (or save); 'no cost: within ±2% (equivalence shown)' when every one is shown
    equivalent; else why there is no verdict: too few runs, or the first interval that is
    too wide.
    """
    withheld = next((c["withheld"] for c in comps if c.get("withheld")), None)
    if withheld:  # the client was saturated: what was timed is the client, not the server
        return withheld
    judged_ = row_judgements(comps, words, margin_pct)
    if not judged_:
        return "no comparison"
    codes = [c["verdict"] for _, c in judged_]
    shown = [c["verdict_text"] for _, c in judged_ if c["verdict"] in (stats.COSTS, stats.SAVES)]
    if shown:
        return "; ".join(shown)
    if all(v == stats.NO_COST for v in codes):
        return f"no cost: within ±{judged_[0][1]['equivalence']['margin_pct']:g}% (equivalence shown)"
    for code in (stats.TOO_FEW_RUNS, stats.INCONCLUSIVE, stats.NO_ESTIMATE):
        if code in codes:
            return next(c["verdict_text"] for _, c in judged_ if c["verdict"] == code)
    return "no comparison"


def row_code(comps: list[dict], words: dict[str, str] | None = None, margin_pct: float | None = None) -> str:
    """The row's verdict as one VERDICTS value (costs, saves, no_cost, too_few_runs, inconclusive, ...)."""
    if any(c.get("withheld") for c in comps):
        return stats.WITHHELD
    codes = [c["verdict"] for _, c in row_judgements(comps, words, margin_pct)]
    for code in (stats.COSTS, stats.SAVES):
        if code in codes:
            return code
    if codes and all(v == stats.NO_COST for v in codes):
        return stats.NO_COST
    return next((c for c in (stats.TOO_FEW_RUNS, stats.INCONCLUSIVE) if c in codes), stats.NO_ESTIMATE)


WAIT_PREFIX = "wait_share_"
WAIT_GROWTH_PTS = 5.0  # a wait event is named when its share of samples grew by this many points


def attribution(doc: dict, groups, comps: list[dict]) -> list[dict]:
    """Where an elapsed overhead went: server CPU, client CPU, and the wait events that grew.

    Deltas of means, contender minus baseline, each with a Welch t 95% CI (`*_ci`); CPU of
    two processes can overlap in time, so the parts need not add up to the elapsed difference.
    """
    out = []
    pairs = {(c["workload"], c["operation"], c["baseline"], c["contender"]) for c in comps
             if (c["workload"], c["operation"]) != OPEN}
    for wl, op, base_l, cont_l in sorted(pairs):
        base, cont = groups[(wl, op, base_l)], groups[(wl, op, cont_l)]
        if "client_cpu_s" not in cont or "wall_s" not in cont:
            continue
        unit = count_unit(base, cont)
        if fixed_duration(doc, wl):  # its elapsed time is set: what grew is the time and CPU per query
            if unit is None:
                continue
            base, cont = per_count(base, unit[0]), per_count(cont, unit[0])

        def delta(metric):
            if metric not in base or metric not in cont:
                return None
            return stats.difference_ci(base[metric], cont[metric]).value

        def delta_ci(metric):
            if metric not in base or metric not in cont:
                return None
            ci = stats.difference_ci(base[metric], cont[metric]).ci
            return list(ci) if ci else None

        def share(bucket, metric):
            return 100 * sum(bucket.get(metric, [0.0])) / max(1, len(bucket.get("wall_s", [])))

        waits = []
        for metric in sorted({m for m in list(base) + list(cont) if m.startswith(WAIT_PREFIX)}):
            grown = share(cont, metric) - share(base, metric)
            if grown >= WAIT_GROWTH_PTS:
                waits.append({"event": metric[len(WAIT_PREFIX):].replace("_", "/", 1), "points": grown,
                              "baseline_pct": share(base, metric), "contender_pct": share(cont, metric)})
        wall_base = (stats.summarize(base["wall_s"]) or stats.Summary(0, 0.0, 0.0, None, 0.0, 0.0)).mean
        elapsed = delta("wall_s")
        out.append({"workload": wl, "operation": op, "baseline": base_l, "contender": cont_l,
                    "elapsed_s": elapsed,
                    "elapsed_pct": 100 * elapsed / wall_base if wall_base and elapsed is not None else None,
                    "server_cpu_s": delta("cpu_s"), "client_cpu_s": delta("client_cpu_s"),
                    "elapsed_ci": delta_ci("wall_s"), "server_cpu_ci": delta_ci("cpu_s"),
                    "client_cpu_ci": delta_ci("client_cpu_s"), "waits_grown": waits,
                    **({"per": unit[1]} if fixed_duration(doc, wl) else {})})
    return out


def count_unit(*buckets: dict) -> tuple[str, str] | None:
    """(count key, unit) of the work these groups of runs counted (queries, messages...), the first PER_UNIT has."""
    return next(((key, u) for key, u in PER_UNIT if all(b.get(key) for b in buckets)), None)


def per_count(bucket: dict, count_key: str) -> dict:
    """A fixed-duration run's times per unit of work (wall and CPU seconds per query), run by run: its elapsed
    time over the queries it got done is the time each took (all clients together)."""
    counts = bucket[count_key]
    out = dict(bucket)
    for metric in ("wall_s", "cpu_s", "client_cpu_s"):
        if len(bucket.get(metric, [])) == len(counts):
            out[metric] = [v / n for v, n in zip(bucket[metric], counts) if n]
    return out


CLIENT_BOUND_SHARE = 0.25  # the client's CPU above this share of client + server CPU: it may be the bottleneck


def _mean(values) -> float | None:
    return sum(values) / len(values) if values else None


def scaling(doc: dict, groups) -> list[dict]:
    """Per swept workload (sweep.SWEPT: the hash workload's function, the column workload's
    method), its operation and sessions level, throughput against 1 session.

    efficiency = throughput(k) / (min(k, cores) x throughput(1)), cores being the CPUs the server's
    sessions may run on where the operation recorded them (`server_cpus`: a pinned private server has
    fewer than the machine), else the machine's logical cores; degradation = wall(k) / wall(1) for the
    same work per session; both with the 95% CIs of stats.ratio_ci (ratios of trimmed geometric means,
    Yuen-Welch t on logs).
    """
    machine = machine_cores(doc)
    variants = variants_by_label(doc)
    levels: dict[tuple[str, str, str], dict[int, dict]] = defaultdict(dict)
    for (wl, op, vl), metrics in groups.items():
        v = variants.get(vl, {})
        if wl in SWEPT and "sessions" in v and "rows_per_s" in metrics and op in SWEPT_OPERATIONS.get(wl, (op,)):
            levels[(wl, v.get(SWEPT[wl], "?"), op)][int(v["sessions"])] = metrics
    out = []
    for (wl, function, op), by_k in sorted(levels.items()):
        one = by_k.get(1)
        for k, m in sorted(by_k.items()):
            cores = int(min(m["server_cpus"])) if m.get("server_cpus") else machine
            entry = {"workload": wl, "function": function, "operation": op, "sessions": k, "cores": cores,
                     "runs": len(m["rows_per_s"]),
                     "throughput": _mean(m["rows_per_s"]), "throughput_ci": None,
                     "wall_s": _mean(m.get("wall_s", [])), "server_cpu_s": _mean(m.get("cpu_s", [])),
                     "client_cpu_s": _mean(m.get("client_cpu_s", [])),
                     "server_cpu_us_per_row": _mean(m.get("cpu_us_per_row", [])),
                     "efficiency": None, "efficiency_ci": None, "degradation": None, "degradation_ci": None}
            ci = stats.mean_ci(m["rows_per_s"])
            entry["throughput_ci"] = list(ci) if ci else None
            if one:
                ideal = max(1, min(k, cores))
                thr = stats.ratio_ci(one["rows_per_s"], m["rows_per_s"])
                if thr.value is not None:
                    entry["efficiency"] = thr.value / ideal
                    entry["efficiency_ci"] = [x / ideal for x in thr.ci] if thr.ci else None
                deg = stats.ratio_ci(one.get("wall_s", []), m.get("wall_s", []))
                entry["degradation"] = deg.value
                entry["degradation_ci"] = list(deg.ci) if deg.ci else None
            if entry["server_cpu_s"] and entry["client_cpu_s"] is not None:
                entry["client_cpu_share"] = entry["client_cpu_s"] / (entry["client_cpu_s"] + entry["server_cpu_s"])
            waits = {name[len(WAIT_PREFIX):].replace("_", "/", 1): _mean(vals) for name, vals in m.items()
                     if name.startswith(WAIT_PREFIX)}
            entry["waits"] = dict(sorted(((w, x) for w, x in waits.items() if x), key=lambda kv: -kv[1])[:4])
            out.append(entry)
    return out


def hash_costs(doc: dict, scale: list[dict]) -> list[dict]:
    """Per function: server CPU per row with and without it (1 session) against the raw hash speed."""
    raw = (doc.get("calibration") or {}).get("raw_hash", {})
    by = {(e["function"], e["operation"], e["sessions"]): e for e in scale}
    out = []
    for function in sorted({e["function"] for e in scale}):
        h, b = by.get((function, "hash", 1)), by.get((function, "baseline", 1))
        if not h or not b or h["server_cpu_us_per_row"] is None or b["server_cpu_us_per_row"] is None:
            continue
        entry = {"function": function, "hash_us_per_row": h["server_cpu_us_per_row"],
                 "baseline_us_per_row": b["server_cpu_us_per_row"],
                 "function_us_per_row": h["server_cpu_us_per_row"] - b["server_cpu_us_per_row"],
                 "method": "server CPU per row at 1 session, with the function minus without it (means of the runs)"}
        r = raw.get(function)
        if r:
            entry.update(raw_us_per_call=r["us_per_call"], raw_method=r["method"],
                         times_raw=entry["function_us_per_row"] / r["us_per_call"] if r["us_per_call"] else None)
        out.append(entry)
    return out


def profiled(doc: dict):
    """(variant, extra) of every `profile` operation: the warmup runs recorded with --profile."""
    for run in doc["runs"]:
        for op in run.get("operations", []):
            if op.get("operation") == "profile":
                yield run["variant"], op.get("extra", {})


def swept_profiles(doc: dict):
    """(workload, what is swept, variant, extra) of every sessions-sweep profile: the hash workload's own
    `profile` operation, and the generic --profile of the column workload's read-sessions."""
    for variant, extra in profiled(doc):
        yield "hash", variant.get(SWEPT["hash"]), variant, extra
    for wl, op, _, variant, extra in profiler.recorded(doc):
        if wl == "column" and op == COLUMN_OP and "sessions" in variant:
            yield wl, variant.get(SWEPT[wl]), variant, extra


def profiles(doc: dict) -> list[dict]:
    """The CPU profiles recorded during warmup runs (--profile): one per swept function and sessions level."""
    out = []
    for wl, function, variant, extra in swept_profiles(doc):
        base = {"workload": wl, "function": function, "sessions": int(variant.get("sessions", 0))}
        if "profile" in extra:
            p = extra["profile"]
            out.append(dict(base, **{k: v for k, v in p.items() if k != "folded"}, has_folded=bool(p.get("folded"))))
        else:
            out.append(dict(base, error=extra.get("profile_error", "no profile")))
    return out


# -- the analysis object: what every command reads ------------------------------------------

ANALYSIS_VERSION = 6  # the shape of Analysis and its to_dict(): bump it when a field is added, dropped or changes meaning
# 1: the typed Analysis (issue 13 item 4); 2: headline (issue 14 item 1); 3: column_costs (issue 16 item 3);
# 4: comparisons[].verdict_basis, the metrics a row's verdict rests on (issue 21 item 1); oltp_costs (issue 22);
# 5: instructions (--meter instructions: attribution by function, per page, the CPU-model gap; issue 23)
# 6: summaries[].centre and headline[].lead: the short line's figure in its unit (issue 30 item 2)

HEADER, STORED, SHOWN = "header", "stored", "shown"
  # where a field comes from (Analysis field metadata)
UNMADE = type("Unmade", (), {"__repr__": lambda self: "UNMADE"})()  # a headline not made yet (Analysis.headline)


def _field(part: str, *, optional: bool = False):
    """header: facts of the document (in show --json, never stored again); stored: what the result file
    keeps (runner); shown: added for the output only (the files written next to the result).
    An optional field is None when it does not apply, and then absent from to_dict() and stored()."""
    meta = {"part": part, "optional": optional}
    return field(default=None, metadata=meta) if optional else field(metadata=meta)


@dataclass
class Analysis(Mapping):
    """The analysis of one result document: `analyze(doc)` computes it, every command consumes it.

    `to_dict()` is exactly what `show --json` prints; `stored()` what the runner keeps in the result
    file and `from_doc()` reads back; `of()` accepts this object or its dict. Read as a mapping it is
    its JSON view (read-only): `a["comparisons"]`, `a.get("scaling", [])`, `dict(a, comparisons=...)`.
    Entries stay JSON-shaped dicts (their keys: docs/RESULTS.md and lab/resultschema.py).
    """

    schema_version: int | None = _field(HEADER)  # the result file's, not this object's (that is `version`)
    status: str | None = _field(HEADER)
    engine: str | None = _field(HEADER)  # the engine's name
    summaries: list[dict] = _field(STORED)  # one per (workload, operation, variant, metric)
    comparisons: list[dict] = _field(STORED)  # contender vs baseline per metric, with the verdict fields
    derived: list[dict] = _field(STORED)  # per-page decrypt (read) and encrypt (write) costs
    attribution: list[dict] = _field(STORED)  # where an elapsed overhead went
    notes: list[str] = _field(STORED)
    scaling: list[dict] | None = _field(STORED, optional=True)  # a hash sweep: one entry per function, op, k
    hash_costs: list[dict] | None = _field(STORED, optional=True)  # a hash sweep: server CPU per row vs raw
    profiles: list[dict] | None = _field(STORED, optional=True)  # a hash sweep: --profile summaries
    column_costs: list[dict] | None = _field(STORED, optional=True)  # the column lab: CPU per row vs raw cipher
    oltp_costs: list[dict] | None = _field(STORED, optional=True)  # oltp: CPU per transaction, per page, the check
    instructions: dict | None = _field(STORED, optional=True)  # --meter instructions: where they go (instrattr.py)
    # the headline summary in plain words (analysis/headline.py): made from the fields above, never stored
    headline: list[dict] | None = _field(SHOWN, optional=True)
    files: list[str] | None = _field(SHOWN, optional=True)  # plots and flame graphs written beside the file
    # the precision reached, the CPU placement, the run context and flagged runs, in words (analysis/context.py):
    # made from the document once, never stored; every view prints these lines as they are
    context: list[str] | None = _field(SHOWN, optional=True)
    placebo_comparisons: list[dict] | None = _field(STORED, optional=True)  # A/A twins, never in comparisons
    version: int = field(default=ANALYSIS_VERSION, metadata={"part": None})  # not in to_dict: show --json stays

    # -- reading ---------------------------------------------------------------------------
    @staticmethod
    def _header(doc: dict) -> dict:
        return {"schema_version": doc.get("schema_version"), "status": doc.get("status"),
                "engine": (doc.get("engine") or {}).get("name")}

    @classmethod
    def _parts(cls, *parts: str):
        return [f for f in fields(cls) if f.metadata.get("part") in parts]

    @classmethod
    def from_dict(cls, d: Mapping) -> Analysis:
        """The inverse of to_dict(); a missing list is empty, a missing optional field None."""
        return cls(**{f.name: d.get(f.name, None if f.metadata["optional"] or f.metadata["part"] == HEADER else [])
                      for f in cls._parts(HEADER, STORED, SHOWN)})

    @classmethod
    def from_doc(cls, doc: dict) -> Analysis:
        """The analysis a run stored in its result file (runner: `doc.update(analysis.stored())`), as it is."""
        stored = {f.name: doc.get(f.name, None if f.metadata["optional"] else []) for f in cls._parts(STORED)}
        return cls(**cls._header(doc), **stored, context=context_lines(doc) or None, headline=UNMADE)

    @classmethod
    def of(cls, analysis: Mapping) -> Analysis:
        """This object, or one made from its dict (a test's or an old caller's)."""
        return analysis if isinstance(analysis, Analysis) else cls.from_dict(analysis)

    # -- writing ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """What `show --json` prints (json.dumps(..., indent=1)): the header, then every field that applies;
        a comparison stored before verdicts existed is judged on the way out (default margin)."""
        return dict(self, comparisons=self.shown_comparisons())

    def stored(self) -> dict:
        """What the result file keeps (the runner adds it to the document): every stored field that applies."""
        return {f.name: getattr(self, f.name) for f in self._parts(STORED)
                if getattr(self, f.name) is not None or not f.metadata["optional"]}

    # -- views -----------------------------------------------------------------------------
    def shown_comparisons(self) -> list[dict]:
        """The comparisons, each with its verdict fields (one stored before verdicts existed: judged now)."""
        return [c if "verdict" in c and "ci90" in c else dict(c, **judged(c)) for c in self.comparisons]

    def rejudged(self, margin_pct: float) -> Analysis:
        """The same analysis with its comparisons' verdicts for another equivalence margin (the CIs stay)."""
        return replace(self, comparisons=rejudge(self.comparisons, margin_pct), headline=UNMADE)

    def with_headline(self) -> Analysis:
        """This analysis with its headline summary made from its fields (None when it has nothing to say)."""
        from . import headline

        self.headline = headline.build(self) or None
        return self

    def __getattribute__(self, name: str):
        """The headline is made on its first read, once: a run that only stores its analysis never makes it, and
        one that prints it makes it once (analyze and from_doc leave it UNMADE; rejudged makes it again)."""
        value = object.__getattribute__(self, name)
        if name == "headline" and value is UNMADE:
            return object.__getattribute__(self, "with_headline")().headline
        return value

    @property
    def margin_pct(self) -> float:
        """The equivalence margin the verdicts were judged with."""
        return next((c["equivalence"]["margin_pct"] for c in self.comparisons if c.get("equivalence")),
                    stats.DEFAULT_MARGIN_PCT)

    # the read-only JSON view (Mapping): the keys of to_dict(), in its order
    def _keys(self) -> list[str]:
        return [f.name for f in self._parts(HEADER, STORED, SHOWN)
                if not f.metadata["optional"] or getattr(self, f.name) is not None]

    def __getitem__(self, key: str):
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


def analyze(doc: dict, margin_pct: float = stats.DEFAULT_MARGIN_PCT) -> Analysis:
    """Everything `show` prints, recomputed from the runs; verdicts use this equivalence margin.

    The one place a result document is analysed: `run` (through the runner, which stores
    `Analysis.stored()` in the file), `show`, `estimate`, `report` and `selftest` all take this object.
    """
    groups = collect(doc)
    every = comparisons(doc, groups, margin_pct)
    comps = [c for c in every if not c.get("placebo")]  # placebo twins (A/A) never mix with the real ones
    placebo = [c for c in every if c.get("placebo")]
    scale = scaling(doc, groups)
    found = profiles(doc) if scale else None
    text = notes(doc, groups) + ([placebo_note(placebo)] if placebo else []) + profiler.notes(doc, comps)
    text += client_notes(groups)  # in-transit: did the client set the pace?
    metered = meter.is_metered(doc)  # --meter instructions: times are valgrind's, per-page figures are counted
    per_page = derived(doc, groups, comps) if not metered else []
    text += [meter.TIMES_NOTE] if metered else []
    if scale:
        text += sweep_notes(doc, scale, found)
    return Analysis(
        **Analysis._header(doc),
        summaries=summaries(groups), comparisons=comps, derived=per_page,
        attribution=attribution(doc, groups, comps), notes=text + kernel_cipher_notes(per_page, doc),
        scaling=scale or None, hash_costs=hash_costs(doc, scale) if scale else None, profiles=found,
        column_costs=columncost.column_costs(doc, groups, baseline_for) or None,
        oltp_costs=oltpcost.oltp_costs(doc, groups, comps, per_page, baseline_for) or None,
        instructions=instrattr.instructions(doc, groups, comps, instrattr.Keys(PER_UNIT, OPEN, variants_by_label(doc))),
        placebo_comparisons=placebo or None, context=context_lines(doc) or None, headline=UNMADE,
    )


def machine_cores(doc: dict) -> int:
    return int(doc["environment"]["cpu"].get("logical_cores") or 1)


def sweep_notes(doc: dict, scale: list[dict], found: list[dict]) -> list[str]:
    """A hash sweep's notes: was the client the bottleneck, and what became of --profile."""
    out = []
    busy = [e for e in scale if (e.get("client_cpu_share") or 0) > CLIENT_BOUND_SHARE]
    if busy:
        out.append("the client may be the bottleneck: its CPU is more than "
                   f"{CLIENT_BOUND_SHARE:.0%} of client + server CPU at " + ", ".join(
                       f"{e['function']}/{e['operation']} {e['sessions']} sessions "
                       f"({e['client_cpu_share']:.0%})" for e in busy))
    elif all("client_cpu_share" in e for e in scale):
        top = max(e["client_cpu_share"] for e in scale)
        out.append(f"the client is not the bottleneck: its CPU is at most {top:.1%} of client + "
                   "server CPU at every sessions level")
    if (doc.get("workloads", {}).get("hash", {}).get("params") or {}).get("profile") and not found:
        out.append("--profile records during the warmup runs, and there were none: use --warmups 1")
    if any(e.get("workload") == "column" for e in scale):
        out.append(SESSIONS_NOTE)
    pinned = sorted({(e["workload"], e["cores"]) for e in scale if e.get("cores", machine_cores(doc)) <
                     machine_cores(doc)})
    for wl, cores in pinned:
        out.append(f"{wl} sessions sweep: the server's sessions could run on {cores} of the machine's "
                   f"{machine_cores(doc)} CPUs (the private server is pinned apart from the worker), so the ideal "
                   f"speed-up is min(k, {cores}); --no-pin gives the server every CPU")
    errors = sorted({p["error"] for p in found if "error" in p})
    return out + [f"CPU profile: {e}" for e in errors]
