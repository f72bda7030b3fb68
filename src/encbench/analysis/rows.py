"""The rows a user reads: one per (workload, operation, contender variant) of a table, baseline and contender
side by side, each with its comparisons, its verdict (long, short, code) and the metric it leads with.

Made once per result (analysis/model.py) from the analysis' comparisons and summaries; the views (terminal,
Markdown, HTML, its charts) only format them (report/render.py's COLUMNS).
"""

from __future__ import annotations

from collections import defaultdict

from . import stats
from . import summary as an
from ..util.units import fmt_number

# the names the views know a column by (report/render.COLUMNS holds their headers and cells)
DEFAULT_COLUMNS = ("workload", "op", "variant", "elapsed", "d_elapsed", "cpu", "d_cpu", "ctx", "reads", "verdict")
RATES = (("qps", "q/s"), ("tps", "txn/s"), ("mb_per_s", "MB/s"), ("connections_per_s", "conn/s"), ("rows_per_s", "rows/s"))
PER_UNIT_CPU = ("query", "message", "connection", "row", "transaction")
INSTRUCTION_UNITS = ("query", "message", "connection", "row", "transaction")

# A row's lead metric is the first metric its verdict rests on (an.basis_of: its workload's verdict metrics) that
# the table declares a Δ column for: (metric, its Δ column as engines declare it, the compact means column).
HEADLINE = (("cpu_s", "d_cpu", "cpu_mean"), ("cpu_s", "d_server_cpu", "server_cpu_mean"),
            ("client_cpu_s", "d_client_cpu", "client_cpu_mean"), ("wall_s", "d_elapsed", "elapsed_mean"),
            *((rate, "d_rate", "rate_mean") for rate, _ in RATES),
            *((f"cpu_us_per_{u}", "d_server_per_unit", "server_per_unit") for u in PER_UNIT_CPU),
            *((f"cpu_us_per_{u}", "d_cpu_per_unit", "cpu_per_unit") for u in PER_UNIT_CPU),
            ("instructions", "d_instructions", "instructions_mean"),
            *((f"instructions_per_{u}", "d_instructions_per_unit", "instructions_per_unit") for u in INSTRUCTION_UNITS))
METERED = frozenset(h[1] for h in HEADLINE if h[0].startswith("instructions"))  # shown in any table that has them

LONG_SETTING = 14  # a setting value longer than this is named key#n in the compact table, with a legend
BARE_VALUES = frozenset({"on", "off", "yes", "no", "true", "false", "none"})  # say nothing without their key
TOO_SHORT = ": too short to time"  # stats.warnings_for's: a figure below 100x its probe's resolution is no figure


def declared_columns(table: dict) -> tuple[str, ...]:
    """The column names a table declares (engine.table_columns), else the default ones."""
    return tuple(table.get("table_columns") or DEFAULT_COLUMNS)


def headline_of(table: dict, comps: list[dict]) -> tuple[str, str, str] | None:
    """(metric, Δ column, means column) of a row's lead: the first metric of its verdict (an.basis_of) with a
    HEADLINE entry whose Δ column the table declares (else the first entry it declares)."""
    declared = [h for h in HEADLINE if h[1] in declared_columns(table) or h[1] in METERED]
    return next((h for c in an.basis_of(comps) for h in declared if h[0] == c["metric"]),
                declared[0] if declared else None)


def shown_tables(doc: dict) -> list[dict]:
    """The tables with something to show (every one when none has rows: an empty table says so)."""
    ts = an.tables(doc["engine"])
    if len(ts) == 1:
        return ts
    measured = {r["workload"] for r in doc["runs"]}
    shown = [t for t in ts if not t["workloads"] or measured & set(t["workloads"])]
    return shown or ts[:1]


def _means(groups, key) -> dict[str, float]:
    return {m: sum(v) / len(v) for m, v in groups.get(key, {}).items() if v}


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


def _table_variants(doc: dict, t: dict, table: dict | None) -> dict[str, dict]:
    """label -> variant of the variants the table's rows are made of."""
    return {vl: v for vl, v in an.variants_by_label(doc).items()
            if table is None or not t["workloads"] or any(r["variant_label"] == vl and r["workload"] in t["workloads"]
                                                         for r in doc["runs"])}


def _varying(variants: dict[str, dict], t: dict) -> set[str]:
    """The keys whose value differs among the table's variants (the axis too when it has several contenders)."""
    axis = t["axis"]
    varying = {k for v in variants.values() for k in v
               if k != axis and len({x[k] for x in variants.values() if k in x}) > 1}
    if len({v.get(axis) for v in variants.values()} - {t["axis_baseline"], None}) > 1:
        varying.add(axis)  # several contenders (cipher suites): name each one
    return varying


def _grouped(doc: dict, analysis, table: dict | None) -> dict[tuple, list[dict]]:
    comps: dict[tuple, list[dict]] = defaultdict(list)
    for c in analysis.comparisons:
        if table is None or an.table_for(doc["engine"], c["workload"]) == table:
            comps[(c["workload"], c["operation"], c["contender"], c["baseline"])].append(c)
    return comps


def rows(doc: dict, analysis, table: dict | None = None, groups=None) -> list[dict]:
    """One row per (workload, operation, contender variant), baseline and contender side by side.

    With a table (one of an.tables), only the rows of its workloads. `groups`: an.collect(doc), when the
    caller has it already."""
    analysis = an.Analysis.of(analysis)
    groups = an.collect(doc) if groups is None else groups
    t = table or an.tables(doc["engine"])[0]
    variants = _table_variants(doc, t, table)
    varying = _varying(variants, t)
    aliases = _aliases(variants.values(), varying)
    order = list(doc.get("workloads", {}))
    out = [_row(analysis, t, groups, key, cs, variants, varying, aliases)
           for key, cs in _grouped(doc, analysis, table).items() if key[:2] != an.OPEN]
    out.sort(key=lambda r: (order.index(r["workload"]) if r["workload"] in order else len(order),
                            r["workload"], r["setting"]))
    return out


def _row(analysis, t: dict, groups, key: tuple, cs: list[dict], variants, varying, aliases) -> dict:
    wl, op, cont, base = key
    axis, words = t["axis"], t.get("metric_words")
    setting = ",".join(f"{k}={v}" for k, v in variants[cont].items() if k in varying) or "-"
    short = ",".join(_short_setting(k, v, axis, aliases) for k, v in variants[cont].items() if k in varying) or "-"
    head = headline_of(t, cs)
    too_short = {x["metric"] for x in analysis.summaries if (x["workload"], x["operation"]) == (wl, op)
                 and x["variant"] in (base, cont) and any(TOO_SHORT in w for w in x["warnings"])}
    basis = [c["metric"] for c in an.basis_of(cs)]
    return {
        "workload": wl, "operation": op, "setting": setting, "setting_short": short, "baseline": base,
        "contender": cont, "legend": {a: v for (k, v), a in aliases.items() if a in short.split(",")},
        "n": (min(x["n_contender"] for x in cs), min(x["n_baseline"] for x in cs)),
        "base": _means(groups, (wl, op, base)), "cont": _means(groups, (wl, op, cont)),
        "comparisons": {x["metric"]: x for x in cs},
        "verdict": an.row_verdict(cs, words), "verdict_code": an.row_code(cs, words),
        "verdict_short": short_verdict(cs, words, head[0] if head else None),
        "lead": head, "too_short": too_short,
        # a row without a lead is charted on the first metric its verdict rests on
        "chart_metric": head[0] if head else (basis[0] if basis else "wall_s"),
    }


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
