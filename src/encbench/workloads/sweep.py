"""The in-query hash workload's variant keys and table columns, shared by the server engines:
how many sessions start one query together (`sessions`) and which hash function each row
goes through (`function`, from the engine's own list). The rows hold what the raw hash
reference hashes (host/rawhash.py); the sessions are started by engines/concurrent.py.
"""

from __future__ import annotations

import os

from ..lab.variants import VariantKey, int_validator

MAX_SESSIONS = 256
TABLE_COLUMNS = ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu", "client_cpu",
                 "server_per_unit", "server_ctx", "rate", "d_rate", "verdict")


def default_sessions(cores: int | None = None) -> tuple[str, ...]:
    """1, 2, 4 and twice the cores (at most MAX_SESSIONS), without repeats, ascending."""
    cores = cores or os.cpu_count() or 1
    return tuple(str(n) for n in sorted({1, 2, 4, min(MAX_SESSIONS, 2 * cores)}))


def sessions_key() -> VariantKey:
    return VariantKey("sessions", "concurrent sessions of the hash workload, each its own connection, started together",
                      default_sessions(), workloads=("hash",),
                      validate=int_validator("sessions", lambda n: 1 <= n <= MAX_SESSIONS,
                                             f"use 1 to {MAX_SESSIONS}"))


def function_key(functions: dict[str, str], default: str) -> VariantKey:
    return VariantKey("function", "the hash function called per row (hash workload): "
                      + ", ".join(functions), (default,), tuple(functions), workloads=("hash",))
