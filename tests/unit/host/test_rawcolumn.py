"""The column methods' raw references (host/rawcolumn, host/openpgp): each model's output decrypts with
`cryptography` alone, the OpenPGP message has pgcrypto's layout and length, the timings are positive with their
parts, and the engines' SQL still calls the cipher each reference models."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from encbench.engines import column_base
from encbench.host import openpgp, rawcolumn
from encbench.workloads import column

VALUE = column.value(42)


def _unpad(data: bytes) -> bytes:
    u = padding.PKCS7(128).unpadder()
    return u.update(data) + u.finalize()


def test_pg_aes_model_is_aes_256_cbc_with_the_iv_in_front():
    c = rawcolumn.codec("aes-256-cbc-pkcs7")
    blob = c.encrypt(VALUE)
    assert len(c.key) == 32 and len(blob) == 16 + 32  # IV + 23 bytes padded to two blocks (as pg-aes stores)
    d = Cipher(algorithms.AES(c.key), modes.CBC(blob[:16])).decryptor()
    assert _unpad(d.update(blob[16:]) + d.finalize()) == VALUE
    assert c.encrypt(VALUE) != blob  # a random IV per value
    assert c.decrypt(blob) == VALUE


def test_maria_aes_model_is_aes_128_ecb_deterministic():
    c = rawcolumn.codec("aes-128-ecb-pkcs7")
    blob = c.encrypt(VALUE)
    assert len(c.key) == 16 and len(blob) == 32 and c.encrypt(VALUE) == blob
    d = Cipher(algorithms.AES(c.key), modes.ECB()).decryptor()
    assert _unpad(d.update(blob) + d.finalize()) == VALUE
    assert c.decrypt(blob) == VALUE


def _rfc4880_s2k(password: bytes, salt: bytes, count: int, key_bytes: int) -> bytes:
    """Iterated and salted S2K written out apart from the model: byte by byte up to the count."""
    unit = salt + password
    stream = bytearray()
    while len(stream) < max(count, len(unit)):
        stream += unit
    stream = bytes(stream[:max(count, len(unit))])
    return b"".join(hashlib.sha1(b"\0" * i + stream).digest() for i in range(2))[:key_bytes]


def test_pg_pgp_model_decrypts_with_cryptography_and_has_pgcrypto_s_layout():
    c = rawcolumn.codec("openpgp-aes256-s2k")
    blob = c.encrypt(VALUE)
    # tag 3 (new format), 13-byte body: version 4, AES-256 (9), iterated+salted (3), SHA-1 (2), salt, count
    assert blob[:6] == bytes([0xC3, 13, 4, 9, 3, 2])
    salt, code = blob[6:14], blob[14]
    assert code in openpgp.DEFAULT_COUNT_CODES
    assert blob[15] == 0xC0 | 18 and blob[16] == len(blob) - 17 and blob[17] == 1  # integrity-protected, version 1
    key = _rfc4880_s2k(c.key, salt, openpgp.s2k_count(code), 32)
    d = Cipher(algorithms.AES(key), openpgp.cfb_mode()(b"\0" * 16)).decryptor()
    plain = d.update(blob[18:]) + d.finalize()
    assert plain[14:16] == plain[16:18]  # the prefix's repeated bytes
    assert plain[-22:-20] == b"\xd3\x14" and hashlib.sha1(plain[:-20]).digest() == plain[-20:]  # the MDC
    literal = plain[18:-22]
    assert literal[:4] == bytes([0xC0 | 11, 6 + len(VALUE)]) + b"b\0" and literal[8:] == VALUE
    assert len(blob) == openpgp.message_bytes(len(VALUE)) == 89 and c.decrypt(blob) == VALUE


def test_pg_pgp_model_refuses_a_wrong_password_and_a_changed_byte():
    blob = openpgp.encrypt(b"right", VALUE, 96)
    with pytest.raises(ValueError, match="MDC"):
        openpgp.decrypt(b"wrong", blob)
    changed = blob[:-3] + bytes([blob[-3] ^ 1]) + blob[-2:]
    with pytest.raises(ValueError, match="MDC"):
        openpgp.decrypt(b"right", changed)


def test_s2k_counts_are_pgcrypto_s_default_range():
    assert openpgp.s2k_count(96) == 65536 and openpgp.s2k_count(127) == 253952
    assert openpgp.mean_default_count() == sum(openpgp.s2k_count(c) for c in range(96, 128)) / 32
    assert openpgp.s2k(b"pw", b"12345678", 96, 32) == _rfc4880_s2k(b"pw", b"12345678", 65536, 32)


@pytest.mark.parametrize("algorithm", ["aes-256-cbc-pkcs7", "aes-128-ecb-pkcs7", "openpgp-aes256-s2k"])
def test_in_database_references_are_the_work_in_c_with_parts(algorithm):
    ref = rawcolumn.raw_value(algorithm, column.VALUE_BYTES, repeats=2, seconds=0.005, cross_check=False)
    for direction in ("encrypt", "decrypt"):
        assert ref[direction]["us_per_call"] > 0 and ref[direction]["n"] == 2
        parts = [p for name, p in ref["parts"].items() if not name.endswith("decrypt" if direction == "encrypt"
                                                                              else "encrypt")]
        assert sum(p["us_per_call"] for p in parts) == pytest.approx(ref[direction]["us_per_call"], rel=0.35)
    assert "in C" in ref["method"] and "key" not in ref


def test_pg_pgp_reference_gives_the_s2k_apart_and_it_dominates():
    ref = rawcolumn.raw_value("openpgp-aes256-s2k", column.VALUE_BYTES, repeats=2, seconds=0.005, cross_check=False)
    parts = ref["parts"]
    assert set(parts) == {"s2k-sha1", "aes-256-cfb-encrypt", "aes-256-cfb-decrypt", "sha1"}
    assert parts["aes-256-cfb-encrypt"]["bytes_per_value"] == 18 + 8 + column.VALUE_BYTES + 22
    # ~290 KB of SHA-1 per value against ~120 bytes of cipher and hash: three orders of magnitude apart
    assert parts["s2k-sha1"]["us_per_call"] > 20 * (parts["aes-256-cfb-encrypt"]["us_per_call"] + parts["sha1"]["us_per_call"])
    assert ref["s2k_mean_bytes"] == openpgp.mean_default_count() and ref["s2k_contexts"] == 2


def test_client_references_stay_per_call_from_python():
    ref = rawcolumn.raw_value("aes-256-gcm", column.VALUE_BYTES, repeats=2, seconds=0.005, cross_check=False)
    assert ref["encrypt"]["us_per_call"] > 0 and "parts" not in ref and "Python" in ref["method"]


def test_unknown_reference_is_a_clear_error():
    with pytest.raises(ValueError, match="no raw reference for 'rot13'"):
        rawcolumn.codec("rot13")


# -- the engines' methods and the references that model them ---------------------------------

def test_every_method_has_its_reference_and_the_sql_still_calls_that_cipher():
    from encbench.engines.mariadb import column as maria
    from encbench.engines.postgres import column as pg

    methods = [*column.CLIENT_METHODS, *pg.METHODS, *maria.METHODS]
    assert {m: column_base.cipher_of(m) for m in methods} == {
        "none": None, "client-gcm": "aes-256-gcm", "client-siv": "aes-256-siv", "pg-pgp": "openpgp-aes256-s2k",
        "pg-aes": "aes-256-cbc-pkcs7", "maria-aes": "aes-128-ecb-pkcs7"}
    assert all(column_base.cipher_of(m) in rawcolumn.CODECS for m in methods if m != "none")
    insert, _, update, key_form = pg._SQL["pg-pgp"]
    assert "'cipher-algo=aes256'" in insert and "'cipher-algo=aes256'" in update and key_form == "text"
    assert "s2k" not in insert and "compress" not in insert and "sess-key" not in insert  # pgcrypto's defaults
    assert "'aes-cbc/pad:pkcs'" in pg._SQL["pg-aes"][0] and "gen_random_bytes(16)" in pg._SQL["pg-aes"][0]
    assert maria.KEY_BYTES == 16  # AES_ENCRYPT folds a longer key into 16 bytes; 16 bytes: no folding


def test_raw_reference_names_the_methods_of_each_reference(monkeypatch):
    monkeypatch.setattr(rawcolumn, "reference", lambda algorithms, size: {a: {"algorithm": a, "size": size}
                                                                          for a in algorithms})
    setup = {"column": {"methods": ["none", "client-gcm", "pg-pgp", "pg-aes"], "value_bytes": 23}}
    refs = column_base.raw_reference(setup)["raw_column_cipher"]
    assert refs == {"aes-256-gcm": {"algorithm": "aes-256-gcm", "size": 23, "methods": ["client-gcm"]},
                    "openpgp-aes256-s2k": {"algorithm": "openpgp-aes256-s2k", "size": 23, "methods": ["pg-pgp"]},
                    "aes-256-cbc-pkcs7": {"algorithm": "aes-256-cbc-pkcs7", "size": 23, "methods": ["pg-aes"]}}
    assert column_base.raw_reference({"column": {"methods": ["none"], "value_bytes": 23}}) == {}
