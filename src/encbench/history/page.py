"""`encbench history --html FILE`: one self-contained HTML page: the runs and the trend of a figure, a
line per series over time with each point's 95% CI (report/html.py's style: inline CSS and SVG)."""

from __future__ import annotations

import datetime
import html
from ..report.html import CSS, _svg

MAX_SERIES = 12  # more lines than this are unreadable in one chart: the page names the rest
VERDICT_MARKERS = {"costs": "#c0392b", "saves": "#27ae60", "no_cost": "#2e86c1", "leak": "#c0392b",
                   "clean": "#27ae60"}


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def series_title(s: dict) -> str:
    if "workload" in s:
        return f"{s['workload']}/{s['operation']} {s['variant']} vs {s['baseline']} on {s['target']}"
    return ", ".join(f"{k} {v}" for k, v in s.items() if k != "points")


def fmt_value(v) -> str:
    """A ratio as Δ % (1.25 -> +25.0%), a count or word as it is."""
    if isinstance(v, float):
        return f"{(v - 1) * 100:+.1f}%"
    return "-" if v is None else str(v)


def fmt_ci(ci) -> str:
    return f"[{fmt_value(ci[0])}, {fmt_value(ci[1])}]" if ci and None not in ci else ""


def _legend(s: dict) -> str:
    return f"{s['workload']}/{s['operation']} {s['variant']} ({s['target']})" if "workload" in s else series_title(s)


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def trend_svg(found: dict) -> str | None:
    """The series' numeric points over time (ratios as Δ %, CIs as vertical bars); None: nothing numeric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    shown = [s for s in found["series"] if any(isinstance(p["value"], (int, float)) for p in s["points"])]
    if not shown:
        return None
    ratio = any(isinstance(p["value"], float) for s in shown for p in s["points"])

    def y(v):
        return (v - 1) * 100 if ratio else v

    with matplotlib.rc_context({"svg.hashsalt": "encbench", "svg.fonttype": "none"}):
        fig, ax = plt.subplots(figsize=(9, 4.2))
        for s in shown[:MAX_SERIES]:
            pts = [p for p in s["points"] if isinstance(p["value"], (int, float))]
            xs = [_time(p["time"]) for p in pts]
            line, = ax.plot(xs, [y(p["value"]) for p in pts], marker="o", markersize=4, linewidth=1.2,
                            label=_legend(s)[:100])
            for x, p in zip(xs, pts):
                if p["ci"] and None not in p["ci"]:
                    ax.vlines(x, y(p["ci"][0]), y(p["ci"][1]), color=line.get_color(), linewidth=1, alpha=0.6)
                colour = VERDICT_MARKERS.get(p["verdict"])
                if colour:
                    ax.plot([x], [y(p["value"])], marker="o", markersize=6, markerfacecolor="none",
                            markeredgecolor=colour, linestyle="none")
        if ratio:
            ax.axhline(0, color="#333", linewidth=0.8)
        ax.set_ylabel(f"Δ {found['metric']}, contender vs baseline (%), 95% CI" if ratio else found["metric"])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.autofmt_xdate()
        text = _svg(fig)
        plt.close(fig)
    return text


def render(store_label: str, runs: list[dict], found: dict) -> str:
    rows = "".join(f"<tr><td>{r['id']}</td><td>{_e(r['measured_at'])}</td><td>{_e(r['kind'])}</td>"
                   f"<td>{_e(r['engine'] or '-')}</td><td>{_e(r['exit_code'])}</td><td>{_e(r['target'] or '-')}</td>"
                   f"<td><code>{_e(r['command'] or '')}</code></td></tr>" for r in runs)
    svg = trend_svg(found)
    more = len(found["series"]) - MAX_SERIES
    tables = "".join(
        f"<h3>{_e(series_title(s))}</h3><table><tr><th>time (UTC)</th><th>run</th><th>value</th><th>95% CI</th>"
        f"<th>verdict</th></tr>" + "".join(
            f"<tr><td>{_e(p['time'])}</td><td>{p['run_id']}</td><td>{_e(fmt_value(p['value']))}</td>"
            f"<td>{_e(fmt_ci(p['ci']))}</td><td>{_e(p['verdict'] or '-')}</td></tr>" for p in s["points"])
        + "</table>" for s in found["series"])
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>encbench history</title>"
            f"<style>{CSS}</style></head><body><h1>encbench history</h1>"
            f"<p class=\"meta\">store {_e(store_label)}; {len(runs)} run(s) listed</p>"
            f"<h2>Trend of {_e(found['metric'])}</h2><p class=\"meta\">{_e(found['description'])}</p>"
            + (f"<div class=\"plot\">{svg}</div>" if svg else "<p>nothing numeric to plot</p>")
            + (f"<p class=\"meta\">the chart shows the first {MAX_SERIES} series; {more} more in the tables</p>"
               if more > 0 else "")
            + tables + "<h2>Runs</h2><table><tr><th>id</th><th>measured (UTC)</th><th>kind</th><th>engine</th>"
            "<th>exit</th><th>target</th><th>command</th></tr>" + rows + "</table></body></html>\n")
