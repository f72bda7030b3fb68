"""SQLCipher's settings per variant (issue 24): the PRAGMAs, the read-back check, the raw reference's key."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlcipher3

from encbench.engines.sqlite import engine as sq
from encbench.errors import CheckFailedError
from encbench.host.rawcipher import sqlcipher_reserve

ON = {"encryption": "on", "page_size": "4096", "kdf_iter": "4000", "key": "passphrase"}


def test_reserve_bytes_are_sqlciphers():
    assert [sqlcipher_reserve(h) for h in ("sha512", "sha256", "sha1", None)] == [80, 48, 48, 16]


@pytest.mark.parametrize("hmac", ["sha512", "sha256", "sha1", "off"])
def test_settings_read_back(tmp_path: Path, hmac):
    v = dict(ON, hmac=hmac, kdf_algorithm="sha1")
    path = tmp_path / "x.db"
    conn = sq._connect(sqlcipher3, path, v, "'k'", create=True)
    conn.execute("CREATE TABLE t (x)")
    got = sq.check_cipher_settings(conn, v, path)
    assert got["use_hmac"] == ("0" if hmac == "off" else "1") and got["kdf_algorithm"] == "PBKDF2_HMAC_SHA1"
    with pytest.raises(CheckFailedError, match="does not run the settings asked for"):
        sq.check_cipher_settings(conn, dict(v, hmac="sha512" if hmac != "sha512" else "sha256"), path)
    conn.close()


def test_file_names_and_reference_keys_keep_the_defaults():
    e = sq.SQLiteEngine()
    assert sq.file_name(ON) == "enc-p4096-k4000-passphrase.db"  # SQLCipher 4's defaults: the name as before
    assert sq.file_name(dict(ON, hmac="off", kdf_algorithm="sha256")) == "enc-p4096-k4000-passphrase-hoff-kdsha256.db"
    assert e.raw_cipher_key(ON, 4096) == "4096" and e.raw_cipher_key(dict(ON, hmac="sha1"), 1024) == "1024/hmac=sha1"
