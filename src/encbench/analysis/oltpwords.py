"""A transaction mix's figures in words (the oltp line's detail, analysis/headline.oltp_lines): the added CPU per
page read beside the scans', and the per-page estimate checked against the mix."""

from __future__ import annotations

from . import lead


def _us(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 100 else f"{x:,.0f}"


def _us_ci(value: float, ci) -> str:
    return f"{_us(value)} µs" + (f" [{_us(ci[0])}, {_us(ci[1])}]" if ci else "")


def oltp_figures(e: dict) -> list[str]:
    """The per-page figure beside the scans', and the estimate's check, in words."""
    out = []
    if e.get("added_cpu_us_per_page_read") is not None:
        size = f" {lead._size(e['page_size'])}" if e.get("page_size") else ""
        text = (f"{_us_ci(e['added_cpu_us_per_page_read'], e['added_cpu_us_per_page_read_ci'])} per{size} page read"
                f" ({e['pages_read_per_txn']:.2f} per transaction" + (", writes included" if e.get("includes_writes")
                                                                        else "") + ")")
        if e.get("times_scan"):
            text += f", {e['times_scan']:.1f}x the scans' {_us(e['scan_per_page_us'])} µs"
        out.append(text)
    chk = e.get("estimate_check")
    if chk and chk["error_pct"] is not None:
        ci = chk.get("error_ci_pct")
        out.append(f"the per-page estimate predicts {_us(chk['predicted_us_per_txn'])} of the "
                   f"{_us(chk['measured_us_per_txn'])} µs added per transaction: error {lead.number(chk['error_pct'], True, 0)}%"
                   + (f" [{lead.number(ci[0], True, 0)}, {lead.number(ci[1], True, 0)}]" if ci else ""))
        out += chk["misses"]
    return out
