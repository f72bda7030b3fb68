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
from .words import METRIC_WORDS, VERDICT_METRICS, VERDICT_WORDS, metric_word  # noqa: F401 (read as an.*)
from ..drivers.client_share import notes as client_notes, withheld_reason
from ..engines import engine_named
from ..host import rawcipher
from ..probes import metric_catalog
from ..profiling import profiler
from ..util.units import fmt_bytes, fmt_seconds
from ..lab import meter
from ..vocab.variants import label, placebo_note, placebo_reference, placebo_twin

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
    from ..workloads import WORKLOADS  # here: workloads import engines, which import this package's neighbours

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
OPEN = ("(open)", "connect")  # workload/operation names of the connection open (key derivation)


def _normalize(variant: dict, keys: list[dict]) -> dict:
    return {
        k["name"]: variant[k["name"]]
        for k in keys
        if k["name"] in variant and all(variant.get(a) == b for a, b in k["applies_when"])
    }


def tables(engine: dict) -> list[dict]:
    """The report's tables (one per axis); a file without engine.tables has one, from engine.axis."""
    return engine.get("tables") or [{"title": "", "axis": engine["axis"], "axis_baseline": engine["axis_baseline"],
                                     "workloads": None, "table_columns": engine.get("table_columns"),
                                     "metric_words": engine.get("metric_words") or {}}]


def table_for(engine: dict, workload: str) -> dict:
    found = [t for t in tables(engine) if not t["workloads"] or workload in t["workloads"]]
    return found[0] if found else tables(engine)[0]


def baseline_for(variant: dict, engine: dict, workload: str = "") -> dict | None:
    t = table_for(engine, workload)
    axis, base = t["axis"], t["axis_baseline"]
    if variant.get(axis) in (None, base):
        return None
    return _normalize({**variant, axis: base}, engine["variant_keys"])


def collect(doc: dict) -> dict[tuple[str, str, str], dict[str, list[float]]]:
    """(workload, operation, variant label) -> metric -> per-run values (warmups left out)."""
    out: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in doc["runs"]:
        if run.get("warmup"):
            continue
        vl = run["variant_label"]
        for op in run.get("operations", []):
            bucket = out[(run["workload"], op["operation"], vl)]
            for name, value in {**op.get("metrics", {}), **op.get("extra", {})}.items():
                if isinstance(value, (int, float)):
                    bucket[name].append(float(value))
            per_unit(bucket, op.get("metrics", {}), op.get("extra", {}))
        for name, value in (run.get("open") or {}).items():
            out[(*OPEN, vl)][name].append(float(value))
    return out


# extra counts that make a per-unit cost: CPU per query, per message, per connection
PER_UNIT = (("queries", "query"), ("messages", "message"), ("connections", "connection"), ("rows_hashed", "row"),
            ("transactions", "transaction"))


PAGES_PER_UNIT = {"transaction": ("pages_read", "pages_written")}  # a transaction's physical page I/O


def per_unit(bucket: dict, metrics: dict, extra: dict) -> None:
    for count_key, unit in PER_UNIT:
        count = extra.get(count_key)
        if not count:
            continue
        for metric, prefix in (("cpu_s", "cpu"), ("client_cpu_s", "client_cpu")):
            if metric in metrics:
                bucket[f"{prefix}_us_per_{unit}"].append(1e6 * metrics[metric] / count)
        if "instructions" in metrics:  # --meter instructions: the count per unit, as CPU per unit
            bucket[f"instructions_per_{unit}"].append(metrics["instructions"] / count)
        for metric in PAGES_PER_UNIT.get(unit, ()):
            if isinstance(metrics.get(metric), (int, float)):
                bucket[f"{metric}_per_{unit}"].append(metrics[metric] / count)
        return


def variants_by_label(doc: dict) -> dict[str, dict]:
    found = {label(v): v for v in doc["engine"].get("variants", [])}
    for run in doc["runs"]:
        found.setdefault(run["variant_label"], run["variant"])
    return found


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


def centre(values: list[float]) -> float | None:
    """The value a Δ's ratio is made of (stats.ratio_ci's centre of one side): the 20%-trimmed geometric mean, the
    mean when a value is zero or negative; what the summary scales a ratio by to say a change in its unit."""
    return stats.log_contrast([(values, 1)]).value


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
        basis = verdict_metrics(doc, wl) if (wl, op) != OPEN else (
            meter.OPEN_VERDICT if meter.is_metered(doc) else tuple(m for m, _ in VERDICT_METRICS))
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


def derived(doc: dict, groups, comps: list[dict]) -> list[dict]:
    """The per-page decrypt CPU cost from cold encrypted minus cold plain reads."""
    out = []
    raw = (doc.get("calibration") or {}).get("raw_cipher", {})
    variants = variants_by_label(doc)
    engine = engine_named(doc["engine"]["name"])
    for c in comps:
        wl_meta = doc.get("workloads", {}).get(c["workload"], {})
        contender = variants[c["contender"]]
        if c["metric"] != "cpu_s" or not wl_meta.get("reads_only") or contender.get("cache") != "cold":
            continue
        if _uncounted(engine, contender, doc):  # its decryption is in no measured process: no per-page figure
            continue
        cont = groups[(c["workload"], c["operation"], c["contender"])]
        base = groups[(c["workload"], c["operation"], c["baseline"])]
        kernel = _in_kernel_workers(engine, contender)
        if kernel:  # the server's CPU and the kernel workers' (where fscrypt decrypts), run by run, both sides
            base_cpu, cont_cpu = (_with_kworkers(doc, c["workload"], c["operation"], c[side])
                                  for side in ("baseline", "contender"))
        else:
            base_cpu, cont_cpu = base["cpu_s"], cont["cpu_s"]
        # the pages the engine says it decrypted when it counts them (InnoDB), else the pages read
        basis = "pages_decrypted" if sum(cont.get("pages_decrypted", [])) > 0 else "pages_read"
        pages = stats.summarize(cont.get(basis, []))
        if pages is None or pages.mean <= 0:
            continue
        diff = stats.difference_ci(base_cpu, cont_cpu)
        if diff.value is None:
            continue
        page_size = int(contender.get("page_size") or (doc.get("dataset") or {}).get("page_size") or 4096)
        per_page = diff.value / pages.mean
        ci = [x / pages.mean for x in diff.ci] if diff.ci else None
        entry = {
            "workload": c["workload"], "operation": c["operation"], "baseline": c["baseline"],
            "contender": c["contender"], "page_size": page_size, "pages_read": pages.mean, "pages_basis": basis,
            "added_cpu_s": diff.value, "added_cpu_ci": list(diff.ci) if diff.ci else None,
            "per_page_cpu_s": per_page, "per_page_cpu_ci": ci,
            "decrypt_mb_per_s_per_core": page_size / per_page / 1e6 if per_page > 0 else None,
            "decrypt_mb_per_s_ci": ([page_size / ci[1] / 1e6, page_size / ci[0] / 1e6]
                                    if ci and ci[0] > 0 else None),
            "method": f"(mean CPU cold encrypted - mean CPU cold plain) / mean {basis.replace('_', ' ')}, "
                      "Welch t 95% CI",
            "kind": "read",
        }
        if kernel:
            entry.update(_kernel_worker_part(doc, c, base, cont, pages.mean, page_size))
        ref = raw.get(engine.raw_cipher_key(contender, page_size) if engine else str(page_size)) \
            if _raw_reference_applies(engine, contender) else None
        if ref and entry["decrypt_mb_per_s_per_core"]:
            rawcipher.set_beside(entry, ref)  # a contradiction (faster than the raw cipher) is flagged, not printed
        out.append(entry)
    return out + write_costs(doc, groups, comps)


KWORKER_METHOD = ("(mean server + kernel-worker CPU cold encrypted - the same cold plain) / mean pages read, "
                  "Welch t 95% CI; kernel-worker CPU: every kworker thread of the machine over the operation "
                  "(the kworkers probe), so the plain baseline's share (its I/O, other work) cancels out")


def _in_kernel_workers(engine, variant: dict) -> bool:
    """Does this variant decrypt in kernel worker threads (fscrypt), whose CPU the kworkers probe measures?"""
    return bool(engine) and variant.get("encryption") in engine.kernel_worker_crypto


def _with_kworkers(doc: dict, workload: str, operation: str, variant_label: str) -> list[float] | None:
    """cpu_s + kworker_cpu_s of each measured run of this operation and variant; None when a run lacks either
    (a file from before the kworkers probe, or --probe without it)."""
    out = []
    for run in doc["runs"]:
        if run.get("warmup") or run["workload"] != workload or run["variant_label"] != variant_label:
            continue
        for op in run.get("operations", []):
            if op["operation"] != operation:
                continue
            m = op.get("metrics", {})
            if not isinstance(m.get("cpu_s"), (int, float)) or not isinstance(m.get("kworker_cpu_s"), (int, float)):
                return None
            out.append(float(m["cpu_s"]) + float(m["kworker_cpu_s"]))
    return out or None


def kernel_cipher(doc: dict, value: str) -> dict:
    """The kernel driver behind an encryption value's filesystem, as the dataset recorded it (PostgreSQL's
    `clusters`, MariaDB's `filesystems`: cipher_info's `contents`), with cpu_has_aes; {} when not recorded."""
    data = doc.get("dataset") or {}
    for key in ("clusters", "filesystems"):
        cipher = ((data.get(key) or {}).get(value) or {}).get("cipher") or {}
        if cipher.get("contents"):
            return {**cipher["contents"], "cpu_has_aes": cipher.get("cpu_has_aes")}
    return {}


def _kernel_worker_part(doc: dict, c: dict, base: dict, cont: dict, pages: float, page_size: int) -> dict:
    """The kernel-worker keys of a per-page entry: the CPU basis, the workers lost, the host-wide figure, the driver."""
    out = {"cpu_basis": "cpu_s + kworker_cpu_s", "method": KWORKER_METHOD,
           "kworkers_exited": int(sum(base.get("kworkers_exited", [])) + sum(cont.get("kworkers_exited", []))),
           "kworker_added_cpu_s": None, "host_added_cpu_s": None, "host_added_cpu_ci": None,
           "host_decrypt_mb_per_s_per_core": None}
    kw = stats.difference_ci(base.get("kworker_cpu_s", []), cont.get("kworker_cpu_s", []))
    out["kworker_added_cpu_s"] = kw.value
    host = stats.difference_ci(base.get("host_cpu_s", []), cont.get("host_cpu_s", []))
    if host.value is not None:  # the broader figure: every core's non-idle CPU, whatever ran
        out["host_added_cpu_s"], out["host_added_cpu_ci"] = host.value, list(host.ci) if host.ci else None
        if host.value > 0:
            out["host_decrypt_mb_per_s_per_core"] = page_size / (host.value / pages) / 1e6
    driver = kernel_cipher(doc, variants_by_label(doc)[c["contender"]].get("encryption", ""))
    if driver.get("driver"):
        out["kernel_driver"] = {k: driver.get(k) for k in ("name", "driver", "accelerated", "implementation",
                                                            "cpu_has_aes")}
    return out


def kernel_cipher_notes(derived_entries: list[dict], doc: dict) -> list[str]:
    """Issue 15 item 3's sentence per cold read decrypted in kernel workers: the speed per core, the driver
    the kernel runs, the userspace speed of the same mode on this CPU; or why no speed is claimed."""
    out = []
    for d in derived_entries:
        if d.get("kind") != "read" or d.get("cpu_basis") != "cpu_s + kworker_cpu_s":
            continue
        value = variants_by_label(doc)[d["contender"]].get("encryption", "")
        where = f"{d['workload']}/{d['operation']} {d['contender']}"
        k = d.get("kernel_driver") or {}
        through = f" through {k['driver']}" if k.get("driver") else ""
        if k.get("accelerated") is False:
            through += " (this kernel has no AES-NI driver" + (
                "; the CPU has AES instructions)" if k.get("cpu_has_aes") else ")")
        elif k.get("accelerated"):
            through += f" ({k.get('implementation')})"
        speed = d.get("decrypt_mb_per_s_per_core")
        if not speed:
            out.append(f"{where}: no decrypt speed claimed for {value}: the added server + kernel-worker CPU "
                       f"({fmt_seconds(d['added_cpu_s'])}) is not above zero; use a larger --size")
            continue
        ci = d.get("decrypt_mb_per_s_ci")
        text = (f"{where}: {value} decrypts at {speed:,.0f} MB/s per core"
                + (f" [{ci[0]:,.0f}, {ci[1]:,.0f}]" if ci else "") + through)
        raw = d.get("raw_cipher_mb_per_s_per_core")
        if raw:  # the calibration's cipher: "AES-256-XTS per 8192-byte page (fscrypt's contents mode), userspace"
            ref = ((doc.get("calibration") or {}).get("raw_cipher") or {}).get(str(d["page_size"])) or {}
            text += (f"; userspace {str(ref.get('cipher', 'raw cipher')).split(' per ')[0]} on this CPU: "
                     f"{raw / 1000:,.1f} GB/s per core")
        if d.get("raw_cipher_flag"):  # faster than the userspace cipher: a figure of noise (rawcipher.set_beside)
            text += f"; {d['raw_cipher_flag']}"
        if d.get("kworkers_exited"):
            text += f" ({d['kworkers_exited']} kernel workers exited mid-operation: their CPU is not counted)"
        out.append(text)
    return out


def _uncounted(engine, variant: dict, doc: dict | None = None) -> str | None:
    """Why this variant's crypto CPU is in no measured process, else None: an engine's uncounted_crypto, or a
    variant that decrypts in kernel workers in a file whose runs have no kworker_cpu_s."""
    why = (engine.uncounted_crypto if engine else {}).get(variant.get("encryption", ""))
    if why or doc is None or not _in_kernel_workers(engine, variant):
        return why
    if all("kworker_cpu_s" in op.get("metrics", {}) for r in doc["runs"] if not r.get("warmup")
           and r["variant"].get("encryption") in (variant.get("encryption"), doc["engine"]["axis_baseline"])
           and r["variant"].get("cache") == "cold" for op in r.get("operations", [])):
        return None
    return (f"{variant.get('encryption')} decrypts reads in kernel worker threads and these runs have no "
            "kworker_cpu_s (a file from before the kworkers probe, or --probe without it): the CPU ratio leaves "
            "the decryption out, read the elapsed ratio")


def _raw_reference_applies(engine, variant: dict) -> bool:
    """Is the calibration's raw cipher the one this variant runs (the engine's own encryption, not a filesystem's)?
    Files of an engine this version does not know: as before, when the variant encrypts."""
    values = engine.raw_cipher_values if engine else ("on",)
    return variant.get("encryption") in values


def write_costs(doc: dict, groups, comps: list[dict]) -> list[dict]:
    """The write side: a warm rebuild reads from the cache and writes (encrypts) every page, so its added CPU
    over the pages encrypted (InnoDB's counter) or written is a per-page encrypt cost."""
    out = []
    variants = variants_by_label(doc)
    for c in comps:
        wl_meta = doc.get("workloads", {}).get(c["workload"], {})
        contender = variants[c["contender"]]
        rewrites = wl_meta.get("rewrites", c["workload"] == "rebuild")  # files before the flag: rebuild
        if c["metric"] != "cpu_s" or not rewrites or contender.get("cache") != "warm":
            continue
        cont = groups[(c["workload"], c["operation"], c["contender"])]
        base = groups[(c["workload"], c["operation"], c["baseline"])]
        basis = "pages_encrypted" if sum(cont.get("pages_encrypted", [])) > 0 else "pages_written"
        pages = stats.summarize(cont.get(basis, []))
        diff = stats.difference_ci(base["cpu_s"], cont["cpu_s"])
        if pages is None or pages.mean <= 0 or diff.value is None:
            continue
        page_size = int(contender.get("page_size") or (doc.get("dataset") or {}).get("page_size") or 4096)
        per_page = diff.value / pages.mean
        ci = [x / pages.mean for x in diff.ci] if diff.ci else None
        out.append({
            "workload": c["workload"], "operation": c["operation"], "baseline": c["baseline"],
            "contender": c["contender"], "page_size": page_size, "pages_read": pages.mean, "pages_basis": basis,
            "added_cpu_s": diff.value, "added_cpu_ci": list(diff.ci) if diff.ci else None,
            "per_page_cpu_s": per_page, "per_page_cpu_ci": ci,
            "decrypt_mb_per_s_per_core": None, "decrypt_mb_per_s_ci": None, "kind": "write",
            "method": f"(mean CPU warm encrypted - mean CPU warm plain) / mean {basis.replace('_', ' ')}, "
                      "Welch t 95% CI: a per-page encrypt cost (an upper bound: other write work is in it too)",
        })
    return out


def notes(doc: dict, groups) -> list[str]:
    """Plain-word facts a reader needs: cache drops, key derivation, negotiated ciphers."""
    out = []
    cold_ops = [op for run in doc["runs"] if not run.get("warmup") for op in run.get("operations", [])
                if op.get("cache", {}).get("cache") == "cold"]
    restarts = [op["cache"]["restart_s"] for op in cold_ops if "restart_s" in op["cache"]]
    if restarts:
        physical = [op["metrics"]["pages_read"] for op in cold_ops if "pages_read" in op["metrics"]]
        msg = (f"cache=cold: the server was restarted before each of {len(restarts)} operations "
               f"({cold_ops[0]['cache'].get('method', '')}; median restart {fmt_seconds(sorted(restarts)[len(restarts) // 2])})")
        if physical:
            msg += f"; on average {sum(physical) / len(physical):,.0f} pages read from storage per operation"
        verified = sum(1 for run in doc["runs"] if not run.get("warmup") for op in run.get("operations", [])
                       if op.get("extra", {}).get("cache_verified"))
        if verified:
            msg += (f"; the cache state of {verified} operations was verified from the engine's counters "
                    "(warm: no page read from storage; cold: pages read, and decrypted only when encrypted)")
        out.append(msg)
    elif cold_ops:
        dropped = sum(1 for op in cold_ops if op["cache"].get("os_cache_dropped"))
        physical = [op["metrics"].get("read_bytes", 0) for op in cold_ops if "read_bytes" in op["metrics"]]
        fs = doc["environment"].get("os_cache", {}).get("data_dir_filesystem", "?")
        method = cold_ops[0]["cache"].get("method", "")
        fs_text = f"an {fs} file system" if fs != "unknown" else "a file system of unknown type"
        msg = f"cache=cold: OS page cache dropped ({method}) before {dropped} of {len(cold_ops)} operations on {fs_text}"
        if physical:
            msg += f"; on average {fmt_bytes(sum(physical) / len(physical))} read from storage per operation"
            if max(physical) == 0:
                msg += " — none: reads came from the OS cache, so 'cold' here is SQLite-cache-cold only"
        out.append(msg)
    for (wl, op, vl), metrics in groups.items():
        out_b, in_b = metrics.get("output_bytes"), metrics.get("backup_bytes")
        if out_b and in_b and out_b != in_b:
            ratio = sum(in_b) / sum(out_b)
            parts = ""
            if metrics.get("table_file_bytes") and metrics.get("system_tablespace_bytes"):
                parts = (f" (the table {fmt_bytes(sum(metrics['table_file_bytes']) / len(out_b))}, the system "
                         f"tablespace {fmt_bytes(sum(metrics['system_tablespace_bytes']) / len(out_b))}, the rest "
                         "redo log and server files)")
            out.append(f"{wl}/{op} {vl}: output {fmt_bytes(sum(out_b) / len(out_b))} from "
                       f"{fmt_bytes(sum(in_b) / len(in_b))}{parts}, compression ratio {ratio:.2f}"
                       + (" (encrypted pages look random: they do not compress)" if ratio < 1.05 else ""))
    negotiated: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for run in doc["runs"]:
        if run.get("warmup"):
            continue
        tls = (run.get("session") or {}).get("tls")
        if tls is not None and table_for(doc["engine"], run["workload"])["axis"] == "tls":
            bits = f" ({tls['bits']} bits)" if tls.get("bits") else ""
            key = f"{tls['version']} {tls['cipher']}{bits}" if tls.get("ssl") else "no TLS"
            axis = table_for(doc["engine"], run["workload"])["axis"]
            negotiated[f'{axis}={run["variant"].get(axis, "?")}'][key] += 1
    if negotiated:
        engine = engine_named(doc["engine"]["name"])
        view = engine.tls_view if engine and engine.tls_view else "the server's own view"
        out.append(f"negotiated, as the server reports it in {view} (every measured connection is checked; "
                   "a run fails on any mismatch), per measured run: " + "; ".join(
            f"{v}: " + ", ".join(f"{k} in {n} runs" for k, n in seen.items())
            for v, seen in negotiated.items()))
    measured = [r for r in doc["runs"] if not r.get("warmup")]
    if measured and any(t["metric_words"] for t in tables(doc["engine"])) and not any(
            "cpu_s" in op.get("metrics", {}) for r in measured for op in r.get("operations", [])):
        out.append("server-side CPU, context switches and I/O are not measured: the server is not on this machine "
                   "(only the client's side is)")
    for t in tables(doc["engine"]):
        mine = [r for r in measured if table_for(doc["engine"], r["workload"]) == t]
        if mine and not any(baseline_for(r["variant"], doc["engine"], r["workload"]) is None for r in mine):
            axis, base = t["axis"], t["axis_baseline"]
            out.append(f"no baseline ({axis}={base}) was measured, so nothing is compared: "
                       f"add it, e.g. --variant {axis}={base},...")
    engine = engine_named(doc["engine"]["name"])
    for value in sorted({r["variant"].get("encryption") for r in measured if r["variant"].get("cache") == "cold"
                         and _uncounted(engine, r["variant"], doc)}):
        out.append(f"no per-page decrypt cost for encryption={value}: "
                   f"{_uncounted(engine, {'encryption': value, 'cache': 'cold'}, doc)}")
    return out + open_notes(groups, doc["engine"]["name"])


def open_notes(groups, engine_name: str | None = None) -> list[str]:
    """The connection open's time per variant (never across variants: a plain open of 0.4 ms and a SQLCipher open
    of 400 ms have no common figure), timed apart from every workload: the centre of its runs, the figure the
    comparisons and the summary's connection line rest on."""
    parts = []
    for (wl, op, vl), metrics in groups.items():
        values = metrics.get("wall_s", []) if (wl, op) == OPEN else []
        mid = centre(values) if stats.summarize(values) is not None else None
        if mid is not None:
            parts.append(f"{vl or 'every variant'}: {fmt_seconds(mid)} ({len(values)} runs)")
    if not parts:
        return []
    engine = engine_named(engine_name or "")
    includes = engine.open_includes if engine else "its whole set-up included"
    return [f"connection open ({includes}), timed apart and never inside a workload, per variant (trimmed geometric "
            "mean of its runs, as every comparison): " + "; ".join(parts)]


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
    from ..workloads.sweep import SWEPT, SWEPT_OPERATIONS

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
    from ..workloads.sweep import COLUMN_OP, SWEPT

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
UNMADE = type("Unmade", (), {"__repr__": lambda self: "UNMADE"})()  # a headline not made yet (Analysis.headline)  # where a field comes from (Analysis field metadata)


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
        from ..workloads.column import SESSIONS_NOTE

        out.append(SESSIONS_NOTE)
    pinned = sorted({(e["workload"], e["cores"]) for e in scale if e.get("cores", machine_cores(doc)) <
                     machine_cores(doc)})
    for wl, cores in pinned:
        out.append(f"{wl} sessions sweep: the server's sessions could run on {cores} of the machine's "
                   f"{machine_cores(doc)} CPUs (the private server is pinned apart from the worker), so the ideal "
                   f"speed-up is min(k, {cores}); --no-pin gives the server every CPU")
    errors = sorted({p["error"] for p in found if "error" in p})
    return out + [f"CPU profile: {e}" for e in errors]
