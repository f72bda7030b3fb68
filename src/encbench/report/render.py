"""Rendering: the side-by-side table (terminal, markdown), derived figures and notes."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis import model, stats
from ..analysis.rows import DEFAULT_COLUMNS, INSTRUCTION_UNITS, PER_UNIT_CPU, RATES, headline_of
from ..engines import engine_named
from ..profiling import profiler
from ..util.columns import wrap
from ..util.redact import command_line as redact_command_line
from ..util.units import fmt_bytes, fmt_change, fmt_count, fmt_number, fmt_percent, fmt_seconds
from ..analysis.summary import profiled
from ..profiling import flame


def legend_line(shown: list[dict]) -> str | None:
    """The compact table's aliases of long settings, e.g. 'tls#1 = TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384; ...'."""
    legend = {a: full for r in shown for a, full in r["legend"].items()}
    order = sorted(legend, key=lambda a: (a.rpartition("#")[0], int(a.rpartition("#")[2])))
    return "; ".join(f"{a} = {legend[a]}" for a in order) or None


def _short(r: dict, metric: str) -> bool:
    return metric in r.get("too_short", ())


def _ratio(r: dict, metric: str) -> str:
    x = r["comparisons"].get(metric)
    if _short(r, metric):
        return "too short to time"
    return fmt_change(x["ratio"], x["ci"]) if x else "-"


def _pair(r: dict, fmt) -> str:
    return f"{fmt(r['base'])} → {fmt(r['cont'])}"


def _shared_unit(a: str, b: str) -> str:
    """'326.7 ms', '450.0 ms' -> '326.7 → 450.0 ms': one unit when both sides share it."""
    (x, _, unit_a), (y, _, unit_b) = a.rpartition(" "), b.rpartition(" ")
    return f"{x} → {y} {unit_a}" if x and y and unit_a == unit_b else f"{a} → {b}"


def _seconds_pair(key: str):
    """The compact table's means: '326.7 → 450.0 ms' (one unit when both sides share it)."""
    def cell(r: dict) -> str:
        if _short(r, key):
            return "too short to time"
        return _shared_unit(fmt_seconds(r["base"].get(key)), fmt_seconds(r["cont"].get(key)))
    return cell


def _timed(r: dict, metric: str, fmt) -> str:
    """Both sides' means of a time, or 'too short to time' where a side is below its probe's resolution."""
    return "too short to time" if _short(r, metric) or _short(r, metric.replace("_s", "_user_s")) else _pair(r, fmt)


def _user_sys(prefix: str):
    def fmt(d: dict) -> str:
        if f"{prefix}cpu_user_s" not in d:
            return "-"
        return f"{fmt_seconds(d[f'{prefix}cpu_user_s'])} / {fmt_seconds(d[f'{prefix}cpu_sys_s'])}"
    return fmt


def _ctx(prefix: str):
    def fmt(d: dict) -> str:
        if f"{prefix}ctx_voluntary" not in d:
            return "-"
        return f"{fmt_count(d[f'{prefix}ctx_voluntary'])}/{fmt_count(d[f'{prefix}ctx_involuntary'])}"
    return fmt


def _reads(d: dict) -> str:
    if "read_bytes" not in d:
        return f"{fmt_count(d['pages_read'])} pg" if "pages_read" in d else "-"  # the engine's own count alone
    pages = f" ({fmt_count(d['pages_read'])} pg)" if "pages_read" in d else ""
    return f"{fmt_bytes(d['read_bytes'])}{pages}"


PER_TRANSACTION_READS = "pages_read_per_transaction"  # a transaction mix's physical reads (the summary's figure)


def _reads_cell(r: dict) -> str:
    """Read from storage: a transaction mix's page reads per transaction, as its summary and oltp_costs state them
    (the means of the runs' pages_read / transactions); else each side's bytes and pages."""
    a, b = r["base"].get(PER_TRANSACTION_READS), r["cont"].get(PER_TRANSACTION_READS)
    if a is not None or b is not None:
        return " → ".join("-" if x is None else f"{x:.2f}" for x in (a, b)) + " per transaction"
    return _pair(r, _reads)


def _rate(d: dict) -> str:
    for key, unit in RATES:
        if key in d:
            return f"{d[key]:,.0f} {unit}"
    return "-"


def _rate_pair(r: dict) -> str:
    """The compact table's throughput: '2,100 → 2,217 q/s' (one unit for both sides: it fits 100 columns)."""
    for key, unit in RATES:
        if key in r["base"] and key in r["cont"]:
            return f"{r['base'][key]:,.0f} → {r['cont'][key]:,.0f} {unit}"
    return _pair(r, _rate)


def _d_rate(r: dict) -> str:
    for key, _ in RATES:
        if key in r["comparisons"]:
            return _ratio(r, key)
    return "-"


def _per_unit(prefix: str):
    def fmt(d: dict) -> str:
        for unit in PER_UNIT_CPU:
            key = f"{prefix}cpu_us_per_{unit}"
            if key in d:  # '7.8 ms/connection' from a millisecond on, as fmt_seconds says it
                return f"{d[key]:.2f} µs/{unit}" if d[key] < 10 else f"{fmt_seconds(d[key] * 1e-6)}/{unit}"
        return "-"
    return fmt


def _d_per_unit(r: dict, prefix: str) -> str:
    for unit in PER_UNIT_CPU:
        if f"{prefix}cpu_us_per_{unit}" in r["comparisons"]:
            return _ratio(r, f"{prefix}cpu_us_per_{unit}")
    return "-"


def _instructions(d: dict) -> str:
    return fmt_count(d["instructions"]) if "instructions" in d else "-"


def _instructions_per_unit(d: dict) -> str:
    for unit in INSTRUCTION_UNITS:
        if f"instructions_per_{unit}" in d:
            return f"{fmt_count(d[f'instructions_per_{unit}'])}/{unit}"
    return "-"


def _d_instructions_per_unit(r: dict) -> str:
    for unit in INSTRUCTION_UNITS:
        if f"instructions_per_{unit}" in r["comparisons"]:
            return _ratio(r, f"instructions_per_{unit}")
    return "-"


def _innodb_pages(d: dict) -> str:
    if "pages_read" not in d:
        return "-"
    return f"{fmt_count(d['pages_read'])} / {fmt_count(d.get('pages_decrypted', 0))}"


def _net(d: dict) -> str:
    if "net_bytes_received" not in d:
        return "-"
    return f"{fmt_bytes(d['net_bytes_received'])} in {fmt_count(d['net_segments_in'])} seg"


def _sent(d: dict) -> str:
    return fmt_bytes(d["write_syscall_bytes"]) if "write_syscall_bytes" in d else "-"


# name -> (header, cell); an engine lists the columns it wants (Engine.table_columns); LEVEL in a header is the
# confidence of the CIs shown (head(): 95%, or a sequential run's 99%)
LEVEL = "{level}"
COLUMNS = {
    "workload": ("workload", lambda r: r["workload"]),
    "op": ("op", lambda r: r["operation"]),
    "variant": ("variant", lambda r: r["setting"]),
    "elapsed": ("elapsed (mean)", lambda r: _timed(r, "wall_s", lambda d: fmt_seconds(d.get("wall_s")))),
    "d_elapsed": (f"Δ elapsed [{LEVEL} CI]", lambda r: _ratio(r, "wall_s")),
    "cpu": ("CPU user / sys (mean)", lambda r: _timed(r, "cpu_s", _user_sys(""))),
    "server_cpu": ("server CPU user / sys", lambda r: _timed(r, "cpu_s", _user_sys(""))),
    "d_cpu": (f"Δ CPU [{LEVEL} CI]", lambda r: _ratio(r, "cpu_s")),
    "d_server_cpu": ("Δ server CPU", lambda r: _ratio(r, "cpu_s")),
    "client_cpu": ("client CPU user / sys", lambda r: _timed(r, "client_cpu_s", _user_sys("client_"))),
    "d_client_cpu": ("Δ client CPU", lambda r: _ratio(r, "client_cpu_s")),
    "ctx": ("ctx sw vol/invol", lambda r: _pair(r, _ctx(""))),
    "server_ctx": ("server ctx sw vol/invol", lambda r: _pair(r, _ctx(""))),
    "reads": ("read from storage (pages)", _reads_cell),
    "sent": ("server bytes sent", lambda r: _pair(r, _sent)),
    "rate": ("throughput (mean)", lambda r: _pair(r, _rate)),
    "d_rate": ("Δ throughput", _d_rate),
    "server_per_unit": ("server CPU per op", lambda r: _shared_unit(_per_unit("")(r["base"]), _per_unit("")(r["cont"]))),
    "d_server_per_unit": ("Δ server CPU per op", lambda r: _d_per_unit(r, "")),
    "client_per_unit": ("client CPU per op", lambda r: _pair(r, _per_unit("client_"))),
    # the embedded engine's CPU per unit (one process: no server or client side)
    "cpu_per_unit": ("CPU per op", lambda r: _pair(r, _per_unit(""))),
    "d_cpu_per_unit": ("Δ CPU per op", lambda r: _d_per_unit(r, "")),
    "net": ("client received (TCP)", lambda r: _pair(r, _net)),
    "innodb_pages": ("pages read / decrypted", lambda r: _pair(r, _innodb_pages)),
    "verdict": ("verdict", lambda r: r["verdict"]),
    # the compact table's own cells (compact_columns): one total per side, the verdict in a few words
    "cpu_mean": ("mean CPU", _seconds_pair("cpu_s")),
    "server_cpu_mean": ("mean server CPU", _seconds_pair("cpu_s")),
    "client_cpu_mean": ("mean client CPU", _seconds_pair("client_cpu_s")),
    "elapsed_mean": ("mean elapsed", _seconds_pair("wall_s")),
    "rate_mean": ("mean throughput", _rate_pair),
    "verdict_short": ("verdict", lambda r: r["verdict_short"]),
    # --meter instructions: the count (per unit for a fixed-duration workload), whatever the engine declares
    "instructions_mean": ("mean instructions", lambda r: _pair(r, _instructions)),
    "d_instructions": (f"Δ instructions [{LEVEL} CI]", lambda r: _ratio(r, "instructions")),
    "instructions_per_unit": ("instructions per op", lambda r: _pair(r, _instructions_per_unit)),
    "d_instructions_per_unit": ("Δ instructions per op", _d_instructions_per_unit),
    "variant_short": ("variant", lambda r: r["setting_short"]),
}


def columns(table: dict, shown: list[dict] | None = None) -> list[str]:
    """Every column the table declares (engine.table_columns): `show --detail`, the HTML report; with the rows
    shown, the instruction counts' columns too when they were counted (--meter instructions), before the verdict."""
    cols = [c for c in table.get("table_columns") or DEFAULT_COLUMNS if c in COLUMNS]
    counted = {c for r in shown or [] for c in r["comparisons"] if c.startswith("instructions")}
    extra = ((["instructions_mean", "d_instructions"] if "instructions" in counted else [])
             + (["instructions_per_unit", "d_instructions_per_unit"] if counted - {"instructions"} else []))
    if extra:
        at = cols.index("verdict") if "verdict" in cols else len(cols)
        cols = cols[:at] + extra + cols[at:]
    return cols


# The compact table (the default): the row, its lead metric's means and Δ (analysis/rows.HEADLINE), the verdict
# in a few words.
ROW_COLUMNS = ("workload", "op", "variant")
COMPACT_CELLS = {"variant": "variant_short"}  # a row column the compact table shows in fewer characters


def compact_groups(table: dict, shown: list[dict]) -> list[tuple[dict, list[dict]]]:
    """The compact table of a table's rows, one per headline metric: rows judged on different metrics (a
    fixed-duration workload's throughput beside fixed work's CPU) get a table each, its title naming the workloads."""
    groups: dict = {}
    for r in shown:
        groups.setdefault(r["lead"], []).append(r)
    if len(groups) < 2:
        return [(table, shown)]
    return [(dict(table, title=f"{table['title'] or table['axis']}: " + ", ".join(dict.fromkeys(r["workload"]
                                                                                          for r in mine))), mine)
            for mine in groups.values()]


def compact_columns(table: dict, shown: list[dict]) -> list[str]:
    """The columns of the default table: its row columns, the headline pair of its rows, the short verdict."""
    leads = [r["lead"] if "lead" in r else headline_of(table, [dict(c, metric=m) for m, c in r["comparisons"].items()])
             for r in shown]
    head = next((h for h in leads if h), headline_of(table, []))
    return ([COMPACT_CELLS.get(c, c) for c in ROW_COLUMNS if c in columns(table)]
            + ([head[2], head[1]] if head else []) + ["verdict_short"])


def head(column: str, level: float = stats.CONFIDENCE) -> str:
    """A column's header, the confidence its CIs were computed at named ('Δ CPU [99% CI]' on a sequential run)."""
    return COLUMNS[column][0].replace(LEVEL, f"{level:.0%}")


def _axis_line(t: dict) -> str:
    return f"{t['axis']}: baseline {t['axis_baseline']}"


def _cells(r: dict, cols: list[str]) -> list[str]:
    return [COLUMNS[c][1](r) for c in cols]


def derived_lines(analysis) -> list[str]:
    out = []
    for d in analysis["derived"]:
        ci = d["per_page_cpu_ci"]
        if d.get("kind") == "write":
            line = (f"write side, {d['workload']}/{d['operation']} {d['contender']}: "
                    f"{_signed_seconds(d['added_cpu_s'])} "
                    f"CPU for {d['pages_read']:,.0f} pages {d['pages_basis'].split('_')[1]} = "
                    f"{fmt_seconds(d['per_page_cpu_s'])} per {d['page_size']}-byte page")
            out.append(line + (f" [{fmt_seconds(ci[0])}, {fmt_seconds(ci[1])}]" if ci else "")
                       + " (encrypt cost, upper bound)")
            continue
        line = (f"{d['workload']}/{d['operation']} {d['contender']}: {_signed_seconds(d['added_cpu_s'])} CPU for "
                f"{d['pages_read']:,.0f} pages {d.get('pages_basis', 'pages_read').split('_')[1]} = "
                f"{fmt_seconds(d['per_page_cpu_s'])} per {d['page_size']}-byte page")
        if ci:
            line += f" [{fmt_seconds(ci[0])}, {fmt_seconds(ci[1])}]"
        if d["decrypt_mb_per_s_per_core"]:
            who = "the kernel (its worker threads included) decrypts" if d.get("kernel_driver") else "engine decrypts"
            line += f" -> {who} at {d['decrypt_mb_per_s_per_core']:.0f} MB/s per core"
        if "percent_of_raw_cipher" in d:
            line += (f", {fmt_percent(d['percent_of_raw_cipher'])} of this CPU's raw cipher speed "
                     f"({d['raw_cipher_mb_per_s_per_core']:.0f} MB/s per core)")
        line += f"; {d['raw_cipher_flag']}" if d.get("raw_cipher_flag") else ""  # rawcipher.set_beside
        out.append(line)
    return out


def _ci_text(ci, fmt="{:.2f}") -> str:
    return f" [{fmt.format(ci[0])}, {fmt.format(ci[1])}]" if ci else ""


def scaling_lines(analysis, workload: str | None = None) -> list[str]:
    """The sessions sweep's levels (of one workload, or all): throughput, efficiency, degradation, CPU, waits."""
    out = []
    for e in analysis.get("scaling") or []:
        if e["operation"] == "profile" or (workload and e.get("workload", "hash") != workload):
            continue
        where = "" if e.get("workload", "hash") == "hash" else f"{e['workload']} "
        line = (f"{where}{e['function']}/{e['operation']} {e['sessions']} sessions: {e['throughput']:,.0f} rows/s"
                f"{_ci_text(e['throughput_ci'], '{:,.0f}')}")
        if e["efficiency"] is not None:
            line += f", efficiency {e['efficiency']:.2f}{_ci_text(e['efficiency_ci'])}"
        if e["degradation"] is not None and e["sessions"] != 1:
            line += f", degradation {e['degradation']:.2f}x{_ci_text(e['degradation_ci'])}"
        if e.get("server_cpu_us_per_row") is not None:
            line += f"; server CPU {e['server_cpu_us_per_row']:.3f} µs/row"
        if e.get("client_cpu_share") is not None:
            line += f"; client {e['client_cpu_share']:.1%} of the CPU"
        if e.get("waits"):
            line += "; samples: " + ", ".join(f"{w} {x:.0%}" for w, x in e["waits"].items())
        out.append(line + f" ({e['runs']} runs)")
    if out:
        out.append("efficiency = throughput(k) / (min(k, cores) x throughput(1)), cores = the CPUs the server's "
                   "sessions may run on where recorded, else the machine's; degradation = wall(k) / wall(1), "
                   "the same rows per session; ratios of trimmed geometric means with Yuen-Welch t 95% CIs")
    for c in (analysis.get("hash_costs") or []) if workload in (None, "hash") else []:
        line = (f"{c['function']}: the engine spends {c['function_us_per_row']:.3f} µs of server CPU per row on the "
                f"function ({c['hash_us_per_row']:.3f} with it, {c['baseline_us_per_row']:.3f} without, 1 session)")
        if c.get("raw_us_per_call"):
            line += (f"; the hash itself takes {c['raw_us_per_call']:.3f} µs on this CPU ({c['raw_method']}): "
                     f"{c['times_raw']:.1f}x")
        out.append(line)
    return out


def profile_lines(analysis) -> list[str]:
    out = []
    for p in analysis.get("profiles") or []:
        if "error" in p:
            continue
        funcs = ", ".join(f"{name} {share:.0%}" for name, share in p["top_functions"][:6])
        objs = ", ".join(f"{name.rsplit('/', 1)[-1]} {share:.0%}" for name, share in p["top_objects"][:4])
        where = "" if p.get("workload", "hash") == "hash" else f"{p['workload']} "
        out.append(f"{where}{p['function']} at {p['sessions']} sessions ({p['sample_count']} samples at "
                   f"{p['frequency_hz']} Hz, {p['event']}): libcrypto {p['libcrypto_share']:.0%} of the server's CPU (inclusive), locks "
                   f"{p['lock_share']:.0%}; objects: {objs}; leaf functions: {funcs}")
    return out


def plot_scaling(doc: dict, scale: list[dict], prefix) -> list:
    """The scaling plots (<prefix>-scaling.png and .svg) of a hash sweep's hash and baseline levels."""
    from . import plots

    entries = [e for e in scale if e["operation"] in ("hash", "baseline")]
    cores = int(doc["environment"]["cpu"].get("logical_cores") or 1)
    return plots.scaling_plots(entries, cores, prefix,
                               f"{doc['engine']['name']}: in-query hash under concurrency ({cores} cores)")


def flame_graphs(doc: dict):
    """(variant, SVG text) of every recorded profile that has folded stacks."""
    for v, extra in profiled(doc):
        folded = (extra.get("profile") or {}).get("folded")
        if folded:
            yield v, flame.flamegraph_svg(
                folded, f"{doc['engine']['name']} server CPU: {v.get('function')}, {v.get('sessions')} sessions")


def write_files(doc: dict, result_path, scale: list[dict], *, only_missing: bool = False) -> list[str]:
    """Plots and flame graphs next to the result file: <stem>-scaling.png/.svg, <stem>-flame-*.svg."""
    from pathlib import Path

    result_path = Path(result_path)
    prefix = result_path.with_name(result_path.stem)
    written: list[str] = []
    try:
        if any(e["operation"] in ("hash", "baseline") for e in scale):
            target = Path(f"{prefix}-scaling.png")
            if only_missing and target.exists():
                written += [str(target), str(target.with_suffix(".svg"))]
            else:
                written += [str(p) for p in plot_scaling(doc, scale, prefix)]
        for v, svg in flame_graphs(doc):
            target = Path(f"{prefix}-flame-{v.get('function')}-s{v.get('sessions')}.svg")
            if not (only_missing and target.exists()):
                target.write_text(svg)
            written.append(str(target))
        written += profiler.flame_files(doc, prefix, only_missing=only_missing)  # any workload's --profile
    except OSError:
        return written  # the results stand without their pictures
    return sorted(set(written))


def attribution_lines(analysis) -> list[str]:
    out = []
    for a in analysis["attribution"]:
        if a["elapsed_s"] is None:
            continue
        parts = [f"server CPU {_signed_seconds(a['server_cpu_s'])}", f"client CPU {_signed_seconds(a['client_cpu_s'])}"]
        if a["waits_grown"]:
            parts.append("waits grown: " + ", ".join(
                f"{w['event']} {w['baseline_pct']:.0f}% → {w['contender_pct']:.0f}% of samples" for w in a["waits_grown"]))
        ci = a.get("elapsed_ci")
        ci = f" [{_signed_seconds(ci[0])}, {_signed_seconds(ci[1])}]" if ci else ""
        pct = f" ({fmt_number(a['elapsed_pct'], True, 0)}%)" if a.get("elapsed_pct") is not None else ""
        per = f" per {a['per']} (a fixed-duration run: its time over the {a['per']} count)" if a.get("per") else ""
        out.append(f"{a['workload']}/{a['operation']} {a['contender']}: elapsed {_signed_seconds(a['elapsed_s'])}{ci}"
                   f"{pct}{per}: " + ", ".join(parts))
    return out


def _signed_seconds(x: float | None) -> str:
    if x is None:
        return "n/a"
    return ("+" if x >= 0 else "-") + fmt_seconds(abs(x))


def raw_cipher_lines(doc: dict) -> list[str]:
    out = []
    for ps, r in ((doc.get("calibration") or {}).get("raw_cipher") or {}).items():
        parts = ", ".join(f"{name} {r[key]:.0f} MB/s" for key, name in (
            ("bulk_aes_256_cbc_mb_per_s", "bulk AES-256-CBC"), ("bulk_hmac_sha512_mb_per_s", "HMAC-SHA512"),
            ("bulk_hmac_sha256_mb_per_s", "HMAC-SHA256"), ("bulk_hmac_sha1_mb_per_s", "HMAC-SHA1"),
            ("bulk_aes_256_ctr_mb_per_s", "bulk AES-256-CTR")) if r.get(key))
        out.append(f"raw cipher on this CPU: {r['cipher']}: {r['mb_per_s_per_core']:.0f} MB/s per core "
                   f"({fmt_seconds(r['per_page_cpu_s'])} per page; {parts}; {r['library']})"
                   + (f"; {r['spread']}" if r.get("spread") else ""))
    return out


def header_lines(doc: dict, analysis=None) -> list[str]:
    """The lines after the summary: the version, the machine, the data, the axes, what the verdicts mean."""
    m = _model(doc, analysis) if analysis is not None else None
    env, cfg, ds = doc["environment"], doc["config"], doc.get("dataset") or {}
    flags = ",".join(k for k, v in env["cpu"]["flags"].items() if v) or "none"
    versions = ", ".join(f"{k} {v}" for k, v in env.get("engine_versions", {}).items())
    runs = sum(1 for r in doc["runs"] if not r.get("warmup"))
    warm = sum(1 for r in doc["runs"] if r.get("warmup"))
    level = m.level if m else model.an.verdict_confidence(doc)
    tables = [t.spec for t in m.tables] if m else model.shown_tables(doc)
    lines = [
        f"encbench {doc['encbench_version']} - engine {doc['engine']['name']} ({versions})",
        f"CPU {env['cpu']['model']}, {env['cpu']['logical_cores']} cores, flags {flags}; kernel {env['kernel']}",
        f"{_data_line(doc, ds, cfg)}; {runs} measured runs + {warm} warmups (each a fresh process and connection), "
        f"status {doc['status']}",
        f"{'; '.join(_axis_line(t) for t in tables)}; Δ = contender vs baseline, "
        f"ratio of trimmed geometric means with a Yuen-Welch t {level:.0%} CI" + (
            " (a sequential run's verdicts, --quick/--budget: every CI below is at this level)"
            if level != stats.CONFIDENCE else ""),
        f"verdicts: 'costs' / 'saves' = the {level:.0%} CI excludes 0%; 'no cost' = the {2 * level - 1:.0%} CI lies "
        f"within ±{m.margin_pct if m else stats.DEFAULT_MARGIN_PCT:g}% "
        f"(equivalence shown by two one-sided tests); 'inconclusive' = neither, run longer; none below "
        f"{stats.MIN_RUNS} runs per side" + (f" ({stats.EXACT_MIN_RUNS} for a count whose runs repeat within "
                                             f"{stats.EXACT_TOLERANCE:.1%}: bounded, no t-interval)"
                                             if doc.get("meter") else ""),
    ]
    return lines + _settings_lines(doc, m)


def _data_line(doc: dict, ds: dict, cfg: dict) -> str:
    """'data: 25,000 rows (...)', or the server measured."""
    if ds.get("rows") or ("rows" in ds and "server" not in ds):  # 0 rows on a server: its oltp tables, named below
        return f"data: {ds['rows']:,} rows (seed {ds.get('seed', '?')}, {fmt_bytes(cfg['size_bytes'])} target)"
    if "server" in ds:
        srv = ds["server"]
        engine = engine_named(doc["engine"]["name"])
        where = srv.get("address") or f"{srv.get('host')}:{srv.get('port')}"  # address: the clients' (a socket's path)
        return (f"server: {engine.label if engine else doc['engine']['name']} {srv.get('version')} at {where} "
                f"({'private, started by encbench' if ds.get('managed') else 'external'}; "
                f"{srv.get('ssl_library') or 'TLS library ?'})")
    return "data: -"


def _settings_lines(doc: dict, m: model.Model | None) -> list[str]:
    """The workloads' settings and, with --meter instructions, what was counted and the CPU-model gap."""
    lines = []
    params = "; ".join(f"{wl}: " + ", ".join(f"{k}={v}" for k, v in meta["params"].items())
                       for wl, meta in doc.get("workloads", {}).items() if meta.get("params"))
    if params:
        lines.append(f"workload settings: {params}")
    meter_ = doc.get("meter") or {}
    if meter_:  # --meter instructions: what was counted, and the CPU it was counted on
        lines.append(f"meter: instructions counted by valgrind {meter_.get('valgrind', '?')} "
                     f"{meter_.get('tool', 'callgrind')}" + (" with its cache simulation" if meter_.get("cache_sim") else "")
                     + "; the verdicts rest on the counts; times and CPU times are the simulation's, not this CPU's")
        gap = (m.analysis.instructions or {}).get("cpu_gap") if m else None
        if gap:
            lines.append(f"CPU-model gap: {gap['text']}")
    return lines


def _model(doc: dict, analysis) -> model.Model:
    """The result model: the one given, else built once from the analysis (model.build)."""
    return analysis if isinstance(analysis, model.Model) else model.build(doc, analysis)


# the headline summary (analysis/headline.py), shown first: before the header and the tables
# the summary printed first: each line within 100 columns; with --detail (and in the HTML report) the sentences
SUMMARY = ("Summary", "Summary", lambda doc, a, detail=False: (lambda m: m.summary_detail if detail else m.summary)(
    _model(doc, a)))

# the sections after the tables, in order: (terminal title, markdown and HTML title, lines from the document
# and its model, model.build: an analysis given instead is made into one); every renderer walks this table
SECTIONS = (
    ("Where the overhead went (mean contender minus mean baseline)", "Where the overhead went",
     lambda doc, a: attribution_lines(_model(doc, a).analysis)),
    ("Scaling of the in-query hash", "Scaling of the in-query hash",
     lambda doc, a: scaling_lines(_model(doc, a).analysis, "hash")),
    ("Scaling of the column's in-database methods (--sessions)", "Scaling of the column's in-database methods",
     lambda doc, a: scaling_lines(_model(doc, a).analysis, "column")),
    ("CPU profile of the server (perf, warmup runs)", "CPU profile of the server",
     lambda doc, a: profile_lines(_model(doc, a).analysis)),
    ("Files", "Files", lambda doc, a: _model(doc, a).analysis.files or []),
    ("Per-page decrypt cost", "Per-page decrypt cost",
     lambda doc, a: derived_lines(_model(doc, a).analysis) + raw_cipher_lines(doc)),
    ("Column encryption per row vs the raw cipher", "Column encryption per row vs the raw cipher",
     lambda doc, a: _model(doc, a).lab_lines["column"]),
    ("The transaction mix: cost per transaction and per page, the estimate checked", "The transaction mix",
     lambda doc, a: _model(doc, a).lab_lines["oltp"]),
    ("Where the instructions go (callgrind, --meter instructions)", "Where the instructions go",
     lambda doc, a: _model(doc, a).lab_lines["instructions"]),
    ("Notes", "Notes", lambda doc, a: _model(doc, a).analysis.notes),
    ("Warnings", "Warnings", lambda doc, a: _model(doc, a).warnings),
)
# the title of the model's context (precision, placement, run context) in Markdown and the HTML report; the
# terminal prints its lines last, without a title
CONTEXT_TITLE = "Run context"
# what `show --detail` adds after them
DETAIL_SECTIONS = (
    ("Every warning (per row, side and metric)", "Every warning", lambda doc, a: _model(doc, a).warning_detail),
)


def _shown_tables(doc: dict, analysis) -> list[tuple[dict, list[dict]]]:
    """(table, its rows) of every table shown."""
    return [(t.spec, t.rows) for t in _model(doc, analysis).tables]


def _sections(detail: bool):
    return SECTIONS + (DETAIL_SECTIONS if detail else ())


def render_text(doc: dict, analysis, console: Console, detail: bool = False) -> None:
    """The summary, the header, the compact tables (with `detail` every column, a block per row), the sections:
    all from one model (model.build, made here once when an analysis is given)."""
    m = _model(doc, analysis)
    _print_section(console, SUMMARY[0], SUMMARY[2](doc, m, detail))
    for line in header_lines(doc, m):
        _say(console, line)
    for t in m.tables:
        if detail:
            _print_long(console, t.spec, t.rows, m.level)
            continue
        for g, mine in compact_groups(t.spec, t.rows):
            _print_compact(console, g, mine, m.level)
    for title, _, lines in _sections(detail):
        _print_section(console, title, lines(doc, m))
    if doc["config"].get("command"):  # the command whole, on a line of its own when it does not fit beside
        _say(console, f"Reproduce: {doc['config']['command']}", keep=[doc["config"]["command"]])
    for line in m.context:  # precision, placement, run context
        _say(console, line)


def _say(console: Console, text: str, keep: list[str] | tuple = (), bold: str = "") -> None:
    """A line of prose wrapped to the console's width (util/columns.wrap: at spaces, a bullet's next lines under its
    text, a number, a path or `keep` never cut), in a terminal and in a pipe alike; rich wraps it no further. The
    text's start `bold`, when given, in bold."""
    for i, line in enumerate(wrap(text, console.width, keep)):
        shown = Text(line)
        if i == 0 and bold:
            shown.stylize("bold", 0, len(bold))
        console.print(shown, highlight=False, soft_wrap=True)


def _print_compact(console: Console, g: dict, mine: list[dict], level: float) -> None:
    table = Table(show_lines=False, header_style="bold", pad_edge=False,
                  title=g["title"] or None, title_justify="left", title_style="bold")
    cols = compact_columns(g, mine)
    for c in cols:
        table.add_column(head(c, level), overflow="fold")
    for r in mine:
        table.add_row(*_cells(r, cols))
    console.print(table)
    if legend_line(mine):  # each alias with its setting on one line
        _say(console, f"  {legend_line(mine)}", keep=legend_line(mine).split("; "))


def _print_long(console: Console, t: dict, shown: list[dict], level: float = stats.CONFIDENCE) -> None:
    """Every declared column of a table, one row per block: its name, then a line per column."""
    if t["title"]:
        console.print(f"[bold]{t['title']}[/bold]")
    cols = [c for c in columns(t, shown) if c not in ROW_COLUMNS]
    for r in shown:
        name = f"{r['workload']} / {r['operation']}" + (f" / {r['setting']}" if r["setting"] != "-" else "")
        _say(console, f"{name} ({r['contender']} vs {r['baseline']})", bold=name)
        for c in cols:
            _say(console, f"    {head(c, level)}: {COLUMNS[c][1](r)}")
    if not shown:
        console.print("  (no rows)")


def _print_section(console: Console, title: str, lines: list[str]) -> None:
    if lines:
        console.print(f"[bold]{title}[/bold]")
        for line in lines:  # a wrapped item goes on under its text, not under the dash
            _say(console, f"  - {line}")


def render_markdown(doc: dict, analysis, detail: bool = False) -> str:
    """The compact tables (every declared column with `detail`) and the sections, for a ticket: one model."""
    m = _model(doc, analysis)
    out = ["# encbench results\n"]
    summary = SUMMARY[2](doc, m, detail)
    out += [f"## {SUMMARY[1]}", ""] + [f"- {line}" for line in summary] + [""] if summary else []
    out += [f"- {line}" for line in header_lines(doc, m)]
    for t in m.tables:
        for g, shown in [(t.spec, t.rows)] if detail else compact_groups(t.spec, t.rows):
            out += _markdown_table(g, shown, detail, m.level)
    for _, title, section in _sections(detail):
        lines = section(doc, m)
        if lines:
            out += ["", f"## {title}", ""] + [f"- {line}" for line in lines]
    if m.context:
        out += ["", f"## {CONTEXT_TITLE}", ""] + [f"- {line.strip()}" for line in m.context]
    if doc["config"].get("command"):
        out += ["", f"Reproduce: `{doc['config']['command']}`"]
    return "\n".join(out) + "\n"


def _markdown_table(g: dict, shown: list[dict], detail: bool, level: float) -> list[str]:
    out = [""]
    if g["title"]:
        out += [f"## {g['title']}", ""]
    cols = columns(g, shown) if detail else compact_columns(g, shown)
    out.append("| " + " | ".join(head(c, level) for c in cols) + " |")
    out.append("|" + "---|" * len(cols))
    for r in shown:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(r, cols)) + " |")
    if not detail and legend_line(shown):
        out += ["", legend_line(shown)]
    return out


def render_json(doc: dict, analysis) -> str:
    """Analysis.to_dict() (each comparison carries `verdict`, one of stats.VERDICTS, `verdict_text` and
    `equivalence`); the document's facts (schema version, status, engine) are in the analysis' header."""
    found = analysis.analysis if isinstance(analysis, model.Model) else analysis
    return json.dumps((found if isinstance(found, model.an.Analysis) else model.an.Analysis.of(found)).to_dict(),
                      indent=1)


def command_line(argv: list[str]) -> str:
    """The command that reproduces a result, with any password hidden (each argument before quoting)."""
    return redact_command_line(argv)
