"""util/leftovers' private-server part: which process counts as a dead run's server, and what is reclaimed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from encbench.util import leftovers


@pytest.mark.parametrize("cmdline, expected", [
    (["/usr/sbin/mariadbd", "--defaults-file=/tmp/encbench-maria-ab/my.cnf", "--user=mysql"], True),
    (["/usr/lib/postgresql/15/bin/postgres", "-D", "/tmp/encbench-maria-ab/data", "-c", "port=5"], True),
    (["/usr/sbin/mariadbd", "--datadir=/tmp/encbench-maria-ab/data"], True),
    (["/usr/sbin/mariadbd", "--defaults-file=/tmp/encbench-maria-ab"], True),  # the directory itself
    (["/usr/sbin/mariadbd", "--defaults-file=/tmp/encbench-maria-abc/my.cnf"], False),  # a sibling with a longer name
    (["/usr/sbin/mariadbd", "--defaults-file=/tmp/encbench-maria-ab/../other/my.cnf"], False),
    (["/usr/sbin/mariadbd", "--defaults-file=/etc/mysql/my.cnf"], False),
    (["/tmp/encbench-maria-ab/bin/tool"], False),  # only the arguments count, not the program
    (["postgres: checkpointer"], False),
    (["sh", "-c", "ls encbench-maria-ab/my.cnf"], False),  # relative: not a path we can place
    ([], False),
])
def test_points_into(cmdline, expected):
    assert leftovers.points_into(cmdline, Path("/tmp/encbench-maria-ab")) is expected


def _dead_owner() -> dict:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return {"pid": int(proc.stdout), "start": 0.0}  # a start time no reused pid has


def _sleeper(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", *args])


def test_reclaim_servers_takes_only_dead_owners_and_their_processes(tmp_path):
    dead = tmp_path / "encbench-maria-dead"
    live = tmp_path / "encbench-pg-live"
    unowned = tmp_path / "encbench-pgdata-unowned"
    other = tmp_path / "encbench-maria-deadx"  # a dead owner too, but nothing running from it
    for d in (dead, live, unowned, other):
        d.mkdir()
    leftovers.write_owner(dead, _dead_owner())
    leftovers.write_owner(other, _dead_owner())
    leftovers.claim_server_dir(live)
    server = _sleeper(f"--defaults-file={dead}/my.cnf")
    bystander = _sleeper(f"--defaults-file={live}/my.cnf", str(unowned / "data"))
    try:
        rows = leftovers.reclaim_servers(tmp_path)
        assert sorted(r["dir"] for r in rows) == sorted([str(dead), str(other)])
        by_dir = {r["dir"]: r for r in rows}
        assert by_dir[str(dead)]["stopped"] == [server.pid] and by_dir[str(dead)]["removed"]
        assert by_dir[str(other)]["stopped"] == [] and by_dir[str(other)]["removed"]
        assert server.wait(timeout=120) is not None  # reaped: it is gone
        assert not dead.exists() and not other.exists()
        assert live.exists() and unowned.exists()
        assert bystander.poll() is None  # its command line points into live and unowned directories only
    finally:
        for p in (server, bystander):
            p.kill()
            p.wait()


def test_release_server_dir_keeps_a_kept_server_from_cleanup(tmp_path):
    kept = tmp_path / "encbench-maria-kept"
    kept.mkdir()
    leftovers.write_owner(kept, _dead_owner())
    leftovers.release_server_dir(kept)
    assert leftovers.reclaim_servers(tmp_path) == []
    assert kept.exists()


def test_filesystem_workdirs_are_never_server_candidates(tmp_path):
    workdir = tmp_path / "encbench-maria-fs-abc"
    workdir.mkdir()
    leftovers.write_owner(workdir, _dead_owner())
    assert leftovers.reclaim_servers(tmp_path) == []
    assert workdir.exists()


def test_pg_filesystem_workdirs_are_never_server_candidates(tmp_path):
    workdir = tmp_path / "encbench-pg-fs-abc"  # encbench-pg-* would match it
    workdir.mkdir()
    leftovers.write_owner(workdir, _dead_owner())
    assert leftovers.reclaim_servers(tmp_path) == []
    assert workdir.exists()


def test_filesystem_workdirs_are_reclaimed_once_the_ledger_emptied_them(tmp_path, monkeypatch):
    """A killed at-rest run's filesystems' directory (host/encfs.workdir): removed when its owner is dead and only
    its owner record is left; while it still holds a filesystem's directory (the ledger's to tear down), kept."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    empty, holding, live = (tmp_path / "encbench-pg-fs-empty", tmp_path / "encbench-maria-fs-holding",
                            tmp_path / "encbench-pg-fs-live")
    for d in (empty, holding, live):
        d.mkdir()
    leftovers.write_owner(empty, _dead_owner())
    leftovers.write_owner(holding, _dead_owner())
    leftovers.write_owner(live, leftovers.me())
    (holding / "encfs-plain-123").mkdir()
    removed = leftovers.reclaim(tmp_path / "data")
    assert [d for d, _ in removed] == [empty]
    assert not empty.exists() and holding.exists() and live.exists()
    (holding / "encfs-plain-123").rmdir()  # the ledger tore its filesystem down
    assert [d for d, _ in leftovers.reclaim(tmp_path / "data")] == [holding]
