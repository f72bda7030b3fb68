"""Student's t quantile and tail, from scipy.special (stdtrit/stdtr), imported when first needed.

The same functions as scipy.stats.t.ppf/.sf; scipy.stats itself is not imported, because importing it
builds every distribution (about a second on this machine), which every command would pay at start-up.
"""

from __future__ import annotations


def t_ppf(q: float, df: float) -> float:
    """The q-quantile of Student's t with df degrees of freedom (scipy.stats.t.ppf)."""
    from scipy import special

    return float(special.stdtrit(df, q))


def t_sf(x: float, df: float) -> float:
    """P(T > x) for Student's t with df degrees of freedom (scipy.stats.t.sf)."""
    from scipy import special

    return float(special.stdtr(df, -x))
