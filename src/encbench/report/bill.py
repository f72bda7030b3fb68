"""The words of an encryption bill (analysis/bill.Bill): one line per term, the absent terms, the total or why
there is none. Only formats the model's figures."""

from __future__ import annotations

from ..analysis.bill import TERM_KINDS, Bill, Term, fmt_cost
from ..util.units import fmt_bytes


def _rate(t: Term) -> str:
    if t.rate is None:
        return "?/s"
    if t.kind.unit == "byte":
        return f"{fmt_bytes(t.rate)}/s"
    return f"{t.rate:,.0f}/s" if abs(t.rate) >= 100 else f"{t.rate:.3g}/s"


def _pct(cores: float) -> str:
    return f"{cores * 100:.2f}%"


def term_line(t: Term) -> str:
    """'page reads 412/s x 14.2 µs [12.9, 15.6] = 0.58% of a core [0.53%, 0.64%]' (or why it is not resolved)."""
    head = f"{t.kind.label} {_rate(t)} x {fmt_cost(t.unit_cost, t.ci)}"
    if t.why:
        return f"{head}: NOT RESOLVED: {t.why.split(': ', 1)[-1]}"
    lo, hi = t.cores_ci
    return f"{head} = {_pct(t.cores)} of a core [{_pct(lo)}, {_pct(hi)}]"


def lines(b: Bill) -> list[str]:
    """The bill, term by term, then its total (or 'not resolved' with every reason)."""
    out = []
    for t in b.terms:
        out.append(f"  {term_line(t)}")
        out.append(f"      cost: {t.cost_source or '-'}; rate: {t.rate_source}")
    for name, why in b.absent.items():
        out.append(f"  {TERM_KINDS[name].label}: absent ({why})")
    if b.resolved:
        lo, hi = b.ci
        out.append(f"total {b.total:.3g} cores [{lo:.3g}, {hi:.3g}] = {b.share * 100:.2f}% of {b.cores} "
                   f"cores [{lo / b.cores * 100:.2f}%, {hi / b.cores * 100:.2f}%] (95% CI: delta method)")
    else:
        names = [t.kind.label for t in b.terms if t.why]
        out.append("total: NOT RESOLVED: " + (", ".join(names) + " (each says above what would resolve it)"
                                              if names else "; ".join(b.reasons)))
    return out
