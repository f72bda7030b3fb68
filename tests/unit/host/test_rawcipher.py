"""encbench.host.rawcipher: the reference's statistics, the contradiction flag, the allocation artefact."""

from __future__ import annotations

import math
import os

import pytest

from encbench.host import rawcipher


def test_reference_ci_golden():
    r = rawcipher.reference_ci([900.0, 1000.0, 1100.0])
    logs = [math.log(x) for x in (900, 1000, 1100)]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2)
    assert r["value"] == pytest.approx(math.exp(mean))
    assert r["ci"] == pytest.approx([math.exp(mean - half), math.exp(mean + half)])
    assert r["n"] == 3 and r["spread"] == [900.0, 1100.0]


def test_reference_ci_sixfold_swing_gives_a_wide_interval():
    """The old calibration's repeats (720..2,792 MB/s on the Xeon): an honest CI is wide, not a point."""
    r = rawcipher.reference_ci([720.0, 980.0, 1500.0, 2100.0, 2792.0])
    assert r["ci"][1] / r["ci"][0] > 2.5


def test_reference_ci_few_or_bad_values():
    assert rawcipher.reference_ci([])["value"] is None
    r = rawcipher.reference_ci([0.0, float("nan"), 500.0])
    assert r["value"] == pytest.approx(500.0) and r["ci"] is None and r["n"] == 1


def test_parse_openssl_speed():
    text = ("type             1048576 bytes\n"
            "AES-256-CBC        8222451.71k\n")
    assert rawcipher.parse_openssl_speed(text) == pytest.approx(8222.45171)
    assert rawcipher.parse_openssl_speed("nothing here") is None


def test_steal_fraction():
    assert rawcipher.steal_fraction((10, 1000), (60, 2000)) == pytest.approx(0.05)
    assert rawcipher.steal_fraction(None, (1, 2)) is None
    assert rawcipher.cpu_times() is None or rawcipher.cpu_times()[1] > 0


REF = {"mb_per_s_per_core": 700.0, "mb_per_s_ci": [650.0, 750.0], "method": "m"}


def test_set_beside_plausible_figure_gets_a_percentage_with_ci():
    e = rawcipher.set_beside({"decrypt_mb_per_s_per_core": 350.0, "decrypt_mb_per_s_ci": [300.0, 400.0]}, dict(REF))
    assert e["percent_of_raw_cipher"] == pytest.approx(50.0)
    assert e["percent_of_raw_cipher_ci"] == pytest.approx([300 / 7, 400 / 7])
    assert "raw_cipher_flag" not in e and e["raw_cipher_mb_per_s_ci"] == [650.0, 750.0]


def test_set_beside_faster_than_raw_is_a_contradiction_not_a_percentage():
    """The report once said 'the engine decrypts at 112% of this CPU's raw cipher speed'."""
    e = rawcipher.set_beside({"decrypt_mb_per_s_per_core": 900.0, "decrypt_mb_per_s_ci": [800.0, 1000.0]}, dict(REF))
    assert "percent_of_raw_cipher" not in e
    assert e["raw_cipher_flag"].startswith("contradicts its reference")


def test_set_beside_above_raw_within_noise_is_not_resolved():
    e = rawcipher.set_beside({"decrypt_mb_per_s_per_core": 784.0, "decrypt_mb_per_s_ci": [600.0, 1000.0]}, dict(REF))
    assert "percent_of_raw_cipher" not in e and e["raw_cipher_flag"].startswith("not resolved: 112%")


def test_set_beside_ci_overlapping_impossibility_is_noted():
    e = rawcipher.set_beside({"decrypt_mb_per_s_per_core": 600.0, "decrypt_mb_per_s_ci": [500.0, 900.0]}, dict(REF))
    assert e["percent_of_raw_cipher"] == pytest.approx(600 / 7)
    assert "upper end of its CI is above" in e["raw_cipher_flag"]


def test_bulk_calls_do_not_page_fault():
    """The sixfold swing: a new 1 MiB output per call page-faults ~480 times; the preallocated buffer never."""
    aes, _ = rawcipher._bulk_fns(os.urandom(32), os.urandom(64), os.urandom(16), os.urandom(rawcipher.BULK))
    reps = rawcipher._repeat(aes, rawcipher.BULK, 2, 0.01)
    assert max(r["faults_per_call"] for r in reps) < 5


def test_engine_libcrypto_matches_cryptography():
    """The engine's own OpenSSL (through ctypes) decrypts exactly as cryptography does."""
    sqlcipher3 = pytest.importorskip("sqlcipher3")
    import ctypes

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    eng = rawcipher.EngineLibcrypto(sqlcipher3._sqlite3.__file__)
    key, iv, data = os.urandom(32), os.urandom(16), os.urandom(4096)
    out = ctypes.create_string_buffer(4096 + 32)
    eng.aes_cbc_decrypt(key, iv, data, out)
    d = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    assert out.raw[:4096] == d.update(data) + d.finalize()
    assert eng.version.startswith("OpenSSL")
