"""Plain-word facts a reader needs (Analysis.notes): cache drops, compression, negotiated ciphers, what was not
measured, the connection open per variant."""

from __future__ import annotations

from collections import defaultdict

from . import stats
from .groups import OPEN, baseline_for, centre, table_for, tables
from .perpage import _uncounted
from ..engines import engine_named
from ..util.units import fmt_bytes, fmt_seconds


def _cold_ops(doc: dict) -> list[tuple[str, dict]]:
    """(variant label, operation) of every measured cold operation."""
    return [(run["variant_label"], op) for run in doc["runs"] if not run.get("warmup")
            for op in run.get("operations", []) if op.get("cache", {}).get("cache") == "cold"]


def _per_variant(pairs: list[tuple[str, float]], stat, fmt) -> tuple[str, str]:
    """A statistic of each variant's values, never of several variants' together: ('x', '') when they agree, else
    ('x to y', ' per variant') (a plain and an encrypted read are two figures, not one)."""
    by: dict[str, list[float]] = defaultdict(list)
    for vl, value in pairs:
        by[vl].append(value)
    figures = sorted(stat(v) for v in by.values())
    low, high = fmt(figures[0]), fmt(figures[-1])
    return (low, "") if low == high else (f"{low} to {high}", " per variant")


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _cold_note(doc: dict) -> list[str]:
    """cache=cold: how the cache was emptied, before how many operations, what they read (per variant)."""
    cold_ops = _cold_ops(doc)
    restarts = [(vl, op["cache"]["restart_s"]) for vl, op in cold_ops if "restart_s" in op["cache"]]
    if restarts:
        physical = [(vl, op["metrics"]["pages_read"]) for vl, op in cold_ops if "pages_read" in op["metrics"]]
        restart, per = _per_variant(restarts, _median, fmt_seconds)
        msg = (f"cache=cold: the server was restarted before each of {len(restarts)} operations "
               f"({cold_ops[0][1]['cache'].get('method', '')}; median restart {restart}{per})")
        if physical:
            pages, per = _per_variant(physical, _mean, lambda x: f"{x:,.0f}")
            msg += f"; on average {pages} pages read from storage per operation{per.replace(' ', ', ', 1)}"
        verified = sum(1 for run in doc["runs"] if not run.get("warmup") for op in run.get("operations", [])
                       if op.get("extra", {}).get("cache_verified"))
        if verified:
            msg += (f"; the cache state of {verified} operations was verified from the engine's counters "
                    "(warm: no page read from storage; cold: pages read, and decrypted only when encrypted)")
        return [msg]
    if not cold_ops:
        return []
    dropped = sum(1 for _, op in cold_ops if op["cache"].get("os_cache_dropped"))
    physical = [(vl, op["metrics"].get("read_bytes", 0)) for vl, op in cold_ops if "read_bytes" in op["metrics"]]
    fs = doc["environment"].get("os_cache", {}).get("data_dir_filesystem", "?")
    method = cold_ops[0][1]["cache"].get("method", "")
    fs_text = f"an {fs} file system" if fs != "unknown" else "a file system of unknown type"
    msg = f"cache=cold: OS page cache dropped ({method}) before {dropped} of {len(cold_ops)} operations on {fs_text}"
    if physical:
        read, per = _per_variant(physical, _mean, fmt_bytes)
        msg += f"; on average {read} read from storage per operation{per.replace(' ', ', ', 1)}"
        if max(x for _, x in physical) == 0:
            msg += " — none: reads came from the OS cache, so 'cold' here is SQLite-cache-cold only"
    return [msg]


def notes(doc: dict, groups) -> list[str]:
    """Plain-word facts a reader needs: cache drops, key derivation, negotiated ciphers."""
    out = _cold_note(doc)
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
