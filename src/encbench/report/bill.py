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


def _cost(t: Term) -> str:
    return fmt_cost(t.unit_cost, t.ci)


def _share(t: Term) -> str:
    """'0.58% of a core [0.53%, 0.64%]'."""
    lo, hi = t.cores_ci
    return f"{_pct(t.cores)} of a core [{_pct(lo)}, {_pct(hi)}]"


def _totals(b: Bill) -> tuple[str, str]:
    """('0.0684 cores [0.0628, 0.074]', '1.71% of 4 cores [1.57%, 1.85%]')."""
    lo, hi = b.ci
    return (f"{b.total:.3g} cores [{lo:.3g}, {hi:.3g}]",
            f"{b.share * 100:.2f}% of {b.cores} cores [{lo / b.cores * 100:.2f}%, {hi / b.cores * 100:.2f}%]")


def term_line(t: Term) -> str:
    """'page reads 412/s x 14.2 µs [12.9, 15.6] = 0.58% of a core [0.53%, 0.64%]' (or why it is not resolved)."""
    head = f"{t.kind.label} {_rate(t)} x {_cost(t)}"
    if t.why:
        return f"{head}: NOT RESOLVED: {t.why.split(': ', 1)[-1]}"
    return f"{head} = {_share(t)}"


def lines(b: Bill) -> list[str]:
    """The bill, term by term, then its total (or 'not resolved' with every reason)."""
    out = []
    for t in b.terms:
        out.append(f"  {term_line(t)}")
        out.append(f"      cost: {t.cost_source or '-'}; rate: {t.rate_source}")
    for name, why in b.absent.items():
        out.append(f"  {TERM_KINDS[name].label}: absent ({why})")
    if b.resolved:
        cores, share = _totals(b)
        out.append(f"total {cores} = {share} (95% CI: delta method)")
    else:
        names = [t.kind.label for t in b.terms if t.why]
        out.append("total: NOT RESOLVED: " + (", ".join(names) + " (each says above what would resolve it)"
                                              if names else "; ".join(b.reasons)))
    return out


def figures(b: Bill) -> list[str]:
    """The bill's figures, each with its unit and CI: what a wrapped line keeps on one line (util/columns.wrap)."""
    out = [_cost(t) for t in b.terms] + [_share(t) for t in b.terms if not t.why]
    return out + (list(_totals(b)) if b.resolved else [])
