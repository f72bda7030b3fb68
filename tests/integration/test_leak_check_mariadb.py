"""`encbench leak-check --engine mariadb` against a real private MariaDB."""

from __future__ import annotations

import json

import pytest

from integration_helpers import needs_mariadb, own_command_lines, temp_dirs

pytestmark = pytest.mark.integration



def _leftovers(before: set[str]) -> set[str]:
    return temp_dirs("encbench-maria-*") - before


@pytest.fixture
def maria_dirs_before():
    return temp_dirs("encbench-maria-*")


@needs_mariadb
def test_fully_encrypted_instance_passes(encbench, maria_dirs_before):
    res = encbench("leak-check", "--engine", "mariadb", "--json", timeout=300)
    assert res.returncode == 0, str(res)
    report = json.loads(res.stdout)
    assert report["findings"] == [] and report["scanned_files"] > 10
    assert any("encrypted per INNODB_TABLESPACES_ENCRYPTION: True" in n for n in report["notes"])
    assert not _leftovers(maria_dirs_before)


@needs_mariadb
def test_unencrypted_redo_log_and_binlog_are_found(encbench, maria_dirs_before):
    res = encbench("leak-check", "--engine", "mariadb", "--setting", "innodb_encrypt_log=OFF",
                   "--setting", "encrypt_binlog=OFF", "--json", timeout=300)
    assert res.returncode == 13, str(res)
    found = {(f["role"], f["fix"]) for f in json.loads(res.stdout)["findings"]}
    assert ("redo log", "innodb_encrypt_log=ON") in found
    assert ("binary log", "encrypt_binlog=ON") in found
    assert ("backup: redo log", "innodb_encrypt_log=ON") in found
    assert not _leftovers(maria_dirs_before)
    assert not [c for c in own_command_lines("mariadbd") if "encbench-maria-" in c]


@needs_mariadb
def test_bad_setting_and_unsupported_run(encbench, tmp_path):
    res = encbench("leak-check", "--engine", "mariadb", "--setting", "nonsense")
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, str(res)
    res = encbench("leak-check", "--engine", "sqlite", "--setting", "a=b")
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, str(res)
    res = encbench("leak-check", "--engine", "mariadb", "--dsn", "mysql://u@127.0.0.1:1/", "--setting", "a=b")
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, str(res)  # an existing server: never SET
