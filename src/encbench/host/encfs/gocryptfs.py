"""`gocryptfs`: a FUSE filesystem encrypting in userspace (AES-256-GCM per 4 KiB block by default; the `cipher`
option picks XChaCha20-Poly1305 (-xchacha, gocryptfs 2.2+) or AES-SIV (-aessiv) at -init).

The cipher directory lives on a plain loop-mounted ext4 image (the same as the `plain` kind,
so `plain` is the baseline of both kinds); the passfile holds 256 random bits. scrypt's cost
(-scryptn) only guards a guessable password, so the minimum is used: mounting stays fast.
The daemon runs in the foreground (-fg), a child of the process that mounted it (in a session of
its own), so its CPU stays in encbench's process tree (a run's context: lab/runctx); it writes its
log to a file in the mount's working directory (-nosyslog), never to a pipe of ours nor to syslog.
`-allow_other` lets a server running as another user (postgres) use the mount.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import subprocess
import time
from pathlib import Path

from ...errors import FilesystemUnavailableError
from ...util import proc
from . import base, cipherinfo, ledger, loopfs

NAME = "gocryptfs"
DESCRIPTION = "gocryptfs (FUSE, userspace AES-256-GCM) over a loop-mounted ext4 image"
CIPHER_SIDE = "userspace"
BACKING_KIND = "cipher-dir"
REQUIREMENTS = base.Requirements(tools=loopfs.REQUIREMENTS.tools + ("gocryptfs", "fusermount3"),
                                 devices=("loop", "fuse"))
SCRYPT_N_LOG2 = 10
MOUNT_TIMEOUT_S = 30
MOUNT_POLL_S = 0.02  # how often /proc/mounts is read while the daemon mounts
# the `cipher` option: gocryptfs -init's flag, and the content encryption `gocryptfs -info` then reports
CIPHERS = {"aes-gcm": ((), "AES-GCM-256"), "xchacha": (("-xchacha",), "XChaCha20-Poly1305"),
           "aessiv": (("-aessiv",), "AES-SIV-512")}
DEFAULT_CIPHER = "aes-gcm"


def write_passfile(keydir: Path) -> Path:
    pw = keydir / "gocryptfs.pass"
    fd = os.open(pw, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return pw


def _mount(cipher_dir: Path, point: Path, passfile: Path, log: Path) -> subprocess.Popen:
    """Start the daemon in the foreground (-fg): a child of this process, in a session of its own, serving until the
    mount is unmounted; returned once its mount shows in /proc/mounts. Left to daemonize (gocryptfs's default) it
    would leave encbench's process tree, and a run's context would count its CPU, the decryption the server asks
    of it, as other processes' load (lab/runctx.own_cpu sums that tree). Its own session keeps a Ctrl-C to
    encbench's process group from stopping it under a running server: the ledger's teardown unmounts it, and it
    exits."""
    exe = base.which("gocryptfs") or "gocryptfs"
    with open(log, "ab") as out:  # the daemon keeps only the log file
        daemon = subprocess.Popen([exe, "-fg", "-q", "-nosyslog", "-allow_other", "-passfile", str(passfile),
                                   str(cipher_dir), str(point)], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                  start_new_session=True)
    try:
        _wait_mounted(daemon, point, log)
    except BaseException:
        proc.kill_and_reap(daemon)  # what it mounted, if anything, is the ledger's to unmount (create's teardown)
        raise
    return daemon


def _wait_mounted(daemon: subprocess.Popen, point: Path, log: Path) -> None:
    """Until `point` is mounted; a one-line FilesystemUnavailableError if the daemon exits first (its log's last
    words) or MOUNT_TIMEOUT_S pass."""
    deadline = time.monotonic() + MOUNT_TIMEOUT_S
    while not any(mp == str(point) for _, mp, _ in ledger.mounts()):
        if daemon.poll() is not None:
            err = " ".join(log.read_text(errors="replace").split())[-300:]
            raise FilesystemUnavailableError(f"gocryptfs mount failed (exit {daemon.returncode}): {err}")
        if time.monotonic() > deadline:
            raise FilesystemUnavailableError(f"gocryptfs mount: {point} not mounted after {MOUNT_TIMEOUT_S} s")
        time.sleep(MOUNT_POLL_S)


def build(record: dict, size: int, options: dict | None = None) -> dict:
    """options: {"cipher": a CIPHERS name} (default AES-256-GCM), chosen at -init (a version without its flag: the
    one-line FilesystemUnavailableError of cipher_unavailable)."""
    cipher = (options or {}).get("cipher", DEFAULT_CIPHER)
    why = cipher_unavailable(cipher)
    if why:
        raise FilesystemUnavailableError(f"gocryptfs cipher {cipher}: {why}", hint="use cipher aes-gcm, or a newer gocryptfs")
    workdir = Path(record["workdir"])
    lower = loopfs.make(record, size, encrypt_feature=False, name="lower")
    cipher_dir = lower / "cipher"
    cipher_dir.mkdir(mode=0o755)  # the mounted root takes its mode: other users (postgres) must traverse it
    passfile = write_passfile(Path(record["keydir"]))
    base.run(["gocryptfs", "-init", "-q", *CIPHERS[cipher][0], "-scryptn", str(SCRYPT_N_LOG2), "-passfile",
              str(passfile), str(cipher_dir)], what="gocryptfs -init")
    point = workdir / "mnt"
    point.mkdir(mode=0o755)
    ledger.add_mount(record, point, "fuse.gocryptfs", str(cipher_dir))
    daemon = _mount(cipher_dir, point, passfile, workdir / "gocryptfs.log")
    data = point / "data"
    data.mkdir(mode=0o755)
    return {"path": data, "mount_point": point, "backing": cipher_dir, "key_files": (passfile,), "daemon": daemon}


def info(cipher_dir: Path) -> dict:
    """`gocryptfs -info` (needs no password): contentEncryption, FeatureFlags, Creator."""
    out = base.run(["gocryptfs", "-info", str(cipher_dir)], what="gocryptfs -info")
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines()) if v}


@functools.cache
def cipher_unavailable(cipher: str) -> str | None:
    """Why this gocryptfs cannot -init with a cipher ("not available in gocryptfs 2.1"), None when it can: its
    flag is looked for in its own long help (`gocryptfs -hh`, on stderr)."""
    flags = CIPHERS[cipher][0]
    if not flags:
        return None
    exe = base.which("gocryptfs") or "gocryptfs"
    try:
        text = subprocess.run([exe, "-hh"], capture_output=True, text=True, timeout=base.COMMAND_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return f"gocryptfs -hh failed: {e}"
    known = re.findall(r"^\s+-?(-[a-z0-9_]+)", text.stderr + text.stdout, re.M)
    missing = [f for f in flags if f not in known and "-" + f not in known]
    return f"not available in gocryptfs {version()} (no {', '.join(missing)} flag)" if missing else None


@functools.lru_cache(maxsize=1)
def version() -> str | None:
    """`gocryptfs -version`: e.g. "2.3"."""
    first = base.run(["gocryptfs", "-version"], what="gocryptfs -version").split(";")[0].split()
    return first[-1] if first else None


@functools.lru_cache(maxsize=1)
def speed() -> dict:
    """`gocryptfs -speed`: the version, the CPU line, each backend's MB/s as gocryptfs reports them, and the
    backend it selects per cipher in auto mode (a second or two)."""
    out = base.run(["gocryptfs", "-speed"], what="gocryptfs -speed")
    lines = out.splitlines()
    rates, selected = {}, {}
    for line in lines:
        m = re.match(r"^(\S+)\s+([\d.]+) MB/s(\s+\(selected in auto mode\))?", line.strip())
        if m:
            rates[m.group(1)] = float(m.group(2))
            if m.group(3):
                family, _, backend = m.group(1).rpartition("-")
                selected[family] = backend
    cpu = next((ln[4:].strip() for ln in lines if ln.startswith("cpu:")), None)
    first = lines[0].split(";")[0].split() if lines else []
    return {"version": first[-1] if first else None, "cpu": cpu,
            "aes_acceleration": None if cpu is None else "with AES acceleration" in cpu,
            "reported_mb_s": rates, "selected": selected}


def auto_backend(flags: set[str] | None = None) -> str:
    """The AES-GCM backend gocryptfs picks in auto mode (stupidgcm.PreferOpenSSLAES256GCM): Go's when the CPU
    has AES and carry-less multiply instructions (x86 aes+pclmulqdq, arm64 aes+pmull), else OpenSSL's."""
    flags = cipherinfo.cpu_flags() if flags is None else flags
    return "Go" if {"aes", "pclmulqdq"} <= flags or {"aes", "pmull"} <= flags else "OpenSSL"


def backend_of(content: str | None) -> str:
    """The implementation gocryptfs runs a content cipher with in auto mode (stupidgcm's Prefer* rules): AES-GCM as
    auto_backend says; XChaCha20-Poly1305 Go's where Go has assembly for it (amd64, arm64), else OpenSSL's; AES-SIV
    has Go's only."""
    import platform

    if content == "XChaCha20-Poly1305":
        return "Go" if platform.machine() in ("x86_64", "amd64", "aarch64", "arm64") else "OpenSSL"
    if content == "AES-SIV-512":
        return "Go"
    return auto_backend()


def cipher(mount: base.Mount, measure: bool = False) -> dict:
    """The cipher of the mount's config (-info) and the backend gocryptfs runs it with. measure=True also runs
    `gocryptfs -speed` (10 s on a busy 2-core machine), which names the backend itself and its MB/s."""
    conf = info(mount.backing)
    content = conf.get("contentEncryption")  # e.g. AES-GCM-256
    backend, how = backend_of(content), "CPU flags and architecture (gocryptfs's auto-mode rule)"
    out = {"kind": NAME, "encrypted": bool(content), "side": CIPHER_SIDE, "content_encryption": content,
           "feature_flags": (conf.get("FeatureFlags") or "").split(), "creator": conf.get("Creator"),
           "cpu_has_aes": cipherinfo.cpu_has_aes(), "version": version()}
    if measure:
        sp = speed()
        backend, how = sp["selected"].get(content or "", backend), "gocryptfs -speed"
        out |= {"cpu": sp["cpu"], "aes_acceleration": sp["aes_acceleration"],
                "gocryptfs_speed_mb_s": sp["reported_mb_s"]}
    out |= {"backend": backend, "backend_from": how,
            "summary": f"{content} in userspace (gocryptfs {out['version']}, {backend} backend)"}
    return out
