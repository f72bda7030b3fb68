"""A memory cgroup (v1) holding a server's memory, its OS page cache included, to a limit.

PostgreSQL reads its data through the OS page cache: a small shared_buffers alone leaves the rest of the
data in RAM, and every pool miss is then served from memory (on fscrypt, from plaintext pages the kernel
decrypted once). A cgroup v1 memory group caps the page cache charged to the processes in it
(memory.limit_in_bytes; FIELD-NOTES: a 64 MB group read a 200 MB file twice from the disk), so a server
started inside one has its pool and what the OS caches for it held to a size.

Where: a child of this process's own memory cgroup (/proc/self/cgroup), so the limits the machine puts
above it still apply and nothing is moved out of the hierarchy encbench runs in; named encbench-<id>.

Leftovers: a record (owner pid + start time, the group's path) is written in STATE_DIR before the group
is made; `Group.destroy()` removes the group (its processes stopped first by their owner) and then the
record. A killed run's group is removed by the next `create` or by `encbench cleanup` (`reclaim`) once
nothing runs in it: no process is ever stopped here (the servers' own clean-up does that: util/leftovers,
host/encfs), a group that still holds one is reported and kept.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path

from ..util import files, proc

STATE_DIR = Path(os.environ.get("ENCBENCH_MEMCG_STATE", "/var/lib/encbench/memcg"))
PREFIX = "encbench-"
UNLIMITED = -1
FILE_PAGES = ("total_active_file", "total_inactive_file")  # the page cache of files (not shmem: that is anon)


# -- what the kernel offers -----------------------------------------------------------------------

def memory_root(mounts_text: str | None = None) -> Path | None:
    """The mount point of the cgroup v1 hierarchy with the memory controller (/proc/mounts), or None."""
    if mounts_text is None:
        try:
            mounts_text = Path("/proc/mounts").read_text()
        except OSError:
            return None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "cgroup" and "memory" in parts[3].split(","):
            return Path(parts[1])
    return None


def own_path(cgroup_text: str | None = None) -> str | None:
    """This process's memory cgroup, relative to the hierarchy's root (/proc/self/cgroup), or None."""
    if cgroup_text is None:
        try:
            cgroup_text = Path("/proc/self/cgroup").read_text()
        except OSError:
            return None
    for line in cgroup_text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "memory" in parts[1].split(","):
            return parts[2]
    return None


def parent_dir() -> Path | None:
    root, path = memory_root(), own_path()
    if root is None or path is None:
        return None
    return root / path.lstrip("/")


def unavailable() -> str | None:
    """Why no memory group can be made here (one line), or None."""
    if os.geteuid() != 0:
        return f"a memory cgroup needs root (running as uid {os.geteuid()})"
    parent = parent_dir()
    if parent is None:
        return "no cgroup v1 memory controller is mounted (cgroup v2 only, or none)"
    if not (parent / "memory.limit_in_bytes").exists():
        return f"{parent} has no memory.limit_in_bytes (not a cgroup v1 memory group)"
    if not os.access(parent, os.W_OK):
        return f"{parent} is not writable: no child group can be made"
    return None


def parse_stat(text: str) -> dict[str, int]:
    """memory.stat ('name value' lines) -> {name: value}."""
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[name] = int(value)
    return out


# -- a group ----------------------------------------------------------------------------------------

class Group:
    def __init__(self, path: Path, record: Path | None = None):
        self.path, self.record = Path(path), record

    def __repr__(self) -> str:
        return f"Group({self.path})"

    def _read(self, name: str) -> str:
        return (self.path / name).read_text()

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def allow(self, uid: int, gid: int) -> None:
        """Let processes of this user put themselves in the group (a server started as that user)."""
        os.chown(self.procs_file, uid, gid)

    def add(self, pid: int) -> None:
        """Move a running process in (its memory charged so far stays where it was)."""
        self.procs_file.write_text(str(pid))

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in self._read("cgroup.procs").split()]
        except (OSError, ValueError):
            return []

    def stat(self) -> dict[str, int]:
        return parse_stat(self._read("memory.stat"))

    def usage(self) -> int:
        return int(self._read("memory.usage_in_bytes"))

    def limit(self) -> int:
        return int(self._read("memory.limit_in_bytes"))

    def file_bytes(self, stat: dict | None = None) -> int:
        """The OS page cache of files charged to the group."""
        stat = stat or self.stat()
        return sum(stat.get(k, 0) for k in FILE_PAGES)

    def own_bytes(self) -> int:
        """What the group holds beyond the page cache of files: its processes' own memory, shared memory
        (PostgreSQL's shared_buffers), kernel memory charged to it."""
        return self.usage() - self.file_bytes()

    def set_limit(self, limit: int | None) -> int:
        """memory.limit_in_bytes (None: unlimited): the kernel reclaims the group's page cache down to it first
        (OSError EBUSY when it cannot); the limit it took (rounded to pages), read back."""
        (self.path / "memory.limit_in_bytes").write_text(str(UNLIMITED if limit is None else int(limit)))
        return self.limit()

    def oom_kills(self) -> int:
        try:
            return parse_stat(self._read("memory.oom_control")).get("oom_kill", 0)
        except OSError:
            return 0

    def destroy(self) -> list[str]:
        """Remove the group (every process in it gone first) and its record: [] or the problems."""
        problems = _remove(self.path)
        if not problems and self.record is not None:
            self.record.unlink(missing_ok=True)
        return problems


def _remove(path: Path, wait_s: float = 5.0) -> list[str]:
    """rmdir of a group once its processes have gone (a stopped server's last ones may take a moment)."""
    if not path.exists():
        return []
    deadline = time.monotonic() + wait_s
    while True:
        try:
            path.rmdir()
            return []
        except FileNotFoundError:
            return []
        except OSError as e:
            left = Group(path).pids()
            if time.monotonic() >= deadline:
                what = f"still holds pid {', '.join(map(str, left))}" if left else (e.strerror or str(e))
                return [f"{path}: {what}"]
            time.sleep(0.05)


# -- the records -------------------------------------------------------------------------------------

def _write_record(record: dict) -> Path:
    return files.write_private_json(STATE_DIR / f"{record['id']}.json", record)


def records() -> list[tuple[Path, dict]]:
    return files.json_records(STATE_DIR, lambda r: isinstance(r.get("path"), str)
                              and isinstance((r.get("owner") or {}).get("pid"), int))


def create(tag: str) -> Group:
    """A new, unlimited memory group under this process's own (recorded first); what dead runs left is
    removed before (one stderr line)."""
    reclaim_quietly()
    parent = parent_dir()
    if parent is None:
        raise OSError("no cgroup v1 memory controller")
    rid = f"{tag}-{secrets.token_hex(4)}"
    path = parent / f"{PREFIX}{rid}"
    record = _write_record({"id": rid, "path": str(path), "owner": proc.me(), "created": time.time()})
    try:
        path.mkdir()
    except BaseException:
        record.unlink(missing_ok=True)
        raise
    return Group(path, record)


def reclaim() -> list[dict]:
    """Remove the groups of dead runs: one row per record taken, {"path", "owner_pid", "removed", "problems"}."""
    rows = []
    for rec_path, r in records():
        owner = r["owner"]
        if not proc.owner_dead(owner):
            continue
        path = Path(r["path"])
        if path.name.startswith(PREFIX) and path.exists():
            problems = _remove(path, wait_s=0.5)
        else:  # gone already (or not a path of ours: never touched)
            problems = []
        if not problems:
            rec_path.unlink(missing_ok=True)
        rows.append({"path": str(path), "owner_pid": owner["pid"], "removed": not problems, "problems": problems})
    return rows


def reclaim_quietly() -> list[dict]:
    rows = reclaim()
    done = [r for r in rows if r["removed"]]
    if done:
        print(f"encbench: reclaimed {len(done)} memory cgroup{'s' if len(done) > 1 else ''} left by dead runs: "
              + ", ".join(r["path"] for r in done), file=sys.stderr)
    return rows
