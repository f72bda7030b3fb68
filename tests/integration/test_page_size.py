"""page_size with the real SQLCipher: 512 is plain SQLite's only (SQLCipher's 80 reserved bytes per page do not
fit SQLite's limit of 32 in a 512-byte page), 1024 runs both ways, each file really at its page size."""

from __future__ import annotations

import json

import pytest

from encbench.engines.sqlite import engine as sqlite_engine

pytestmark = pytest.mark.integration

ONE = ("--size", "2MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq", "--variant", "cache=warm")
ENCRYPTED = {"encryption": "on", "page_size": "512", "kdf_iter": "4000", "key": "passphrase"}


def test_sqlcipher_cannot_reopen_an_encrypted_512_byte_page_file(tmp_path):
    """Why 512 is refused with encryption=on: SQLCipher makes the file without a word (SQLite turns a 512-byte
    page with more than 32 reserved bytes into 1024, SQLCipher's codec keeps 512), and it does not open again as
    512. If a SQLCipher release changes that, this fails: the refusal (engine.check_variants) should then go."""
    sqlcipher3 = sqlite_engine._import()
    key = sqlite_engine.key_sql(ENCRYPTED, "pw")
    path = tmp_path / "enc.db"
    conn = sqlite_engine._connect(sqlcipher3, path, ENCRYPTED, key, create=True)
    conn.execute("CREATE TABLE t (v)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    conn = sqlcipher3.connect(str(path))
    conn.execute(f"PRAGMA key = {key}")
    conn.execute("PRAGMA cipher_page_size = 512")
    conn.execute("PRAGMA kdf_iter = 4000")
    with pytest.raises(sqlcipher3.DatabaseError):
        conn.execute("SELECT v FROM t").fetchall()
    conn.close()
    assert sqlite_engine.SQLCIPHER_RESERVE_BYTES > sqlite_engine.SQLITE_MAX_RESERVE_AT_512


def _header_page_size(path) -> int:
    with open(path, "rb") as f:
        head = f.read(18)
    assert head[:16] == sqlite_engine.SQLITE_HEADER
    size = int.from_bytes(head[16:18], "big")
    return 65536 if size == 1 else size


def test_plain_at_512_runs_and_is_512_on_disk(encbench, tmp_path):
    out = tmp_path / "r.json"
    res = encbench("run", *ONE, "--variant", "page_size=512", "--variant", "encryption=off",
                   "--data-dir", str(tmp_path / "d"), "-o", str(out))
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert [r["variant"]["page_size"] for r in doc["runs"]] == ["512"]
    assert _header_page_size(doc["dataset"]["files"]["plain-p512.db"]["path"]) == 512


def test_1024_runs_encrypted_and_plain_each_at_1024(encbench, tmp_path):
    out = tmp_path / "r.json"
    res = encbench("run", *ONE, "--variant", "page_size=1024", "--data-dir", str(tmp_path / "d"), "-o", str(out))
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert sorted(r["variant"]["encryption"] for r in doc["runs"]) == ["off", "on"]
    files = doc["dataset"]["files"]
    assert _header_page_size(files["plain-p1024.db"]["path"]) == 1024
    enc = files["enc-p1024-k256000-passphrase.db"]
    assert enc["encrypted_on_disk"] is True
    variant = {"encryption": "on", "page_size": "1024", "kdf_iter": "256000", "key": "passphrase"}
    conn = sqlite_engine._connect(sqlite_engine._import(), sqlite_engine.Path(enc["path"]), variant,
                                  sqlite_engine.key_sql(variant, sqlite_engine.DEFAULT_PASSPHRASE))
    try:
        assert int(conn.execute("PRAGMA page_size").fetchone()[0]) == 1024
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    finally:
        conn.close()
    assert enc["bytes"] == pages * 1024  # every page on disk is 1024 bytes
