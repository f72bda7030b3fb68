"""`fscrypt`: ext4's native encryption (the kernel encrypts file contents and names) on a loop image.

mkfs.ext4 -O encrypt, `fscrypt setup` of that mount, one directory encrypted with a generated
32-byte raw key (policy v2, AES-256-XTS contents, AES-256-CTS names). fscrypt's configuration
and its "root" metadata are private to the mount (FSCRYPT_CONF, FSCRYPT_ROOT_MNT): nothing is
written to /etc/fscrypt.conf or /.fscrypt. The key is added to the filesystem's own keyring
(policy v2), which the kernel drops when the filesystem is unmounted.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path

from ...host import oscache
from . import base, cipherinfo, loopfs

NAME = "fscrypt"
DESCRIPTION = "ext4 native encryption (fscrypt, policy v2, AES-256-XTS) on a loop-mounted image: the kernel's cipher"
CIPHER_SIDE = "kernel"
BACKING_KIND = "image"
REQUIREMENTS = base.Requirements(tools=loopfs.REQUIREMENTS.tools + ("fscrypt",), devices=("loop",))
KEY_BYTES = 32
POLICY = {"padding": "32", "contents": "AES_256_XTS", "filenames": "AES_256_CTS", "policy_version": "2"}
REFUSED = re.compile(r"encryption not enabled|not support|CONFIG_FS_ENCRYPTION|operation not supported", re.I)


def _env(workdir: Path, mount_point: Path) -> dict:
    conf = workdir / "fscrypt.conf"
    if not conf.exists():
        conf.write_text(json.dumps({"source": "raw_key", "options": POLICY,
                                    "use_fs_keyring_for_v1_policies": False, "allow_cross_user_metadata": False}))
    return dict(os.environ, FSCRYPT_CONF=str(conf), FSCRYPT_ROOT_MNT=str(mount_point))


def write_key(keydir: Path, name: str = "fscrypt.key") -> Path:
    key = keydir / name
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(KEY_BYTES))
    return key


def encrypt_dir(mount_point: Path, directory: Path, key: Path, workdir: Path) -> None:
    """`fscrypt setup` the mount and encrypt the (empty) directory with the raw key: EncryptionRefusedError
    when the filesystem has no encrypt feature or the kernel no fscrypt support."""
    env = _env(workdir, mount_point)
    base.run(["fscrypt", "setup", str(mount_point), "--quiet"], env=env, what="fscrypt setup",
             refused=REFUSED.search)
    base.run(["fscrypt", "encrypt", str(directory), "--source=raw_key", "--name=encbench", f"--key={key}",
              "--quiet"], env=env, what="fscrypt encrypt", refused=REFUSED.search)


def build(record: dict, size: int) -> dict:
    workdir = Path(record["workdir"])
    point = loopfs.make(record, size, encrypt_feature=True)
    key = write_key(Path(record["keydir"]))
    data = point / "data"
    data.mkdir(mode=0o755)
    encrypt_dir(point, data, key, workdir)
    data.chmod(0o755)  # `fscrypt encrypt` leaves it 0700: a server running as postgres must reach its data
    return {"path": data, "mount_point": point, "backing": Path(record["image"]), "key_files": (key,)}


def status(mount: base.Mount) -> dict:
    """The policy of the data directory, from `fscrypt status` (Options line)."""
    out = base.run(["fscrypt", "status", str(mount.path)], env=_env(mount.workdir, mount.mount_point),
                   what="fscrypt status")
    options = dict(re.findall(r"(\w+):(\S+)", (re.search(r"^Options:(.*)$", out, re.M) or [None, ""])[1]))
    return {"encrypted": "is encrypted" in out, "unlocked": bool(re.search(r"^Unlocked:\s*Yes", out, re.M)),
            "options": options}


def _touch_cipher(mount: base.Mount) -> None:
    """Write, evict and read back one file so the kernel instantiates the contents cipher (/proc/crypto then
    lists the driver it chose)."""
    probe = mount.path / f".encbench-probe-{os.getpid()}"
    try:
        with open(probe, "wb") as f:
            f.write(os.urandom(64 << 10))
        oscache.drop_file(probe)
        probe.read_bytes()
    finally:
        probe.unlink(missing_ok=True)


def cipher(mount: base.Mount, measure: bool = False) -> dict:  # nothing to measure here
    _touch_cipher(mount)
    st = status(mount)
    opts = st["options"]
    contents = cipherinfo.kernel_cipher(cipherinfo.FSCRYPT_MODES.get(opts.get("contents", ""), ""))
    names = cipherinfo.kernel_cipher(cipherinfo.FSCRYPT_MODES.get(opts.get("filenames", ""), ""))
    return {"kind": NAME, "encrypted": st["encrypted"], "side": CIPHER_SIDE,
            "policy_version": opts.get("policy_version"), "contents_mode": opts.get("contents"),
            "filenames_mode": opts.get("filenames"), "contents": contents, "filenames": names,
            "cpu_has_aes": cipherinfo.cpu_has_aes(),
            "summary": cipherinfo.kernel_summary(opts.get("contents"), contents)}
