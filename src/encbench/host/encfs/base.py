"""What every kind of filesystem shares: the Mount it hands out, the prerequisites it checks, the
commands it runs.

A kind (plain, fscrypt, gocryptfs: one module each, registered in `encfs.KINDS`) knows how to build
its mount on top of a Ledger record (ledger.py) that was written *before* anything was created, so a
process killed at any point leaves a record the next run or `encbench cleanup` can tear down from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...errors import EncryptionRefusedError, FilesystemUnavailableError

COMMAND_TIMEOUT_S = 60

# Executables the kinds run, and the Debian package each comes from (named in the error).
TOOLS = {
    "mkfs.ext4": "e2fsprogs",
    "mount": "mount",
    "umount": "mount",
    "losetup": "mount",
    "fscrypt": "fscrypt",
    "gocryptfs": "gocryptfs",
    "fusermount3": "fuse3",
}
# Device nodes, and what their absence means.
DEVICES = {
    "loop": ("/dev/loop-control", "no loop device support (/dev/loop-control missing: modprobe loop, or run "
                                  "outside a container that hides it)"),
    "fuse": ("/dev/fuse", "no /dev/fuse (modprobe fuse, or give the container --device /dev/fuse)"),
}


@dataclass(frozen=True)
class Requirements:
    tools: tuple[str, ...]
    devices: tuple[str, ...]


SYSTEM_PATH = "/usr/sbin:/sbin:/usr/bin:/bin"  # root's sbin directories are not on every PATH (mkfs.ext4, losetup)


def which(tool: str) -> str | None:
    path = ":".join(p for p in (os.environ.get("PATH", os.defpath), SYSTEM_PATH) if p)
    return shutil.which(tool, path=path)


def check(req: Requirements, kind: str) -> None:
    """Raise FilesystemUnavailableError (one line, what to do) for the first thing missing."""
    if os.geteuid() != 0:
        raise FilesystemUnavailableError(f"{kind}: making a loop or FUSE filesystem needs root (running as uid "
                                         f"{os.geteuid()})", hint="run encbench as root")
    for dev in req.devices:
        node, why = DEVICES[dev]
        if not os.path.exists(node):
            raise FilesystemUnavailableError(f"{kind}: {why}")
    missing = sorted({TOOLS[t] for t in req.tools if which(t) is None})
    if missing:
        tools = ", ".join(t for t in req.tools if which(t) is None)
        raise FilesystemUnavailableError(f"{kind}: {tools} not installed",
                                         hint=f"apt-get install {' '.join(missing)}")


def run(cmd: list[str], *, env: dict | None = None, what: str = "", refused: Callable[[str], bool] | None = None,
        timeout: float = COMMAND_TIMEOUT_S) -> str:
    """Run a command; its stdout. A failure is a one-line FilesystemUnavailableError (or EncryptionRefusedError
    when `refused(stderr)` says the filesystem refused encryption). Key material is never on a command line
    (key files only), so the command may be quoted in the message."""
    exe = which(cmd[0]) or cmd[0]
    try:
        p = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, env=env, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise FilesystemUnavailableError(f"{what or cmd[0]}: no answer within {timeout:.0f} s") from None
    except FileNotFoundError:
        raise FilesystemUnavailableError(f"{cmd[0]} not installed",
                                         hint=f"apt-get install {TOOLS.get(cmd[0], cmd[0])}") from None
    if p.returncode != 0:
        err = " ".join((p.stderr or p.stdout).split())[:300]
        if refused is not None and refused(err):
            raise EncryptionRefusedError(f"{what or cmd[0]}: the filesystem refuses encryption: {err}")
        raise FilesystemUnavailableError(f"{what or ' '.join(cmd[:2])} failed (exit {p.returncode}): {err}")
    return p.stdout


@dataclass
class Mount:
    """One filesystem encbench made: put data under `path`; `destroy()` removes everything."""

    kind: str
    path: Path  # where data goes (a directory inside the mount)
    mount_point: Path
    backing: Path  # what holds the bytes at rest: the image file (plain, fscrypt) or the cipher dir (gocryptfs)
    backing_kind: str  # "image" | "cipher-dir"
    image: Path  # the loop-mounted ext4 image (every kind sits on one, so plain is the baseline of both)
    cipher_side: str  # "none" | "kernel" | "userspace"
    record_id: str
    workdir: Path  # everything of this mount but its keys
    key_files: tuple[Path, ...] = field(default=(), repr=False)
    _destroy: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    destroyed: bool = False

    def destroy(self) -> None:
        if not self.destroyed and self._destroy is not None:
            self._destroy()
        self.destroyed = True

    def __enter__(self) -> "Mount":
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    def describe(self) -> dict:
        """What may go into a result file: paths and kinds, never key material or key paths."""
        return {"kind": self.kind, "path": str(self.path), "mount_point": str(self.mount_point),
                "backing": str(self.backing), "backing_kind": self.backing_kind, "image": str(self.image),
                "cipher_side": self.cipher_side}
