"""The loop-mounted ext4 image every kind sits on (plain uses it as is, so it is the baseline of both)."""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import BadValueError
from . import base, ledger

MIN_SIZE = 16 << 20  # ext4 with a journal needs a few MiB of its own
# Initialise inode tables and journal now: a lazy init would write in the background during the measurement.
MKFS_EXTENDED = "lazy_itable_init=0,lazy_journal_init=0,nodiscard"
REQUIREMENTS = base.Requirements(tools=("mkfs.ext4", "mount", "umount", "losetup"), devices=("loop",))


def make(record: dict, size: int, *, encrypt_feature: bool, name: str = "mnt") -> Path:
    """Create the sparse image, mkfs.ext4 it (with `-O encrypt` for fscrypt), loop-mount it; the mount point."""
    if size < MIN_SIZE:
        raise BadValueError(f"filesystem size {size} bytes is too small", hint=f"at least {MIN_SIZE >> 20} MiB")
    image = Path(record["image"])
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
    base.run(["mkfs.ext4", "-q", "-F", "-m", "0", *(["-O", "encrypt"] if encrypt_feature else []),
              "-E", MKFS_EXTENDED, str(image)], what="mkfs.ext4")
    point = Path(record["workdir"]) / name
    point.mkdir(mode=0o755)
    ledger.add_mount(record, point, "ext4", str(image))
    base.run(["mount", "-t", "ext4", "-o", "loop", str(image), str(point)], what="mount -o loop")
    return point
