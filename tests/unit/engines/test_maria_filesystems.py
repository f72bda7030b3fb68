"""The MariaDB engine's filesystem values (engines/mariadb/filesystems.py) without a server or a mount:
which values need a mount, the cold check against the kernel's bytes read, the default variants kept."""

from __future__ import annotations

import pytest

from encbench.engines import ENGINES
from encbench.engines.mariadb import filesystems as fs
from encbench.engines.mariadb import session as ms
from encbench.errors import CheckFailedError
from encbench.vocab.variants import matrix, parse_filters


def test_wanted_reads_a_generator_once():
    assert fs.wanted(v for v in ("off", "gocryptfs", "on", "fscrypt")) == ["fscrypt", "gocryptfs"]
    assert fs.wanted(iter(("off", "on"))) == []


def test_default_variants_unchanged_filesystem_values_on_request():
    keys = ENGINES.get("mariadb").variant_keys
    assert matrix(keys, {}, "scan-eq") == [{"encryption": e, "cache": c} for e in ("off", "on") for c in ("cold", "warm")]
    asked = parse_filters(["encryption=off,on,fscrypt,gocryptfs"], keys)
    assert [v["encryption"] for v in matrix(keys, asked, "backup")] == ["off", "on", "fscrypt", "gocryptfs"]


def _session(fs_desc):
    s = ms.MariaSession.__new__(ms.MariaSession)
    s.setup, s.fs = {}, fs_desc
    return s


def test_cold_on_a_filesystem_needs_the_kernels_bytes_read():
    s = _session({"kind": "fscrypt"})
    v = {"encryption": "fscrypt"}
    base = {"pool_misses": 9, "pages_read": 9, "pages_decrypted": 0, "engine_read_bytes": 147456}
    assert s.check_operation(v, dict(base, read_bytes=147456), {"cache": "cold"}) == {"cache_verified": 1}
    with pytest.raises(CheckFailedError, match="page cache served"):
        s.check_operation(v, dict(base, read_bytes=4096), {"cache": "cold"})
    # not on a filesystem mount (today's instance): the kernel's count is not asked for
    assert _session(None).check_operation(v, dict(base, read_bytes=0), {"cache": "cold"}) == {"cache_verified": 1}
    with pytest.raises(CheckFailedError, match="decrypted by InnoDB"):  # InnoDB must not decrypt there
        s.check_operation(v, dict(base, pages_decrypted=3, read_bytes=147456), {"cache": "cold"})


def test_image_size_grows_with_the_table():
    assert fs.image_bytes(0) == fs.IMAGE_BASE_BYTES
    assert fs.image_bytes(10 << 20) - fs.image_bytes(0) == fs.IMAGE_BYTES_PER_TABLE_BYTE * (10 << 20)
