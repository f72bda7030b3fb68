"""The owner record of an encbench command: each directory, file and process it makes, written down BEFORE it exists
(a process: right after it is spawned, its pid and start time), so that what a killed command leaves can be found
and undone by the next one (lab/reclaim).

One JSON file per command in `<temporary directory>/encbench-owners-<uid>/<pid>.json` (0700 directory, 0600 file,
replaced atomically): {"owner": {"pid", "start"}, "items": [{"kind": "dir", "path"}, {"kind": "file", "path"},
{"kind": "process", "pid", "start", "what", "dir"}]}. Memory cgroups and filesystems keep records of their own
(host/memcg, host/encfs/ledger), written before they are made as well.

Only the process that called `enable()` (the command's main process: cli/app) writes one: a forked worker that
restarts a server does not, since its record would outlive it while the command still uses that server (the
server's directory, recorded by the main process, covers it). `finish()` deletes the record once the command has
cleaned up (a normal end, an error or an interrupt); a killed command's record stays for the next one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from ..errors import BadValueError
from . import files, proc

PREFIX = "encbench-owners-"
OWNER_FILE = ".encbench-owner"  # the owner file inside a directory (util/leftovers' scans find it)
_lock = threading.Lock()
_state: dict = {"pid": None, "record": None}


def directory(base: str | Path | None = None) -> Path:
    """Where the records of this user's commands are (in the temporary directory, so a command run with another
    TMPDIR keeps its own)."""
    return Path(base or tempfile.gettempdir()) / f"{PREFIX}{os.geteuid()}"


def _safe_dir(d: Path) -> bool:
    """Ours to trust: a real directory (not a link someone planted in a shared /tmp), owned by us, private."""
    try:
        st = os.lstat(d)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def enable() -> None:
    """From now on this process records what it makes (cli/app, once per command)."""
    with _lock:
        _state.update(pid=os.getpid(), record={"owner": proc.me(), "items": []})


def enabled() -> bool:
    return _state["pid"] == os.getpid() and _state["record"] is not None


def _path() -> Path:
    return directory() / f"{os.getpid()}.json"


def _write() -> None:
    d = directory()
    d.mkdir(mode=0o700, exist_ok=True)
    if not _safe_dir(d):
        raise BadValueError(f"{d} is not a private directory of uid {os.geteuid()}: no owner record can be kept there",
                            hint="remove it, or set TMPDIR to a directory of your own")
    files.write_private_json(_path(), _state["record"])


def add(item: dict) -> None:
    """Write `item` into this command's record (a no-op where recording is not enabled)."""
    with _lock:
        if not enabled() or item in _state["record"]["items"]:
            return
        _state["record"]["items"].append(item)
        _write()


def forget(path: str | Path) -> None:
    """Drop the items of a directory kept on purpose (a --keep server): the directory and the processes in it."""
    p = str(path)
    with _lock:
        if not enabled():
            return
        items = _state["record"]["items"]
        kept = [i for i in items if i.get("path") != p and i.get("dir") != p]
        if len(kept) != len(items):
            _state["record"]["items"] = kept
            _write()


def write_owner_file(directory: str | Path, owner: dict) -> None:
    """Record the owner in the directory itself (atomic, never over an existing record)."""
    target = Path(directory) / OWNER_FILE
    if target.exists():
        return
    tmp = target.with_name(f"{OWNER_FILE}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(owner))
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def read_owner_file(directory: str | Path) -> dict | None:
    try:
        owner = json.loads((Path(directory) / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return owner if proc.owner_pid(owner) is not None else None


def make_dir(prefix: str, parent: str | Path | None = None, mode: int = 0o700) -> Path:
    """A new directory `parent/prefix<random>` (tempfile.mkdtemp's job), recorded before it is made."""
    parent = Path(parent or tempfile.gettempdir())
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(5)}"
        if os.path.lexists(path):
            continue
        add({"kind": "dir", "path": str(path)})
        try:
            os.mkdir(path, mode)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free name {prefix}* in {parent}")


def file_to_make(path: str | Path) -> Path:
    """Record a file about to be made (a key, a pipe) outside a recorded directory."""
    add({"kind": "file", "path": str(path)})
    return Path(path)


def spawned(pid: int, what: str, directory_: str | Path | None = None) -> None:
    """Record a process just started (its pid and start time: a reused pid is never taken for it): `what` it is
    ("PostgreSQL server"), and the directory it runs from."""
    add({"kind": "process", **proc.identity(int(pid)), "what": what, "dir": str(directory_) if directory_ else None})


def finish() -> None:
    """The command has cleaned up: its record goes."""
    with _lock:
        if enabled():
            _path().unlink(missing_ok=True)
        _state.update(pid=None, record=None)


def records(base: str | Path | None = None) -> list[tuple[Path, dict]]:
    """Every record in the directory (this process's included), each well-formed: (file, record)."""
    d = directory(base)
    if not _safe_dir(d):
        return []
    out = []
    for p in sorted(d.glob("*.json")):
        try:
            r = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and proc.owner_pid(r.get("owner")) is not None and isinstance(r.get("items"), list):
            out.append((p, r))
    return out


def sweep_temporaries(base: str | Path | None = None) -> None:
    """A record half-written by a process killed inside its write (`.<pid>.json.<pid>`) goes once that pid is gone."""
    d = directory(base)
    if not _safe_dir(d):
        return
    for tmp in d.glob(".*.json.*"):
        pid = tmp.name.rpartition(".")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not proc.running(int(pid)):
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def temporary_dir(prefix: str, parent: str | Path | None = None):
    """tempfile.TemporaryDirectory, recorded before it is made (what a killed command leaves of it is reclaimed)."""
    path = make_dir(prefix, parent)
    try:
        yield str(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)
