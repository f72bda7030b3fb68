"""The one way encbench reads a file a user names (result files, --noise-floor, --baseline, --targets,
--key-file, history --record...), and what kind of thing a path is.

A file to read must be a regular file: a FIFO without a writer would block for ever, a device such as
/dev/zero never ends. `read_regular` looks before it opens (a device is never opened), then opens with
O_NONBLOCK (a FIFO swapped in meanwhile cannot block the open) and checks the open file itself (fstat), refuses
one larger than the caller's bound, and reads at most bound + 1 bytes (a file that grows meanwhile is
refused too). Every refusal is the caller's error class (its exit code) with one line saying what the path is.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

from ..errors import BadValueError, EncbenchError, OutputError
from .units import fmt_bytes

KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))
_CHUNK = 1 << 20


def kind_of(mode: int) -> str | None:
    """What a file of this mode is when it is not a regular file ("a FIFO", "a directory"...), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in KINDS if test(mode)), "not a regular file")


def _refuse(error: type[EncbenchError], message: str, hint: str) -> EncbenchError:
    return error(message, hint=hint) if hint else error(message)


def check_regular(path: str | os.PathLike, *, what: str, error: type[EncbenchError], hint: str = "") -> os.stat_result:
    """The path (symlinks followed) is an existing regular file; its stat. Nothing is opened."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _refuse(error, f"{what} {path} does not exist", hint) from None
    except OSError as e:
        raise _refuse(error, f"cannot read {what} {path}: {e.strerror or e}", hint) from None
    kind = kind_of(st.st_mode)
    if kind:
        raise _refuse(error, f"{what} {path} is {kind}, not a regular file", hint or "give the path of a regular file")
    return st


def read_regular(path: str | os.PathLike, *, what: str, limit: int, error: type[EncbenchError],
                 hint: str = "") -> bytes:
    """The bytes of a regular file of at most `limit` bytes; `error` (one line) for anything else."""
    path = Path(path)
    check_regular(path, what=what, error=error, hint=hint)  # a device is never opened
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _refuse(error, f"{what} {path} does not exist", hint) from None
    except OSError as e:
        raise _refuse(error, f"cannot read {what} {path}: {e.strerror or e}", hint) from None
    try:
        st = os.fstat(fd)  # what was opened, not what the name pointed to a moment ago
        kind = kind_of(st.st_mode)
        if kind:
            raise _refuse(error, f"{what} {path} is {kind}, not a regular file",
                          hint or "give the path of a regular file")
        if st.st_size > limit:
            raise _too_large(error, what, path, st.st_size, limit, hint)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # it grew while being read
            raise _too_large(error, what, path, total, limit, hint)
        return b"".join(chunks)
    except OSError as e:
        raise _refuse(error, f"cannot read {what} {path}: {e.strerror or e}", hint) from None
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike, *, what: str, limit: int, error: type[EncbenchError], hint: str = "",
              encoding_error: type[EncbenchError] | None = None) -> str:
    """read_regular, decoded as UTF-8; bytes that are not UTF-8 are `encoding_error` (default: `error`)."""
    data = read_regular(path, what=what, limit=limit, error=error, hint=hint)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _refuse(encoding_error or error, f"{what} {path} is not UTF-8 text (at byte {e.start})",
                      hint) from None  # the byte itself is not shown: it may be part of a key


def _too_large(error, what: str, path: Path, size: int, limit: int, hint: str) -> EncbenchError:
    return _refuse(error, f"{what} {path} is larger than the {limit:,} bytes ({fmt_bytes(limit)}) encbench reads "
                          f"of one: {size:,} bytes or more", hint)


def check_directory(path: str | os.PathLike, *, what: str, hint: str) -> None:
    """A directory encbench will write in (--data-dir): an existing directory in which this process can create
    an entry (not a file, FIFO, immutable or read-only directory, /proc), or a path whose nearest existing
    ancestor is such a directory (it is created later, by the command; nothing is made here). BadValueError."""
    path = Path(path)
    probe = path
    while True:
        try:
            mode = os.stat(probe).st_mode
            break
        except (FileNotFoundError, NotADirectoryError):  # made later, in the nearest part that exists
            if probe.parent == probe:
                raise BadValueError(f"{what} {path}: no part of it exists", hint=hint) from None
            probe = probe.parent
        except OSError as e:
            raise BadValueError(f"{what} {path} cannot be used: {e.strerror or e}", hint=hint) from None
    if not stat.S_ISDIR(mode):
        where = f"{what} {path}" if probe == path else f"{what} {path}: {probe}"
        raise BadValueError(f"{where} is {kind_of(mode) or 'a regular file'}, not a directory", hint=hint)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".encbench-probe-", dir=probe))
    except OSError as e:
        where = f"{what} {path}" if probe == path else f"{what} {path} (to be made in {probe})"
        raise BadValueError(f"{where}: encbench cannot create anything in it ({e.strerror or e})", hint=hint) from None


def free_bytes(directory: str | os.PathLike) -> int:
    """Bytes an unprivileged writer may still use on the filesystem of directory (or of its nearest existing
    parent, for one to be made)."""
    path = Path(directory)
    while not path.exists() and path.parent != path:
        path = path.parent
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def check_free_space(directory: str | os.PathLike, needed: int, *, what: str, hint: str) -> None:
    """BadValueError (one line: how much is needed, how much is free) before anything is generated."""
    free = free_bytes(directory)
    if needed > free:
        raise BadValueError(f"{what} needs about {fmt_bytes(needed)} free in {directory}; {fmt_bytes(free)} free there",
                            hint=hint)


# -- writing a file encbench makes (the result file, a baseline, a textfile) ----------------------


def _not_regular(path: Path) -> str | None:
    """What the existing path is when it is not a regular file (symlinks are not followed), else None."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"not accessible ({e.strerror or e})"
    return kind_of(mode)


def refuse_special(path: Path, what: str = "output", hint: str = "give a regular file name, e.g. -o results.json") -> None:
    """An existing output that is not a regular file is never replaced (a device node, FIFO or symlink)."""
    kind = _not_regular(Path(path))
    if kind:
        raise OutputError(f"{what} {path} is {kind}: encbench only writes regular files", hint=hint)


def check_writable(path: Path, *, what: str = "output", create_parent: bool = False,
                   hint: str = "choose a writable path with -o") -> None:
    """Fail before any work if the result file cannot be written.

    The target must be a new or a regular file (never a device node, FIFO, socket, symlink or
    directory), in a directory that exists (missing directories are an error, unless
    `create_parent`: encbench's own default directory) and that this process can write.
    """
    path = Path(path)
    refuse_special(path, what, "give a regular file name, e.g. -o results.json" if what == "output" else hint)
    parent = path.parent if str(path.parent) else Path(".")
    if create_parent:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"cannot create the directory {parent}: {e.strerror or e}", hint=hint) from None
    if not parent.is_dir():
        raise OutputError(f"cannot write {what} {path}: the directory {parent} does not exist",
                          hint="create it first, or " + hint)
    try:
        fd, probe = tempfile.mkstemp(prefix=".encbench-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputError(f"cannot write {what} {path}: {e.strerror or e}", hint=hint) from None


def replace_atomic(path: Path, data: str, *, what: str, hint: str) -> None:
    """data to path through a temporary file and a rename; never over a non-regular file."""
    path = Path(path)
    tmp = None
    try:
        refuse_special(path, what)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if str(path.parent) else ".")
        os.fchmod(fd, 0o666 & ~_umask())  # as an ordinary new file, not mkstemp's 0600
        with os.fdopen(fd, "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        refuse_special(path, what)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise OutputError(f"cannot write {what} {path}: {e.strerror or e}", hint=hint) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_private_json(target: str | os.PathLike, data, **dump: object) -> Path:
    """`data` as JSON in `target`, atomically and durably (a reader or a SIGKILL sees the old file or the new one,
    never half of it), readable by its owner only (0600); its directory made 0700 when missing. `dump`: json.dump's
    options (indent, sort_keys)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, **dump)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    return target


def json_records(directory: str | os.PathLike, accept: Callable[[object], bool]) -> list[tuple[Path, dict]]:
    """The records kept one per `*.json` file in `directory` (sorted by name) that read as JSON and that `accept`
    takes, each with its path; an unreadable or refused file is passed over (a reclaimer never acts on it)."""
    directory = Path(directory)
    out = []
    for p in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            r = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and accept(r):
            out.append((p, r))
    return out
