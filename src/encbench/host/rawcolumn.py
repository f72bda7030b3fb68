"""The raw cost of encrypting one column value on this CPU: the column workload's reference.

The same AEAD over the same value size as the workload's rows, one call at a time on one
core, through the `cryptography` package the client methods use (OpenSSL, with Python's
per-call overhead: the floor of what the application pays per value), repeated and given
with a t-interval (host/rawcipher.reference_ci); `openssl speed -evp` (C, no interpreter)
beside it where the command exists. What an operation spends per row beyond this is the
database's work and the driver's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

from .rawcipher import parse_openssl_speed, reference_ci

REPEATS = 5
SECONDS = 0.05  # CPU time per repeat and direction


def _aead(algorithm: str):
    """(encrypt(data) -> blob, decrypt(blob) -> data) with a fresh random key, as the workload calls them."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV

    if algorithm == "aes-256-gcm":
        aead = AESGCM(AESGCM.generate_key(256))

        def enc(data: bytes) -> bytes:
            nonce = os.urandom(12)
            return nonce + aead.encrypt(nonce, data, None)

        return enc, lambda blob: aead.decrypt(blob[:12], blob[12:], None)
    if algorithm == "aes-256-siv":
        siv = AESSIV(AESSIV.generate_key(512))
        return (lambda data: siv.encrypt(data, None)), (lambda blob: siv.decrypt(blob, None))
    raise ValueError(f"no raw reference for {algorithm!r}")


def _calls_per_s(fn, arg: bytes, repeats: int, seconds: float) -> list[float]:
    fn(arg)
    out = []
    for _ in range(repeats):
        n, t0 = 0, time.process_time()
        while True:
            for _ in range(200):
                fn(arg)
            n += 200
            spent = time.process_time() - t0
            if spent >= seconds:
                out.append(n / spent)
                break
    return out


def _us(ref: dict) -> dict:
    """calls/s (geometric mean, CI) -> µs per call (the interval's ends swap)."""
    if not ref.get("value"):
        return {"us_per_call": None, "ci": None, "n": ref.get("n", 0)}
    ci = ref.get("ci")
    return {"us_per_call": 1e6 / ref["value"], "ci": [1e6 / ci[1], 1e6 / ci[0]] if ci else None, "n": ref["n"]}


def raw_aead(algorithm: str, size: int, *, repeats: int = REPEATS, seconds: float = SECONDS,
             cross_check: bool = True) -> dict:
    """Per-value encrypt and decrypt cost of one AEAD on a `size`-byte value, in-process, one core."""
    from cryptography.hazmat.backends.openssl import backend

    enc, dec = _aead(algorithm)
    data = b"v" * size
    blob = enc(data)
    out = {"algorithm": algorithm, "value_bytes": size, "ciphertext_bytes": len(blob),
           "encrypt": _us(reference_ci(_calls_per_s(enc, data, repeats, seconds))),
           "decrypt": _us(reference_ci(_calls_per_s(dec, blob, repeats, seconds))),
           "library": f"cryptography with {backend.openssl_version_text()}",
           "method": f"{repeats} repeats of >= {seconds:.2f} s CPU per direction, geometric mean with a 95% t-interval; "
                     "includes Python's per-call overhead (and os.urandom for the GCM nonce), as the workload pays it"}
    if cross_check:
        out["openssl_speed_encrypt_us_per_call"] = openssl_speed_us(algorithm, size)
    return out


def openssl_speed_us(algorithm: str, size: int, seconds: int = 1) -> float | None:
    """µs per encryption of one `size`-byte value by `openssl speed -evp` (C), or None without the command."""
    tool = shutil.which("openssl")
    if not tool:
        return None
    try:
        done = subprocess.run([tool, "speed", "-seconds", str(seconds), "-bytes", str(size), "-evp", algorithm],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    mb_per_s = parse_openssl_speed(done.stdout)
    return 1e6 * size / (mb_per_s * 1e6) if mb_per_s else None


def reference(algorithms: list[str], size: int) -> dict:
    """{algorithm: raw_aead(...)} for the client methods of a run."""
    return {a: raw_aead(a, size) for a in algorithms}
