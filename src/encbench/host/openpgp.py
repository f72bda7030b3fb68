"""OpenPGP symmetric encryption of one value as pgcrypto's pgp_sym_encrypt does it with its defaults (RFC 4880):
the column workload's raw reference for method pg-pgp (host/rawcolumn).

pgcrypto's defaults (contrib/pgcrypto, pgp.c, pgp-s2k.c, pgp-encrypt.c): s2k-mode 3 (iterated and salted),
s2k-digest-algo SHA-1, s2k-count -1 = a count byte drawn at random from 96..127 per message (65,536 to 253,952
bytes hashed, `decide_s2k_iter`), an 8-byte random salt, sess-key 0 (the S2K key encrypts the data: no session
key packet), compress-algo 0, MDC on (an integrity-protected data packet, tag 18). The message:

  tag 3  symmetric-key ESK: version 4, cipher, S2K (mode 3, SHA-1, salt, count byte)            15 bytes
  tag 18 integrity-protected data: version 1, then CFB (zero IV, no resync) over
           a random block-size prefix + its last two bytes repeated,
           tag 11 literal data ('b', no file name, a 4-byte date, the value),
           tag 19 MDC: 0xD3 0x14 + SHA-1 of everything before it (prefix, literal packet, 0xD3 0x14)

Packet lengths are new-format; a body under 192 bytes has a one-byte length (pgcrypto streams bodies in 16 KiB
partial chunks: column values are far below that). For a 32-byte key (AES-256) the S2K runs two SHA-1 contexts
over the count bytes (the second preloaded with one zero byte), on encrypt and again on decrypt.
"""

from __future__ import annotations

import hashlib
import os

CIPHERS = {"aes128": (7, 16), "aes192": (8, 24), "aes256": (9, 32)}  # pgcrypto's cipher-algo: (OpenPGP id, key bytes)
SHA1 = 2
S2K_ISALTED = 3
SALT = 8
DEFAULT_COUNT_CODES = range(96, 128)  # pgcrypto's s2k-count -1: 96 + (random byte & 0x1F)
MDC_HEADER = b"\xd3\x14"


def s2k_count(code: int) -> int:
    """The bytes an iterated S2K hashes for its one-byte count (RFC 4880 3.7.1.3)."""
    return (16 + (code & 15)) << ((code >> 4) + 6)


def mean_default_count() -> float:
    return sum(s2k_count(c) for c in DEFAULT_COUNT_CODES) / len(DEFAULT_COUNT_CODES)


def s2k(password: bytes, salt: bytes, code: int, key_bytes: int) -> bytes:
    """Iterated and salted S2K with SHA-1: salt||password repeated to the count's bytes (at least once), hashed by
    as many contexts as the key needs, context i preloaded with i zero bytes."""
    unit = salt + password
    count = max(s2k_count(code), len(unit))
    data = memoryview((unit * (count // len(unit) + 1))[:count])
    out = b""
    for i in range((key_bytes + 19) // 20):
        h = hashlib.sha1(b"\0" * i)
        h.update(data)
        out += h.digest()
    return out[:key_bytes]


def _length(n: int) -> bytes:
    if n < 192:
        return bytes([n])
    if n < 8384:
        return bytes([((n - 192) >> 8) + 192, (n - 192) & 0xFF])
    return b"\xff" + n.to_bytes(4, "big")


def packet(tag: int, body: bytes) -> bytes:
    """A new-format packet with a definite length."""
    return bytes([0xC0 | tag]) + _length(len(body)) + body


def _read_packet(blob: bytes, at: int) -> tuple[int, bytes, int]:
    """(tag, body, next offset) of the new-format packet at `at`."""
    tag = blob[at] & 0x3F
    first = blob[at + 1]
    if first < 192:
        n, head = first, 2
    elif first < 224:
        n, head = ((first - 192) << 8) + blob[at + 2] + 192, 3
    elif first == 255:
        n, head = int.from_bytes(blob[at + 2:at + 6], "big"), 6
    else:
        raise ValueError("partial body lengths are not modelled")
    return tag, blob[at + head:at + head + n], at + head + n


def cfb_mode():
    """cryptography's CFB mode class (cryptography >= 47 keeps it among the decrepit modes)."""
    try:
        from cryptography.hazmat.decrepit.ciphers.modes import CFB
    except ImportError:
        from cryptography.hazmat.primitives.ciphers.modes import CFB
    return CFB


def _cfb(key: bytes, decrypt: bool):
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    c = Cipher(algorithms.AES(key), cfb_mode()(b"\0" * 16))
    return c.decryptor() if decrypt else c.encryptor()


def seal(key: bytes, data: bytes) -> bytes:
    """The integrity-protected data packet's encrypted part: CFB over prefix, literal packet and MDC."""
    prefix = os.urandom(16)
    head = prefix + prefix[-2:] + packet(11, b"b\0" + b"\0\0\0\0" + data) + MDC_HEADER
    c = _cfb(key, decrypt=False)
    return c.update(head + hashlib.sha1(head).digest()) + c.finalize()


def unseal(key: bytes, encrypted: bytes) -> bytes:
    """The value from seal's output; a wrong key or a changed byte is ValueError (the MDC or the prefix check)."""
    c = _cfb(key, decrypt=True)
    plain = c.update(encrypted) + c.finalize()
    if plain[14:16] != plain[16:18] or plain[-22:-20] != MDC_HEADER or hashlib.sha1(plain[:-20]).digest() != plain[-20:]:
        raise ValueError("OpenPGP: the MDC does not match (wrong key or changed data)")
    tag, body, _ = _read_packet(plain, 18)
    if tag != 11:
        raise ValueError(f"OpenPGP: expected a literal data packet, found tag {tag}")
    name_len = body[1]
    return body[2 + name_len + 4:]


def encrypt(password: bytes, data: bytes, code: int, cipher: str = "aes256") -> bytes:
    """The message pgp_sym_encrypt_bytea(data, password, 'cipher-algo=<cipher>') makes, with count byte `code`."""
    algo, key_bytes = CIPHERS[cipher]
    salt = os.urandom(SALT)
    esk = packet(3, bytes([4, algo, S2K_ISALTED, SHA1]) + salt + bytes([code]))
    return esk + packet(18, b"\x01" + seal(s2k(password, salt, code, key_bytes), data))


def parse(blob: bytes) -> dict:
    """The ESK's parameters and the encrypted part of a message as `encrypt` (or pgcrypto with sess-key 0) makes it."""
    tag, esk, at = _read_packet(blob, 0)
    if tag != 3 or esk[0] != 4 or esk[2] != S2K_ISALTED or esk[3] != SHA1:
        raise ValueError("OpenPGP: not a version 4 symmetric-key ESK with an iterated, salted SHA-1 S2K")
    if len(esk) != 13:
        raise ValueError("OpenPGP: the ESK carries an encrypted session key (sess-key 1): not modelled")
    tag, data, _ = _read_packet(blob, at)
    if tag != 18 or data[0] != 1:
        raise ValueError("OpenPGP: expected an integrity-protected data packet (MDC on)")
    key_bytes = next(k for a, k in CIPHERS.values() if a == esk[1])
    return {"cipher_id": esk[1], "key_bytes": key_bytes, "salt": esk[4:12], "code": esk[12], "encrypted": data[1:]}


def decrypt(password: bytes, blob: bytes) -> bytes:
    """The value of a message (ours or pgcrypto's, sess-key 0): the S2K again, then the CFB and the MDC check."""
    p = parse(blob)
    return unseal(s2k(password, p["salt"], p["code"], p["key_bytes"]), p["encrypted"])


def message_bytes(value_bytes: int) -> int:
    """The length of a message for a value of this size (the salt, prefix and hash vary, the length does not)."""
    return len(encrypt(b"x", b"v" * value_bytes, DEFAULT_COUNT_CODES[0]))
