"""lab/reclaim: which owner records the next command takes (dead owners only: pid + start time), in which order, what
it does to their processes, directories and files, and the one line that names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from encbench.host import memcg
from encbench.host.encfs import ledger
from encbench.lab import reclaim
from encbench.util import owners, proc


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _sleeper(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", *args])


@pytest.fixture
def sleepers():
    started: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        started.append(_sleeper(*args))
        return started[-1]

    yield start
    for p in started:
        p.kill()
        p.wait()


@pytest.fixture
def temp(tmp_path, monkeypatch) -> Path:
    """A private temporary directory; the machine's memory cgroup and filesystem records out of reach."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(memcg, "STATE_DIR", tmp_path / "no-memcg-state")
    monkeypatch.setattr(ledger, "STATE_DIR", tmp_path / "no-encfs-state")
    return tmp_path


def _record(temp: Path, owner: dict, items: list[dict]) -> Path:
    d = owners.directory(temp)
    d.mkdir(mode=0o700, exist_ok=True)
    path = d / f"{owner['pid']}.json"
    path.write_text(json.dumps({"owner": owner, "items": items}))
    return path


def test_plan_takes_only_dead_owners(temp, sleepers):
    live = sleepers()
    reused = sleepers()
    gone = _gone_pid()
    records = [
        (Path("a"), {"owner": {"pid": gone, "start": 5.0}, "items": [{"kind": "dir", "path": "/x/a"}]}),
        (Path("b"), {"owner": {"pid": live.pid, "start": proc.start_time(live.pid)}, "items": []}),
        (Path("c"), {"owner": {"pid": reused.pid, "start": proc.start_time(reused.pid) - 3600}, "items": []}),
        (Path("d"), {"owner": proc.me(), "items": []}),  # this process's own
        (Path("e"), {"owner": {"pid": live.pid}, "items": []}),  # no start time: its pid runs, cannot tell
        (Path("f"), {"owner": {"pid": "x"}, "items": []}),  # unreadable: never taken
    ]
    assert [(p.record.name, p.owner_pid) for p in reclaim.plan(records)] == [("a", gone), ("c", reused.pid)]


def test_plan_stops_the_newest_process_first_removes_the_deepest_directory_first_and_only_absolute_paths():
    items = [{"kind": "dir", "path": "/t/outer"}, {"kind": "process", "pid": 10, "start": 1.0, "what": "A"},
             {"kind": "dir", "path": "/t/outer/inner/"}, {"kind": "file", "path": "/t/k"},
             {"kind": "process", "pid": 11, "start": 2.0, "what": "B"}, {"kind": "dir", "path": "relative"},
             {"kind": "dir", "path": "/"}, {"kind": "process", "pid": "12"}, {"kind": "process", "pid": 1},
             {"kind": "dir", "path": "/t/outer"}, "junk", {"kind": "mystery", "path": "/etc"}]
    [p] = reclaim.plan([(Path("r"), {"owner": {"pid": 7}, "items": items})], dead=lambda owner: True)
    assert [i["pid"] for i in p.processes] == [11, 10]
    assert p.dirs == ["/t/outer/inner", "/t/outer"]  # each once, the deepest first
    assert p.files == ["/t/k"]


def test_reclaim_stops_removes_and_names_a_dead_runs_things(temp, sleepers):
    dead_dir, live_dir = temp / "encbench-pg-dead", temp / "encbench-pg-live"
    for d in (dead_dir, live_dir):
        (d / "data").mkdir(parents=True)
    key = temp / "key.bin"
    key.write_text("k")
    server = sleepers("-D", str(dead_dir / "data"))  # the recorded server
    child = sleepers(f"--log={dead_dir}/x.log")  # not recorded, but running from the directory
    bystander = sleepers("-D", str(live_dir / "data"))  # a live command's server
    live_owner = sleepers()
    gone = _gone_pid()
    dead = _record(temp, {"pid": gone, "start": 3.0}, [
        {"kind": "dir", "path": str(dead_dir)},
        {"kind": "process", "pid": server.pid, "start": proc.start_time(server.pid), "what": "Test server",
         "dir": str(dead_dir)},
        {"kind": "file", "path": str(key)}])
    live = _record(temp, {"pid": live_owner.pid, "start": proc.start_time(live_owner.pid)}, [
        {"kind": "dir", "path": str(live_dir)},
        {"kind": "process", "pid": bystander.pid, "start": proc.start_time(bystander.pid), "what": "Test server"}])
    done = reclaim.reclaim(None)
    assert server.wait(30) is not None and child.wait(30) is not None
    assert bystander.poll() is None and live_dir.is_dir() and live.exists()
    assert not dead_dir.exists() and not key.exists() and not dead.exists()
    text = reclaim.line(done)
    assert text == (f"encbench: reclaimed what a killed run (pid {gone}) left: Test server pid {server.pid}, "
                    f"1 other process ({os.path.basename(sys.executable)[:15]}: pid {child.pid}), directory {dead_dir}, file {key}"), text
    assert reclaim.line(reclaim.reclaim(None)) is None  # nothing left: no line


def test_a_reused_owner_pid_is_dead_and_a_recorded_pid_reused_is_not_stopped(temp, sleepers):
    """The owner's pid now belongs to another process (start time differs): its record is taken; a recorded server
    pid that another process now has is left running."""
    impostor_owner, impostor_server = sleepers(), sleepers()
    d = temp / "encbench-maria-x"
    d.mkdir()
    rec = _record(temp, {"pid": impostor_owner.pid, "start": proc.start_time(impostor_owner.pid) - 100}, [
        {"kind": "dir", "path": str(d)},
        {"kind": "process", "pid": impostor_server.pid, "start": proc.start_time(impostor_server.pid) - 100,
         "what": "MariaDB server"}])
    done = reclaim.reclaim(None)
    assert impostor_owner.poll() is None and impostor_server.poll() is None
    assert not d.exists() and not rec.exists()
    assert reclaim.line(done) == f"encbench: reclaimed what a killed run (pid {impostor_owner.pid}) left: directory {d}"


def test_a_directory_with_a_mount_below_is_kept_and_said(temp, monkeypatch):
    d = temp / "encbench-pg-m"
    d.mkdir()
    rec = _record(temp, {"pid": _gone_pid(), "start": 1.0}, [{"kind": "dir", "path": str(d)}])
    monkeypatch.setattr(reclaim, "_mounts_below", lambda directory: [f"{directory}/mnt"])
    text = reclaim.line(reclaim.reclaim(None))
    assert d.is_dir() and rec.exists()  # kept for the next try (or encbench cleanup)
    assert text.startswith("encbench: what killed runs left could not all be reclaimed; not reclaimed: ")
    assert f"{d} kept: {d}/mnt mounted below it" in text


def test_line_names_several_runs_and_problems():
    r = reclaim.Reclaimed()
    r.add(30, "PostgreSQL server pid 31")
    r.add(20, "memory cgroup /sys/fs/cgroup/memory/encbench-x")
    r.add(30, "directories /t/a, /t/b")
    r.problems += ["pid 9 still running", "pid 9 still running"]
    assert reclaim.line(r) == ("encbench: reclaimed what killed runs (pid 20, 30) left: memory cgroup "
                               "/sys/fs/cgroup/memory/encbench-x, PostgreSQL server pid 31, directories /t/a, /t/b; "
                               "not reclaimed: pid 9 still running (encbench cleanup once nothing uses it)")
    assert reclaim.line(reclaim.Reclaimed()) is None


def test_owner_record_is_written_before_the_directory_exists(temp, monkeypatch):
    seen = []
    real_mkdir = os.mkdir

    def watching_mkdir(path, mode=0o777):
        seen.append([i["path"] for _, r in owners.records(temp) for i in r["items"]])
        return real_mkdir(path, mode)

    owners.enable()
    try:
        monkeypatch.setattr(os, "mkdir", watching_mkdir)
        made = owners.make_dir("scratch-", temp)
        monkeypatch.setattr(os, "mkdir", real_mkdir)
        assert seen and str(made) in seen[-1]  # in the record when mkdir ran
        owners.spawned(os.getpid(), "this", made)
        [(path, record)] = owners.records(temp)
        assert record["owner"] == proc.me() and record["items"][-1]["start"] == proc.me()["start"]
        assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
        owners.forget(made)
        assert owners.records(temp)[0][1]["items"] == []
    finally:
        owners.finish()
    assert owners.records(temp) == [] and made.is_dir()
    owners.make_dir("x-", temp)  # not enabled (a worker, a test): made, nothing recorded
    assert owners.records(temp) == []
