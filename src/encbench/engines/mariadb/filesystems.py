"""MariaDB on an encrypted filesystem: the `encryption=fscrypt|gocryptfs` values of the at-rest axis.

Each such value gets a private server of its own whose data directory and tmpdir live on an encbench
mount of that kind (host/encfs), with InnoDB encryption off. Their baseline is `off` on a `plain`
mount (the same loop-mounted ext4 image without encryption): when a run has any filesystem value,
the server holding the `off` (and `on`) tables moves onto a plain mount too, so every at-rest variant
sits on the same kind of filesystem and differs from `off` by one thing.

cache=cold on these servers: the restart (empty buffer pool) *and* the OS page cache of the server's
files dropped. InnoDB asks for O_DIRECT, but ext4 serves O_DIRECT on an fscrypt file as buffered I/O
(without inline encryption hardware) and FUSE may cache too, so a restart alone would leave the
decrypted pages in the page cache: every file of the data directory, of gocryptfs's cipher directory
and the image itself is evicted (posix_fadvise DONTNEED), and the kernel's count of bytes read from
storage (/proc/PID/io read_bytes of the server and the gocryptfs daemon) proves it per operation.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from pathlib import Path

from ...errors import CheckFailedError
from ...host import encfs, oscache

# variant value -> encfs kind; their baseline lives on BASELINE_KIND
KINDS = {"fscrypt": "fscrypt", "gocryptfs": "gocryptfs"}
BASELINE_KIND = "plain"
WORKDIR_PREFIX = "encbench-maria-fs-"  # the run's mounts' directory, in the temporary directory
BASELINE_VALUES = ("off", "on")  # the tables of the main server (on the plain mount in a filesystem run)
IMAGE_BASE_BYTES = 448 << 20  # install-db's files, a 96 MB redo log, undo and system tablespaces, slack
IMAGE_BYTES_PER_TABLE_BYTE = 6  # the table, a per-run copy, a rebuild's copy, the encrypted twin (on)
COLD_STORAGE_SHARE = 0.5  # cold: the kernel must report at least this share of InnoDB's bytes read from storage
PROBE_BYTES = 1 << 20


def wanted(encryptions) -> list[str]:
    """The filesystem values among the requested encryption values, in declared order."""
    asked = set(encryptions)
    return [v for v in KINDS if v in asked]


def image_bytes(table_bytes: int) -> int:
    return IMAGE_BASE_BYTES + IMAGE_BYTES_PER_TABLE_BYTE * int(table_bytes)


def check(values) -> None:
    """FilesystemUnavailableError (not root, no loop device, no /dev/fuse, tool missing) before anything starts."""
    for kind in [BASELINE_KIND] + [KINDS[v] for v in values]:
        encfs.check(kind)


class Mounts:
    """The run's mounts (value -> Mount; the baseline under "off"), in a working directory of their own."""

    def __init__(self) -> None:
        self.workdir: Path | None = None
        self.by_value: dict[str, encfs.Mount] = {}

    def create(self, values, size: int, progress=lambda msg: None) -> None:
        self.workdir = encfs.workdir(WORKDIR_PREFIX)  # the server runs as mysql: it traverses to its data
        for value, kind in [("off", BASELINE_KIND)] + [(v, KINDS[v]) for v in values]:
            progress(f"making a {kind} filesystem ({size >> 20} MiB image) for encryption={value}")
            mount = self.by_value[value] = encfs.create(kind, size, self.workdir)
            # `fscrypt encrypt` leaves its directory 0700: the server (mysql) must traverse to its own directory
            mount.path.chmod(0o755)

    def destroy(self) -> list[str]:
        """Destroy every mount (each tried even when one fails); the problems, one line each."""
        problems = []
        for m in self.by_value.values():
            try:
                m.destroy()
            except Exception as e:  # noqa: BLE001 - each mount gets its turn; the caller reports the lines
                problems.append(e.one_line() if hasattr(e, "one_line") else str(e))
        self.by_value.clear()
        if self.workdir is not None:
            try:
                encfs.remove_workdir(self.workdir)
            except OSError as e:
                problems.append(f"{self.workdir}: {e.strerror}")
            self.workdir = None
        return problems


def describe(mount: encfs.Mount) -> dict:
    """What the result file keeps of a mount: paths, kinds, the cipher that runs, O_DIRECT's behaviour."""
    return {**mount.describe(), "cipher": encfs.cipher_info(mount), "o_direct": o_direct(mount.path)}


# -- O_DIRECT: does the page cache stay empty? -------------------------------------------------


def _resident_pages(path: Path) -> tuple[int, int]:
    """(pages of the file in the page cache, pages of the file), by mincore(2) on a mapping of it."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    size = path.stat().st_size
    pages = -(-size // mmap.PAGESIZE)
    vec = (ctypes.c_ubyte * pages)()
    # a private (copy-on-write) mapping: writable for ctypes, and untouched pages are the file's page cache
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) as m:
        buf = (ctypes.c_char * 1).from_buffer(m)  # the mapping's address, nothing read or copied
        try:
            rc = libc.mincore(ctypes.c_void_p(ctypes.addressof(buf)), ctypes.c_size_t(size), vec)
        finally:
            del buf
        if rc != 0:
            raise OSError(ctypes.get_errno(), "mincore")
    return sum(b & 1 for b in vec), pages


def o_direct(directory: Path) -> dict:
    """Write a file, evict it, read it with O_DIRECT and see whether its pages landed in the page cache:
    'direct' (they did not), 'buffered' (the filesystem served O_DIRECT through the page cache: ext4 does for
    encrypted files), 'refused' (the open or read failed: InnoDB then warns and reads buffered)."""
    probe = directory / f".encbench-odirect-{os.getpid()}"
    try:
        with open(probe, "wb") as f:
            f.write(os.urandom(PROBE_BYTES))
        oscache.drop_file(probe)
        try:
            fd = os.open(probe, os.O_RDONLY | os.O_DIRECT)
        except OSError as e:
            return {"behaviour": "refused", "error": e.strerror}
        try:
            buf = mmap.mmap(-1, PROBE_BYTES)  # page-aligned, as O_DIRECT wants
            os.readv(fd, [buf])
        except OSError as e:
            return {"behaviour": "refused", "error": e.strerror}
        finally:
            os.close(fd)
        try:
            cached, pages = _resident_pages(probe)
        except OSError as e:
            return {"behaviour": "unknown", "error": e.strerror}
        return {"behaviour": "buffered" if cached > pages // 2 else "direct", "cached_pages_after_read": cached,
                "pages": pages}
    finally:
        probe.unlink(missing_ok=True)


# -- cache=cold: the OS page cache of the server's files --------------------------------------


def drop_os_cache(datadir: Path, fs: dict) -> int:
    """Evict every file of the data directory, of the cipher directory (gocryptfs) and the image: how many."""
    files = [p for p in datadir.rglob("*") if p.is_file()]
    if fs.get("backing_kind") == "cipher-dir":
        files += [p for p in Path(fs["backing"]).rglob("*") if p.is_file()]
    files.append(Path(fs["image"]))
    return sum(1 for p in files if oscache.drop_file(p))


COLD_METHOD = ("server restarted (no buffer-pool load) and the OS page cache of its files dropped "
               f"({oscache.METHOD}: the data directory, the cipher directory of gocryptfs, the filesystem image)")


def check_cold(variant_value: str, metrics: dict) -> None:
    """The kernel's view: bytes read from storage by the server (and the gocryptfs daemon) during a cold
    operation, at least COLD_STORAGE_SHARE of what InnoDB read; else the page cache served it."""
    innodb = metrics.get("engine_read_bytes", 0)
    kernel = metrics.get("read_bytes")
    if kernel is None or innodb <= 0:
        return
    if kernel < COLD_STORAGE_SHARE * innodb:
        raise CheckFailedError(
            f"encryption={variant_value}, cache=cold but the kernel reports {kernel:.0f} bytes read from storage "
            f"for {innodb:.0f} bytes InnoDB read (/proc/PID/io read_bytes): the OS page cache served the pages",
            hint="the page cache of the server's files was not dropped: is the filesystem one that ignores "
                 "posix_fadvise(DONTNEED)?")


def daemon_pid(mount_point: str) -> int | None:
    """The gocryptfs process serving `mount_point` (its CPU is where gocryptfs decrypts), else None."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and Path(argv[0].decode(errors="replace")).name == "gocryptfs" and \
                mount_point.encode() in argv:
            return int(entry.name)
    return None
