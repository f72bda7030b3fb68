"""Scaling plots: throughput and efficiency against concurrent sessions.

`scaling_plots` draws the "scaling" entries produced by the analysis (one per
function, operation and sessions level) as one figure and writes it as PNG and
SVG: a throughput panel per operation (the query with the hash function, and
the same query without it, each on its own scale: the baseline runs many times
faster and would flatten the hash lines on a shared axis) and an efficiency
panel (a ratio: one axis for all). matplotlib runs on the Agg backend; every figure
is closed before returning, and the SVG is made reproducible (fixed hash
salt, no date, text kept as text).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

SVG_HASHSALT = "encbench"

Pair = tuple[str, str]


def _num(value: Any) -> float | None:
    """A finite float, or None for missing / non-numeric / non-finite values."""
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _ci(value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        lo, hi = value
    except (TypeError, ValueError):
        return None
    lo_f, hi_f = _num(lo), _num(hi)
    if lo_f is None or hi_f is None:
        return None
    return lo_f, hi_f


def _series(rows: list[dict], key: str, scale: float = 1.0) -> tuple[list[int], list[float], list[tuple]]:
    """Points (x, y) for one metric, and the CIs as (x, low, high) where there is one.

    The CI is drawn as the interval it is (a bootstrap CI need not be centred on the mean,
    nor even contain it), never as distances from the mean that would have to be clamped.
    """
    xs: list[int] = []
    ys: list[float] = []
    cis: list[tuple] = []
    for row in rows:
        y = _num(row.get(key))
        if y is None:
            continue
        xs.append(int(row["sessions"]))
        ys.append(y / scale)
        ci = _ci(row.get(f"{key}_ci"))
        if ci is not None:
            cis.append((xs[-1], ci[0] / scale, ci[1] / scale))
    return xs, ys, cis


def _draw(ax: Any, xs: list[int], ys: list[float], cis: list[tuple], color: str, label: str,
          linestyle: str = "-") -> None:
    ax.plot(xs, ys, color=color, marker="o", linestyle=linestyle, label=label)
    if cis:
        cx, lo, hi = zip(*cis)
        ax.vlines(cx, lo, hi, color=color, linewidth=1)
        ax.plot(cx + cx, lo + hi, linestyle="none", marker="_", markersize=8, color=color)


def _group(entries: list[dict]) -> dict[Pair, list[dict]]:
    """Entries per (function, operation), pairs sorted, rows sorted by sessions (last one wins)."""
    grouped: dict[Pair, dict[int, dict]] = {}
    for entry in entries:
        pair = (str(entry.get("function", "")), str(entry.get("operation", "")))
        grouped.setdefault(pair, {})[int(entry["sessions"])] = entry
    return {pair: [rows[k] for k in sorted(rows)] for pair, rows in sorted(grouped.items())}


def _session_axis(ax: Any, levels: list[int]) -> None:
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(levels))
    ax.xaxis.set_major_formatter(FixedFormatter([str(k) for k in levels]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(min(levels) / 1.25, max(levels) * 1.25)
    ax.set_xlabel("Concurrent sessions")
    ax.grid(True, which="major", alpha=0.4)


# the throughput panels, in this order: the query with the function, then the same query without it
PANEL_ORDER = ("hash", "baseline")
PANEL_TITLES = {"hash": "Throughput with the function", "baseline": "Throughput without it (baseline query)"}
SCALE_NOTE = ("each throughput panel has its own linear scale from 0: the query without the function can run "
              "many times faster, and one shared axis would flatten the hash lines onto zero")


def _panel_ops(groups: dict[Pair, list[dict]]) -> list[str]:
    """The operations that get a throughput panel each: hash, baseline, then any other (sorted)."""
    ops = {op for _, op in groups}
    return [op for op in PANEL_ORDER if op in ops] + sorted(ops - set(PANEL_ORDER))


def _throughput_panel(ax: Any, groups: dict[Pair, list[dict]], op: str, colors: dict[str, str], cores: int,
                      levels: list[int]) -> None:
    """One operation's throughput (million rows/s) per function, with its CI and the per-function ideal line."""
    million = 1e6
    for (function, pair_op), rows in groups.items():
        if pair_op != op:
            continue
        color = colors[function]
        label = f"{function} / {op}"
        xs, ys, cis = _series(rows, "throughput", million)
        if xs:
            _draw(ax, xs, ys, cis, color, label)
        base = next((r for r in rows if int(r["sessions"]) == 1), None)
        base_tp = _num(base.get("throughput")) if base is not None else None
        if base_tp is not None:
            ks = [int(r["sessions"]) for r in rows]
            ideal = [base_tp * min(k, cores) / million for k in ks]
            ax.plot(ks, ideal, color=color, linestyle="--", alpha=0.7, label=f"ideal ({label})")
    if min(levels) <= cores <= max(levels):
        ax.axvline(cores, color="grey", linestyle=":", label=f"cores ({cores})")
    _session_axis(ax, levels)
    ax.set_ylabel("Throughput (million rows/s)")
    ax.set_title(PANEL_TITLES.get(op, f"Throughput: {op}"))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")


def _efficiency_panel(ax: Any, groups: dict[Pair, list[dict]], colors: dict[str, str], levels: list[int]) -> None:
    """Efficiency of every (function, operation): a ratio, so one shared axis fits all of them."""
    top = 1.1
    for (function, op), rows in groups.items():
        xs, ys, cis = _series(rows, "efficiency")
        if xs:
            # the query without the function: its function's colour, told apart by a dash-dot line
            _draw(ax, xs, ys, cis, colors[function], f"{function} / {op}", "-" if op == PANEL_ORDER[0] else "-.")
            top = max(top, max(ys + [c[2] for c in cis]) + 0.1)
    _session_axis(ax, levels)
    ax.axhline(1.0, color="grey", linestyle="--", label="ideal")
    ax.set_ylim(0, top)
    ax.set_ylabel("Efficiency (throughput / ideal)")
    ax.set_title("Efficiency")
    ax.legend(fontsize="small")


def scaling_figure(entries: list[dict], cores: int, title: str):
    """The scaling figure (a matplotlib Figure; the caller closes it), or None without entries.

    One throughput panel per operation (the query with the hash function, then the same query
    without it), each on its own linear scale from 0, and one efficiency panel for all of them.
    """
    if not entries:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _group(entries)
    levels = sorted({int(e["sessions"]) for e in entries})
    ops = _panel_ops(groups)
    palette = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    functions = sorted({function for function, _ in groups})
    colors = {f: palette[i % len(palette)] for i, f in enumerate(functions)}
    fig, axes = plt.subplots(1, len(ops) + 1, figsize=(6 * (len(ops) + 1), 5.4))
    for ax, op in zip(axes, ops):
        _throughput_panel(ax, groups, op, colors, cores, levels)
    _efficiency_panel(axes[-1], groups, colors, levels)
    fig.suptitle(title)
    if len(ops) > 1:
        fig.text(0.5, 0.01, SCALE_NOTE, ha="center", va="bottom", fontsize="small", color="#444")
        fig.tight_layout(rect=(0, 0.04, 1, 1))
    else:
        fig.tight_layout()
    return fig


def scaling_plots(entries: list[dict], cores: int, out_prefix: Path, title: str) -> list[Path]:
    """Write `<out_prefix>-scaling.png` and `.svg` (throughput and efficiency vs sessions).

    Returns the paths written; with no entries nothing is written and [] is returned.
    """
    if not entries:
        return []

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_prefix = Path(out_prefix)
    png_path = out_prefix.parent / f"{out_prefix.name}-scaling.png"
    svg_path = out_prefix.parent / f"{out_prefix.name}-scaling.svg"

    rc = {"svg.hashsalt": SVG_HASHSALT, "svg.fonttype": "none"}
    with matplotlib.rc_context(rc):
        fig = scaling_figure(entries, cores, title)
        try:
            fig.savefig(png_path, format="png", dpi=120)
            fig.savefig(svg_path, format="svg", metadata={"Date": None})
        finally:
            plt.close(fig)
    return [png_path, svg_path]
