"""The oltp workload's variant keys (workloads/oltp.py): the share of the data in memory, the transaction mix, the
clients; the engines declare them (their variant_keys) and size their pools to the share (POOL_TOLERANCE)."""

from __future__ import annotations

from ..errors import BadValueError
from .variants import VariantKey, int_validator

POOL_TOLERANCE = 0.25  # the engine's pool within ±25% of the share asked for (its size granularity)


def parse_share(text: str) -> str:
    """'25%' / '25' -> '25%'; a share outside (0, 100]% is refused."""
    raw = text.strip().rstrip("%").strip()
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 100:
        raise BadValueError(f"variant memory={text!r} is not a share of the data in (0, 100]%",
                            hint="e.g. --variant memory=100%,25%,5%")
    return f"{value:g}%"


def memory_key(default: tuple[str, ...] = ("100%", "25%")) -> VariantKey:
    return VariantKey("memory", "the share of the data the engine's memory holds (its buffer pool / page cache "
                      "sized to it; proven per run by the physical page reads per transaction)", default,
                      validate=parse_share, workloads=("oltp",))


def script_key(scripts: tuple[str, ...], default: tuple[str, ...] | None = None) -> VariantKey:
    return VariantKey("script", "the transaction mix the driver runs", default or scripts[:1], allowed=scripts,
                      workloads=("oltp",))


def clients_key(default: tuple[str, ...] = ("1",)) -> VariantKey:
    return VariantKey("clients", "concurrent client connections", default,
                      validate=int_validator("clients", lambda n: 1 <= n <= 256, "use 1 to 256"),
                      workloads=("oltp",))
