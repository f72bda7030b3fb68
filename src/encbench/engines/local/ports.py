"""Free TCP ports for private servers: below 32768, out of the kernel's ephemeral range."""

from __future__ import annotations

import random
import socket

LOW, HIGH = 20000, 32767


def ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host: str = "127.0.0.1", *, rng: random.Random | None = None, tries: int = 200) -> int:
    """A port that is free now, below the ephemeral range (the caller retries on a bind race)."""
    rng = rng or random.Random()
    eph_lo, eph_hi = ephemeral_range()
    for _ in range(tries):
        port = rng.randint(LOW, HIGH)
        if eph_lo <= port <= eph_hi:
            continue
        if is_free(port, host):
            return port
    raise OSError("no free TCP port found below the ephemeral range")
