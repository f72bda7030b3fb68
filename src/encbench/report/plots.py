"""Scaling plots: throughput and efficiency against concurrent sessions.

`scaling_plots` draws the "scaling" entries produced by the analysis (one per
function, operation and sessions level) as one figure with two panels and
writes it as PNG and SVG. matplotlib runs on the Agg backend; every figure
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


def _draw(ax: Any, xs: list[int], ys: list[float], cis: list[tuple], color: str, label: str) -> None:
    ax.plot(xs, ys, color=color, marker="o", label=label)
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

    groups = _group(entries)
    levels = sorted({int(e["sessions"]) for e in entries})
    million = 1e6

    rc = {"svg.hashsalt": SVG_HASHSALT, "svg.fonttype": "none"}
    with matplotlib.rc_context(rc):
        fig, (ax_tp, ax_eff) = plt.subplots(1, 2, figsize=(12, 5))
        try:
            colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
            eff_top = 1.1
            for i, (pair, rows) in enumerate(groups.items()):
                color = colors[i % len(colors)]
                label = f"{pair[0]} / {pair[1]}"

                # Left: throughput in millions of rows per second.
                xs, ys, cis = _series(rows, "throughput", million)
                if xs:
                    _draw(ax_tp, xs, ys, cis, color, label)
                base = next((r for r in rows if int(r["sessions"]) == 1), None)
                base_tp = _num(base.get("throughput")) if base is not None else None
                if base_tp is not None:
                    ks = [int(r["sessions"]) for r in rows]
                    ideal = [base_tp * min(k, cores) / million for k in ks]
                    ax_tp.plot(ks, ideal, color=color, linestyle="--", alpha=0.7,
                               label=f"ideal ({label})")

                # Right: efficiency.
                xs, ys, cis = _series(rows, "efficiency")
                if xs:
                    _draw(ax_eff, xs, ys, cis, color, label)
                    eff_top = max(eff_top, max(ys + [c[2] for c in cis]) + 0.1)

            if min(levels) <= cores <= max(levels):
                ax_tp.axvline(cores, color="grey", linestyle=":", label=f"cores ({cores})")

            _session_axis(ax_tp, levels)
            ax_tp.set_ylabel("Throughput (million rows/s)")
            ax_tp.set_title("Throughput")
            ax_tp.set_ylim(bottom=0)
            ax_tp.legend(fontsize="small")

            _session_axis(ax_eff, levels)
            ax_eff.axhline(1.0, color="grey", linestyle="--", label="ideal")
            ax_eff.set_ylim(0, eff_top)
            ax_eff.set_ylabel("Efficiency (throughput / ideal)")
            ax_eff.set_title("Efficiency")
            ax_eff.legend(fontsize="small")

            fig.suptitle(title)
            fig.tight_layout()
            fig.savefig(png_path, format="png", dpi=120)
            fig.savefig(svg_path, format="svg", metadata={"Date": None})
        finally:
            plt.close(fig)
    return [png_path, svg_path]
