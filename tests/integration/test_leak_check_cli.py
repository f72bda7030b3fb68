"""`encbench leak-check` against the real engines."""

from __future__ import annotations

import json

import pytest

from integration_helpers import needs_pg

pytestmark = pytest.mark.integration


def test_sqlcipher_does_not_leak_and_the_control_does(encbench):
    res = encbench("leak-check", "--json")
    assert res.returncode == 0, str(res)
    report = json.loads(res.stdout)
    assert report["findings"] == [] and report["scanned_files"] >= 6
    # the same canary in a plain database is found everywhere: the scan would have seen a leak
    assert set(report["control"]["found_in"]) == {"database", "rollback journal", "WAL", "backup"}


@needs_pg
def test_postgres_reports_its_plaintext_honestly(encbench):
    res = encbench("leak-check", "--engine", "postgres", timeout=300)
    assert res.returncode == 13, str(res)
    assert "no encryption at rest" in res.stdout
    for role in ("table data", "WAL", "backup (pg_dump)"):
        assert f"LEAK  {role}:" in res.stdout, str(res)


def test_leak_check_bad_engine(encbench):
    res = encbench("leak-check", "--engine", "oracle")
    assert res.returncode == 3 and len(res.stderr.splitlines()) == 1, str(res)
