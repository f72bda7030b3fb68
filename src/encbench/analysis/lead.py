"""The summary's short line: only what resolved, in the unit a decision uses, with its CI (issue 30 item 2).

A headline line (headline.py) gathers rows; its short form (what `run` and `show` print first, each within 100
columns) quotes one figure, the one a DBA acts on, each row judged as the table judges it (`decisions`: the first
of its verdict metrics that costs or saves decides it, so the summary and the table say the same):

- a per-page cost (µs of CPU per page read or written) of a resolved row whose 95% CI excludes zero: the
  best-resolved one's (the narrowest CI for its size), never a range of rows;
- else the best-resolved row's change in the unit of its metric: the baseline's centre (the trimmed geometric mean
  the ratio divides by) times the ratio and its CI (ms of elapsed or CPU per operation, ms per connection, µs of
  CPU per transaction or query; a rate stays a share of throughput), so that the figure and its CI say what the
  verdict says;
- a line none of whose rows resolved (costs, saves or no cost) is one phrase: NOT_RESOLVED. No range of point
  estimates, no percentage of a near-zero base (a plain open of 0.5 ms against a SQLCipher one of 400 ms).

Then the rows counted when their verdicts differ ("2 of 4 rows cost"), and what else fits.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from . import columncost as cc, stats
from ..util.units import fmt_count, fmt_number, fmt_seconds

NOT_RESOLVED = "not resolved: run longer, or --budget"
RESOLVED = (stats.COSTS, stats.SAVES, stats.NO_COST)  # verdicts a DBA can act on
WIDTH = 96  # a headline line's characters: "  - " and the line fit 100 columns; the rest is its detail
ONE_LINE = 91  # leak-check's and tls-scan's answer: "Summary: " and the line fit 100 columns
RATES = frozenset({"qps", "tps", "mb_per_s", "connections_per_s", "rows_per_s"})  # said as a share of throughput
OPEN = ("(open)", "connect")
COUNT_WORDS = {stats.COSTS: "cost", stats.SAVES: "save", stats.NO_COST: "no cost", stats.WITHHELD: "withheld"}


def fit(head: str, extras: list[str], width: int = WIDTH) -> str:
    """The head, then as many of the extras (in order) as fit within `width`."""
    text = head
    for x in extras:
        if x and len(text) + 2 + len(x) <= width:
            text += "; " + x
    return text


# -- numbers: never "-0", never "+-" ----------------------------------------------------------------------------

number = fmt_number  # the one formatter of a figure: never '-0', never '+-'


def signed_pct(ratio: float, decimals: int = 0) -> str:
    """A ratio as a signed change in percent without its sign ('+31', '-0.4', '0')."""
    return number((ratio - 1) * 100, sign=True, decimals=decimals)


def _seconds_scale(x: float) -> tuple[float, str]:
    return (1, " s") if abs(x) >= 1 else (1e3, " ms") if abs(x) >= 1e-3 else (1e6, " µs")


def amount(metric: str, value: float, ci, sign: bool = True) -> tuple[str, str]:
    """(the value with its unit, its CI) in one unit: '+4.4 ms', '[+1.2, +7.5]'; µs per unit; ms of latency."""
    if metric.endswith("_s"):
        scale, unit = _seconds_scale(value)
    elif metric.startswith("instructions"):
        def count(x: float) -> str:
            return ("+" if sign and x > 0 else "") + fmt_count(x)
        return count(value), f"[{count(ci[0])}, {count(ci[1])}]" if ci else ""
    elif "_us_per_" in metric:  # µs per unit: a millisecond or more is said in ms ('+2.1 ms per connection')
        scale, unit = _seconds_scale(value * 1e-6)
        scale *= 1e-6
    else:
        scale, unit = 1, " ms" if metric.endswith("_ms") else ""
    text = number(value * scale, sign) + unit
    return text, (f"[{number(ci[0] * scale, sign)}, {number(ci[1] * scale, sign)}]" if ci else "")


# -- the figure a line leads with -------------------------------------------------------------------------------

def _width(lo: float, hi: float, value: float) -> float:
    return (hi - lo) / abs(value) if value else math.inf


def best_page(figures: list[dict], rows: list[dict]) -> dict | None:
    """The per-page cost of a resolved row (its verdict costs, saves or no cost) whose CI excludes zero and is the
    narrowest for its size, or None."""
    judged = {(r["workload"], r["operation"], r["contender"]) for r in rows if r["verdict"] in RESOLVED}
    pages = [f for f in figures if f["name"] in ("per_page_read_cpu_s", "per_page_write_cpu_s") and f.get("ci")
             and (f["ci"][0] > 0 or f["ci"][1] < 0) and (f["workload"], f["operation"], f["contender"]) in judged]
    return min(pages, key=lambda f: _width(*f["ci"], f["value"]), default=None)


def _size(page_size: int) -> str:
    return f"{page_size / 1024:g} KB" if page_size % 1024 == 0 else f"{page_size}-byte"


def page_text(f: dict, named: bool = True) -> tuple[str, str]:
    """('11.0 µs CPU per 4 KB page read [9.1, 12.9]', 'scan-like/scan'): the figure, and where it comes from (the row
    when `named`; a write's: an upper bound, other write work is in it too)."""
    value, ci = amount("cpu_s", f["value"], f["ci"], sign=False)
    kind = "written" if f["name"] == "per_page_write_cpu_s" else "read"
    where = [f"{f['workload']}/{f['operation']}"] if named else []
    return f"{value} CPU per {_size(f['page_size'])} page {kind} {ci}", ", ".join(
        where + (["upper bound"] if kind == "written" else []))


def baseline_centre(analysis, row: dict, metric: str) -> float | None:
    """The baseline's centre the row's ratio divides by (its trimmed geometric mean: summaries' `centre`; the median
    of a summary stored before it), so that centre x (ratio - 1) is the change in the metric's unit."""
    found = next((s for s in analysis.summaries if (s["workload"], s["operation"], s["variant"], s["metric"])
                  == (row["workload"], row["operation"], row["baseline"], metric)), None)
    return None if found is None else found.get("centre", found.get("median"))


def row_figure(analysis, row: dict, metric: str, word: str) -> dict | None:
    """A row's change in its metric's unit (the row's own `metric` when it carries one: the metric that decided
    it): the baseline's centre x (ratio - 1), its CI the same; a rate: the change in percent of throughput. None
    without a ratio or a CI."""
    metric, word = row.get("metric", metric), row.get("word", word)
    if row["ratio"] is None or not row["ci"]:
        return None
    base = None if metric in RATES else baseline_centre(analysis, row, metric)
    if base is None:  # a rate, or (an analysis without its summaries) no baseline to scale by: the change in percent
        return {"metric": metric, "word": word, "percent": True, "value": (row["ratio"] - 1) * 100,
                "ci": [(x - 1) * 100 for x in row["ci"]], "row": row}
    return {"metric": metric, "word": word, "percent": False, "baseline": base, "value": base * (row["ratio"] - 1),
            "ci": [base * (x - 1) for x in row["ci"]], "row": row}


def figure_text(f: dict) -> str:
    """'+4.4 ms CPU [+1.2, +7.5]' (an operation's), '+310.5 ms per connection [+295, +330] (0.5 ms without)',
    '-12% throughput [-18, -6]', '+140 µs CPU per transaction [+90, +190]'; with ', CPU not resolved' when the
    table's lead metric did not resolve where another decided the row."""
    beside = f", {f['row']['beside']}" if f["row"].get("beside") else ""
    if f["percent"]:
        lo, hi = f["ci"]
        return f"{number(f['value'], True, 0)}% {f['word']} [{number(lo, True, 0)}, {number(hi, True, 0)}]{beside}"
    value, ci = amount(f["metric"], f["value"], f["ci"])
    row = f["row"]
    if (row["workload"], row["operation"]) == OPEN:  # the time says what it is: per connection, beside a plain one
        counted = " instructions" if f["metric"].startswith("instructions") else ""  # a count is no time
        base = f.get("baseline")
        without = "" if base is None else fmt_seconds(base) if f["metric"].endswith("_s") else amount(
            f["metric"], base, None, sign=False)[0]
        return f"{value}{counted} per connection {ci}" + (f" ({without} without)" if without else "")
    return f"{value} {f['word']} {ci}{beside}"


def best_row(analysis, rows: list[dict], metric: str, word: str) -> dict | None:
    """The resolved row (costs, saves, no cost) with the narrowest CI, as a figure in its unit."""
    figs = [f for r in rows if r["verdict"] in RESOLVED and (f := row_figure(analysis, r, metric, word))]
    return min(figs, key=lambda f: math.log(f["row"]["ci"][1] / f["row"]["ci"][0]) if f["row"]["ci"][0] > 0
               else math.inf, default=None)


# -- the line ---------------------------------------------------------------------------------------------------

def counts(rows: list[dict], source: dict | None) -> str:
    """'2 of 4 rows cost' when the rows' verdicts differ (those of the figure's row counted); '' when they agree
    (the verdict word says it) or when the resolved rows disagree (the verdict word counts them)."""
    c = Counter(COUNT_WORDS.get(r["verdict"], "not resolved") for r in rows)
    mine = next((COUNT_WORDS.get(r["verdict"], "") for r in rows if source and _key(r) == _key(source)), "")
    if len(c) < 2 or not mine or _differ(rows):
        return ""
    return f"{c[mine]} of {len(rows)} rows {mine}"


def _differ(rows: list[dict]) -> bool:
    """Do the resolved rows disagree (costs beside saves or no cost)?"""
    return len({r["verdict"] for r in rows if r["verdict"] in RESOLVED}) > 1


def _differ_words(rows: list[dict]) -> str:
    """'verdicts differ (2 cost, 1 save):': a line whose resolved rows disagree leads with no one row's verdict."""
    c = Counter(COUNT_WORDS[r["verdict"]] for r in rows if r["verdict"] in RESOLVED)
    return "verdicts differ (" + ", ".join(f"{n} {w}" for w, n in c.items()) + "):"


def verdict_word(rows: list[dict], source: dict | None = None) -> str:
    """The resolved rows' common verdict in a word ('costs', 'no cost (±2%):'); when they differ, the verdicts
    counted ('verdicts differ (2 cost, 1 save):'), never one row's verdict leading a line the others contradict."""
    codes = {r["verdict"] for r in rows if r["verdict"] in RESOLVED}
    if len(codes) != 1:
        found = [r["verdict"] for r in rows if source and _key(r) == _key(source) and r["verdict"] in RESOLVED]
        return _differ_words(rows) if found else ""
    code = next(iter(codes))
    if code == stats.NO_COST:
        margin = next((r["margin_pct"] for r in rows if r.get("margin_pct") is not None), stats.DEFAULT_MARGIN_PCT)
        return f"no cost (±{margin:g}%):"
    return code


def _key(x: dict) -> tuple[str, str, str]:
    return x["workload"], x["operation"], x["contender"]


def lead(analysis, rows: list[dict], figures: list[dict], metric: str, word: str,
         names: dict) -> tuple[str, list[str], dict]:
    """(the head after the label, what may follow it if it fits: where the figure comes from and the rows counted,
    the figure it rests on). The head: the verdict and the per-page cost or the best row's figure with its CI;
    NOT_RESOLVED alone when nothing resolved."""
    page, row = best_page(figures, rows), best_row(analysis, rows, metric, word)
    if page is None and row is None:
        return NOT_RESOLVED, ["", ""], {"resolved": False}
    if page is not None:
        text, where = page_text(page, len(rows) > 1)
        figure = {"per_page": page["name"], "value": page["value"], "ci": page["ci"]}
        source = page
    else:
        text, where, source = figure_text(row), names.get(_key(row["row"]), ""), row["row"]
        figure = {"metric": row["metric"], "percent": row["percent"], "value": row["value"], "ci": row["ci"],
                  "baseline_centre": row.get("baseline")}
    figure.update(resolved=True, workload=source["workload"], operation=source["operation"],
                  contender=source["contender"])
    verb = verdict_word(rows, source)
    head = (f"{verb} " if verb else "") + text
    return head, [f" ({where})" if where else "", counts(rows, source)], figure


def side_texts(analysis, figures: list[dict], lead_metric: str | None = None) -> list[str]:
    """Beside a line: each side metric (CPU per query beside throughput, p95 latency) where one of its rows
    resolved, as the best one's figure in its unit (not the metric the line's figure is already in)."""
    out = []
    for f in figures:
        if f["name"] != "side_metric" or f["metric"] == lead_metric:
            continue
        best = best_row(analysis, f["rows"], f["metric"], f["word"])
        if best is not None:
            verb = verdict_word([best["row"]])
            out.append((f"{verb} " if verb else "") + figure_text(best))
    return out


def column_short(head: str, entries: list[dict], rows: list[dict | None]) -> str:
    """The column line's short form: each direction whose comparison resolved, its added µs per row with the CI (and
    the multiple of its raw cipher when it fits); '' when none resolved."""
    told = [e for e, r in zip(entries, rows) if r and r["verdict"] in RESOLVED]
    for with_raw in (True, False):
        short = [f"{'+' if e['added_us_per_row'] >= 0 else '-'}{cc.fmt_us(abs(e['added_us_per_row']))} µs/row"
                 f"{cc.fmt_ci(e['added_us_per_row_ci'])} to "
                 f"{e['direction']}" + (f" ({cc.fmt_times(e['times_raw'])}x raw)" if with_raw and "times_raw" in e
                                        else "") for e in told]
        if len(head) + len("; ".join(short)) <= WIDTH:
            break
    return fit(head + short[0], short[1:]) if short else ""


# -- each row as the table judges it ---------------------------------------------------------------------------

BASIS = ("cpu_s", "client_cpu_s", "wall_s")  # a row's verdict metrics in a file from before verdict_basis
LEAD_ORDER = (stats.COSTS, stats.SAVES)  # the verdicts that decide a row, as the table's verdict reads them


def _decision(comps: list[dict]) -> tuple[dict, str] | None:
    """(the comparison that decides a row, its verdict) as the table's verdict does (summary.row_code): the first
    metric of its verdict basis shown to cost (else save); no cost when every one is shown equivalent; else the
    first of them, unresolved."""
    basis = sorted((c for c in comps if "verdict_basis" in c), key=lambda c: c["verdict_basis"]) or [
        c for m in BASIS for c in comps if c["metric"] == m]
    if not basis:
        return None
    if any(c.get("withheld") for c in basis):
        return basis[0], stats.WITHHELD
    pick = next((c for code in LEAD_ORDER for c in basis if c["verdict"] == code), None)
    if pick is not None:
        return pick, pick["verdict"]
    if all(c["verdict"] == stats.NO_COST for c in basis):
        return basis[0], stats.NO_COST
    return basis[0], next((c["verdict"] for c in basis if c["verdict"] not in RESOLVED), basis[0]["verdict"])


def decisions(rows: list[dict], mine: list[dict], metric: str, row_of, word_of) -> list[dict]:
    """The line's rows as the table judges them (issue 29 item 2: the summary and the table say the same): each
    row's verdict and figure from the metric that decides it; where that is not the line's metric, which did not
    resolve, the row says so ('CPU not resolved'). `row_of`: a comparison as a headline row; `word_of`: a metric's
    word."""
    out = []
    for r in rows:
        found = _decision([c for c in mine if (c["workload"], c["operation"], c["contender"]) == (
            r["workload"], r["operation"], r["contender"])])
        if found is None:
            out.append(r)
            continue
        c, code = found
        d = dict(row_of(c), verdict=code, metric=c["metric"], word=word_of(c["metric"]))
        if c["metric"] != metric and code in RESOLVED and r["verdict"] not in RESOLVED:
            d["beside"] = f"{word_of(metric)} not resolved"
        out.append(d)
    return out


# -- the rules, checkable: what the tests hold every summary line to -------------------------------------------

_NOT_RESOLVED_LINE = re.compile(r"^[^:]+: " + re.escape(NOT_RESOLVED) + "$")
_ABSOLUTE = re.compile(r"(µs|ms|\d s|instructions|%[\w ]* throughput)[^\[]*\[[-+]?[\d.,]+[kMG]?, [-+]?[\d.,]+[kMG]?\]")
_ZERO = re.compile(r"(?<![\d.])[-+]0(?![.\d])")
_BIG_PERCENT = re.compile(r"[-+]?\d[\d,]{3,}(\.\d+)?%")


def rule_breaks(text: str) -> list[str]:
    """What breaks the short line's rules: within WIDTH; 'not resolved' alone, or a figure in an absolute unit (or
    a share of throughput) with its CI; no '-0', '+0' or '+-'; no percentage above 1000%."""
    out = []
    if len(text) > WIDTH:
        out.append(f"wider than {WIDTH}")
    if not _NOT_RESOLVED_LINE.match(text) and not _ABSOLUTE.search(text) and "no verdict (" not in text:
        out.append("neither 'not resolved' nor an absolute figure with its CI")
    if _ZERO.search(text) or "+-" in text:
        out.append("'-0', '+0' or '+-'")
    if _BIG_PERCENT.search(text):
        out.append("a percentage above 1000%")
    return out
