"""encbench.report.plots: scaling figure (throughput and efficiency vs sessions)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from encbench.report.plots import scaling_plots

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TITLE = "sha256 scaling on testbox"


def _entry(function: str, sessions: int, tp: float, cores: int = 4, ci: bool = True) -> dict:
    base = 1.0e6
    eff = tp / (min(sessions, cores) * base)
    return {
        "function": function,
        "operation": "hash",
        "sessions": sessions,
        "throughput": tp,
        "throughput_ci": [tp * 0.9, tp * 1.1] if ci else None,
        "efficiency": eff,
        "efficiency_ci": [eff * 0.9, eff * 1.1] if ci else None,
        "degradation": sessions / (tp / base),
        "degradation_ci": None,
    }


def _entries(function: str = "sha256", levels=(1, 2, 4, 8), ci: bool = True) -> list[dict]:
    tps = {1: 1.0e6, 2: 1.8e6, 4: 1.9e6, 8: 2.0e6, 16: 2.0e6}
    return [_entry(function, k, tps[k], ci=ci) for k in levels]


def _svg_text(path: Path) -> str:
    root = ET.parse(path).getroot()
    return " ".join(t for el in root.iter() for t in (el.text, el.tail) if t)


def test_writes_png_and_svg(tmp_path: Path) -> None:
    prefix = tmp_path / "run-20260101"
    paths = scaling_plots(_entries(), 4, prefix, TITLE)
    assert paths == [tmp_path / "run-20260101-scaling.png", tmp_path / "run-20260101-scaling.svg"]
    for p in paths:
        assert p.is_file() and p.stat().st_size > 0
    assert paths[0].read_bytes().startswith(PNG_SIGNATURE)
    text = _svg_text(paths[1])
    assert TITLE in text
    assert "ideal" in text
    assert "cores" in text


def test_empty_entries_write_nothing(tmp_path: Path) -> None:
    assert scaling_plots([], 4, tmp_path / "run", TITLE) == []
    assert list(tmp_path.iterdir()) == []


def test_missing_single_session_level(tmp_path: Path) -> None:
    entries = _entries(levels=(2, 4, 8))
    for e in entries:  # without a baseline the analysis may not know efficiency
        e["efficiency"] = None
        e["efficiency_ci"] = None
    paths = scaling_plots(entries, 4, tmp_path / "run", TITLE)
    assert len(paths) == 2 and all(p.stat().st_size > 0 for p in paths)
    text = _svg_text(paths[1])
    assert "sha256 / hash" in text
    assert "ideal (sha256 / hash)" not in text  # no per-pair ideal line without sessions=1


def test_without_ci(tmp_path: Path) -> None:
    paths = scaling_plots(_entries(ci=False), 2, tmp_path / "run", TITLE)
    assert all(p.stat().st_size > 0 for p in paths)


def test_two_functions_two_series(tmp_path: Path) -> None:
    entries = _entries("sha256") + _entries("md5", levels=(1, 2, 4, 8, 16))
    paths = scaling_plots(entries, 4, tmp_path / "run", TITLE)
    text = _svg_text(paths[1])
    for label in ("sha256 / hash", "md5 / hash", "ideal (sha256 / hash)", "ideal (md5 / hash)"):
        assert label in text
    assert "16" in text  # tick for the extra level


def test_svg_is_deterministic(tmp_path: Path) -> None:
    entries = _entries("sha256") + _entries("md5")
    first = scaling_plots(entries, 4, tmp_path / "a", TITLE)
    second = scaling_plots(list(reversed(entries)), 4, tmp_path / "b", TITLE)
    assert first[1].read_bytes() == second[1].read_bytes()


def test_no_figures_left_open(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    scaling_plots(_entries(), 4, tmp_path / "run", TITLE)
    assert plt.get_fignums() == before


def _with_baseline(factor: float = 20.0) -> list[dict]:
    """The hash levels, and the same query without the function `factor` times faster (as on a real server)."""
    base = []
    for e in _entries():
        b = dict(e, operation="baseline", throughput=e["throughput"] * factor,
                 throughput_ci=[x * factor for x in e["throughput_ci"]])
        base.append(b)
    return _entries() + base


def _labels(ax) -> set[str]:
    return {line.get_label() for line in ax.get_lines()}


def test_function_and_baseline_get_their_own_scale():
    """issue 14 item 5: a baseline 20x faster must not flatten the hash lines (one shared linear axis did)."""
    import matplotlib.pyplot as plt

    from encbench.report.plots import SCALE_NOTE, scaling_figure

    fig = scaling_figure(_with_baseline(20.0), 4, TITLE)
    try:
        ax_hash, ax_base, ax_eff = fig.axes
        assert ax_hash.get_title() == "Throughput with the function"
        assert ax_base.get_title() == "Throughput without it (baseline query)"
        assert ax_eff.get_title() == "Efficiency"
        assert "sha256 / hash" in _labels(ax_hash) and "sha256 / baseline" not in _labels(ax_hash)
        assert "sha256 / baseline" in _labels(ax_base) and "sha256 / hash" not in _labels(ax_base)
        hash_top = max(x * 1.1 for x in (1.0, 1.8, 1.9, 2.0))  # the CI's upper end, million rows/s
        lo, hi = ax_hash.get_ylim()
        assert lo == 0 and hash_top <= hi < 2 * hash_top  # the hash lines fill their panel
        lo, hi = ax_base.get_ylim()
        assert lo == 0 and 20 * hash_top <= hi < 40 * hash_top
        assert ax_hash.get_yscale() == ax_base.get_yscale() == "linear"
        assert {"sha256 / hash", "sha256 / baseline", "ideal"} <= _labels(ax_eff)  # efficiency: one axis for both
        assert SCALE_NOTE in [t.get_text() for t in fig.texts]  # the figure says why the scales differ
    finally:
        plt.close(fig)


def test_hash_only_entries_draw_one_throughput_panel():
    import matplotlib.pyplot as plt

    from encbench.report.plots import SCALE_NOTE, scaling_figure

    fig = scaling_figure(_entries(), 4, TITLE)
    try:
        assert [ax.get_title() for ax in fig.axes] == ["Throughput with the function", "Efficiency"]
        assert SCALE_NOTE not in [t.get_text() for t in fig.texts]  # one throughput panel: nothing to explain
    finally:
        plt.close(fig)
    assert scaling_figure([], 4, TITLE) is None


def test_report_overhead_bars_keep_their_ci_whiskers(monkeypatch):
    """issue 14 item 5: the HTML report's overhead bars are drawn with each row's 95% CI (whiskers)."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    from encbench.analysis import summary as an
    from encbench.lab import results
    from encbench.report import html, render

    doc = results.load(TESTS / "golden" / "results-v1.json")
    from encbench.analysis import rows as table_rows
    rows = table_rows.rows(doc, an.analyze(doc))
    closed = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (closed.append(fig), real_close(fig)))
    assert html.overhead_chart(rows, "cpu_s", "CPU", "golden")
    fig = next(f for f in closed if f is not None)
    ax = fig.axes[0]
    whiskers = sorted(tuple(round(x, 6) for x in (seg[0][0], seg[1][0]))
                      for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments())
    expected = sorted(tuple(round((v - 1) * 100, 6) for v in r["comparisons"]["cpu_s"]["ci"])
                      for r in rows if r["comparisons"].get("cpu_s", {}).get("ci"))
    assert whiskers == expected and len(expected) >= 4
