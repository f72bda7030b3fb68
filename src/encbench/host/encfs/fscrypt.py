"""`fscrypt`: ext4's native encryption (the kernel encrypts file contents and names) on a loop image.

mkfs.ext4 -O encrypt, `fscrypt setup` of that mount, one directory encrypted with a generated
32-byte raw key (policy v2, AES-256-XTS contents, AES-256-CTS names by default; the `policy` option picks
another pair of modes the kernel accepts: Adiantum, AES-128-CBC-ESSIV). fscrypt's configuration
and its "root" metadata are private to the mount (FSCRYPT_CONF, FSCRYPT_ROOT_MNT): nothing is
written to /etc/fscrypt.conf or /.fscrypt. The key is added to the filesystem's own keyring
(policy v2), which the kernel drops when the filesystem is unmounted.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import re
import secrets
from pathlib import Path

from ...errors import EncryptionRefusedError
from ...host import oscache
from . import base, cipherinfo, loopfs

NAME = "fscrypt"
DESCRIPTION = "ext4 native encryption (fscrypt, policy v2, AES-256-XTS) on a loop-mounted image: the kernel's cipher"
CIPHER_SIDE = "kernel"
BACKING_KIND = "image"
REQUIREMENTS = base.Requirements(tools=loopfs.REQUIREMENTS.tools + ("fscrypt",), devices=("loop",))
KEY_BYTES = 32
POLICY = {"padding": "32", "contents": "AES_256_XTS", "filenames": "AES_256_CTS", "policy_version": "2"}
# the `policy` option: the contents and file-name modes of the directory's policy (the pairs the kernel accepts,
# in fscrypt's own names), and the kernel's crypto API templates each needs (its build option, when readable)
POLICIES = {"aes-256-xts": ("AES_256_XTS", "AES_256_CTS"), "adiantum": ("Adiantum", "Adiantum"),
            "aes-128-cbc": ("AES_128_CBC", "AES_128_CTS")}
DEFAULT_POLICY = "aes-256-xts"
KERNEL_NEEDS = {"aes-256-xts": ("CRYPTO_XTS",), "adiantum": ("CRYPTO_ADIANTUM",), "aes-128-cbc": ("CRYPTO_ESSIV",)}
KERNEL_CONFIG = "/proc/config.gz"
PROBE_IMAGE = 16 << 20
REFUSED = re.compile(r"encryption not enabled|not support|CONFIG_FS_ENCRYPTION|operation not supported", re.I)


def options_of(policy: str) -> dict:
    """fscrypt's policy options for a `policy` value (BadValueError-free: the callers check the name)."""
    contents, filenames = POLICIES[policy]
    return dict(POLICY, contents=contents, filenames=filenames)


def _env(workdir: Path, mount_point: Path, policy: str = DEFAULT_POLICY) -> dict:
    conf = workdir / "fscrypt.conf"
    if not conf.exists():  # written once, by the build: the policy of the mount's directory
        conf.write_text(json.dumps({"source": "raw_key", "options": options_of(policy),
                                    "use_fs_keyring_for_v1_policies": False, "allow_cross_user_metadata": False}))
    return dict(os.environ, FSCRYPT_CONF=str(conf), FSCRYPT_ROOT_MNT=str(mount_point))


def write_key(keydir: Path, name: str = "fscrypt.key") -> Path:
    key = keydir / name
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(KEY_BYTES))
    return key


def encrypt_dir(mount_point: Path, directory: Path, key: Path, workdir: Path, policy: str = DEFAULT_POLICY) -> None:
    """`fscrypt setup` the mount and encrypt the (empty) directory with the raw key: EncryptionRefusedError
    when the filesystem has no encrypt feature or the kernel no fscrypt support."""
    env = _env(workdir, mount_point, policy)
    base.run(["fscrypt", "setup", str(mount_point), "--quiet"], env=env, what="fscrypt setup",
             refused=REFUSED.search)
    base.run(["fscrypt", "encrypt", str(directory), "--source=raw_key", "--name=encbench", f"--key={key}",
              "--quiet"], env=env, what="fscrypt encrypt", refused=REFUSED.search)


def build(record: dict, size: int, options: dict | None = None) -> dict:
    """options: {"policy": a POLICIES name} (default AES-256-XTS); a mode the kernel cannot run is refused when the
    first file is made in the directory (EncryptionRefusedError)."""
    policy = (options or {}).get("policy", DEFAULT_POLICY)
    workdir = Path(record["workdir"])
    point = loopfs.make(record, size, encrypt_feature=True)
    key = write_key(Path(record["keydir"]))
    data = point / "data"
    data.mkdir(mode=0o755)
    encrypt_dir(point, data, key, workdir, policy)
    data.chmod(0o755)  # `fscrypt encrypt` leaves it 0700: a server running as postgres must reach its data
    _first_file(data, policy)
    return {"path": data, "mount_point": point, "backing": Path(record["image"]), "key_files": (key,)}


def _not_available(policy: str, why: str) -> str:
    return f"not available in kernel {platform.release()} ({POLICIES[policy][0]}: {why})"


def _first_file(directory: Path, policy: str) -> None:
    """The kernel sets a policy's ciphers up only for the first file made under it: one made (and removed) now, so
    that a mode it cannot run is refused here, in one line (ENOPKG: no such crypto API template in this kernel)."""
    probe = directory / f".encbench-policy-{os.getpid()}"
    try:
        probe.write_bytes(b"x" * 4096)
        probe.unlink()
    except OSError as e:
        raise EncryptionRefusedError(f"fscrypt policy {policy}: " + _not_available(
            policy, f"making a file under it fails: {e.strerror or e}")) from None


def kernel_config(option: str, path: str | None = None) -> str | None:
    """The kernel's build setting of CONFIG_<option> ('y', 'm'; 'n' when "is not set"), None when unreadable
    (path: KERNEL_CONFIG, read when called)."""
    try:
        text = gzip.decompress(Path(path or KERNEL_CONFIG).read_bytes()).decode(errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    m = re.search(rf"^(?:CONFIG_{option}=(\S+)|# CONFIG_{option} is not set)$", text, re.M)
    return None if m is None else (m.group(1) or "n")


def config_unavailable(policy: str) -> str | None:
    """Why this kernel cannot encrypt with a policy, when its build configuration says the cipher is not built
    ("not available in kernel ..."), else None (it may still refuse: encfs.fscrypt_policy_unavailable makes one)."""
    missing = [o for o in KERNEL_NEEDS[policy] if kernel_config(o) == "n"]
    if missing:
        return _not_available(policy, f"{', '.join('CONFIG_' + o for o in missing)} is not set in its build "
                                      "configuration")
    return None


def refusal_line(policy: str, error: EncryptionRefusedError) -> str:
    """A policy's refusal (_first_file's EncryptionRefusedError) as its "not available in kernel ..." line."""
    text = str(error)
    return text.split(": ", 1)[1] if text.startswith("fscrypt policy ") else _not_available(policy, text)


def status(mount: base.Mount) -> dict:
    """The policy of the data directory, from `fscrypt status` (Options line: what the kernel reports)."""
    return status_of(mount.path, mount.workdir, mount.mount_point)


def status_of(path: Path, workdir: Path, mount_point: Path) -> dict:
    out = base.run(["fscrypt", "status", str(path)], env=_env(Path(workdir), Path(mount_point)),
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
