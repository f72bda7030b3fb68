"""As root with the default data directory under a home that is mode 700 (as /root is): the servers run as
postgres / mysql and must still reach their files, with no option to find first (issue 21 item 8).

HOME and XDG_CACHE_HOME point at a fresh 0700 directory, --data-dir is not given. The PostgreSQL at-rest lab
makes its filesystems in a directory of its own in the temporary directory then (the default data directory is
out of the server's reach); the plain PostgreSQL server and MariaDB's filesystems never used the data directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from encbench.engines.postgres import atrest
from encbench.host.encfs import ledger
from integration_helpers import HAVE_MARIADB, Result, encbench_command, encfs_unavailable, needs_pg

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0, reason="the case is root's (its home is mode 700)")]
ONE = ("--size", "2MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq")


@pytest.fixture
def private_home():
    home = Path(tempfile.mkdtemp(prefix="encbench-home-", dir="/tmp"))
    home.chmod(0o700)
    yield home
    shutil.rmtree(home, ignore_errors=True)


def _env(home: Path) -> dict[str, str]:
    """The environment of root's run: its own HOME and cache, no key and no TMPDIR (the default one)."""
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONUNBUFFERED="1")
    env.pop("ENCBENCH_KEY", None)
    env.pop("TMPDIR", None)
    return env


def _run(home: Path, *args: str, timeout: float = 400) -> Result:
    p = subprocess.run([*encbench_command(), "run", *args], cwd=home, env=_env(home), capture_output=True, text=True,
                       timeout=timeout)
    return Result(list(args), p.returncode, p.stdout, p.stderr)


def _default_temp_dir(home: Path) -> Path:
    """The temporary directory of a command run without TMPDIR (not this test process's: under pytest-xdist each
    worker has its own, tests/conftest.py)."""
    p = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"], env=_env(home),
                       capture_output=True, text=True, timeout=60, check=True)
    return Path(p.stdout.strip())


def _fs_dirs(home: Path, prefix: str) -> set[Path]:
    return set(_default_temp_dir(home).glob(prefix + "*"))


@needs_pg
def test_postgres_at_rest_as_root_with_the_default_data_dir(private_home):
    if (reason := encfs_unavailable()) is not None:
        pytest.skip(f"encrypted filesystems unavailable: {reason}")
    before = _fs_dirs(private_home, atrest.WORKDIR_PREFIX)
    out = private_home / "r.json"
    res = _run(private_home, "--engine", "postgres", "--variant", "encryption=off,fscrypt,gocryptfs", *ONE,
               "-o", str(out))
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert doc["status"] == "complete" and doc["config"]["data_dir"] == str(private_home / ".cache/encbench/data")
    parent = doc["dataset"]["mounts_parent"]  # not the data directory: postgres cannot reach it
    assert Path(parent).parent == _default_temp_dir(private_home) and Path(parent).name.startswith(atrest.WORKDIR_PREFIX)
    clusters = doc["dataset"]["clusters"]
    assert set(clusters) == {"off", "fscrypt", "gocryptfs"}
    for c in clusters.values():
        assert c["mount_point"].startswith(parent + "/") and c["datadir"].startswith(c["mount_point"] + "/")
    assert all(op["extra"]["cache_verified"] == 1 for run in doc["runs"] for op in run["operations"])
    # nothing left: the directory, its mounts and their ledger records
    assert not Path(parent).exists() and _fs_dirs(private_home, atrest.WORKDIR_PREFIX) <= before
    assert not [mp for _, mp, _ in ledger.mounts() if mp.startswith(parent + "/")]
    assert not [r["id"] for r in ledger.records() if r["workdir"].startswith(parent + "/")]


@needs_pg
def test_plain_postgres_as_root_with_the_default_data_dir(private_home):
    out = private_home / "r.json"
    res = _run(private_home, "--engine", "postgres", "--size", "2MB", "--runs", "1", "--warmups", "0", "--workload",
               "roundtrip", "--variant", "tls=off", "-o", str(out))
    assert res.returncode == 0, str(res)
    assert json.loads(out.read_text())["status"] == "complete"


@pytest.mark.skipif(not HAVE_MARIADB, reason="MariaDB server binaries not installed")
def test_mariadb_on_filesystems_as_root_with_the_default_data_dir(private_home):
    if (reason := encfs_unavailable()) is not None:
        pytest.skip(f"encrypted filesystems unavailable: {reason}")
    out = private_home / "r.json"
    res = _run(private_home, "--engine", "mariadb", "--variant", "encryption=off,fscrypt", *ONE, "-o", str(out))
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert doc["status"] == "complete"
    assert {r["variant"]["encryption"] for r in doc["runs"]} == {"off", "fscrypt"}
