"""/proc/stat read: the CPU lines, each line's busy, total and stolen ticks (lab/runctx, host/rawcipher)."""

from __future__ import annotations

from pathlib import Path


def _cpu_lines(text: str) -> dict[str, list[int]]:
    out = {}
    for line in text.splitlines():
        if line.startswith("cpu"):
            name, *fields = line.split()
            out[name] = [int(x) for x in fields]
    return out


def read_stat(path: str = "/proc/stat") -> dict[str, list[int]] | None:
    """{"cpu": [user, nice, system, idle, iowait, irq, softirq, steal, ...], "cpu0": [...], ...}."""
    try:
        return _cpu_lines(Path(path).read_text())
    except OSError:
        return None


def busy_total_steal(fields: list[int]) -> tuple[int, int, int]:
    """(busy, total, steal) ticks of one /proc/stat cpu line."""
    f = (fields + [0] * 8)[:8]  # guest time is already inside user
    user, nice, system, idle, iowait, irq, softirq, steal = f
    busy = user + nice + system + irq + softirq
    return busy, busy + idle + iowait + steal, steal
