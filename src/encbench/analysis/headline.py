"""The headline summary: what encryption costs, in plain words, read first (issue 14 item 1).

`build(analysis)` turns an Analysis (comparisons, summaries, derived, scaling, hash_costs,
profiles) into a few lines, each a dict (JSON-shaped, `Analysis.headline`):

    {"lab": "at rest", "label": "cold reads", "metric": "cpu_s", "verdict": "costs",
     "verdicts": {"costs": 2}, "rows": [{workload, operation, baseline, contender, ratio, ci,
     verdict}, ...], "range": [lowest ratio, highest ratio], "figures": [{name, value, ci, ...}],
     "text": "cold reads: costs +266% CPU [+213, +329]; 9.5 µs per 4 KB page ..."}

Nothing here is measured or assumed: every number is read from the analysis, and the words
follow the comparisons' verdicts (stats.VERDICTS): "no cost" only where the verdict is no_cost.
Rows are grouped into lines by what the analysis knows of them: the workload and operation, the
cache setting and the setting compared (the axis: the key in which baseline and contender
differ). A line's `verdict` is its rows' common verdict, or "mixed" (then `verdicts` counts them).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable

from . import columncost as cc, instrattr as ia, lead, oltpcost as oc, stats
from .lead import ONE_LINE, WIDTH, fit  # noqa: F401 (headline.WIDTH, headline.fit: the short form's, lead.py's)
from .oneline import leak_check_line, tls_scan_line  # noqa: F401 (the one-line answers, read as headline.*)
from .oltpwords import oltp_figures
from .words import metric_word as _metric_word
from ..host.rawcipher import CI_ABOVE, CONTRADICTS, UNRESOLVED
from ..util.units import fmt_percent, fmt_seconds
from ..engines import engine_named

MIXED = "mixed"  # a line whose rows got different verdicts (each row keeps its own)

# the setting compared (a comparison's axis) -> the lab it belongs to
LABS = {"encryption": "at rest", "tls": "in transit", "sessions": "hash sweep"}

METRIC_WORDS = {"cpu_s": "CPU", "client_cpu_s": "client CPU", "wall_s": "elapsed"}


@dataclass(frozen=True)
class LineSpec:
    """One headline line: the rows it gathers (workloads, and a cache setting or any), the metric it
    leads with (the first of `metrics` the rows have), what it adds, and a remark in plain words."""

    label: str
    workloads: tuple[str, ...]  # a workload, or workload/operation (dml/insert): only that operation
    cache: str | None = None  # None: any cache setting
    metrics: tuple[str, ...] = ("cpu_s", "wall_s")
    extras: Callable | None = None  # (analysis, rows) -> list of figures
    remark: str = ""
    per_contender: bool = False  # several contenders (cipher suites): name the cheapest and the dearest
    figures_first: bool = False  # the figures say it best (the open's time); the verdict follows them
    follows_table: bool = True  # the short line judges each row as the table does (its verdict metrics); the open: no
    engine_says: str = ""  # an Engine attribute that, false on the run's engine, leaves the line out (open_at_rest)


def _label_dict(label: str) -> dict[str, str]:
    """'encryption=on,cache=cold' -> {'encryption': 'on', 'cache': 'cold'} (vocab.variants.label's inverse)."""
    return dict(part.split("=", 1) for part in label.split(",") if "=" in part)


def axis_of(c: dict) -> str | None:
    """The setting a comparison is about: the key both sides have with different values."""
    base, cont = _label_dict(c["baseline"]), _label_dict(c["contender"])
    return next((k for k in cont if k in base and base[k] != cont[k]), None)


def _decimals(ratio: float) -> int:
    """The precision of a change: one decimal below 10%, none above (+0.4%, +8.8%, +266%)."""
    return 1 if abs(ratio - 1) < 0.1 else 0


def _pct(x: float) -> str:
    return f"{lead.signed_pct(x, _decimals(x))}%"


def _est(r: dict, word: str = "") -> str:
    """'+266% CPU [+213, +329]': the change, the metric, the 95% CI (in the change's precision; never '-0')."""
    if r["ratio"] is None:
        return "no estimate"
    d = _decimals(r["ratio"])
    ci = f" [{lead.signed_pct(r['ci'][0], d)}, {lead.signed_pct(r['ci'][1], d)}]" if r["ci"] else ""
    return f"{_pct(r['ratio'])}{' ' + word if word else ''}{ci}"


# -- figures beside the verdict, read from the analysis' other fields ---------------------------

def _matching(entries, rows):
    keys = {(r["workload"], r["operation"], r["contender"]) for r in rows}
    return [e for e in entries if (e["workload"], e["operation"], e["contender"]) in keys]


def _span(values: list[float], fmt: Callable[[float], str]) -> str:
    lo, hi = min(values), max(values)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} to {fmt(hi)}"


def per_page(analysis, rows, kind: str) -> list[dict]:
    """The derived per-page CPU cost (decrypt for reads, encrypt for writes) of these rows."""
    out = []
    for d in _matching(analysis.derived, rows):
        if d.get("kind", "read") != kind:
            continue
        out.append({"name": f"per_page_{kind}_cpu_s", "workload": d["workload"], "operation": d["operation"],
                    "contender": d["contender"], "value": d["per_page_cpu_s"], "ci": d["per_page_cpu_ci"],
                    "page_size": d["page_size"], "mb_per_s_per_core": d.get("decrypt_mb_per_s_per_core"),
                    "mb_per_s_ci": d.get("decrypt_mb_per_s_ci"),
                    "percent_of_raw_cipher": d.get("percent_of_raw_cipher"),
                    "percent_of_raw_cipher_ci": d.get("percent_of_raw_cipher_ci"),
                    "raw_cipher_flag": d.get("raw_cipher_flag")})
    return out


def _size(page_size: int) -> str:
    return f"{page_size / 1024:g} KB" if page_size % 1024 == 0 else f"{page_size}-byte"


def _seconds_ci(f: dict) -> str:
    return f"{fmt_seconds(f['value'])}" + (f" [{fmt_seconds(f['ci'][0])}, {fmt_seconds(f['ci'][1])}]" if f["ci"] else "")


def _per_page_text(figs: list[dict], kind: str) -> str:
    """One row: its cost per page with the CI (and the speed, the share of the raw cipher); several: the range,
    the lowest and highest named with their CIs."""
    sizes = " or ".join(dict.fromkeys(_size(f["page_size"]) for f in figs))
    if len(figs) == 1:
        text = f"{_seconds_ci(figs[0])} per {sizes} page"
    else:
        lo, hi = min(figs, key=lambda f: f["value"]), max(figs, key=lambda f: f["value"])
        text = (f"{fmt_seconds(lo['value'])} to {fmt_seconds(hi['value'])} per {sizes} page (lowest: "
                f"{lo['workload']}/{lo['operation']} {_seconds_ci(lo)}; highest: {hi['workload']}/{hi['operation']} "
                f"{_seconds_ci(hi)})")
    if kind == "write":
        return text + " to encrypt (an upper bound: other write work is in it too)"
    speeds = [f["mb_per_s_per_core"] for f in figs if f["mb_per_s_per_core"]]
    if speeds:
        text += f" = {_span(speeds, lambda x: f'{x:,.0f}')} MB/s per core"
    shares = [f for f in figs if f["percent_of_raw_cipher"] is not None]
    if len(shares) == 1 and shares[0]["percent_of_raw_cipher_ci"]:
        pci = shares[0]["percent_of_raw_cipher_ci"]
        text += (f", {fmt_percent(shares[0]['percent_of_raw_cipher'])} [{fmt_percent(pci[0], '')}, "
                 f"{fmt_percent(pci[1], '')}] of this CPU's raw cipher")
    elif shares:
        text += f", {_span([f['percent_of_raw_cipher'] for f in shares], fmt_percent)} of this CPU's raw cipher"
    flags = list(dict.fromkeys(f["raw_cipher_flag"] for f in figs if f["raw_cipher_flag"]))
    return text + "".join(f" ({flag})" for flag in flags)  # rawcipher.set_beside: beyond what is possible


def reads_per_page(analysis, rows) -> list[dict]:
    return per_page(analysis, rows, "read")


def writes_per_page(analysis, rows) -> list[dict]:
    return per_page(analysis, rows, "write")


def _mean_of(analysis, workload: str, operation: str, variant: str, metric: str, stat: str = "mean"):
    """A summary's statistic; its centre, the median in a summary stored before the centre (as lead.baseline_centre)."""
    return next((s.get(stat, s.get("median")) if stat == "centre" else s[stat] for s in analysis.summaries
                 if (s["workload"], s["operation"], s["variant"], s["metric"]) == (workload, operation, variant, metric)),
                None)


def compression(analysis, rows) -> list[dict]:
    """Per operation that compresses (its output differs from the pages it read): the ratio, plain and encrypted."""
    out = []
    for op in sorted({r["operation"] for r in rows}):
        mine = [r for r in rows if r["operation"] == op]
        sides = {}
        for side in ("baseline", "contender"):
            ratios = []
            for r in mine:
                read = _mean_of(analysis, r["workload"], op, r[side], "backup_bytes")
                written = _mean_of(analysis, r["workload"], op, r[side], "output_bytes")
                if read and written:
                    ratios.append(read / written)
            sides[side] = ratios
        if sides["baseline"] and sides["contender"] and any(
                round(x, 2) != 1 for x in sides["baseline"] + sides["contender"]):
            out.append({"name": "compression_ratio", "operation": op,
                        "baseline": [min(sides["baseline"]), max(sides["baseline"])],
                        "contender": [min(sides["contender"]), max(sides["contender"])]})
    return out


def _compression_text(figs: list[dict]) -> str:
    def x(span):
        return f"{span[0]:.2f}x" if f"{span[0]:.2f}" == f"{span[1]:.2f}" else f"{span[0]:.2f}x to {span[1]:.2f}x"

    return "; ".join(f"{f['operation']} compresses {x(f['contender'])} encrypted vs {x(f['baseline'])} plain"
                     for f in figs)


def open_time(analysis, rows) -> list[dict]:
    """The connection open's time with and without, per variant the centre of its runs (summaries[].centre: the
    trimmed geometric mean every comparison and the line's own figure rest on), as [lowest, highest] over them."""
    with_, without = [], []
    for r in rows:
        w = _mean_of(analysis, r["workload"], r["operation"], r["contender"], "wall_s", "centre")
        b = _mean_of(analysis, r["workload"], r["operation"], r["baseline"], "wall_s", "centre")
        if w is not None:
            with_.append(w)
        if b is not None:
            without.append(b)
    if not with_:
        return []
    return [{"name": "open_wall_s", "value": [min(with_), max(with_)],
             "baseline": [min(without), max(without)] if without else None}]


def _open_text(figs: list[dict]) -> str:
    (f,) = figs
    text = f"{_span(f['value'], fmt_seconds)} per connection (trimmed geometric mean)"
    return text + (f", {_span(f['baseline'], fmt_seconds)} without" if f["baseline"] else "")


# a figure's name -> the text of the line's figures of that name
FIGURE_TEXT = {"per_page_read_cpu_s": lambda figs: _per_page_text(figs, "read"),
               "per_page_write_cpu_s": lambda figs: _per_page_text(figs, "write"),
               "compression_ratio": _compression_text, "open_wall_s": _open_text,
               "side_metric": lambda figs: _side_text(figs),
               "instructions_per_page": ia.page_figures_text, "instruction_attribution": ia.figures_text}

READS = ("scan-like", "scan-eq", "dml/select")
OPEN = ("(open)",)

# at rest and in transit: the lines, in the order they are read; a workload listed nowhere gets a line of its own
SPECS = {
    "at rest": (
        LineSpec("cold reads", READS, "cold", extras=reads_per_page),
        LineSpec("warm reads", READS, "warm"),
        LineSpec("writes", ("dml/insert", "dml/update", "dml/delete", "rebuild"), extras=writes_per_page,
                 remark="every write re-encrypts its pages"),
        LineSpec("backups", ("backup",), extras=compression),
        LineSpec("opening a connection", OPEN, metrics=("wall_s",), extras=open_time, figures_first=True,
                 follows_table=False, remark="what each new connection pays, {open_includes}",
                 engine_says="open_at_rest"),
    ),
    "in transit": tuple(
        LineSpec(f"TLS {wl}", (wl,), per_contender=True, remark=remark)
        for wl, remark in (("storm", ""), ("bulk", "large result sets"),
                           ("roundtrip", "one small query at a time"), ("connect", "new connections: handshakes"))
    ),
}


# -- the lines --------------------------------------------------------------------------------

def _row(c: dict) -> dict:
    return {"workload": c["workload"], "operation": c["operation"], "baseline": c["baseline"],
            "contender": c["contender"], "ratio": c["ratio"], "ci": c["ci"], "verdict": c["verdict"],
            "n": min(c.get("n_baseline", 0), c.get("n_contender", 0)),
            "margin_pct": (c.get("equivalence") or {}).get("margin_pct"),
            "verdict_text": c.get("verdict_text", "")}


def _names(rows: list[dict]) -> list[str]:
    """What tells the rows of a line apart: workload/operation and the settings that differ among them."""
    ops = {(r["workload"], r["operation"]) for r in rows}
    one_workload = len({r["workload"] for r in rows}) == 1
    settings = [_label_dict(r["contender"]) for r in rows]
    varying = [k for k in dict.fromkeys(k for s in settings for k in s)
               if len({s.get(k) for s in settings}) > 1]
    out = []
    for r, s in zip(rows, settings):
        parts = [r["operation"] if one_workload else f"{r['workload']}/{r['operation']}"] if len(ops) > 1 else []
        parts += [f"{k}={s[k]}" for k in varying if k in s]
        out.append(" ".join(parts) or r["contender"])  # a row without the settings the others vary: its label
    return out


def _estimates(rows: list[dict], word: str, per_contender: bool, ranked: bool = True) -> str:
    """One row: its estimate; two: both, named; more: the range, with the lowest and highest named (not `ranked`:
    each row's estimate, none named lowest or highest)."""
    names = _names(rows)
    rated = [(r, n) for r, n in zip(rows, names) if r["ratio"] is not None]
    if not rated:
        return f"no estimate of {word}"
    if len(rated) == 1:
        r, n = rated[0]
        return _est(r, word) + (f" ({n})" if n and len(rows) > 1 else "")
    if not ranked:
        return ", ".join(f"{_est(r, word if i == 0 else '')} ({n})" for i, (r, n) in enumerate(rated))
    if len(rated) == 2 and not per_contender:
        return ", ".join(f"{_est(r, word if i == 0 else '')} ({n})" for i, (r, n) in enumerate(rated))
    lo, hi = min(rated, key=lambda x: x[0]["ratio"]), max(rated, key=lambda x: x[0]["ratio"])
    which = ("cheapest", "dearest") if per_contender else ("lowest", "highest")
    return (f"{_pct(lo[0]['ratio'])} to {_pct(hi[0]['ratio'])} {word} over {len(rated)} rows "
            f"({which[0]}: {lo[1]} {_est(lo[0])}; {which[1]}: {hi[1]} {_est(hi[0])})")


def _verdict_words(code: str, rows: list[dict], estimate: str) -> str:
    """The line's words for its one verdict (stats.VERDICTS), as judge() means them."""
    if code == stats.COSTS:
        return f"costs {estimate}"
    if code == stats.SAVES:
        return f"saves {estimate}"
    if code == stats.NO_COST:
        margin = rows[0]["margin_pct"]
        return f"no cost: within ±{margin:g}% (equivalence shown): {estimate}"
    if code == stats.INCONCLUSIVE:
        return f"inconclusive: {estimate} is too wide, run longer"
    if code == stats.TOO_FEW_RUNS:
        n = min(r["n"] for r in rows)
        return f"{estimate}; too few runs for a verdict ({n} per side, need {stats.MIN_RUNS})"
    if code == stats.WITHHELD:
        return f"no verdict: {rows[0]['verdict_text']}"
    return f"no verdict: {estimate}"


NAMED_UP_TO = 2  # rows of a verdict named in a mixed line when there are this few of them


def _mixed_words(counts: Counter, estimate: str, rows: list[dict]) -> str:
    """The rows' verdicts counted, the rows of a verdict named when they are few ('inconclusive in 1 (reindex)')."""
    names = _names(rows)

    def told(v: str) -> str:
        mine = [n for r, n in zip(rows, names) if r["verdict"] == v and n]
        return f"{v.replace('_', ' ')} in {counts[v]}" + (f" ({', '.join(mine)})" if mine and len(mine) <= NAMED_UP_TO
                                                           else "")

    return (f"{estimate}; verdicts differ: " + ", ".join(told(v) for v in stats.VERDICTS if v in counts)
            + f" of {sum(counts.values())} rows")


# -- the short form: every line within 100 columns with its bullet, only what resolved (lead.py) -------------------

SHORT_WITHHELD = (("client", "client-bound"), ("memory", "memory not held"))
SHORT_NAME = 40  # a row's name in a short line: longer (a whole variant label), its workload/operation


def _withheld_words(rows: list[dict]) -> str:
    text = rows[0]["verdict_text"] if rows else ""
    return "no verdict (" + next((w for k, w in SHORT_WITHHELD if k in text), "withheld") + ")"


def _short_names(rows: list[dict]) -> dict[tuple[str, str, str], str]:
    """(workload, operation, contender) -> the row's short name: workload/operation alone, else what tells it apart."""
    keys = [(r["workload"], r["operation"], r["contender"]) for r in rows]
    if len(rows) == 1:
        return {}  # the label names it
    return {k: (n if len(n) <= SHORT_NAME else f"{r['workload']}/{r['operation']}")  # a whole label: too long
            for k, r, n in zip(keys, rows, _names(rows))}


def _short_figures(figures: list[dict]) -> list[str]:
    """The figures a short line adds after its lead (the compression of a backup)."""
    out = []
    for f in figures:
        if f["name"] == "compression_ratio":
            out.append(f"{f['operation']} compresses {f['contender'][0]:.2f}x vs {f['baseline'][0]:.2f}x plain")
    return out


def short_text(analysis, label: str, code: str, rows: list[dict], figures: list[dict], metric: str, word: str,
               first: tuple[str, ...] = ()) -> tuple[str, dict | None]:
    """(`label: <verdict> <figure in its unit> [CI] (<where from>); <rows counted>; <what else fits>` within WIDTH,
    the figure it leads with); a line nothing of which resolved: `label: not resolved: ...` alone."""
    if code == stats.WITHHELD:
        return f"{label}: {_withheld_words(rows)}", None
    head, (where, told), figure = lead.lead(analysis, rows, figures, metric, word, _short_names(rows))
    text = f"{label}: {head}"
    if not figure["resolved"]:
        return text, figure
    text += where if len(text) + len(where) <= WIDTH else ""
    sides = lead.side_texts(analysis, figures, figure.get("metric"))
    text = fit(text, [*first, told, *sides, *_short_figures(figures)])
    return (text if len(text) <= WIDTH else text[:WIDTH - 1] + "…"), figure


def lead_metric(spec: LineSpec, mine: list[dict]) -> tuple[str | None, bool]:
    """The metric a line leads with, and whether it is the rows' own (not the spec's): the first of the spec's
    metrics the rows' verdicts rest on (their verdict_basis), else the first metric they rest on (a fixed-duration
    run's throughput: its elapsed time is constant by design); comparisons without verdict_basis: the spec's."""
    basis = {c["metric"]: c["verdict_basis"] for c in mine if "verdict_basis" in c}
    if not basis:
        return next((m for m in spec.metrics if any(c["metric"] == m for c in mine)), None), False
    wanted = next((m for m in spec.metrics if m in basis), None)
    if wanted:
        return wanted, False
    # the rows' own metrics in their order; the first that resolved leads (what the row's verdict says: a mix whose
    # throughput is inconclusive but whose CPU per transaction costs is led by its CPU), else the first
    order = sorted(basis, key=basis.get)
    resolved = next((m for m in order if any(c["metric"] == m and c.get("verdict") in RESOLVED for c in mine)), None)
    return resolved or order[0], True


RESOLVED = (stats.COSTS, stats.SAVES, stats.NO_COST)  # verdicts a DBA can act on
SIDE_FIGURES = ("latency_p95_ms",)  # said beside a fixed-duration line's throughput, with its CI (not judged)


def other_basis(analysis, rows, lead: str, mine: list[dict]) -> list[dict]:
    """Beside a line led by its rows' own metric (throughput): the other metrics their verdicts rest on (CPU per
    query) and the p95 latency, each a change with its CI, over the same rows."""
    keys = {(r["workload"], r["operation"], r["contender"]) for r in rows}
    order = sorted({c["metric"]: c["verdict_basis"] for c in mine if "verdict_basis" in c}.items(), key=lambda x: x[1])
    wanted = [m for m, _ in order if m != lead] + list(SIDE_FIGURES)
    out = []
    for metric in wanted:
        found = [_row(c) for c in mine if c["metric"] == metric and (c["workload"], c["operation"], c["contender"])
                 in keys]
        if found:
            out.append({"name": "side_metric", "metric": metric, "word": _word(analysis, metric), "rows": found})
    return out


def _side_text(figs: list[dict]) -> str:
    return "; ".join(_estimates(f["rows"], f["word"], False) for f in figs)


def _word(analysis, metric: str) -> str:
    """A metric's word as the engine's tables say it ('server CPU per query')."""
    engine = engine_named(getattr(analysis, "engine", None) or "")
    return _metric_word(metric, engine.metric_words if engine else None)


def _remark(analysis, remark: str) -> str:
    """A line's remark with the engine's own words put in ({open_includes}: what its connection open includes)."""
    if "{open_includes}" not in remark:
        return remark

    engine = engine_named(getattr(analysis, "engine", None) or "")
    return remark.replace("{open_includes}", engine.open_includes if engine else "its whole set-up included")


def _line(lab: str, spec: LineSpec, comps: list[dict], analysis, first: tuple[str, ...] = ()) -> dict | None:
    """One line of the rows the spec gathers (None when none has its metric); `first`: figures the short line puts
    before the others (oltp's estimate check)."""
    mine = [c for c in comps if (c["workload"] in spec.workloads or f"{c['workload']}/{c['operation']}" in spec.workloads)
            and (spec.cache is None or _label_dict(c["contender"]).get("cache") == spec.cache)]
    metric, own = lead_metric(spec, mine)
    if metric is None:
        return None
    rows = [_row(c) for c in mine if c["metric"] == metric]
    counts = Counter(r["verdict"] for r in rows)
    word = _word(analysis, metric) if own else METRIC_WORDS.get(metric, metric)
    counted = metric.startswith(ia.METRIC)  # --meter instructions: counts, never valgrind's times
    unranked = ia.gap_blocks_ranking(analysis, rows) if counted else None  # the CPU-model gap: no ranking
    estimate = _estimates(rows, word, spec.per_contender, ranked=unranked is None)
    if not spec.follows_table:  # the open: a near-zero base, so the change in its unit, never a percentage of it
        named = [(f, n) for r, n in zip(rows, _names(rows)) if (f := lead.row_figure(analysis, r, metric, word))
                 and not f["percent"]]
        estimate = ", ".join(lead.figure_text(f) + (f" ({n})" if len(named) > 1 else "") for f, n in named) or estimate
    code = next(iter(counts)) if len(counts) == 1 else MIXED
    words = _verdict_words(code, rows, estimate) if code != MIXED else _mixed_words(counts, estimate, rows)
    if counted:
        figures = ia.headline_figures(analysis, rows)
        words += f"; {unranked}" if unranked else ""
    else:
        figures = (spec.extras(analysis, rows) if spec.extras else []) + (other_basis(analysis, rows, metric, mine)
                                                                           if own else [])
    told = [FIGURE_TEXT[name]([f for f in figures if f["name"] == name])
            for name in dict.fromkeys(f["name"] for f in figures)]
    detail = f"{spec.label}: " + "; ".join([*told, words] if spec.figures_first else [words, *told])
    if spec.remark:
        detail += f" ({_remark(analysis, spec.remark)})"
    rated = [r["ratio"] for r in rows if r["ratio"] is not None]
    judged = lead.decisions(rows, mine, metric, _row, lambda m: _word(analysis, m)) if spec.follows_table else rows
    text, figure = short_text(analysis, spec.label, code, judged, figures, metric, word, first)
    return {"lab": lab, "label": spec.label, "metric": metric, "verdict": code, "verdicts": dict(counts),
            "rows": rows, "range": [min(rated), max(rated)] if rated else None, "figures": figures, "text": text,
            "lead": figure, "detail": detail}


def _by_lab(comps: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for c in comps:
        axis = axis_of(c)
        out.setdefault(LABS.get(axis, axis or "other"), []).append(c)
    return out


def comparison_lines(analysis) -> list[dict]:
    """The at-rest and in-transit lines (and a line per workload no spec names), lab by lab."""
    out = []
    for lab, comps in _by_lab(analysis.shown_comparisons()).items():
        if lab == LABS["sessions"]:
            continue  # the hash sweep has its own line (sweep_lines)
        specs = SPECS.get(lab, ())
        named = {wl.split("/")[0] for s in specs for wl in s.workloads} | {oc.WORKLOAD}  # oltp: oltp_lines
        rest = [wl for wl in dict.fromkeys(c["workload"] for c in comps) if wl not in named]
        specs = tuple(s for s in specs if _engine_says(analysis, s)) + tuple(
            LineSpec(f"{wl}", (wl,), metrics=("cpu_s", "wall_s")) for wl in rest)
        out += [line for spec in specs for one in _per_operation(spec, comps)
                if (line := _line(lab, one, comps, analysis))]
    return out


def _engine_says(analysis, spec: LineSpec) -> bool:
    """A line the run's engine asks for: a spec naming an Engine attribute (the open at rest: `open_at_rest`) is left
    out where that attribute is false (MariaDB: InnoDB derives no key per connection, so its open is not a question
    of the at-rest lab; its table row and its note stay)."""
    if not spec.engine_says:
        return True
    engine = engine_named(getattr(analysis, "engine", None) or "")
    return engine is None or bool(getattr(engine, spec.engine_says))


def _per_operation(spec: LineSpec, comps: list[dict]) -> list[LineSpec]:
    """A suites line per operation (storm's messages and its loop-only control are ranked apart); others as they are."""
    if not spec.per_contender:
        return [spec]
    ops = list(dict.fromkeys(f"{c['workload']}/{c['operation']}" for c in comps if c["workload"] in spec.workloads))
    if len(ops) < 2:
        return [spec]
    return [replace(spec, label=f"{spec.label} {op.split('/', 1)[1]}", workloads=(op,)) for op in ops]


def sweep_lines(analysis) -> list[dict]:
    """Per hash function (and column in-database method, its read-sessions): efficiency and degradation at the
    highest sessions level, the hash function's CPU per row against the raw hash, and where the server's CPU went
    (the profile at the highest level recorded)."""
    out = []
    swept = {"hash": "hash", "column": "read-sessions"}  # the operation of each sweep the line is about
    scale = [e for e in analysis.scaling or [] if e["operation"] == swept.get(e.get("workload", "hash"))]
    costs = {c["function"]: c for c in analysis.hash_costs or []}
    for wl, function in dict.fromkeys((e.get("workload", "hash"), e["function"]) for e in scale):
        top = max((e for e in scale if (e.get("workload", "hash"), e["function"]) == (wl, function)),
                  key=lambda e: e["sessions"])
        parts, figures = [], []
        if top["sessions"] > 1 and top["efficiency"] is not None:
            ci = top["efficiency_ci"]
            parts.append(f"at {top['sessions']} sessions efficiency {top['efficiency']:.2f}"
                         + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "") + " (1.00: linear up to the cores)")
            figures.append({"name": "efficiency", "sessions": top["sessions"], "value": top["efficiency"], "ci": ci})
        if top["sessions"] > 1 and top["degradation"] is not None:
            ci = top["degradation_ci"]
            parts.append(f"each session takes {top['degradation']:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
                         + " the time of one alone")
            figures.append({"name": "degradation", "sessions": top["sessions"], "value": top["degradation"], "ci": ci})
        c = costs.get(function) if wl == "hash" else None
        if c:
            text = f"{c['function_us_per_row']:.3f} µs of server CPU per row on the function"
            if c.get("times_raw"):
                text += f" ({c['times_raw']:.1f}x the raw hash on this CPU)"
            parts.append(text)
            figures.append({"name": "function_us_per_row", "value": c["function_us_per_row"],
                            "times_raw": c.get("times_raw")})
        prof = [p for p in analysis.profiles or [] if (p.get("workload", "hash"), p.get("function")) == (wl, function)
                and "error" not in p]
        if prof:
            p = max(prof, key=lambda p: p["sessions"])
            leaf = ", ".join(f"{name} {share:.0%}" for name, share in p["top_functions"][:2])
            parts.append(f"the server's CPU at {p['sessions']} sessions: libcrypto {p['libcrypto_share']:.0%}, "
                         f"locks {p['lock_share']:.0%}" + (f" (top: {leaf})" if leaf else ""))
            figures.append({"name": "profile", "sessions": p["sessions"], "libcrypto_share": p["libcrypto_share"],
                            "lock_share": p["lock_share"]})
        if parts:
            short = [f"efficiency {f['value']:.2f}" + (f" [{f['ci'][0]:.2f}, {f['ci'][1]:.2f}]" if f["ci"] else "")
                     + f" at {f['sessions']} sessions" if f["name"] == "efficiency" else
                     f"{f['value']:.3f} µs/row" + (f" ({f['times_raw']:.1f}x raw)" if f.get("times_raw") else "")
                     if f["name"] == "function_us_per_row" else
                     f"libcrypto {f['libcrypto_share']:.0%}, locks {f['lock_share']:.0%}" if f["name"] == "profile"
                     else "" for f in figures]
            short = [x for x in short if x]
            out.append({"lab": f"{wl} sweep", "label": f"{wl} sweep, {function}", "metric": None, "verdict": None,
                        "verdicts": {}, "rows": [], "range": None, "figures": figures,
                        "text": fit(f"{wl} sweep, {function}: {short[0]}", short[1:]) if short else
                        f"{wl} sweep, {function}",
                        "detail": f"{wl} sweep, {function}: " + "; ".join(parts) + f" ({top['runs']} runs per level)"})
    return out


# -- the column lab: per method, the CPU per row it adds to encrypt and to decrypt, against its raw cipher ----------

COLUMN_OPERATIONS = {"encrypt": "insert", "decrypt": "read"}  # the operation that tells each direction
SIDE_METRICS = {"server": "cpu_s", "process": "cpu_s", "client": "client_cpu_s"}  # the comparison of that side
LEADING_VERDICTS = (stats.COSTS, stats.SAVES, stats.NO_COST, stats.INCONCLUSIVE)  # words before the estimate


def _column_raw(e: dict, with_part: bool) -> str:
    """', 1.4x its raw cipher (170 µs, 100% S2K (iterated SHA-1))', or why there is no multiple."""
    if "raw_us_per_value" not in e:
        return ""
    raw = e["raw_us_per_value"]
    parts = e.get("raw_parts") or {}
    inner = f"{cc.fmt_us(raw)} µs"
    if with_part and len(parts) > 1:
        top = max(parts, key=parts.get)
        inner += f", {fmt_percent(100 * parts[top] / raw)} {cc.PART_WORDS.get(top, top)}"
    standing = e.get("raw_cipher_standing")
    if standing in (CONTRADICTS, UNRESOLVED):
        return f", below its raw cipher ({inner}): {standing}" + (", run longer" if standing == UNRESOLVED else "")
    note = "; its CI reaches below it" if standing == CI_ABOVE else ""
    return f", {cc.fmt_times(e['times_raw'])}x its raw cipher ({inner}{note})" if "times_raw" in e else ""


def _column_piece(e: dict, row: dict | None, first: bool, alone: bool) -> str:
    """One direction: the added CPU per row with its CI and its raw cipher, led by the verdict's words as judge()
    means them ('costs', 'no cost: ...'); a verdict that follows the figures is said once per line unless `alone`."""
    added, ci = e["added_us_per_row"], e["added_us_per_row_ci"]
    word = f" {cc.SIDE_WORDS[e['side']]}" if first else ""
    est = (f"{'+' if added >= 0 else '-'}{cc.fmt_us(abs(added))} µs{word} per row{cc.fmt_ci(ci)} to {e['direction']}"
           f" ({e['operation']})")
    raw = _column_raw(e, first)
    code = row["verdict"] if row else stats.NO_ESTIMATE
    if code in LEADING_VERDICTS:
        return _verdict_words(code, [row], est) + raw
    return _verdict_words(code, [row] if row else [], est + raw) if alone else est + raw


def column_lines(analysis) -> list[dict]:
    """One line per column method (analysis.column_costs): what it adds per row to encrypt and to decrypt, on the
    side that does the cipher work, worded with its comparisons' verdicts, and the multiple of its raw cipher."""
    entries = [e for e in analysis.column_costs or [] if e["added_us_per_row"] is not None
               and COLUMN_OPERATIONS.get(e["direction"]) == e["operation"]]
    comps = {(c["operation"], c["contender"], c["metric"]): c for c in analysis.shown_comparisons()
             if c["workload"] == cc.WORKLOAD}
    contenders = {}
    for e in entries:
        contenders.setdefault((e["method"], e["contender"]), []).append(e)
    methods = Counter(m for m, _ in contenders)
    out = []
    for (method, contender), mine in contenders.items():
        name = method if methods[method] == 1 else cc.name_of(mine[0])
        mine.sort(key=lambda e: list(COLUMN_OPERATIONS).index(e["direction"]))
        found = [comps.get((e["operation"], contender, SIDE_METRICS[e["side"]])) for e in mine]
        each = [_row(c) if c else None for c in found]  # a direction without its comparison: None
        rows = [r for r in each if r]
        counts = Counter(r["verdict"] for r in rows)
        codes = {r["verdict"] if r else stats.NO_ESTIMATE for r in each}
        trailing = next(iter(codes)) if len(codes) == 1 and not codes & set(LEADING_VERDICTS) else None
        pieces = [_column_piece(e, r, i == 0, trailing is None) for i, (e, r) in enumerate(zip(mine, each))]
        text = "; ".join(pieces)
        if trailing:  # too few runs, no estimate, withheld: said once, after the figures
            text = (f"{text} (no verdict: {rows[0]['verdict_text']})" if trailing == stats.WITHHELD
                    else _verdict_words(trailing, rows, text))
        figures = [{"name": "column_added_us_per_row", "method": method, "contender": contender,
                    "operation": e["operation"], "direction": e["direction"], "side": e["side"],
                    "value": e["added_us_per_row"], "ci": e["added_us_per_row_ci"],
                    "raw_us_per_value": e.get("raw_us_per_value"), "times_raw": e.get("times_raw"),
                    "raw_cipher_standing": e.get("raw_cipher_standing")} for e in mine]
        rated = [r["ratio"] for r in rows if r["ratio"] is not None]
        code = next(iter(counts)) if len(counts) == 1 else (MIXED if counts else stats.NO_ESTIMATE)
        head = f"{cc.WORKLOAD}, {name}: " + (f"{code.replace('_', ' ')}: " if code in (stats.COSTS, stats.SAVES,
                                                                                      stats.NO_COST) else "")
        short = lead.column_short(head, mine, each)
        out.append({"lab": cc.WORKLOAD, "label": f"{cc.WORKLOAD}, {name}",
                    "metric": SIDE_METRICS[mine[0]["side"]], "verdict": next(iter(counts)) if len(counts) == 1
                    else (MIXED if counts else None), "verdicts": dict(counts), "rows": rows,
                    "range": [min(rated), max(rated)] if rated else None, "figures": figures,
                    "text": short or f"{cc.WORKLOAD}, {name}: {lead.NOT_RESOLVED}",
                    "detail": f"{cc.WORKLOAD}, {name}: {text}"})
    return out


# -- oltp: per mix, memory share and clients, what encryption costs the transactions, and the model checked --------

def oltp_lines(analysis) -> list[dict]:
    """One line per oltp entry (analysis.oltp_costs): the throughput's verdict, CPU per transaction and p95 latency
    with their CIs, the added CPU per page read beside the scans', and the per-page estimate checked."""
    comps = [c for c in analysis.shown_comparisons() if c["workload"] == oc.WORKLOAD]
    out = []
    for e in analysis.oltp_costs or []:
        mine = [c for c in comps if (c["operation"], c["contender"], c["baseline"])
                == (e["operation"], e["contender"], e["baseline"])]
        if not mine:
            continue
        axis = axis_of(mine[0])
        value = _label_dict(e["contender"]).get(axis or "", "")
        mix = e.get("script") or e["operation"]
        words = [mix if oc.WORKLOAD in mix else f"{oc.WORKLOAD} {mix}", f"{e['memory']} in memory" if e.get("memory")
                 else "", f"{e['clients']} clients" if e.get("clients") not in (None, "1") else "", f"{axis}={value}"]
        spec = LineSpec(", ".join(w for w in words if w), (oc.WORKLOAD,), metrics=())
        chk = e.get("estimate_check") or {}
        # the check is a figure to act on: kept in the short line, before the others
        check = (f"estimate {lead.number(chk['error_pct'], True, 0)}% off",) \
            if chk.get("error_pct") is not None else ()
        line = _line(LABS.get(axis, "oltp"), spec, mine, analysis, check)
        if line is None:
            continue
        extra = oltp_figures(e)
        if extra:
            line["detail"] += "; " + "; ".join(extra)
        line["figures"].append({"name": "oltp_cost", **{k: e[k] for k in ("added_cpu_us_per_txn",
                                                                          "added_cpu_us_per_page_read")},
                                "estimate_error_pct": (e.get("estimate_check") or {}).get("error_pct")})
        out.append(line)
    return out


def build(analysis) -> list[dict]:
    """The headline lines of an analysis (an Analysis: its fields are read, nothing else)."""
    return comparison_lines(analysis) + oltp_lines(analysis) + column_lines(analysis) + sweep_lines(analysis)


def lines(analysis, detail: bool = False) -> list[str]:
    """The text form: one string per line (what the terminal, Markdown and HTML show): each within 100 columns,
    or with `detail` (show --detail) the whole sentence with every figure."""
    return [line.get("detail", line["text"]) if detail else line["text"] for line in (analysis.headline or [])]
