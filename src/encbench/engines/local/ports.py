"""Free TCP ports for private servers: below 32768, out of the kernel's ephemeral range.

ENCBENCH_PORTS=LOW-HIGH narrows where they are chosen (several encbench commands, or test workers, side by side on
one machine, each in its own range: two private servers never pick the same port, even one after the other).
"""

from __future__ import annotations

import os
import random
import socket

from ...errors import BadValueError

LOW, HIGH = 20000, 32767
ENV = "ENCBENCH_PORTS"


def ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def port_range() -> tuple[int, int]:
    """Where private servers take a port: ENCBENCH_PORTS=LOW-HIGH when set, else LOW..HIGH; always some of it below
    the ephemeral range (exit 4 otherwise, before a server is started)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return LOW, HIGH
    lo, sep, hi = (part.strip() for part in text.partition("-"))
    eph_lo, eph_hi = ephemeral_range()
    if not (sep and lo.isdigit() and hi.isdigit() and 1024 <= int(lo) <= int(hi) <= 65535):
        raise BadValueError(f"{ENV}={text!r} is not a port range LOW-HIGH within 1024-65535",
                            hint=f"e.g. {ENV}=20000-25999, or unset it")
    if eph_lo <= int(lo) and int(hi) <= eph_hi:
        raise BadValueError(f"{ENV}={text!r} lies inside the kernel's ephemeral ports {eph_lo}-{eph_hi}",
                            hint=f"choose ports below {eph_lo}, e.g. {ENV}=20000-25999")
    return int(lo), int(hi)


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host: str = "127.0.0.1", *, rng: random.Random | None = None, tries: int = 200) -> int:
    """A port that is free now, in port_range() and out of the ephemeral range (the caller retries on a bind race)."""
    rng = rng or random.Random()
    low, high = port_range()
    eph_lo, eph_hi = ephemeral_range()
    for _ in range(tries):
        port = rng.randint(low, high)
        if eph_lo <= port <= eph_hi:
            continue
        if is_free(port, host):
            return port
    raise OSError(f"no free TCP port found in {low}-{high} below the ephemeral range")
