"""The ledger of the filesystems encbench makes, and the one teardown every path goes through.

Before a kind creates anything (image, loop device, mount, key, daemon) it writes a record:
owner (pid + process start time: util/proc), kind, its
own working directory (`encfs-<kind>-<random>`), image, key directory, and each mount it will
make with the source that mount must have. `teardown(record)` undoes all of it from the record
alone: stop stray processes whose command line names the record's paths (a gocryptfs or mkfs
caught half-way), unmount each recorded mount point whose source is still the recorded one,
detach loop devices whose backing file is the record's image, shred and delete the keys,
delete the working directory, and only then the record. A normal `Mount.destroy()` and
reclaiming a killed run's leftovers are the same code.

Safety: nothing without a record is ever touched, a mount point whose source is not the
recorded one is left alone (and the working directory under it kept), and the working
directory is never deleted while anything is mounted below it.

Records live in STATE_DIR (persistent, so an image left by a run killed before a reboot is
still found); keys in KEY_ROOT, a tmpfs when /dev/shm is one (keys never reach a disk).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import psutil

from ...util import filelock, files, proc
from . import base

STATE_DIR = Path(os.environ.get("ENCBENCH_ENCFS_STATE", "/var/lib/encbench/encfs"))
KEY_ROOT = Path("/dev/shm/encbench-keys")
STRAY_TERM_WAIT_S = 3.0


# -- the records ----------------------------------------------------------------------------


def _record_path(rid: str) -> Path:
    return STATE_DIR / f"{rid}.json"


def _write(record: dict) -> None:
    files.write_private_json(_record_path(record["id"]), record)


def key_root() -> Path | None:
    """Where keys go: under /dev/shm (a tmpfs) when there is one, else None (the mount's own directory)."""
    return KEY_ROOT if KEY_ROOT.parent.is_dir() else None


def new_record(kind: str, workdir: Path) -> dict:
    """Write the record of a filesystem about to be made (nothing exists yet) and create its directories."""
    rid = f"{kind}-{secrets.token_hex(6)}"
    own = Path(workdir).resolve() / f"encfs-{rid}"
    root = key_root()
    keys = root / rid if root else own / "keys"
    record = {"id": rid, "kind": kind, "owner": proc.me(), "created": time.time(),
              "workdir": str(own), "image": str(own / "fs.img"), "keydir": str(keys), "mounts": []}
    _write(record)
    own.mkdir(mode=0o755)  # a server running as another user (postgres) must reach its data below
    keys.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    keys.mkdir(mode=0o700)
    return record


def add_mount(record: dict, point: Path, fstype: str, source: str) -> None:
    """Record a mount *before* making it (a kill right after mount(8) still leaves it recorded)."""
    record["mounts"].append({"point": str(point), "fstype": fstype, "source": source})
    _write(record)


def records() -> list[dict]:
    return [r for _, r in files.json_records(STATE_DIR, lambda r: RECORD_KEYS <= r.keys())]


RECORD_KEYS = {"id", "workdir", "image", "keydir", "mounts", "owner"}


@contextlib.contextmanager
def locked():
    """One reclaimer at a time (two runs starting together must not tear down the same record twice)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    with filelock.locked(STATE_DIR / ".lock", mode=0o600):
        yield


# -- what the kernel says ----------------------------------------------------------------------


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mounts() -> list[tuple[str, str, str]]:
    """(source, mount point, fstype) of every mount, from /proc/mounts."""
    out = []
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                out.append((_unescape(parts[0]), _unescape(parts[1]), parts[2]))
    return out


def loop_devices_of(image: str) -> list[str]:
    """/dev/loopN whose backing file is `image` (also after the image was deleted)."""
    found = []
    for bf in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            backing = bf.read_text().strip()
        except OSError:
            continue
        if backing in (image, f"{image} (deleted)"):
            found.append(f"/dev/{bf.parent.parent.name}")
    return found


def _source_is_ours(source: str, m: dict) -> bool:
    """The mount's source is what the record says: a loop device backed by our image, or our cipher dir."""
    if m["fstype"] == "ext4":
        return source in loop_devices_of(m["source"])
    return source == m["source"]


# -- teardown ----------------------------------------------------------------------------------


def _strays(record: dict) -> list[psutil.Process]:
    marks = (record["workdir"] + "/", record["keydir"] + "/")
    me = os.getpid()
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = p.info.get("cmdline") or []
        if p.pid != me and any(m in a + "/" for a in cmd for m in marks):
            out.append(p)
    return out


def _stop_strays(record: dict) -> list[int]:
    procs = _strays(record)
    proc.stop(procs, STRAY_TERM_WAIT_S)
    return [p.pid for p in procs]


def _unmount(m: dict, ours: set[str]) -> str | None:
    """Unmount one recorded mount if it is mounted with the recorded source and nothing but our own mounts
    (`ours`: the record's mount points) sits below it; a problem line or None."""
    point = m["point"]
    for attempt in range(10):
        here = [src for src, mp, _ in mounts() if mp == point]
        if not here:
            return None
        if not _source_is_ours(here[-1], m):
            return f"{point}: mounted from {here[-1]}, not the recorded {m['source']}: left alone"
        if foreign := [mp for mp in _mounted_under(point) if mp != point and mp not in ours]:
            # unmounting (even lazily) would take that mount with it
            return f"{point}: {', '.join(foreign)} is mounted below it and is not encbench's: left alone"
        lazy = attempt >= 8  # a busy mount of ours: detach it lazily rather than leave it
        cmds = [["umount", *(["-l"] if lazy else []), point]]
        if m["fstype"].startswith("fuse"):
            cmds.insert(0, ["fusermount3", "-u", *(["-z"] if lazy else []), point])
        for cmd in cmds:
            exe = base.which(cmd[0])
            if exe is not None and subprocess.run([exe, *cmd[1:]], capture_output=True, timeout=30).returncode == 0:
                break
        time.sleep(0.1 * attempt)
    here = [src for src, mp, _ in mounts() if mp == point]
    return f"{point}: still mounted (busy?)" if here else None


def _detach_loops(image: str) -> list[str]:
    problems = []
    exe = base.which("losetup")
    for dev in loop_devices_of(image):
        if any(src == dev for src, _, _ in mounts()):
            problems.append(f"{dev} (backing {image}) is still mounted")
            continue
        if exe is None or subprocess.run([exe, "-d", dev], capture_output=True, timeout=30).returncode != 0:
            problems.append(f"{dev}: losetup -d failed")
    # losetup -d of a device still open elsewhere is deferred (autoclear): wait for it briefly
    for _ in range(20):
        if not loop_devices_of(image) or problems:
            break
        time.sleep(0.05)
    if loop_devices_of(image) and not problems:
        problems.append(f"{', '.join(loop_devices_of(image))} still attached to {image}")
    return problems


def shred(path: Path) -> None:
    """Overwrite a key file with random bytes, sync, delete (what a journal or tmpfs keeps is beyond reach)."""
    try:
        size = path.stat().st_size
        with open(path, "r+b", buffering=0) as f:
            f.write(os.urandom(max(size, 1)))
            os.fsync(f.fileno())
    except OSError:
        pass
    path.unlink(missing_ok=True)


def _destroy_keys(keydir: Path) -> None:
    if keydir.is_dir() and not keydir.is_symlink():
        for f in keydir.iterdir():
            if f.is_file() and not f.is_symlink():
                shred(f)
            else:
                f.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            keydir.rmdir()


def _mounted_under(directory: str) -> list[str]:
    prefix = directory.rstrip("/") + "/"
    return [mp for _, mp, _ in mounts() if mp == directory or mp.startswith(prefix)]


def teardown(record: dict) -> list[str]:
    """Undo everything the record names; [] when all is gone (the record too), else the problems."""
    problems = []
    ours = {m["point"] for m in record["mounts"]}
    for m in reversed(record["mounts"]):  # innermost (FUSE over the ext4 mount) first
        if (p := _unmount(m, ours)) is not None:
            problems.append(p)
    _stop_strays(record)  # a gocryptfs/mkfs/fscrypt caught half-way by a kill
    for m in reversed(record["mounts"]):  # something a stray mounted before it was stopped
        if (p := _unmount(m, ours)) is not None and p not in problems:
            problems.append(p)
    problems += _detach_loops(record["image"])
    _destroy_keys(Path(record["keydir"]))
    left = _mounted_under(record["workdir"])
    if left:
        problems.append(f"{record['workdir']} kept: {', '.join(left)} still mounted below it")
    elif Path(record["workdir"]).exists():
        shutil.rmtree(record["workdir"], ignore_errors=True)
        if Path(record["workdir"]).exists():
            problems.append(f"{record['workdir']}: could not be deleted")
    if not problems:
        _record_path(record["id"]).unlink(missing_ok=True)
    return problems


def reclaim() -> list[tuple[dict, list[str]]]:
    """Tear down what dead runs left: [(record, problems)] for every record whose owner is gone."""
    done = []
    with locked():
        for r in records():
            owner = r.get("owner") or {}
            if not proc.owner_dead(owner):
                continue
            done.append((r, teardown(r)))
        _sweep_temporaries()
    return done


def _sweep_temporaries() -> None:
    """A record half-written by a process killed inside _write (`.<id>.json.<pid>`) is deleted once its pid is gone."""
    for tmp in STATE_DIR.glob(".*.json.*"):
        pid = tmp.name.rpartition(".")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not proc.running(int(pid)):
            tmp.unlink(missing_ok=True)
