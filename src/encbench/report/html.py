"""`encbench report FILE... -o report.html`: one self-contained HTML file.

Everything is inline (CSS, SVG plots, flame graphs): the file opens without a network,
reads on a laptop screen and prints on paper (print CSS: no backgrounds, tables not
split across pages). Per result file: the environment, every report table, a bar chart
of the main overhead per row with its 95% CI (cold and warm, or one bar per cipher
suite, side by side), the scaling curves and flame graphs of a hash sweep, the per-page
cost, where the overhead went, notes, warnings, and the command that reproduces it.
"""

from __future__ import annotations

import html
import io
from pathlib import Path

from ..analysis import model, summary as an
from . import render as report
from ..errors import OutputError
from ..analysis import advise
from ..engines import engine_named

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1200px;padding:1.2em;color:#1d1d1f}
h1{font-size:1.6em;margin:.2em 0} h2{font-size:1.3em;margin-top:1.6em;border-bottom:2px solid #ddd;padding-bottom:.2em}
h3{font-size:1.05em;margin-top:1.2em} .meta{color:#555;font-size:.9em} .meta li{margin:.15em 0}
table{border-collapse:collapse;width:100%;font-size:.82em;margin:.6em 0} th,td{border:1px solid #ccc;padding:.3em .45em;vertical-align:top;overflow-wrap:break-word}
th{background:#f2f2f5;text-align:left} tr:nth-child(even) td{background:#fafafa}
.sig{font-weight:600} .plot svg{max-width:100%;height:auto} .flame svg{width:100%;height:auto;border:1px solid #eee}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85em} pre{background:#f6f6f8;padding:.6em;overflow-x:auto;white-space:pre-wrap}
ul.lines li{margin:.2em 0} nav ul{columns:2}
@media print{body{max-width:none;padding:0;font-size:10pt} h2{page-break-before:auto} table,figure,.plot{page-break-inside:avoid}
 th,tr:nth-child(even) td,pre{background:none} a{color:inherit;text-decoration:none} nav{display:none}}
"""

VERDICT_COLOURS = {"costs": "#c0392b", "saves": "#27ae60", "no_cost": "#2e86c1"}
SHOWN = ("costs", "saves", "no_cost")  # verdicts that claim something: set in bold


def _verdict(c: dict) -> str:
    return c.get("verdict") or ""  # the analysis judged it (analyze); nothing is judged here


def chart_groups(t: dict, rows: list[dict]) -> dict[str, list[dict]]:
    """metric -> the rows charted on it: each row's chart_metric (analysis/rows.py: its lead metric, the one its
    table's Δ column and its verdict rest on; a row without one, the first metric of its verdict)."""
    return {metric: mine for metric, _, mine in model.Table(t, rows).charts()}


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def overhead_chart(rows: list[dict], metric: str, word: str, title: str, level: float = 0.95) -> str | None:
    """Horizontal bars: Δ metric (%) per row with its CI as error bars; coloured by the metric's verdict."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = [(f"{r['workload']}/{r['operation']} {r['setting']}", r["comparisons"][metric]) for r in rows
            if metric in r["comparisons"] and r["comparisons"][metric]["ratio"] is not None]
    if not data:
        return None
    labels = [d[0] for d in data]
    vals = [(d[1]["ratio"] - 1) * 100 for d in data]
    colors = [VERDICT_COLOURS.get(_verdict(d[1]), "#bbbbbb") for d in data]
    with matplotlib.rc_context({"svg.hashsalt": "encbench", "svg.fonttype": "none"}):
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(data) + 1.2))
        y = list(range(len(data)))[::-1]
        ax.barh(y, vals, color=colors)
        cis = [(yy, (d[1]["ci"][0] - 1) * 100, (d[1]["ci"][1] - 1) * 100) for yy, d in zip(y, data) if d[1]["ci"]]
        if cis:  # each CI drawn as the interval it is (the estimate is a trimmed geometric mean, not the mean)
            cy, lo, hi = zip(*cis)
            ax.hlines(cy, lo, hi, color="#222", linewidth=1)
            ax.plot(lo + hi, cy + cy, linestyle="none", marker="|", markersize=7, color="#222")
        ax.set_yticks(y, labels, fontsize=8)
        ax.axvline(0, color="#333", linewidth=0.8)
        ax.set_xlabel(f"Δ {word}, contender vs baseline (%), {level:.0%} CI; red: costs, green: saves, blue: no cost "
                      "(equivalence shown), grey: inconclusive or too few runs")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        text = _svg(fig)
        plt.close(fig)
    return text


def _table_html(t: model.Table, level: float) -> str:
    rows = t.rows
    cols = report.columns(t.spec, rows)
    head = "".join(f"<th>{_e(report.head(c, level))}</th>" for c in cols)
    body = []
    for r in rows:
        cells = report._cells(r, cols)
        body.append("<tr>" + "".join(
            f"<td class=\"{'sig' if c == 'verdict' and r['verdict_code'] in SHOWN else ''}\">{_e(v)}</td>"
            for c, v in zip(cols, cells)) + "</tr>")
    return f"<table class=\"results\"><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _lines(title: str, lines: list[str], cls: str) -> str:
    if not lines:
        return ""
    return f"<h3>{_e(title)}</h3><ul class=\"lines {cls}\">" + "".join(f"<li>{_e(x)}</li>" for x in lines) + "</ul>"


# the class of each section's list (report.SECTIONS' titles), for the print CSS and the tests
SECTION_CLASSES = {"Where the overhead went": "attribution", "Scaling of the in-query hash": "scaling",
                   "Scaling of the column's in-database methods": "scaling-column",
                   "CPU profile of the server": "profile", "Files": "files", "Per-page decrypt cost": "derived",
                   "Column encryption per row vs the raw cipher": "column-cost", "The transaction mix": "oltp-cost",
                   "Where the instructions go": "instructions", "Notes": "notes", "Warnings": "warnings",
                   "Every warning": "warnings-detail"}


def _tables_html(m: model.Model) -> list[str]:
    """Every table (every declared column), each followed by its bar charts: one per lead metric of its rows."""
    out = []
    for t in m.tables:
        spec = t.spec
        if spec.get("title"):
            out.append(f"<h3>{_e(spec['title'])}</h3>")
        out.append(_table_html(t, m.level))
        for metric, word, mine in t.charts():
            chart = overhead_chart(mine, metric, word, spec.get("title") or f"{spec['axis']} vs {spec['axis_baseline']}",
                                   m.level)
            if chart:
                out.append(f"<figure class=\"plot overhead\" data-metric=\"{_e(metric)}\">{chart}<figcaption>Δ "
                           f"{_e(word)} per row with its {m.level:.0%} CI (red: costs, green: saves, blue: no cost, equivalence "
                           "shown; grey: no verdict)</figcaption></figure>")
    return out


def _sections_html(doc: dict, m: model.Model) -> list[str]:
    """The sections `show --detail` prints after its tables (report.SECTIONS and DETAIL_SECTIONS, the same lines),
    with a hash sweep's scaling figure before its lines and its flame graphs after the server's profile."""
    out = []
    scaling = m.analysis.scaling
    for _, title, lines in report._sections(True):
        if title == "Scaling of the in-query hash" and scaling:
            out.append(_scaling_figure(doc, scaling))
        out.append(_lines(title, lines(doc, m), SECTION_CLASSES.get(title, "section")))
        if title == "CPU profile of the server" and scaling:
            out.append(_flames(doc))
    return out


def section(doc: dict, path: Path, index: int) -> str:
    """One result file: the summary, the header, the run context, the tables and charts, every section of
    `show --detail`, the environment and the command; all from one model (analyze, model.build), nothing computed
    here."""
    m = model.build(doc, an.analyze(doc))
    out = [f"<section id=\"file-{index}\" class=\"result\"><h2>{_e(path.name)}: {_e(doc['engine']['name'])}</h2>",
           _lines(report.SUMMARY[1], m.summary_detail, "summary"),  # the headline, first
           "<ul class=\"meta\">" + "".join(f"<li>{_e(x)}</li>" for x in report.header_lines(doc, m)) + "</ul>",
           _lines(report.CONTEXT_TITLE, [x.strip() for x in m.context], "context")]
    out += _tables_html(m)
    out += _sections_html(doc, m)
    env = doc["environment"]
    out.append("<h3>Environment</h3><pre class=\"environment\">" + _e(
        f"CPU: {env['cpu']['model']} ({env['cpu']['logical_cores']} cores)\nkernel: {env.get('kernel')}\n"
        + "\n".join(f"{k}: {v}" for k, v in env.get("engine_versions", {}).items())) + "</pre>")
    if doc["config"].get("command"):
        out.append(f"<h3>Reproduce</h3><pre class=\"command\">{_e(doc['config']['command'])}</pre>")
    out.append("</section>")
    return "\n".join(x for x in out if x)


def _scaling_figure(doc: dict, scale: list[dict]) -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        paths = report.plot_scaling(doc, scale, Path(tmp) / "s")
        svg = next((p for p in paths if p.suffix == ".svg"), None)
        text = svg.read_text() if svg else ""
    text = text[text.index("<svg"):] if "<svg" in text else ""
    return f"<figure class=\"plot scaling\">{text}<figcaption>throughput and efficiency against the ideal line</figcaption></figure>" if text else ""


def _flames(doc: dict) -> str:
    out = []
    for v, svg in report.flame_graphs(doc):
        svg = svg[svg.index("<svg"):] if "<svg" in svg else svg
        out.append(f"<figure class=\"flame\">{svg}<figcaption>server CPU, {_e(v.get('function'))} at "
                   f"{_e(v.get('sessions'))} sessions (perf, warmup run)</figcaption></figure>")
    return "<h3>Flame graphs</h3>" + "".join(out) if out else ""


def advice_section(docs: list[tuple[Path, dict]]) -> str:
    """`encbench advise`'s ranked list over every file of the report (issue 24), when they measured a knob at two
    values; else nothing."""
    knobs = tuple({k.key: k for _, d in docs for k in getattr(engine_named(d["engine"]["name"]), "knobs", ())}.values())
    pairs = [(str(p), d) for p, d in docs]
    entries = advise.advise(pairs, knobs, {"docs": dict(pairs), "analyses": {s: an.analyze(d) for s, d in pairs}})
    if not entries:
        return ""
    lines = advise.report_lines(entries, [p for p, _ in pairs])
    return (f"<section id=\"advice\" class=\"result\"><h2>{_e(lines[0])}</h2><ul class=\"lines advice\">"
            + "".join(f"<li>{_e(x.strip())}</li>" for x in lines[1:]) + "</ul></section>")


def render(docs: list[tuple[Path, dict]]) -> str:
    nav = "".join(f"<li><a href=\"#file-{i}\">{_e(p.name)} ({_e(d['engine']['name'])})</a></li>"
                  for i, (p, d) in enumerate(docs))
    advice = advice_section(docs)
    if advice:
        nav = "<li><a href=\"#advice\">what makes encryption cheaper (advise)</a></li>" + nav
    sections = advice + "\n".join(section(d, p, i) for i, (p, d) in enumerate(docs))
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>encbench report</title>"
            f"<style>{CSS}</style></head><body><header><h1>encbench report</h1>"
            f"<p class=\"meta\">{len(docs)} result file(s). Δ = contender vs baseline, ratio of trimmed geometric "
            f"means with a Yuen-Welch t 95% CI; costs / saves = the CI excludes 0%, no cost = equivalence shown "
            f"(the 90% CI within the margin), inconclusive = run longer.</p><nav><ul>{nav}</ul></nav></header>"
            f"{sections}</body></html>\n")


def write(docs: list[tuple[Path, dict]], output: Path) -> Path:
    text = render(docs)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
    except OSError as e:
        raise OutputError(f"cannot write {output}: {e.strerror or e}", hint="choose a writable -o path") from None
    return output
