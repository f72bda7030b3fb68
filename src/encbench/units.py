"""Parsing and formatting of sizes and durations, with units spelled out."""

from __future__ import annotations

import re

from .errors import BadValueError

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
            f"{what} {text!r} is not a size",
            hint="use a number with a unit such as 50MB, 512MiB or 1GB",
        )
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not MIN_SIZE <= value <= MAX_SIZE:
        raise BadValueError(
            f"{what} {text!r} is out of range",
            hint=f"use between {fmt_bytes(MIN_SIZE)} and {fmt_bytes(MAX_SIZE)}",
        )
    return int(value)


def parse_positive_int(text: str, *, what: str, maximum: int = 10_000) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise BadValueError(f"{what} {text!r} is not a whole number", hint=f"use 1 to {maximum}") from None
    if not 1 <= value <= maximum:
        raise BadValueError(f"{what} {value} is out of range", hint=f"use 1 to {maximum}")
    return value


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if abs(s) >= 1:
        return f"{s:.2f} s"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_count(n: float | None) -> str:
    if n is None:
        return "-"
    if abs(n) >= 1e6:
        return f"{n / 1e6:.3g}M"
    if abs(n) >= 1e4:
        return f"{n / 1e3:.3g}k"
    return f"{n:.0f}"
