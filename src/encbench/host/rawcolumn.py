"""The raw cost of encrypting one column value on this CPU: the column workload's reference.

The same cipher over the same value size as the workload's rows, one call at a time on one
core, through the `cryptography` package (OpenSSL) and hashlib, with Python's per-call
overhead: the floor of what a method pays per value, repeated and given with a t-interval
(host/rawcipher.reference_ci); `openssl speed -evp` (C, no interpreter) beside it where the
command exists. What an operation spends per row beyond this is the database's work and the
driver's. One codec per method (`CODECS`, by the name `column_base.cipher_of` gives a method):

  aes-256-gcm         client-gcm: AES-256-GCM, a random 12-byte nonce per value
  aes-256-siv         client-siv: AES-256-SIV (deterministic)
  aes-256-cbc-pkcs7   pg-aes: pgcrypto encrypt_iv(v, 32-byte key, iv, 'aes-cbc/pad:pkcs'): AES-256-CBC (the key
                      size picks AES-256), PKCS#7 padding, a random 16-byte IV per value (gen_random_bytes)
  aes-128-ecb-pkcs7   maria-aes: MariaDB 10.11 AES_ENCRYPT(v, key): AES-128-ECB, PKCS#7 padding, no IV (10.11 has
                      no block_encryption_mode: `mariadbd --verbose --help` lists no such variable). Its key
                      folding (the key's bytes XORed into 16: 16 XORs for the 16-byte key given) is negligible
                      and left out
  openpgp-aes256-s2k  pg-pgp: pgcrypto pgp_sym_encrypt_bytea(v, password, 'cipher-algo=aes256') with its other
                      defaults (s2k-mode 3, iterated and salted SHA-1 with a count byte drawn from 96..127 per
                      value, i.e. 65,536..253,952 bytes hashed, a random 8-byte salt; sess-key 0: the S2K key
                      encrypts the data; compress-algo 0; MDC on): the real OpenPGP message (a symmetric-key
                      ESK packet, then an integrity-protected data packet: AES-256-CFB over a random 18-byte
                      prefix, the literal data packet and the MDC packet, the SHA-1 of all before it). The S2K
                      runs twice per value for a 32-byte key (two SHA-1 contexts, the second preloaded with one
                      zero byte) and again on decrypt: it is timed apart (`parts`), it usually dominates
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable

from . import openpgp
from .rawcipher import parse_openssl_speed, reference_ci

REPEATS = 5
SECONDS = 0.05  # CPU time per repeat and direction
BATCH = 200  # calls between two clock reads


@dataclass
class Codec:
    """One method's per-value work with a fresh random key: encrypt(data) -> blob, decrypt(blob) -> data (the model,
    and for a client method what is timed per call), what `openssl speed -evp` runs beside it, facts for the result
    file."""

    encrypt: Callable[[bytes], bytes]
    decrypt: Callable[[bytes], bytes]
    description: str
    openssl: str | None
    facts: dict = field(default_factory=dict)
    key: bytes = field(default=b"", repr=False)  # the throwaway key (the tests decrypt with it); never in a result


def _gcm() -> Codec:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(AESGCM.generate_key(256))

    def enc(data: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + aead.encrypt(nonce, data, None)

    return Codec(enc, lambda blob: aead.decrypt(blob[:12], blob[12:], None),
                 "AES-256-GCM, a random 12-byte nonce per value (os.urandom)", "aes-256-gcm")


def _siv() -> Codec:
    from cryptography.hazmat.primitives.ciphers.aead import AESSIV

    siv = AESSIV(AESSIV.generate_key(512))
    return Codec(lambda data: siv.encrypt(data, None), lambda blob: siv.decrypt(blob, None),
                 "AES-256-SIV (RFC 5297, deterministic)", "aes-256-siv")


def pkcs7_pad(data: bytes) -> bytes:
    n = 16 - len(data) % 16
    return data + bytes([n]) * n


def pkcs7_unpad(data: bytes) -> bytes:
    n = data[-1] if data else 0
    if not 1 <= n <= 16 or data[-n:] != bytes([n]) * n:
        raise ValueError("bad PKCS#7 padding")
    return data[:-n]


def _block(mode_name: str, key_bytes: int, iv: bool) -> tuple[Callable, Callable, bytes]:
    """(encrypt, decrypt) of AES in ECB or CBC with PKCS#7 padding; with `iv` a random 16-byte IV per value, in front
    of the ciphertext. A new context (key schedule) per call, as the engines make one per value."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = os.urandom(key_bytes)
    mode = getattr(modes, mode_name)

    def enc(data: bytes) -> bytes:
        if not iv:
            c = Cipher(algorithms.AES(key), mode()).encryptor()
            return c.update(pkcs7_pad(data)) + c.finalize()
        v = os.urandom(16)
        c = Cipher(algorithms.AES(key), mode(v)).encryptor()
        return v + c.update(pkcs7_pad(data)) + c.finalize()

    def dec(blob: bytes) -> bytes:
        c = Cipher(algorithms.AES(key), mode(blob[:16]) if iv else mode()).decryptor()
        return pkcs7_unpad(c.update(blob[16:] if iv else blob) + c.finalize())

    return enc, dec, key


def _pg_aes() -> Codec:
    enc, dec, key = _block("CBC", 32, iv=True)
    return Codec(enc, dec, "AES-256-CBC, PKCS#7 padding, a random 16-byte IV per value in front (pgcrypto encrypt_iv "
                 "'aes-cbc/pad:pkcs' with a 32-byte key and gen_random_bytes(16))", "aes-256-cbc", key=key)


def _maria_aes() -> Codec:
    enc, dec, key = _block("ECB", 16, iv=False)
    return Codec(enc, dec, "AES-128-ECB, PKCS#7 padding, no IV (MariaDB 10.11 AES_ENCRYPT; its key folding, 16 XORs, "
                 "left out)", "aes-128-ecb", key=key)


def _pg_pgp() -> Codec:
    """pgp_sym_encrypt_bytea(v, password, 'cipher-algo=aes256'): the password is the hex of a 32-byte subkey (64
    characters, engines/postgres/column.py); the count byte walks pgcrypto's 32 default codes in turn."""
    password = os.urandom(32).hex().encode()
    codes = itertools.cycle(openpgp.DEFAULT_COUNT_CODES)
    key_bytes = openpgp.CIPHERS["aes256"][1]
    return Codec(lambda data: openpgp.encrypt(password, data, next(codes)),
                 lambda blob: openpgp.decrypt(password, blob),
                 "OpenPGP symmetric (pgcrypto defaults): iterated, salted SHA-1 S2K (count 65,536..253,952 bytes, "
                 "two contexts for the 32-byte key) + AES-256-CFB over an 18-byte random prefix, the literal packet and "
                 "the MDC + SHA-1 of them (the MDC)", "aes-256-cfb",
                 facts={"s2k_count_codes": [openpgp.DEFAULT_COUNT_CODES[0], openpgp.DEFAULT_COUNT_CODES[-1]],
                        "s2k_mean_bytes": openpgp.mean_default_count(),
                        "s2k_contexts": (key_bytes + 19) // 20, "password_bytes": len(password)}, key=password)


# the codec of each reference name (engines/column_base.cipher_of gives a method's)
CODECS: dict[str, Callable[[], Codec]] = {
    "aes-256-gcm": _gcm, "aes-256-siv": _siv, "aes-256-cbc-pkcs7": _pg_aes, "aes-128-ecb-pkcs7": _maria_aes,
    "openpgp-aes256-s2k": _pg_pgp,
}


def codec(algorithm: str) -> Codec:
    if algorithm not in CODECS:
        raise ValueError(f"no raw reference for {algorithm!r} (known: {', '.join(CODECS)})")
    return CODECS[algorithm]()


def _calls_per_s(fn, args: list, repeats: int, seconds: float, batch: int = BATCH) -> list[float]:
    """Calls per CPU second of fn, cycling through args, per repeat of >= `seconds` (whole batches)."""
    cycle = itertools.cycle(args)
    fn(args[0])
    out = []
    for _ in range(repeats):
        n, t0 = 0, time.process_time()
        while True:
            for _ in range(batch):
                fn(next(cycle))
            n += batch
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


def raw_value(algorithm: str, size: int, *, repeats: int = REPEATS, seconds: float = SECONDS,
              cross_check: bool = True) -> dict:
    """Per-value encrypt and decrypt cost of one method's cipher on a `size`-byte value, one core: an in-database
    method's in C (`WORK`: its primitives in bulk, its per-value key derivation per call), a client method's per call
    from Python as the workload makes it."""
    from cryptography.hazmat.backends.openssl import backend

    c = codec(algorithm)
    data = b"v" * size
    blob = c.encrypt(data)
    out = {"algorithm": algorithm, "cipher": c.description, "value_bytes": size, "ciphertext_bytes": len(blob),
           **c.facts, "library": f"cryptography with {backend.openssl_version_text()}, hashlib"}
    if algorithm in WORK:
        out.update(_in_c(algorithm, size, repeats, seconds))
    else:
        out.update(encrypt=_us(reference_ci(_calls_per_s(c.encrypt, [data], repeats, seconds))),
                   decrypt=_us(reference_ci(_calls_per_s(c.decrypt, [blob], repeats, seconds))),
                   method=f"{repeats} repeats of >= {seconds:.2f} s CPU per direction, one call per value from "
                          "Python (its per-call overhead and os.urandom for the nonce included, as the workload pays "
                          "it); geometric mean with a 95% t-interval")
    if cross_check:
        out["openssl_speed_encrypt_us_per_call"] = openssl_speed_us(c.openssl, size) if c.openssl else None
    return out


# -- the in-database methods' work in C -----------------------------------------------------
# An engine runs its cipher in C: timed one value per call from Python, a 23-byte AES value would be 90%
# interpreter (cryptography's object set-up alone is ~10 µs, the cipher ~0.05 µs). So their reference is the
# work itself: each primitive timed in bulk (1 MiB calls into a preallocated buffer, as host/rawcipher), times
# the bytes it handles per value, plus the per-value key derivation timed per call (hashlib: one C call per
# S2K). Left out, and so in the engine's share: the per-value context set-up and key schedule, the random IV
# or salt, the padding and packet framing.

def _padded(size: int) -> int:
    return 16 * (size // 16 + 1)


def _pgp_sealed(size: int) -> int:
    """Bytes the CFB handles per value: prefix 18 + literal packet (2 + 6 + value) + MDC packet 22."""
    return 18 + 2 + 6 + size + 22


# reference -> direction -> [(primitive, bytes per value as a function of the value's size; None: one call)]
WORK: dict[str, dict[str, list[tuple[str, Callable[[int], int] | None]]]] = {
    "aes-256-cbc-pkcs7": {"encrypt": [("aes-256-cbc-encrypt", _padded)], "decrypt": [("aes-256-cbc-decrypt", _padded)]},
    "aes-128-ecb-pkcs7": {"encrypt": [("aes-128-ecb-encrypt", _padded)], "decrypt": [("aes-128-ecb-decrypt", _padded)]},
    "openpgp-aes256-s2k": {
        "encrypt": [("s2k-sha1", None), ("aes-256-cfb-encrypt", _pgp_sealed), ("sha1", lambda n: _pgp_sealed(n) - 20)],
        "decrypt": [("s2k-sha1", None), ("aes-256-cfb-decrypt", _pgp_sealed), ("sha1", lambda n: _pgp_sealed(n) - 20)],
    },
}


def _bulk(primitive: str) -> Callable[[], None]:
    """One 1 MiB call of a primitive (random key and data, the output into one preallocated buffer)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    from .rawcipher import BULK

    big = os.urandom(BULK)
    if primitive == "sha1":
        return lambda: hashlib.sha1(big).digest()
    name, bits, mode, direction = primitive.split("-")
    key = os.urandom(int(bits) // 8)
    make = {"cbc": lambda: modes.CBC(os.urandom(16)), "ecb": modes.ECB, "cfb": lambda: openpgp.cfb_mode()(os.urandom(16))}[mode]
    buf = bytearray(BULK + 16)

    def run() -> None:
        c = Cipher(algorithms.AES(key), make())
        ctx = c.encryptor() if direction == "encrypt" else c.decryptor()
        ctx.update_into(big, buf)
        ctx.finalize()

    return run


def _per_call(primitive: str, size: int) -> tuple[Callable, list, int]:
    """(fn, args, batch) of a per-value primitive: the S2K of pg-pgp, its count walking pgcrypto's 32 codes."""
    codes = itertools.cycle(openpgp.DEFAULT_COUNT_CODES)
    password, salt = os.urandom(32).hex().encode(), os.urandom(openpgp.SALT)
    key_bytes = openpgp.CIPHERS["aes256"][1]
    return (lambda _: openpgp.s2k(password, salt, next(codes), key_bytes)), [b""], 2 * len(openpgp.DEFAULT_COUNT_CODES)


def _in_c(algorithm: str, size: int, repeats: int, seconds: float) -> dict:
    """encrypt, decrypt (µs per value, CI) and parts (µs per value of each primitive), the primitives interleaved
    per repeat so that drift hits them all."""
    from .rawcipher import BULK, _repeat

    work = WORK[algorithm]
    primitives = list(dict.fromkeys(p for steps in work.values() for p, _ in steps))
    per_value: dict[str, list[float]] = {p: [] for p in primitives}  # µs per value of each primitive, per repeat
    nbytes = {p: f(size) for steps in work.values() for p, f in steps if f}
    fns = {p: _bulk(p) if p in nbytes else _per_call(p, size) for p in primitives}
    for _ in range(repeats):
        for p in primitives:
            if p in nbytes:
                mb_per_s = _repeat(fns[p], BULK, 1, seconds)[0]["mb_per_s"]
                per_value[p].append(nbytes[p] / mb_per_s)
            else:
                fn, args, batch = fns[p]
                per_value[p].append(1e6 / _calls_per_s(fn, args, 1, seconds, batch)[0])
    out = {}
    for direction, steps in work.items():
        totals = [sum(per_value[p][i] for p, _ in steps) for i in range(repeats)]
        out[direction] = _us(reference_ci([1e6 / t for t in totals]))
    out["parts"] = {p: dict(_us(reference_ci([1e6 / t for t in per_value[p]])), bytes_per_value=nbytes.get(p))
                    for p in primitives}
    out["method"] = (f"the work in C: {repeats} interleaved repeats of >= {seconds:g} s CPU per primitive; a cipher or "
                     f"hash timed in bulk ({BULK >> 20} MiB calls into a preallocated buffer) x the bytes it handles "
                     "per value, a per-value key derivation timed per call (hashlib); geometric mean with a 95% "
                     "t-interval. Left out (so in the engine's share): per-value context set-up and key schedule, "
                     "random IV or salt, padding and framing")
    return out


raw_aead = raw_value  # the client methods' name for it (before the in-database methods had references)


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
    """{algorithm: raw_value(...)} for the methods of a run."""
    return {a: raw_value(a, size) for a in algorithms}
