"""The in-query hash workload's machinery, shared by the server engines: k sessions that
start one query together, the hash functions each engine offers, the raw hash speed of
this CPU, and a CPU profile recorded with perf while the sessions run.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import shutil
import ssl
import subprocess
import threading
import time
from typing import Any, Callable

from ..errors import BadValueError
from ..lab.variants import VariantKey, int_validator

MAX_SESSIONS = 256
TABLE_COLUMNS = ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu", "client_cpu",
                 "server_per_unit", "server_ctx", "rate", "d_rate", "verdict")
VALUE_BYTES = 10  # each row's value: a 10-character string, as in seed 004 (ID VARCHAR(10))
HMAC_KEY = "encbench"


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


def raw_hash(function: str, size: int = VALUE_BYTES, *, seconds: float = 0.2, repeats: int = 5) -> dict:
    """The same hash over the same input size in-process (hashlib / hmac: OpenSSL), per call, one core."""
    algo = "sha512" if "512" in function else "md5" if "md5" in function else "sha1" if "sha1" in function else "sha256"
    data = b"0" * size
    key = HMAC_KEY.encode()
    if "hmac" in function:
        def call() -> None:
            hmac.new(key, data, algo).digest()
    else:
        new = getattr(hashlib, algo)

        def call() -> None:
            new(data).digest()
    per_call = []
    for _ in range(repeats):
        n, t0 = 0, time.process_time()
        while True:
            for _ in range(1000):
                call()
            n += 1000
            spent = time.process_time() - t0
            if spent >= seconds / repeats:
                per_call.append(spent / n)
                break
    per_call.sort()
    median = per_call[len(per_call) // 2]
    out = {"function": function, "algorithm": ("HMAC-" if "hmac" in function else "") + algo.upper(),
           "input_bytes": size, "hashlib_us_per_call": median * 1e6,
           "hashlib_library": f"Python hashlib with {ssl.OPENSSL_VERSION}",
           "hashlib_method": f"{repeats} repeats of >= {seconds / repeats:.2f} s CPU, median; includes Python's "
                             "per-call overhead"}
    c = _openssl_speed(algo, size, hmac_mode="hmac" in function)
    if c:  # C, one call per input: the reference without an interpreter's overhead
        out.update(us_per_call=1e6 / c, calls_per_s_per_core=c, library=_openssl_version(),
                   method=f"openssl speed -bytes {size} ({'-hmac' if 'hmac' in function else '-evp'} {algo}), one core")
    else:
        out.update(us_per_call=median * 1e6, calls_per_s_per_core=1 / median, library=out["hashlib_library"],
                   method=out["hashlib_method"])
    return out


def _openssl_speed(algo: str, size: int, *, hmac_mode: bool, seconds: int = 1) -> float | None:
    """Calls per second of `openssl speed` for one input size, or None without the openssl command."""
    tool = shutil.which("openssl")
    if not tool:
        return None
    cmd = [tool, "speed", "-seconds", str(seconds), "-bytes", str(size)] + (["-hmac", algo] if hmac_mode else ["-evp", algo])
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    for line in reversed(done.stdout.splitlines()):
        parts = line.split()
        if len(parts) >= 2 and parts[-1].endswith("k") and algo in parts[0]:
            try:
                return float(parts[-1][:-1]) * 1000 / size
            except ValueError:
                return None
    return None


def _openssl_version() -> str:
    try:
        return subprocess.run(["openssl", "version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "openssl"


def run_together(conns: list, execute: Callable[[Any], Any]) -> tuple[list, float]:
    """execute(conn) in one thread per connection, all released at once by a barrier.

    Returns (results, seconds from the release to the last finish). The first error of
    any session is raised after every thread has ended.
    """
    barrier = threading.Barrier(len(conns) + 1)
    results: list = [None] * len(conns)
    errors: list = []
    ends: list[float] = [0.0] * len(conns)

    def one(i: int, conn) -> None:
        try:
            barrier.wait()
            results[i] = execute(conn)
        except BaseException as e:  # reported below, in the caller's thread
            errors.append(e)
        finally:
            ends[i] = time.perf_counter()

    threads = [threading.Thread(target=one, args=(i, c), name=f"encbench-session-{i}", daemon=True)
               for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results, max(ends) - t0


def close_all(conns: list) -> None:
    for c in conns:
        c.close()


def check_sessions_fit(max_sessions: int, max_connections: int, reserved: int = 5) -> None:
    if max_sessions + reserved > max_connections:
        raise BadValueError(f"sessions={max_sessions} needs more connections than the server allows "
                            f"(max_connections={max_connections}, {reserved} kept for encbench itself)",
                            hint=f"use --sessions up to {max(1, max_connections - reserved)}, or raise max_connections")
