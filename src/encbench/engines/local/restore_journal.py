"""What encbench is about to change on a server it does not own, written down before the change.

A journal is one small JSON file per run and server in `$XDG_CACHE_HOME/encbench/restore/`
(0700 directory, 0600 files), written before the first change (a schema, an extension, an
ALTER SYSTEM) and deleted once the restore has been verified. It names the server by
host, port, dbname and user -- never a password -- and its owner by pid and process start
time. A journal whose owner is gone (SIGKILL, a server that died mid-run) is found by the
next encbench invocation against the same server, which restores it first.

The engine knows what a journal's entries mean; this module only keeps the files.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

FORMAT = 1


def directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "encbench" / "restore"


def server_key(engine: str, host: str, port: int | str) -> str:
    """One cluster: what ALTER SYSTEM changes is the host:port's, whatever the dbname or user."""
    return f"{engine}-{hashlib.sha256(f'{host}:{port}'.encode()).hexdigest()[:16]}"


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _owner() -> dict:
    return {"pid": os.getpid(), "start": _start_time(os.getpid()), "hostname": socket.gethostname()}


def owner_alive(owner: dict) -> bool:
    """True unless the owner is provably gone (same machine, no such pid, or a different process)."""
    if owner.get("hostname") != socket.gethostname():
        return True  # another machine's run (shared home): cannot tell, leave it alone
    start = _start_time(int(owner.get("pid") or 0))
    return start is not None and start == owner.get("start")


@dataclass
class Journal:
    path: Path | None  # None: kept in memory only (a private server, deleted anyway)
    data: dict = field(default_factory=dict)

    def save(self) -> None:
        """Atomically: a reader (or a SIGKILL) sees the old journal or the new one, never half of it."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def discard(self) -> None:
        if self.path is not None:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def describe(self) -> str:
        s = self.data.get("server", {})
        who = self.data.get("owner", {})
        return (f"{s.get('user')}@{s.get('host')}:{s.get('port')}/{s.get('dbname')} "
                f"(run pid {who.get('pid')}, started {self.data.get('created', '?')})")


def new(engine: str, server: dict, *, persist: bool = True) -> Journal:
    """A journal for this process; `server` holds host, port, dbname, user (anything else is dropped)."""
    ident = {k: server.get(k) for k in ("host", "port", "dbname", "user")}
    path = directory() / f"{server_key(engine, ident['host'], ident['port'])}-{os.getpid()}.json" if persist else None
    return Journal(path, {"format": FORMAT, "engine": engine, "server": ident, "owner": _owner(),
                          "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


def existing(engine: str, host: str, port: int | str) -> tuple[list[Journal], list[Journal], list[str]]:
    """This server's journals left by other processes: (owner gone, owner running, unreadable paths)."""
    dead, live, bad = [], [], []
    base = directory()
    if not base.is_dir():
        return dead, live, bad
    for path in sorted(base.glob(f"{server_key(engine, host, port)}-*.json")):
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("owner"), dict):
                raise ValueError("not a restore journal")
        except (OSError, ValueError):
            bad.append(str(path))
            continue
        if data["owner"].get("pid") == os.getpid() and data["owner"].get("start") == _start_time(os.getpid()):
            continue  # our own
        (live if owner_alive(data["owner"]) else dead).append(Journal(path, data))
    return dead, live, bad
