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

A restore is compare-and-swap (format 3): a journal records, beside what was found, the value(s)
encbench set (or was about to set), and a value is put back only while the server still holds one
of them (`compare_and_swap`). A value changed since (a DBA's) is left as it is, said in one line,
and its journal kept until `encbench cleanup --forget-journal` drops it (`forget`). A journal of
format 1 or 2 does not say what was set: a value that differs from what it found is kept the same way.

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

from ...util import files, proc

# 4: the owner as util/proc's owner record (+ hostname); 3: what was set recorded; 2: the server named by its
# identity; 1: by host:port as spelled
FORMAT = 4
READABLE = (1, 2, 3, 4)
# compare_and_swap's verdicts
AS_FOUND = "as found"  # the server holds what encbench found (or encbench never set it): nothing to undo
RESTORE = "restore"  # the server holds what encbench set: put what it found back
CHANGED = "changed"  # the server holds neither: changed since (a DBA's), left as it is, the journal kept
UNKNOWN = "unknown"  # an older journal (no value set recorded) and the server does not hold what it found: kept


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


def compare_and_swap(now, found, written: list | None) -> str:
    """What a restore may do with one journaled value. `now`: the server's value; `found`: the value encbench
    found before its change; `written`: every value encbench set or was about to set ([]: it set none), None
    when the journal does not say (format 1 or 2)."""
    if now == found or written == []:
        return AS_FOUND
    if written is None:
        return UNKNOWN
    return RESTORE if now in written else CHANGED


def kept_value(what: str, written: list | None, now, *, found) -> str:
    """What a restore left because the server no longer holds what encbench set (`written`, less the value it
    `found` while a change was under way; None: an older journal that does not say), and the value `now`."""
    shown = [v for v in written if v != found] or written if written is not None else None
    was = ("an older encbench's journal does not say what it set" if shown is None
           else "encbench set " + " or ".join(_shown(v) for v in shown))
    return f"{what} is {_shown(now)} now ({was}): left as it is"


def kept_text(kept: list[str], path: Path | None) -> str:
    """One line for everything a journal's restore kept (kept_value's, or an engine's own words)."""
    where = f"; {path} keeps it until you drop it: encbench cleanup --forget-journal {path}" if path else ""
    return "; ".join(kept) + where


def _shown(value) -> str:
    return "(not set)" if value is None else repr(value)


def note(text: str) -> None:
    """What a journal's restore did or could not do: one line on stderr."""
    print(f"encbench: note: {text}", file=sys.stderr)


def _owner() -> dict:
    """This process as a journal's owner: util/proc's owner record and the machine it runs on."""
    return dict(proc.me(), hostname=socket.gethostname())


def _as_record(owner: dict) -> dict:
    """A journal owner as util/proc's owner record. Formats 1-3 kept "start" as /proc/PID/stat's start in clock
    ticks since boot, a string: read as proc's "since_boot" (the same clock, exact)."""
    start = owner.get("start")
    if not isinstance(start, str):
        return owner
    try:
        ticks = int(start) / os.sysconf("SC_CLK_TCK")
    except ValueError:
        return {"pid": owner.get("pid")}  # no start time to tell a reused pid by: dead only when the pid is gone
    return {"pid": owner.get("pid"), "start": None, "since_boot": ticks}


def owner_alive(owner: dict) -> bool:
    """True unless the owner is provably gone (on this machine, util/proc.owner_alive: no such pid, a zombie, or
    a later process that reuses the pid). Another machine's run (a shared home) cannot be told: alive."""
    if owner.get("hostname") != socket.gethostname():
        return True
    return proc.owner_alive(_as_record(owner))


def _ours(owner: dict) -> bool:
    return proc.owner_pid(owner) == os.getpid() and owner_alive(owner)


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
        if _ours(data["owner"]):
            continue  # our own
        (live if owner_alive(data["owner"]) else dead).append(Journal(path, data))
    return dead, live, bad


def forget(which: str) -> tuple[list[Journal], list[str]]:
    """`encbench cleanup --forget-journal`: delete the journal at path `which`, or every journal whose run is
    gone (`all`), without restoring anything. Returns (deleted, why each other one was not); a running run's
    journal is never deleted."""
    base = directory()
    if which == "all":
        paths = sorted(base.glob("*.json")) if base.is_dir() else []
    else:
        path = Path(which).expanduser()
        if path.resolve().parent != base.resolve() or path.suffix != ".json":
            return [], [f"{which} is not a restore journal (those are the .json files in {base})"]
        if not path.exists():
            return [], [f"{which}: no such journal"]
        paths = [path]
    deleted, refused = [], []
    for path in paths:
        try:
            data = _load(path)
        except (OSError, ValueError):
            refused.append(f"{path} is not a restore journal this encbench can read: look at it, then delete it")
            continue
        if owner_alive(data["owner"]):
            who = data["owner"]
            refused.append(f"{path} belongs to a run still going (pid {who.get('pid')}): not dropped"
                           if who.get("hostname") == socket.gethostname() else
                           f"{path} belongs to a run on {who.get('hostname')} (cannot tell from here whether it "
                           f"is still going): not dropped; delete it there, or by hand once it is over")
            continue
        journal = Journal(path, data)
        journal.discard()
        deleted.append(journal)
    return deleted, refused
