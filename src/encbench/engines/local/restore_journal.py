"""What encbench is about to change on a server it does not own, written down before the change.

A journal is one small JSON file per run and server in `$XDG_CACHE_HOME/encbench/restore/`
(0700 directory, 0600 files), written before the first change (a schema, an extension, an
ALTER SYSTEM) and deleted once the restore has been verified. It names the server by what it
is (`identity`, given by the engine: PostgreSQL's system identifier and port, MariaDB's
server_uid), and, for the messages, by host, port, dbname and user as spelled -- never a
password -- and its owner by pid and process start time. A journal whose owner is gone
(SIGKILL, a server that died mid-run) is found by the next encbench invocation against the
same server, whatever the spelling of its address (127.0.0.1, localhost, a hostname), which
restores it first.

Format 1 (before identities) named the server by host:port as spelled: such a journal is
still read, and the engine decides whether the address it names reaches this server
(`reaches`).

The engine knows what a journal's entries mean and which server it belongs to; this module
only keeps the files.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...util import files

FORMAT = 2  # 2: the server named by its identity; 1: by host:port as spelled (still read)
READABLE = (1, 2)


def directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "encbench" / "restore"


def server_key(engine: str, identity: dict) -> str:
    """One server (what ALTER SYSTEM changes is the cluster's, whatever the dbname, user or address spelling)."""
    text = json.dumps(identity, sort_keys=True)
    return f"{engine}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def legacy_key(engine: str, host: str, port: int | str) -> str:
    """Format 1's file name: the server's address as spelled (kept to read and to test those journals)."""
    return f"{engine}-{hashlib.sha256(f'{host}:{port}'.encode()).hexdigest()[:16]}"


def addresses(host: str | None, port: int | str | None) -> set[str]:
    """The addresses a host name resolves to ({} when it does not); a socket directory stands for itself."""
    if not host:
        return set()
    if host.startswith("/"):
        return {os.path.realpath(host)}
    try:
        return {info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError):
        return set()


def reaches(server: dict, reached: set[str], port: int | str | None) -> bool:
    """True when the address a journal names leads to one of `reached` on the same port: 127.0.0.1 and
    localhost alike. `server`: the address it reached when recorded, or (format 1) its host as spelled."""
    if str(server.get("port")) != str(port):
        return False
    named = {server["address"]} if server.get("address") else addresses(server.get("host"), server.get("port"))
    return bool(named & reached)


def note(text: str) -> None:
    """What a journal's restore did or could not do: one line on stderr."""
    print(f"encbench: note: {text}", file=sys.stderr)


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
        files.write_private_json(self.path, self.data, indent=1, sort_keys=True)

    def discard(self) -> None:
        if self.path is not None:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def describe(self) -> str:
        s = self.data.get("server", {})
        who = self.data.get("owner", {})
        db = f"/{s['dbname']}" if s.get("dbname") else ""
        return (f"{s.get('user')}@{s.get('host')}:{s.get('port')}{db} "
                f"(run pid {who.get('pid')}, started {self.data.get('created', '?')})")


SERVER_FIELDS = ("host", "port", "dbname", "user", "address")


def new(engine: str, server: dict, identity: dict, *, persist: bool = True) -> Journal:
    """A journal for this process. `identity`: what the server is (the engine's; it names the file);
    `server`: host, port, dbname, user as given and the address reached (anything else is dropped)."""
    ident = {k: server.get(k) for k in SERVER_FIELDS}
    path = directory() / f"{server_key(engine, identity)}-{os.getpid()}.json" if persist else None
    return Journal(path, {"format": FORMAT, "engine": engine, "identity": identity, "server": ident,
                          "owner": _owner(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


def _load(path: Path) -> dict:
    data = json.loads(path.read_text())
    if (not isinstance(data, dict) or data.get("format") not in READABLE or not isinstance(data.get("owner"), dict)
            or not isinstance(data.get("server"), dict)
            or data["format"] >= 2 and not isinstance(data.get("identity"), dict)):
        raise ValueError("not a restore journal")
    return data


def existing(engine: str, belongs: Callable[[dict], bool]) -> tuple[list[Journal], list[Journal], list[str]]:
    """The journals other processes left for this server: (owner gone, owner running, unreadable paths).

    Every journal of the engine is read, whatever its name: `belongs(data)` (the engine's) says
    whether it is this server's (by identity; a format 1 one by the address it names)."""
    dead, live, bad = [], [], []
    base = directory()
    if not base.is_dir():
        return dead, live, bad
    for path in sorted(base.glob(f"{engine}-*.json")):
        try:
            data = _load(path)
        except (OSError, ValueError):
            bad.append(str(path))
            continue
        if data.get("engine", engine) != engine or not belongs(data):
            continue
        if data["owner"].get("pid") == os.getpid() and data["owner"].get("start") == _start_time(os.getpid()):
            continue  # our own
        (live if owner_alive(data["owner"]) else dead).append(Journal(path, data))
    return dead, live, bad
