"""Rendering: the side-by-side table (terminal, markdown), derived figures and notes."""

from __future__ import annotations

import json
import re
from collections import defaultdict

from rich.console import Console
from rich.table import Table

from ..analysis import summary as an
from ..analysis import columncost, headline, instrattr, oltpcost, stats
from ..engines import engine_named
from ..lab import meter
from ..profiling import profiler
from ..util.redact import command_line as redact_command_line
from ..util.units import fmt_bytes, fmt_change, fmt_count, fmt_number, fmt_percent, fmt_seconds


def _means(groups, key) -> dict[str, float]:
    return {m: sum(v) / len(v) for m, v in groups.get(key, {}).items() if v}


def _in_table(doc: dict, table: dict | None, workload: str) -> bool:
    return table is None or an.table_for(doc["engine"], workload) == table


def rows(doc: dict, analysis: an.Analysis, table: dict | None = None) -> list[dict]:
    """One row per (workload, operation, contender variant), baseline and contender side by side.

    With a table (one of analysis.tables), only the rows of its workloads.
    """
    analysis = an.Analysis.of(analysis)
    groups = an.collect(doc)
    t = table or an.tables(doc["engine"])[0]
    axis = t["axis"]
    comps = defaultdict(list)
    for c in analysis.comparisons:
        if _in_table(doc, table, c["workload"]):
            comps[(c["workload"], c["operation"], c["contender"], c["baseline"])].append(c)
    order = list(doc.get("workloads", {}))
    variants = {vl: v for vl, v in an.variants_by_label(doc).items()
                if table is None or not t["workloads"] or any(r["variant_label"] == vl and r["workload"] in t["workloads"]
                                                             for r in doc["runs"])}
    varying = {k for v in variants.values() for k in v
               if k != axis and len({x[k] for x in variants.values() if k in x}) > 1}
    base_value = t["axis_baseline"]
    if len({v.get(axis) for v in variants.values()} - {base_value, None}) > 1:
        varying.add(axis)  # several contenders (cipher suites): name each one
    aliases = _aliases(variants.values(), varying)
    out = []
    for (wl, op, cont, base), cs in comps.items():
        if (wl, op) == an.OPEN:
            continue  # connection open (key derivation) is reported apart, never as a workload
        b, c = _means(groups, (wl, op, base)), _means(groups, (wl, op, cont))
        by_metric = {x["metric"]: x for x in cs}
        setting = ",".join(f"{k}={v}" for k, v in variants[cont].items() if k in varying) or "-"
        short = ",".join(_short_setting(k, v, axis, aliases) for k, v in variants[cont].items() if k in varying) or "-"
        n = min(x["n_contender"] for x in cs), min(x["n_baseline"] for x in cs)
        head = headline_of(t, cs)
        too_short = {x["metric"] for x in analysis.summaries if (x["workload"], x["operation"]) == (wl, op)
                     and x["variant"] in (base, cont) and any(TOO_SHORT in w for w in x["warnings"])}
        out.append({
            "workload": wl, "operation": op, "setting": setting, "setting_short": short, "baseline": base,
            "contender": cont, "legend": {a: v for (k, v), a in aliases.items() if a in short.split(",")},
            "n": n, "base": b, "cont": c, "comparisons": by_metric,
            "verdict": an.row_verdict(cs, t.get("metric_words")),
            "verdict_code": an.row_code(cs, t.get("metric_words")),
            "verdict_short": short_verdict(cs, t.get("metric_words"), head[0] if head else None),
            "lead": head, "too_short": too_short,
        })
    out.sort(key=lambda r: (order.index(r["workload"]) if r["workload"] in order else len(order),
                            r["workload"], r["setting"]))
    return out


LONG_SETTING = 14  # a setting value longer than this is named key#n in the compact table, with a legend
BARE_VALUES = frozenset({"on", "off", "yes", "no", "true", "false", "none"})  # say nothing without their key


def _aliases(variants, varying: set[str]) -> dict[tuple[str, str], str]:
    """(key, value) -> key#n for the long values of the varying keys (TLS suites), numbered in sorted order."""
    long = sorted({(k, str(v)) for v in variants for k, v in v.items() if k in varying and len(str(v)) > LONG_SETTING})
    numbered: dict[str, int] = defaultdict(int)
    out = {}
    for k, v in long:
        numbered[k] += 1
        out[(k, v)] = f"{k}#{numbered[k]}"
    return out


def _short_setting(key: str, value, axis: str, aliases: dict) -> str:
    """The compact table's name of a setting: a long value by its alias (tls#1, see the legend), the measured
    axis by its value alone when the value says what it is (fscrypt), the others as key=value (cache=cold)."""
    value = str(value)
    if (key, value) in aliases:
        return aliases[(key, value)]
    return value if key == axis and not value.isdigit() and value not in BARE_VALUES else f"{key}={value}"


def legend_line(shown: list[dict]) -> str | None:
    """The compact table's aliases of long settings, e.g. 'tls#1 = TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384; ...'."""
    legend = {a: full for r in shown for a, full in r["legend"].items()}
    order = sorted(legend, key=lambda a: (a.rpartition("#")[0], int(a.rpartition("#")[2])))
    return "; ".join(f"{a} = {legend[a]}" for a in order) or None


TOO_SHORT = ": too short to time"  # stats.warnings_for's: a figure below 100x its probe's resolution is no figure


def _short(r: dict, metric: str) -> bool:
    return metric in r.get("too_short", ())


def _ratio(r: dict, metric: str) -> str:
    x = r["comparisons"].get(metric)
    if _short(r, metric):
        return "too short to time"
    return fmt_change(x["ratio"], x["ci"]) if x else "-"


def _pair(r: dict, fmt) -> str:
    return f"{fmt(r['base'])} → {fmt(r['cont'])}"


def _seconds_pair(key: str):
    """The compact table's means: '326.7 → 450.0 ms' (one unit when both sides share it)."""
    def cell(r: dict) -> str:
        if _short(r, key):
            return "too short to time"
        a, b = fmt_seconds(r["base"].get(key)), fmt_seconds(r["cont"].get(key))
        (x, _, unit_a), (y, _, unit_b) = a.rpartition(" "), b.rpartition(" ")
        return f"{x} → {y} {unit_a}" if x and y and unit_a == unit_b else f"{a} → {b}"
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


RATES = (("qps", "q/s"), ("tps", "txn/s"), ("mb_per_s", "MB/s"), ("connections_per_s", "conn/s"), ("rows_per_s", "rows/s"))


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


PER_UNIT_CPU = ("query", "message", "connection", "row", "transaction")


def _per_unit(prefix: str):
    def fmt(d: dict) -> str:
        for unit in PER_UNIT_CPU:
            key = f"{prefix}cpu_us_per_{unit}"
            if key in d:
                return f"{d[key]:.2f} µs/{unit}" if d[key] < 10 else f"{d[key]:.1f} µs/{unit}"
        return "-"
    return fmt


def _d_per_unit(r: dict, prefix: str) -> str:
    for unit in PER_UNIT_CPU:
        if f"{prefix}cpu_us_per_{unit}" in r["comparisons"]:
            return _ratio(r, f"{prefix}cpu_us_per_{unit}")
    return "-"


INSTRUCTION_UNITS = ("query", "message", "connection", "row", "transaction")


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


# name -> (header, cell); an engine lists the columns it wants (Engine.table_columns)
COLUMNS = {
    "workload": ("workload", lambda r: r["workload"]),
    "op": ("op", lambda r: r["operation"]),
    "variant": ("variant", lambda r: r["setting"]),
    "elapsed": ("elapsed (mean)", lambda r: _timed(r, "wall_s", lambda d: fmt_seconds(d.get("wall_s")))),
    "d_elapsed": ("Δ elapsed [95% CI]", lambda r: _ratio(r, "wall_s")),
    "cpu": ("CPU user / sys (mean)", lambda r: _timed(r, "cpu_s", _user_sys(""))),
    "server_cpu": ("server CPU user / sys", lambda r: _timed(r, "cpu_s", _user_sys(""))),
    "d_cpu": ("Δ CPU [95% CI]", lambda r: _ratio(r, "cpu_s")),
    "d_server_cpu": ("Δ server CPU", lambda r: _ratio(r, "cpu_s")),
    "client_cpu": ("client CPU user / sys", lambda r: _timed(r, "client_cpu_s", _user_sys("client_"))),
    "d_client_cpu": ("Δ client CPU", lambda r: _ratio(r, "client_cpu_s")),
    "ctx": ("ctx sw vol/invol", lambda r: _pair(r, _ctx(""))),
    "server_ctx": ("server ctx sw vol/invol", lambda r: _pair(r, _ctx(""))),
    "reads": ("read from storage (pages)", _reads_cell),
    "sent": ("server bytes sent", lambda r: _pair(r, _sent)),
    "rate": ("throughput (mean)", lambda r: _pair(r, _rate)),
    "d_rate": ("Δ throughput", _d_rate),
    "server_per_unit": ("server CPU per op", lambda r: _pair(r, _per_unit(""))),
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
    "d_instructions": ("Δ instructions [95% CI]", lambda r: _ratio(r, "instructions")),
    "instructions_per_unit": ("instructions per op", lambda r: _pair(r, _instructions_per_unit)),
    "d_instructions_per_unit": ("Δ instructions per op", _d_instructions_per_unit),
    "variant_short": ("variant", lambda r: r["setting_short"]),
}
DEFAULT_COLUMNS = ("workload", "op", "variant", "elapsed", "d_elapsed", "cpu", "d_cpu", "ctx", "reads", "verdict")


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


# The compact table (the default): the row, the headline metric's means and Δ, the verdict in a few words.
# A row's headline is the first metric its verdict rests on (analysis.basis_of: its workload's verdict metrics)
# that the table declares a Δ column for: (metric, its Δ column as engines declare it, the compact means column).
HEADLINE = (("cpu_s", "d_cpu", "cpu_mean"), ("cpu_s", "d_server_cpu", "server_cpu_mean"),
            ("client_cpu_s", "d_client_cpu", "client_cpu_mean"), ("wall_s", "d_elapsed", "elapsed_mean"),
            *((rate, "d_rate", "rate_mean") for rate, _ in RATES),
            *((f"cpu_us_per_{u}", "d_server_per_unit", "server_per_unit") for u in PER_UNIT_CPU),
            *((f"cpu_us_per_{u}", "d_cpu_per_unit", "cpu_per_unit") for u in PER_UNIT_CPU),
            ("instructions", "d_instructions", "instructions_mean"),
            *((f"instructions_per_{u}", "d_instructions_per_unit", "instructions_per_unit") for u in INSTRUCTION_UNITS))
METERED = frozenset(h[1] for h in HEADLINE if h[0].startswith("instructions"))  # shown in any table that has them
ROW_COLUMNS = ("workload", "op", "variant")
COMPACT_CELLS = {"variant": "variant_short"}  # a row column the compact table shows in fewer characters


def headline_of(table: dict, comps: list[dict]) -> tuple[str, str, str] | None:
    """(metric, Δ column, means column) of a row's headline: the first metric of its verdict (an.basis_of) with a
    HEADLINE entry whose Δ column the table declares (else the first entry it declares)."""
    declared = [h for h in HEADLINE if h[1] in columns(table) or h[1] in METERED]
    return next((h for c in an.basis_of(comps) for h in declared if h[0] == c["metric"]),
                declared[0] if declared else None)


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


def _short_pct(c: dict) -> str:
    return f"{fmt_number((c['ratio'] - 1) * 100, True, 0)}%"


def short_verdict(comps: list[dict], words: dict[str, str] | None = None, shown_metric: str | None = None) -> str:
    """The row's verdict in a few words: 'costs' when the metric in the Δ column (`shown_metric`) is the first
    shown to cost (else to save, in the verdict metrics' order), else that metric named: 'costs +8% elapsed';
    'no cost (±2%)', 'inconclusive', 'too few runs'; the full sentence is `show --detail`'s."""
    code = an.row_code(comps, words)
    if code == stats.WITHHELD:
        return "no verdict: client-bound"
    judged = an.row_judgements(comps, words)
    if code in (stats.COSTS, stats.SAVES):
        metric, c = next((m, c) for m, c in judged if c["verdict"] == code)
        if metric == shown_metric:
            return code
        return f"{code} {_short_pct(c)} {an.metric_word(metric, words)}"
    if code == stats.NO_COST:
        return f"no cost (±{judged[0][1]['equivalence']['margin_pct']:g}%)"
    return {stats.TOO_FEW_RUNS: "too few runs", stats.INCONCLUSIVE: "inconclusive",
            stats.NO_ESTIMATE: "no estimate"}.get(code, "no comparison") if judged else "no comparison"


def _tables(doc: dict) -> list[dict]:
    """The tables with something to show (every one when none has rows: an empty table says so)."""
    ts = an.tables(doc["engine"])
    if len(ts) == 1:
        return ts
    measured = {r["workload"] for r in doc["runs"]}
    shown = [t for t in ts if not t["workloads"] or measured & set(t["workloads"])]
    return shown or ts[:1]


def _axis_line(t: dict) -> str:
    return f"{t['axis']}: baseline {t['axis_baseline']}"


def _cells(r: dict, cols: list[str]) -> list[str]:
    return [COLUMNS[c][1](r) for c in cols]


def derived_lines(analysis: an.Analysis) -> list[str]:
    out = []
    for d in an.Analysis.of(analysis).derived:
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


def scaling_lines(analysis: an.Analysis, workload: str | None = None) -> list[str]:
    """The sessions sweep's levels (of one workload, or all): throughput, efficiency, degradation, CPU, waits."""
    analysis = an.Analysis.of(analysis)
    out = []
    for e in analysis.scaling or []:
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
    for c in (analysis.hash_costs or []) if workload in (None, "hash") else []:
        line = (f"{c['function']}: the engine spends {c['function_us_per_row']:.3f} µs of server CPU per row on the "
                f"function ({c['hash_us_per_row']:.3f} with it, {c['baseline_us_per_row']:.3f} without, 1 session)")
        if c.get("raw_us_per_call"):
            line += (f"; the hash itself takes {c['raw_us_per_call']:.3f} µs on this CPU ({c['raw_method']}): "
                     f"{c['times_raw']:.1f}x")
        out.append(line)
    return out


def profile_lines(analysis: an.Analysis) -> list[str]:
    out = []
    for p in an.Analysis.of(analysis).profiles or []:
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
    from ..profiling import flame

    for v, extra in an.profiled(doc):
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


def attribution_lines(analysis: an.Analysis) -> list[str]:
    out = []
    for a in an.Analysis.of(analysis).attribution:
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


# warnings grouped by cause: (pattern of stats.warnings_for's text, what the rows are, what to do); a warning
# no pattern matches is printed as it is
WARNING_CAUSES = (
    (re.compile(r": \d+ non-finite value"), "have values that are not finite (NaN or Inf), left out of every "
     "statistic", "see which with `encbench show FILE --detail`; the probe or the run misbehaved"),
    (re.compile(r": no runs$"), "have no finite run", "run again"),
    (re.compile(r": unstable, stdev is"), f"unstable (stdev >= {stats.UNSTABLE_CV:.0%} of the mean)",
     "run with --precision 3% or --runs 20, on a quieter machine"),
    (re.compile(r": too short to time"), "too short to time (mean < 100x the probe's resolution)",
     "use a larger --size, or --param repeat=N"),
    (re.compile(r": \d+ outlier run"), f"have outlier runs (modified Z-score > {stats.OUTLIER_Z:g})",
     "see what else ran (run context in `encbench show FILE --json`), or add runs (--runs 20)"),
)
FEW_RUNS = " runs (< "  # stats.warnings_for's few-runs warning: folded into one line per run count


def _warned(analysis: an.Analysis) -> list[dict]:
    """The summaries behind the table's figures of the compared rows: the metrics their verdicts rest on (elapsed
    and CPU for fixed work; throughput and CPU per query for a fixed-duration run), or elapsed and CPU."""
    rows_: dict = defaultdict(list)
    for c in analysis.comparisons:
        if (c["workload"], c["operation"]) != an.OPEN:
            rows_[(c["workload"], c["operation"], c["contender"], c["baseline"])].append(c)
    keys = {(wl, op, v, c["metric"]) for (wl, op, cont, base), cs in rows_.items()
            for c in (an.basis_of(cs) or [x for x in cs if x["metric"] in ("wall_s", "cpu_s")]) for v in (cont, base)}
    return [s for s in analysis.summaries if (s["workload"], s["operation"], s["variant"], s["metric"]) in keys]


def _row_names(doc: dict | None, analysis: an.Analysis) -> dict[tuple[str, str, str], list[str]]:
    """(workload, operation, variant label) -> the names of the table rows it is a side of."""
    out: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    if doc is None:  # no document: the rows named by the contender's label
        for c in analysis.comparisons:
            for v in (c["baseline"], c["contender"]):
                out[(c["workload"], c["operation"], v)].append(f"{c['workload']}/{c['operation']} {c['contender']}")
        return out
    many = len(_tables(doc)) > 1
    for t in _tables(doc):
        for r in rows(doc, analysis, t if many else None):
            name = f"{r['workload']}/{r['operation']}" + (f" {r['setting_short']}" if r["setting"] != "-" else "")
            for v in (r["baseline"], r["contender"]):
                out[(r["workload"], r["operation"], v)].append(name)
    return out


def _named(names: list[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more (`encbench show FILE --detail` lists them)"
                    if len(names) > limit else "")


def warning_lines(analysis: an.Analysis, limit: int = 6, doc: dict | None = None) -> list[str]:
    """The warnings on the table's figures (elapsed, CPU), one line per cause: how many rows, which (the first
    `limit`), what to do. With the document the rows are named as the table names them."""
    analysis = an.Analysis.of(analysis)
    shown = _warned(analysis)
    names = _row_names(doc, analysis)
    few = sorted({s["n"] for s in shown if s["n"] < stats.MIN_RUNS  # a count that repeats needs 2 (stats.repeats)
                  and not (meter.is_count(s["metric"]) and s["n"] >= stats.EXACT_MIN_RUNS
                           and not any("too few" in w for w in s["warnings"]))})
    out = [f"only {', '.join(map(str, few))} run(s) per variant: too few for a verdict (it takes "
           f"{stats.MIN_RUNS} per side); use --runs 10"] if few else []
    by_cause: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # cause -> row -> metrics
    other = []
    for s in shown:
        for w in s["warnings"]:
            if FEW_RUNS in w:
                continue
            cause = next((i for i, (pattern, _, _) in enumerate(WARNING_CAUSES) if pattern.search(w)), None)
            if cause is None:
                other.append(w)
                continue
            for name in names.get((s["workload"], s["operation"], s["variant"])) or [
                    f"{s['workload']}/{s['operation']} {s['variant']}"]:
                by_cause[cause][name].add(an.metric_word(s["metric"]))
    for cause, found in sorted(by_cause.items()):
        _, what, todo = WARNING_CAUSES[cause]
        if len(found) == 1 and what.startswith("have "):  # one row has, several have
            what = "has " + what.removeprefix("have ")
        listed = [f"{name} ({', '.join(sorted(metrics))})" for name, metrics in found.items()]
        out.append(f"{len(found)} row{'s' if len(found) != 1 else ''} {what}: {todo}. Rows: {_named(listed, limit)}")
    return out + other


def warning_detail_lines(analysis: an.Analysis) -> list[str]:
    """Every warning on the table's figures, one per row, side and metric (`show --detail`)."""
    return [w for s in _warned(an.Analysis.of(analysis)) for w in s["warnings"]]


def _margin(analysis: an.Analysis | None) -> float:
    """The equivalence margin the analysis' verdicts were judged with."""
    return an.Analysis.of(analysis).margin_pct if analysis is not None else stats.DEFAULT_MARGIN_PCT


def header_lines(doc: dict, analysis: an.Analysis | None = None) -> list[str]:
    env, cfg, ds = doc["environment"], doc["config"], doc.get("dataset") or {}
    flags = ",".join(k for k, v in env["cpu"]["flags"].items() if v) or "none"
    versions = ", ".join(f"{k} {v}" for k, v in env.get("engine_versions", {}).items())
    runs = sum(1 for r in doc["runs"] if not r.get("warmup"))
    warm = sum(1 for r in doc["runs"] if r.get("warmup"))
    if ds.get("rows") or ("rows" in ds and "server" not in ds):  # 0 rows on a server: its oltp tables, named below
        data = f"data: {ds['rows']:,} rows (seed {ds.get('seed', '?')}, {fmt_bytes(cfg['size_bytes'])} target)"
    elif "server" in ds:
        srv = ds["server"]
        engine = engine_named(doc["engine"]["name"])
        where = srv.get("address") or f"{srv.get('host')}:{srv.get('port')}"  # address: the clients' (a socket's path)
        data = (f"server: {engine.label if engine else doc['engine']['name']} {srv.get('version')} at {where} "
                f"({'private, started by encbench' if ds.get('managed') else 'external'}; {srv.get('ssl_library') or 'TLS library ?'})")
    else:
        data = "data: -"
    params = "; ".join(f"{wl}: " + ", ".join(f"{k}={v}" for k, v in meta["params"].items())
                       for wl, meta in doc.get("workloads", {}).items() if meta.get("params"))
    level = an.verdict_confidence(doc)
    lines = [
        f"encbench {doc['encbench_version']} - engine {doc['engine']['name']} ({versions})",
        f"CPU {env['cpu']['model']}, {env['cpu']['logical_cores']} cores, flags {flags}; kernel {env['kernel']}",
        f"{data}; {runs} measured runs + {warm} warmups (each a fresh process and connection), status {doc['status']}",
        f"{'; '.join(_axis_line(t) for t in _tables(doc))}; Δ = contender vs baseline, "
        f"ratio of trimmed geometric means with a Yuen-Welch t {level:.0%} CI" + (
            " (every [95% CI] below is at this level: a sequential run's verdicts, --quick/--budget)"
            if level != stats.CONFIDENCE else ""),
        f"verdicts: 'costs' / 'saves' = the {level:.0%} CI excludes 0%; 'no cost' = the {2 * level - 1:.0%} CI lies "
        f"within ±{_margin(analysis):g}% "
        f"(equivalence shown by two one-sided tests); 'inconclusive' = neither, run longer; none below "
        f"{stats.MIN_RUNS} runs per side" + (f" ({stats.EXACT_MIN_RUNS} for a count whose runs repeat within "
                                             f"{stats.EXACT_TOLERANCE:.1%}: bounded, no t-interval)"
                                             if doc.get("meter") else ""),
    ]
    if params:
        lines.append(f"workload settings: {params}")
    m = doc.get("meter") or {}
    if m:  # --meter instructions: what was counted, and the CPU it was counted on
        lines.append(f"meter: instructions counted by valgrind {m.get('valgrind', '?')} {m.get('tool', 'callgrind')}"
                     + (" with its cache simulation" if m.get("cache_sim") else "")
                     + "; the verdicts rest on the counts; times and CPU times are the simulation's, not this CPU's")
        gap = (an.Analysis.of(analysis).instructions or {}).get("cpu_gap") if analysis is not None else None
        if gap:
            lines.append(f"CPU-model gap: {gap['text']}")
    return lines


# the headline summary (analysis/headline.py), shown first: before the header and the tables
# the summary printed first: each line within 100 columns; with --detail (and in the HTML report) the sentences
SUMMARY = ("Summary", "Summary", lambda doc, a, detail=False: headline.lines(a, detail))

# the sections after the tables, in order: (terminal title, markdown and HTML title, lines from the document
# and its analysis); every renderer walks this table
SECTIONS = (
    ("Where the overhead went (mean contender minus mean baseline)", "Where the overhead went",
     lambda doc, a: attribution_lines(a)),
    ("Scaling of the in-query hash", "Scaling of the in-query hash",
     lambda doc, a: scaling_lines(a, "hash")),
    ("Scaling of the column's in-database methods (--sessions)", "Scaling of the column's in-database methods",
     lambda doc, a: scaling_lines(a, "column")),
    ("CPU profile of the server (perf, warmup runs)", "CPU profile of the server", lambda doc, a: profile_lines(a)),
    ("Files", "Files", lambda doc, a: a.files or []),
    ("Per-page decrypt cost", "Per-page decrypt cost",
     lambda doc, a: derived_lines(a) + raw_cipher_lines(doc)),
    ("Column encryption per row vs the raw cipher", "Column encryption per row vs the raw cipher",
     lambda doc, a: columncost.lines(a.column_costs)),
    ("The transaction mix: cost per transaction and per page, the estimate checked", "The transaction mix",
     lambda doc, a: oltpcost.lines(a.oltp_costs)),
    ("Where the instructions go (callgrind, --meter instructions)", "Where the instructions go",
     lambda doc, a: instrattr.lines(a.instructions)),
    ("Notes", "Notes", lambda doc, a: a.notes),
    ("Warnings", "Warnings", lambda doc, a: warning_lines(a, doc=doc)),
)
# the title of Analysis.context (precision, placement, run context) in Markdown and the HTML report; the terminal
# prints its lines last, without a title
CONTEXT_TITLE = "Run context"
# what `show --detail` adds after them
DETAIL_SECTIONS = (
    ("Every warning (per row, side and metric)", "Every warning", lambda doc, a: warning_detail_lines(a)),
)


def _shown_tables(doc: dict, analysis: an.Analysis) -> list[tuple[dict, list[dict]]]:
    """(table, its rows) of every table shown."""
    return [(t, rows(doc, analysis, t)) for t in _tables(doc)]


def _sections(detail: bool):
    return SECTIONS + (DETAIL_SECTIONS if detail else ())


def render_text(doc: dict, analysis: an.Analysis, console: Console, detail: bool = False) -> None:
    """The summary, the header, the compact tables (with `detail` every column, a block per row), the sections."""
    analysis = an.Analysis.of(analysis)
    _print_section(console, SUMMARY[0], SUMMARY[2](doc, analysis, detail))
    for line in header_lines(doc, analysis):  # prose: wrapped at a terminal's width, whole in a pipe
        console.print(line, highlight=False, soft_wrap=not console.is_terminal)
    for t, shown in _shown_tables(doc, analysis):
        if detail:
            _print_long(console, t, shown)
            continue
        for g, mine in compact_groups(t, shown):
            table = Table(show_lines=False, header_style="bold", pad_edge=False,
                          title=g["title"] or None, title_justify="left", title_style="bold")
            cols = compact_columns(g, mine)
            for c in cols:
                table.add_column(COLUMNS[c][0], overflow="fold")
            for r in mine:
                table.add_row(*_cells(r, cols))
            console.print(table)
            if legend_line(mine):
                console.print(f"  {legend_line(mine)}", highlight=False, soft_wrap=not console.is_terminal,
                              markup=False)
    for title, _, lines in _sections(detail):
        _print_section(console, title, lines(doc, analysis))
    if doc["config"].get("command"):
        console.print(f"Reproduce: {doc['config']['command']}", highlight=False, soft_wrap=not console.is_terminal)
    for line in analysis.context or []:  # precision, placement, run context: wrapped at a terminal's width
        console.print(line, highlight=False, markup=False, soft_wrap=not console.is_terminal)


def _print_long(console: Console, t: dict, shown: list[dict]) -> None:
    """Every declared column of a table, one row per block: its name, then a line per column."""
    if t["title"]:
        console.print(f"[bold]{t['title']}[/bold]")
    cols = [c for c in columns(t, shown) if c not in ROW_COLUMNS]
    for r in shown:
        name = f"{r['workload']} / {r['operation']}" + (f" / {r['setting']}" if r["setting"] != "-" else "")
        console.print(f"[bold]{name}[/bold] ({r['contender']} vs {r['baseline']})", highlight=False)
        for c in cols:
            console.print(f"    {COLUMNS[c][0]}: {COLUMNS[c][1](r)}", highlight=False, soft_wrap=not console.is_terminal,
                          markup=False)
    if not shown:
        console.print("  (no rows)")


def _print_section(console: Console, title: str, lines: list[str]) -> None:
    if lines:
        console.print(f"[bold]{title}[/bold]")
        for line in lines:
            # a terminal wraps prose at its width (rich); a pipe or file keeps each line whole (grep, logs)
            console.print(f"  - {line}", highlight=False, soft_wrap=not console.is_terminal, markup=False)


def render_markdown(doc: dict, analysis: an.Analysis, detail: bool = False) -> str:
    """The compact tables (every declared column with `detail`) and the sections, for a ticket."""
    analysis = an.Analysis.of(analysis)
    out = ["# encbench results\n"]
    summary = SUMMARY[2](doc, analysis, detail)
    out += [f"## {SUMMARY[1]}", ""] + [f"- {line}" for line in summary] + [""] if summary else []
    out += [f"- {line}" for line in header_lines(doc, analysis)]
    for t, every in _shown_tables(doc, analysis):
        for g, shown in [(t, every)] if detail else compact_groups(t, every):
            out.append("")
            if g["title"]:
                out += [f"## {g['title']}", ""]
            cols = columns(g, shown) if detail else compact_columns(g, shown)
            out.append("| " + " | ".join(COLUMNS[c][0] for c in cols) + " |")
            out.append("|" + "---|" * len(cols))
            for r in shown:
                out.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(r, cols)) + " |")
            if not detail and legend_line(shown):
                out += ["", legend_line(shown)]
    for _, title, section in _sections(detail):
        lines = section(doc, analysis)
        if lines:
            out += ["", f"## {title}", ""] + [f"- {line}" for line in lines]
    if analysis.context:
        out += ["", f"## {CONTEXT_TITLE}", ""] + [f"- {line.strip()}" for line in analysis.context]
    if doc["config"].get("command"):
        out += ["", f"Reproduce: `{doc['config']['command']}`"]
    return "\n".join(out) + "\n"


def render_json(doc: dict, analysis: an.Analysis) -> str:
    """Analysis.to_dict() (each comparison carries `verdict`, one of stats.VERDICTS, `verdict_text` and
    `equivalence`); the document's facts (schema version, status, engine) are in the analysis' header."""
    return json.dumps(an.Analysis.of(analysis).to_dict(), indent=1)


def command_line(argv: list[str]) -> str:
    """The command that reproduces a result, with any password hidden (each argument before quoting)."""
    return redact_command_line(argv)
