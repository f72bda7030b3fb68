"""The raw speed of a page cipher on this CPU, measured in-process with `cryptography`.

For SQLCipher 4 defaults a page read costs an HMAC-SHA512 check over the page plus an
AES-256-CBC decryption of its payload (page size minus the reserve for IV and HMAC).
Both primitives are timed here through OpenSSL, so "the engine decrypts at X MB/s/core"
can be set beside "this CPU's raw cipher does Y MB/s/core". The raw figure leaves out
per-call set-up costs (key schedule, context allocation) that the engine pays per page,
so X below Y is expected: the gap is the engine's per-page overhead.
"""

from __future__ import annotations

import os
import time

from cryptography.hazmat.backends.openssl import backend as _ossl
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .stats import summarize

IV = 16
HMAC_SHA512 = 64


def _measure(fn, seconds: float) -> float:
    """CPU seconds per call of fn, over at least `seconds` of CPU time."""
    calls = 0
    t0 = time.process_time()
    while True:
        fn()
        calls += 1
        spent = time.process_time() - t0
        if spent >= seconds:
            return spent / calls


def sqlcipher_page(page_size: int = 4096, *, repeats: int = 5, seconds: float = 0.03) -> dict:
    """Raw per-page cost of AES-256-CBC decryption + HMAC-SHA512 check, as SQLCipher 4 does it.

    Each primitive is timed in bulk (one call over 1 MiB, so the bindings' per-call
    overhead is negligible) and the page cost is composed from the bytes each one
    touches per page: AES over the payload, HMAC over payload + IV + page number.
    """
    reserve = IV + HMAC_SHA512
    payload = page_size - reserve
    key, hkey, iv = os.urandom(32), os.urandom(64), os.urandom(IV)
    big = os.urandom(1 << 20)

    def bulk_aes() -> None:
        d = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        d.update(big)
        d.finalize()

    def bulk_hmac() -> None:
        h = hmac.HMAC(hkey, hashes.SHA512())
        h.update(big)
        h.finalize()

    aes = summarize([_measure(bulk_aes, seconds) / len(big) for _ in range(repeats)])
    mac = summarize([_measure(bulk_hmac, seconds) / len(big) for _ in range(repeats)])
    per_page = payload * aes.median + (payload + IV + 4) * mac.median
    return {
        "cipher": f"AES-256-CBC + HMAC-SHA512 per {page_size}-byte page (SQLCipher 4 defaults)",
        "page_size": page_size,
        "payload_bytes": payload,
        "library": f"cryptography with {_ossl.openssl_version_text()}",
        "repeats": repeats,
        "per_page_cpu_s": per_page,
        "mb_per_s_per_core": page_size / per_page / 1e6,
        "bulk_aes_256_cbc_mb_per_s": 1 / aes.median / 1e6,
        "bulk_hmac_sha512_mb_per_s": 1 / mac.median / 1e6,
        "bulk_aes_256_cbc_mb_per_s_range": [1 / aes.max / 1e6, 1 / aes.min / 1e6],
        "bulk_hmac_sha512_mb_per_s_range": [1 / mac.max / 1e6, 1 / mac.min / 1e6],
        "method": "bulk 1 MiB calls through the cryptography package, CPU time, median of repeats; "
                  "page cost = payload x AES cost per byte + (payload + 20) x HMAC cost per byte",
    }


def aes_page(page_size: int = 16384, mode: str = "CTR", *, repeats: int = 5, seconds: float = 0.03) -> dict:
    """Raw per-page cost of AES-256 (CTR or CBC) over a page, as MariaDB's file_key_management does it.

    InnoDB encrypts a page from its header's end to the checksum trailer; the whole page
    is taken here (within 0.3% of it). Timed in bulk 1 MiB calls, like sqlcipher_page.
    """
    key, iv = os.urandom(32), os.urandom(IV)
    big = os.urandom(1 << 20)

    cipher_mode = {"CTR": modes.CTR, "CBC": modes.CBC}[mode]

    def bulk_ctr() -> None:
        d = Cipher(algorithms.AES(key), cipher_mode(iv)).decryptor()
        d.update(big)
        d.finalize()

    ctr = summarize([_measure(bulk_ctr, seconds) / len(big) for _ in range(repeats)])
    per_page = page_size * ctr.median
    return {
        "cipher": f"AES-256-{mode} per {page_size}-byte page (MariaDB file_key_management AES_{mode})",
        "page_size": page_size,
        "payload_bytes": page_size,
        "library": f"cryptography with {_ossl.openssl_version_text()}",
        "repeats": repeats,
        "per_page_cpu_s": per_page,
        "mb_per_s_per_core": page_size / per_page / 1e6,
        f"bulk_aes_256_{mode.lower()}_mb_per_s": 1 / ctr.median / 1e6,
        f"bulk_aes_256_{mode.lower()}_mb_per_s_range": [1 / ctr.max / 1e6, 1 / ctr.min / 1e6],
        "method": "bulk 1 MiB calls through the cryptography package, CPU time, median of repeats; "
                  f"page cost = page size x AES-{mode} cost per byte",
    }
