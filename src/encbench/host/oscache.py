"""Dropping the operating system's page cache for the files a run reads.

posix_fadvise(POSIX_FADV_DONTNEED) evicts one file's clean pages and needs no privilege
(the file is fsynced first so its pages are clean). Whether it really took effect is
checked afterwards from the bytes read from storage (/proc/PID/io read_bytes): on tmpfs
or some overlay file systems nothing is evicted, and the report says so.
"""

from __future__ import annotations

import os
from pathlib import Path

METHOD = "posix_fadvise(DONTNEED) per file"


def drop_file(path: str | os.PathLike, *, sync: bool = True) -> bool:
    """Evict one file from the OS page cache. True when the kernel accepted the request.

    sync=False: no fsync first (the caller synced the whole filesystem already, e.g. with syncfs); a file that
    cannot be opened is then skipped (False) whatever the reason, not only when it is gone."""
    if not hasattr(os, "posix_fadvise"):
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        if sync:
            raise
        return False
    try:
        if sync:
            os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def filesystem_of(path: str | os.PathLike) -> str:
    """The file system type holding `path` (ext4, xfs, tmpfs, overlay...), from /proc/mounts."""
    target = Path(path).resolve()
    best, fstype = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                mnt = parts[1].replace("\\040", " ")
                if (str(target) == mnt or str(target).startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, fstype = mnt, parts[2]
    except OSError:
        pass
    return fstype


def capabilities(data_dir: str | os.PathLike) -> dict:
    fs = filesystem_of(data_dir)
    return {
        "method": METHOD,
        "fadvise_available": hasattr(os, "posix_fadvise"),
        "global_drop_caches_writable": os.access("/proc/sys/vm/drop_caches", os.W_OK),
        "data_dir_filesystem": fs,
        "can_drop": hasattr(os, "posix_fadvise") and fs not in ("tmpfs", "ramfs"),
    }
