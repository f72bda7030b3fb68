"""`plain`: the loop-mounted ext4 image without encryption, the baseline of fscrypt and gocryptfs."""

from __future__ import annotations

from pathlib import Path

from . import base, loopfs

NAME = "plain"
DESCRIPTION = "loop-mounted ext4 image, no encryption (the baseline: the same filesystem as fscrypt's)"
CIPHER_SIDE = "none"
BACKING_KIND = "image"
REQUIREMENTS = loopfs.REQUIREMENTS


def build(record: dict, size: int) -> dict:
    point = loopfs.make(record, size, encrypt_feature=False)
    data = point / "data"
    data.mkdir(mode=0o755)
    return {"path": data, "mount_point": point, "backing": Path(record["image"]), "key_files": ()}


def cipher(mount: base.Mount, measure: bool = False) -> dict:  # nothing to measure here
    return {"kind": NAME, "encrypted": False, "side": CIPHER_SIDE}
