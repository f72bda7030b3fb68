"""The raw hash speed of this CPU: the in-query hash workload's reference.

The same hash over the same input as the workload's rows (a 10-character value, as in seed
004), one call at a time on one core: `openssl speed` (C, no interpreter), else Python's
hashlib / hmac (OpenSSL too, with Python's per-call overhead). What a database spends per
row beyond this is its own cost of calling the function.
"""

from __future__ import annotations

import hashlib
import hmac
import shutil
import ssl
import subprocess
import time

VALUE_BYTES = 10  # each row's value: a 10-character string, as in seed 004 (ID VARCHAR(10))
HMAC_KEY = "encbench"


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
