"""Encrypted filesystems to put a database's files on: `plain` (the baseline), `fscrypt`, `gocryptfs`.

    with encfs.create("fscrypt", 64 << 20, workdir) as m:   # a Mount
        ... put files under m.path ...
        encfs.cipher_info(m)   # which cipher really runs, as data
    # unmounted, loop device detached, key shredded, image deleted

A kind may take options when it is made (OPTIONS: name -> (default, values)): fscrypt's `policy` (the contents
mode: aes-256-xts, adiantum, aes-128-cbc), gocryptfs's `cipher` (aes-gcm, xchacha, aessiv); `unavailable(kind,
options)` says in one line why this machine cannot make one (the kernel's modes, the tool's version), and
`running_options(kind, place)` reads back what a mounted one runs (fscrypt status, gocryptfs -info).

Each kind is one module (plain.py, fscrypt.py, gocryptfs.py) with NAME, DESCRIPTION, CIPHER_SIDE,
BACKING_KIND, REQUIREMENTS, build(record, size) and cipher(mount), registered in KINDS. Every
kind sits on the same loop-mounted ext4 image, so `plain` isolates what encryption costs. The
ledger (ledger.py) makes every mount recoverable after a kill: `create` reclaims what dead runs
left before it makes anything, and `encbench cleanup` does the same on demand.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from types import ModuleType

from ...errors import EncryptionRefusedError, FilesystemUnavailableError
from ...util import interrupts
from ...util.registry import Registry
from . import base, fscrypt, gocryptfs, ledger, plain
from .base import Mount
from ...util import owners, proc

KINDS: Registry[ModuleType] = Registry("encrypted filesystem kind")
for _kind in (plain, fscrypt, gocryptfs):
    KINDS.register(_kind.NAME, _kind)

__all__ = ["KINDS", "Mount", "create", "cipher_info", "check", "reclaim", "reclaim_quietly", "workdir",
           "remove_workdir", "OPTIONS", "unavailable", "fscrypt_policy_unavailable", "running_options"]

# kind -> option -> (default value, every value): what `create(..., options)` takes
OPTIONS = {"fscrypt": {"policy": (fscrypt.DEFAULT_POLICY, tuple(fscrypt.POLICIES))},
           "gocryptfs": {"cipher": (gocryptfs.DEFAULT_CIPHER, tuple(gocryptfs.CIPHERS))}}


def unavailable(kind: str, options: dict) -> str | None:
    """Why a filesystem of `kind` with these options cannot be made here (one line), or None. Run after check(kind):
    fscrypt's policy against the kernel (its build configuration, else a small filesystem made and removed),
    gocryptfs's cipher against its version."""
    for name, value in options.items():
        default, values = OPTIONS.get(kind, {}).get(name, (None, ()))
        if value not in values:
            return f"{kind} has no option {name}={value}"
        if value == default:
            continue
        why = fscrypt_policy_unavailable(value) if kind == "fscrypt" else gocryptfs.cipher_unavailable(value)
        if why:
            return why
    return None


@functools.cache
def fscrypt_policy_unavailable(policy: str) -> str | None:
    """Why this kernel cannot encrypt with an fscrypt policy ("not available in kernel ..."), or None when it can.
    Its build configuration when that says the cipher is not built; else a real filesystem of that policy is made,
    a file written under it, and everything torn down (needs root, a loop device and fscrypt: check's error)."""
    why = fscrypt.config_unavailable(policy)
    if why:
        return why
    where = workdir("encbench-fscrypt-probe-")
    try:
        with create(fscrypt.NAME, fscrypt.PROBE_IMAGE, where, {"policy": policy}):
            pass
    except EncryptionRefusedError as e:
        return fscrypt.refusal_line(policy, e)
    finally:
        remove_workdir(where)
    return None


def running_options(kind: str, place: dict) -> dict:
    """What a mounted filesystem of `kind` runs, read back from it: fscrypt's policy (`fscrypt status`: the modes
    the kernel reports for the data directory) or gocryptfs's content encryption (`gocryptfs -info` of the cipher
    directory); with the option value it corresponds to (None: none of them). `place`: Mount.describe() plus
    "workdir"."""
    if kind == "fscrypt":
        opts = fscrypt.status_of(Path(place["path"]), Path(place["workdir"]), Path(place["mount_point"]))["options"]
        modes = (opts.get("contents"), opts.get("filenames"))
        value = next((v for v, pair in fscrypt.POLICIES.items() if pair == modes), None)
        return {"policy": value, "contents": modes[0], "filenames": modes[1], "read_from": "fscrypt status"}
    if kind == "gocryptfs":
        content = gocryptfs.info(Path(place["backing"])).get("contentEncryption")
        value = next((v for v, (_, name) in gocryptfs.CIPHERS.items() if name == content), None)
        return {"cipher": value, "content_encryption": content, "read_from": "gocryptfs -info"}
    return {}


def check(kind: str) -> None:
    """Raise FilesystemUnavailableError (what is missing, what to do) when `kind` cannot be made here."""
    base.check(KINDS.get(kind).REQUIREMENTS, kind)


def reclaim():
    """Tear down what dead runs left (ledger.reclaim): [(record, problems)]."""
    return ledger.reclaim()


def reclaim_quietly() -> list:
    """reclaim(), with one stderr line when it removed something (as lab/reclaim.claim does)."""
    done = ledger.reclaim()
    if done:
        pids = sorted({r["owner"].get("pid") for r, _ in done}, key=str)
        print(f"encbench: reclaimed {len(done)} filesystem{'s' if len(done) > 1 else ''} left by dead "
              f"run{'s' if len(pids) > 1 else ''} (pid {', '.join(map(str, pids))}): "
              + ", ".join(r["id"] + (f" (incomplete: {'; '.join(p)})" if p else "") for r, p in done),
              file=sys.stderr)
    return done


def _destroyer(record: dict, daemon=None):
    """The Mount's destroy: the record's teardown, then its daemon (gocryptfs's, a child of this process) reaped:
    unmounted, it exits (teardown stops it if not)."""
    def destroy() -> None:
        with interrupts.deferred():  # a Ctrl-C must not cut the teardown short
            problems = ledger.teardown(record)
            proc.kill_and_reap(daemon, ledger.STRAY_TERM_WAIT_S)
        if problems:
            raise FilesystemUnavailableError(f"clean-up of {record['id']} incomplete: {'; '.join(problems)}",
                                             hint="run `encbench cleanup` once nothing uses it")
    return destroy


def create(kind: str, size: int, workdir: str | Path, options: dict | None = None) -> Mount:
    """Make a filesystem of `kind` (`size` bytes of image) in a new directory under `workdir`, with the kind's
    options (OPTIONS) where given."""
    module = KINDS.get(kind)
    base.check(module.REQUIREMENTS, kind)
    unknown = sorted(set(options or {}) - set(OPTIONS.get(kind, {})))
    if unknown:
        raise FilesystemUnavailableError(f"{kind} takes no option {', '.join(unknown)}")
    workdir = Path(workdir)
    if not workdir.is_dir():
        raise FilesystemUnavailableError(f"{kind}: working directory {workdir} does not exist")
    reclaim_quietly()
    record = ledger.new_record(kind, workdir)
    try:
        made = module.build(record, size, options) if options else module.build(record, size)
    except BaseException:
        with interrupts.deferred():
            ledger.teardown(record)
        raise
    return Mount(kind=kind, path=made["path"], mount_point=made["mount_point"], backing=made["backing"],
                 backing_kind=module.BACKING_KIND, image=Path(record["image"]), cipher_side=module.CIPHER_SIDE,
                 record_id=record["id"], workdir=Path(record["workdir"]), key_files=tuple(made["key_files"]),
                 _destroy=_destroyer(record, made.get("daemon")))


def workdir(prefix: str) -> Path:
    """A new directory in the temporary directory to make a run's filesystems in, searchable by a server running
    as another user (postgres, mysql). It holds this process's owner record: what a killed run leaves of it is
    removed by the next run or `encbench cleanup` once empty (its mounts are the ledger's to tear down)."""
    d = owners.make_dir(prefix)  # in the command's owner record before it exists
    d.chmod(0o755)
    owners.write_owner_file(d, proc.me())
    return d


def remove_workdir(directory: Path) -> None:
    """Remove a `workdir` once its filesystems are destroyed (OSError when something is still in it)."""
    (Path(directory) / owners.OWNER_FILE).unlink(missing_ok=True)
    Path(directory).rmdir()


def cipher_info(mount: Mount, measure: bool = False) -> dict:
    """Which cipher really runs for this mount, as data (no key material). measure=True lets a kind run its
    own speed test where it has one (gocryptfs -speed, seconds)."""
    return KINDS.get(mount.kind).cipher(mount, measure=measure)
