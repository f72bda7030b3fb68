"""Sequential write/read MB/s through each encbench filesystem kind (plain, fscrypt, gocryptfs), side by side,
beside the userspace speed of the same ciphers (AES-256-XTS, AES-256-GCM via `cryptography`) on this CPU.

    sudo .venv/bin/python bench/encfs_speed.py [--mib 64] [--repeats 3] [--dir /var/tmp] [--gocryptfs-speed]

Write: 1 MiB blocks then fsync (the time includes the fsync). Read: the file's pages are evicted first
(posix_fadvise DONTNEED on the file, and on what holds it at rest: the image file and, for gocryptfs, the
cipher files), so the read goes through decryption; the image itself then comes from the host's disk or its
page cache, the same for every kind. The kinds are run in turn per repeat (interleaved); every value is
printed with the median. Needs root; mounts are removed at the end (and by `encbench cleanup` if killed).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from encbench.errors import EncbenchError
from encbench.host import encfs, oscache

BLOCK = 1 << 20


def _drop(mount: encfs.Mount, f: Path) -> None:
    oscache.drop_file(f)
    oscache.drop_file(mount.image)
    if mount.backing_kind == "cipher-dir":
        for p in mount.backing.rglob("*"):
            if p.is_file():
                oscache.drop_file(p)


def _read(f: Path) -> float:
    t = time.perf_counter()
    n = 0
    fd = os.open(f, os.O_RDONLY)
    try:
        while chunk := os.read(fd, BLOCK):
            n += len(chunk)
    finally:
        os.close(fd)
    return n / (time.perf_counter() - t) / 1e6


def write_read(mount: encfs.Mount, mib: int) -> tuple[float, float, float]:
    """(write, cold read, warm read) MB/s; the warm read (the same file again, from the page cache) shows the
    eviction before the cold one took effect."""
    f = mount.path / "seq.dat"
    buf = os.urandom(BLOCK)
    t = time.perf_counter()
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(mib):
            os.write(fd, buf)
        os.fsync(fd)
    finally:
        os.close(fd)
    w = mib * BLOCK / (time.perf_counter() - t) / 1e6
    _drop(mount, f)
    cold = _read(f)
    warm = _read(f)
    f.unlink()
    return w, cold, warm


def userspace(seconds: float = 0.3) -> dict[str, float]:
    """MB/s per core (CPU time) of AES-256-XTS and AES-256-GCM in userspace (OpenSSL via `cryptography`)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    data, out = os.urandom(BLOCK), bytearray(BLOCK + 16)
    rates = {}
    for name, make in (
        ("AES-256-XTS decrypt", lambda: Cipher(algorithms.AES(os.urandom(64)), modes.XTS(os.urandom(16))).decryptor()),
        ("AES-256-XTS encrypt", lambda: Cipher(algorithms.AES(os.urandom(64)), modes.XTS(os.urandom(16))).encryptor()),
        ("AES-256-GCM encrypt", lambda: Cipher(algorithms.AES(os.urandom(32)), modes.GCM(os.urandom(12))).encryptor()),
    ):
        ctx, n = make(), 0
        t0 = resource.getrusage(resource.RUSAGE_SELF)
        start = t0.ru_utime + t0.ru_stime
        while True:
            if name.startswith("AES-256-XTS"):
                ctx = make()  # XTS: one data unit per context in cryptography
            ctx.update_into(data, out)
            n += BLOCK
            t1 = resource.getrusage(resource.RUSAGE_SELF)
            if (cpu := t1.ru_utime + t1.ru_stime - start) >= seconds:
                break
        rates[name] = n / cpu / 1e6
    return rates


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64, help="file size in MiB (default 64)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp", help="where the images go (default /var/tmp: on disk, not tmpfs)")
    ap.add_argument("--gocryptfs-speed", action="store_true", help="also run gocryptfs -speed (slow)")
    args = ap.parse_args()
    kinds = encfs.KINDS.names()
    work = Path(tempfile.mkdtemp(prefix="encfs-speed-", dir=args.dir))
    mounts: dict[str, encfs.Mount] = {}
    try:
        for k in kinds:
            try:
                mounts[k] = encfs.create(k, (args.mib + 48) << 20, work)
            except EncbenchError as e:
                print(f"{k}: skipped: {e.one_line()}", file=sys.stderr)
        res = {k: ([], [], []) for k in mounts}
        for _ in range(args.repeats):
            for k, m in mounts.items():
                for column, value in zip(res[k], write_read(m, args.mib)):
                    column.append(value)
        print(f"sequential {args.mib} MiB, 1 MiB blocks, {args.repeats} repeats (median [each]), images in {args.dir}")
        print(f"{'kind':<10} {'write MB/s':<24} {'read MB/s (cold)':<24} {'read MB/s (warm)':<26} cipher")
        for k, m in mounts.items():
            w, r, warm = res[k]
            info = encfs.cipher_info(m, measure=args.gocryptfs_speed)
            fmt = lambda v: f"{statistics.median(v):7.0f} [{' '.join(f'{x:.0f}' for x in v)}]"  # noqa: E731
            print(f"{k:<10} {fmt(w):<24} {fmt(r):<24} {fmt(warm):<26} {info.get('summary', 'none')}")
        print("userspace (cryptography/OpenSSL, MB/s per core, CPU time):")
        for name, rate in userspace().items():
            print(f"  {name:<22} {rate:8.0f}")
    finally:
        for m in mounts.values():
            m.destroy()
        os.rmdir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
