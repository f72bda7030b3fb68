"""host/memcg: the memory cgroup a private server runs in: what the kernel files say, and the records that let a
killed run's group be removed (no cgroup needed: the kernel's files are faked, the groups are plain directories)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from encbench.host import memcg
from encbench.util import proc

MOUNTS = """sysfs /sys sysfs rw 0 0
cgroup /sys/fs/cgroup/blkio cgroup rw,nosuid,blkio 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0
"""
CGROUP = "9:name=systemd:/\n7:blkio:/\n4:memory:/process_api/abc\n0::/\n"


def test_the_v1_memory_hierarchy_and_this_process_group_are_found():
    assert memcg.memory_root(MOUNTS) == memcg.Path("/sys/fs/cgroup/memory")
    assert memcg.memory_root("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n") is None  # v2 only: none
    assert memcg.own_path(CGROUP) == "/process_api/abc"
    assert memcg.own_path("0::/\n") is None


def test_memory_stat_is_parsed_and_the_page_cache_of_files_told_apart(tmp_path):
    (tmp_path / "memory.stat").write_text("cache 100\nrss 50\nshmem 40\ntotal_active_file 30\ntotal_inactive_file 20\n"
                                          "hierarchical_memory_limit 9223372036854771712\n")
    (tmp_path / "memory.usage_in_bytes").write_text("180\n")
    group = memcg.Group(tmp_path)
    assert memcg.parse_stat("a 1\nb -2\nbad line\n") == {"a": 1, "b": -2}
    assert group.file_bytes() == 50
    assert group.own_bytes() == 130  # shared memory (shared_buffers) is the group's own, not page cache


def test_not_root_is_said_in_one_line(monkeypatch):
    monkeypatch.setattr(memcg.os, "geteuid", lambda: 1000)
    assert memcg.unavailable() == "a memory cgroup needs root (running as uid 1000)"


def _record(state, path, pid, start=None):
    state.mkdir(exist_ok=True)
    (state / f"x-{pid}.json").write_text(json.dumps({"id": f"x-{pid}", "path": str(path),
                                                     "owner": {"pid": pid, "start": start}}))


def test_a_dead_runs_group_is_removed_once_empty_a_live_ones_never(tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setattr(memcg, "STATE_DIR", state)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    empty, busy, live = (tmp_path / f"{memcg.PREFIX}{n}" for n in ("empty", "busy", "live"))
    for d in (empty, busy, live):
        d.mkdir()
    (busy / "cgroup.procs").write_text("4242\n")  # a group still holding a process: rmdir fails, kept
    _record(state, empty, dead.pid)
    _record(state, busy, dead.pid + 100000)  # no such process: dead
    _record(state, live, os.getppid(), proc.start_time(os.getppid()))  # pytest's parent: alive
    rows = {r["path"]: r for r in memcg.reclaim()}
    assert rows[str(empty)]["removed"] and not empty.exists()
    assert not rows[str(busy)]["removed"] and busy.exists() and "4242" in rows[str(busy)]["problems"][0]
    assert str(live) not in rows and live.exists()  # its owner runs
    assert sorted(p.name for p in state.glob("*.json")) == sorted([f"x-{dead.pid + 100000}.json", f"x-{os.getppid()}.json"])


def test_a_path_not_named_like_ours_is_never_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(memcg, "STATE_DIR", tmp_path / "state")
    other = tmp_path / "someone-elses"
    other.mkdir()
    _record(tmp_path / "state", other, 2 ** 22 + 7)
    assert memcg.reclaim()[0]["removed"] and other.is_dir()  # the record goes, the directory stays
