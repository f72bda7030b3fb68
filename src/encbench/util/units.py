"""Parsing and formatting of sizes and durations, with units spelled out."""

from __future__ import annotations

import math
import re

from ..errors import BadValueError, UsageError

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")

MIN_SIZE = 1 * 10**6
MAX_SIZE = 1 * 10**12


def parse_size(text: str, *, what: str = "--size") -> int:
    """'50MB' -> 50_000_000 (MB = 10^6 bytes, MiB = 2^20 bytes)."""
    m = _SIZE_RE.match(str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise BadValueError(
            f"{what} {shown(text)} is not a size",
            hint="use a number with a unit such as 50MB, 512MiB or 1GB",
        )
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]  # inf for 400 digits: out of range, not an overflow
    if not (math.isfinite(value) and MIN_SIZE <= round(value) <= MAX_SIZE):
        raise BadValueError(
            f"{what} {shown(text)} is out of range",
            hint=f"use between {fmt_bytes(MIN_SIZE)} and {fmt_bytes(MAX_SIZE)}",
        )
    return int(round(value))


def shown(text: str, limit: int = 40) -> str:
    """A value as typed, quoted, cut to `limit` characters (a 400-digit number stays a readable line)."""
    text = str(text)
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def split_list(text: str, *, what: str, example: str) -> list[str]:
    """'a,b, c' -> ['a', 'b', 'c']; an empty element ('a,,b', 'a,') is a UsageError: it never silently vanishes.
    `what` names the value in the message, e.g. "--workload 'a,,b'"."""
    items = [item.strip() for item in str(text).split(",")]
    if not all(items):
        raise UsageError(f"{what} has an empty value between commas", hint=f"e.g. {example}")
    return items


def parse_positive_int(text: str, *, what: str, maximum: int = 10_000) -> int:
    return parse_count(text, what=what, maximum=maximum, minimum=1)


def _scaled(n: float, steps: tuple[tuple[str, float], ...], sep: str) -> str:
    """3 significant digits in the largest unit that keeps the number below 1000."""
    index = 0
    for i, (_, scale) in enumerate(steps):
        if abs(n) >= scale:
            index = i
    if index == 0 and steps[0][1] == 1:
        return f"{n:.0f}{sep}{steps[0][0]}".rstrip()
    value = n / steps[index][1]
    if abs(float(f"{value:.3g}")) >= 1000 and index + 1 < len(steps):
        index += 1
        value = n / steps[index][1]
    text = f"{value:.3g}" if abs(value) < 999.5 or abs(value) >= 1e6 else f"{value:.0f}"  # 1e+300: not 300 digits
    return f"{text}{sep}{steps[index][0]}"


_BYTES = (("B", 1), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12))


def parse_count(text: str, *, what: str, maximum: int, minimum: int = 0) -> int:
    """A whole number from minimum to maximum (--runs, --warmups, ...)."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise BadValueError(f"{what} {text!r} is not a whole number", hint=f"use {minimum} to {maximum}") from None
    if not minimum <= value <= maximum:
        raise BadValueError(f"{what} {value} is out of range", hint=f"use {minimum} to {maximum}")
    return value


def parse_seconds(text: str, *, what: str, minimum: float = 0.01, maximum: float = 60.0) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise BadValueError(f"{what} {text!r} is not a number of seconds", hint=f"use {minimum:g} to {maximum:g}") from None
    if not minimum <= value <= maximum:
        raise BadValueError(f"{what} {value:g} is out of range", hint=f"use {minimum:g} to {maximum:g}")
    return value


def not_finite(x: float) -> str | None:
    """How a value that is not a finite number is shown ("not a number", "infinite"), else None."""
    if isinstance(x, (int, float)) and not isinstance(x, int) and not math.isfinite(x):
        return "not a number" if math.isnan(x) else ("infinite" if x > 0 else "-infinite")
    return None


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    return not_finite(n) or _scaled(n, _BYTES, " ")


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if not_finite(s):
        return not_finite(s)
    if abs(s) >= 1e6:
        return f"{s:.3g} s"
    if abs(s) >= 1:
        return f"{s:.2f} s"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_count(n: float | None) -> str:
    if n is None:
        return "-"
    if not_finite(n):
        return not_finite(n)
    if abs(n) < 1e4:
        return f"{n:.0f}"
    return _scaled(n, (("k", 1e3), ("M", 1e6), ("G", 1e9)), "")


def fmt_number(x: float, sign: bool = False, decimals: int | None = None) -> str:
    """1.234 -> '1.2', 1234 -> '1,234', with `sign` '+1.2'; a value that rounds to zero gets more decimals rather
    than a '-0' or '+0' ('-0.04'), up to two ('0' below that)."""
    start = decimals if decimals is not None else (1 if abs(x) < 1000 else 0)
    for d in range(start, max(start, 2) + 1):
        text = f"{x:{'+' if sign else ''},.{d}f}"
        if float(text.replace(",", "")) != 0:
            return text
    return "0"


def fmt_change(ratio: float | None, ci=None) -> str:
    """A ratio as a signed percent change, with its CI when given: +23% [+10, +38], never '-0' ('-0.4'); '-' for
    none."""
    if ratio is None:
        return "-"
    text = f"{fmt_number((ratio - 1) * 100, True, 0)}%"
    if ci:
        text += f" [{fmt_number((ci[0] - 1) * 100, True, 0)}, {fmt_number((ci[1] - 1) * 100, True, 0)}]"
    return text


def fmt_percent(x: float, sign: str = "%") -> str:
    """A share in percent with its small values kept: 41%, 3.2%, 0.26% (not '0%')."""
    if abs(x) >= 10 or x == 0:
        return f"{x:.0f}{sign}"
    return f"{x:.2g}{sign}"
