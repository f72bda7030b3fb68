"""The sessions sweep's variant keys and table columns, shared by the server engines: how many
sessions start one query together (`sessions`: the hash workload always, the column workload
when --sessions names it) and which hash function each row goes through (`function`, from the
engine's own list). The rows hold what the raw hash reference hashes (host/rawhash.py); the
sessions are started by engines/concurrent.py; analysis/summary.scaling turns the levels into
efficiency.
"""

from __future__ import annotations

import os

from ..vocab.variants import VariantKey, int_validator

MAX_SESSIONS = 256
TABLE_COLUMNS = ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu", "client_cpu",
                 "server_per_unit", "server_ctx", "rate", "d_rate", "verdict")


def default_sessions(cores: int | None = None) -> tuple[str, ...]:
    """1, 2, 4 and twice the cores (at most MAX_SESSIONS), without repeats, ascending."""
    cores = cores or os.cpu_count() or 1
    return tuple(str(n) for n in sorted({1, 2, 4, min(MAX_SESSIONS, 2 * cores)}))


# the workloads the sessions sweep applies to, and the variant key that names what each one sweeps
SWEPT = {"hash": "function", "column": "method"}
COLUMN_OP = "read-sessions"  # the column workload's swept operation (its other operations run in one session)
SWEPT_OPERATIONS = {"column": (COLUMN_OP,)}  # a workload not named here: every operation with rows_per_s


def sessions_key() -> VariantKey:
    return VariantKey("sessions", "concurrent sessions, each its own connection, started together: the hash workload "
                      "always, the column workload's in-database methods only when named (--sessions 1,2: the "
                      "server decrypting the table in k sessions)",
                      default_sessions(), workloads=tuple(SWEPT), named_only=("column",),
                      validate=int_validator("sessions", lambda n: 1 <= n <= MAX_SESSIONS,
                                             f"use 1 to {MAX_SESSIONS}"))


def server_cpus(pids: list[int]) -> int:
    """The CPUs the server's sessions may run on (a private server is pinned apart from the worker): the ideal
    speed-up of k sessions is min(k, this), not the machine's core count."""
    for pid in pids:
        try:
            return len(os.sched_getaffinity(pid))
        except OSError:
            continue
    return os.cpu_count() or 1


def function_key(functions: dict[str, str], default: str) -> VariantKey:
    return VariantKey("function", "the hash function called per row (hash workload): "
                      + ", ".join(functions), (default,), tuple(functions), workloads=("hash",))
