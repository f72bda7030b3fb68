"""`encbench leak-check`: does plaintext still reach the disk although encryption at rest is on?

A random canary value is written into the encrypted objects and forced to disk (commit,
checkpoint, journal/WAL, a backup); then every file the engine names (data files, logs,
journals, temporary files, the backup output) is scanned for the canary in plaintext.
Each leaking file is reported with the setting that would close it. A control run puts
the same kind of canary where nothing encrypts it, to show the scan would find a leak.

An existing server (--dsn) is checked the same way, in a schema of encbench's own: the steps that
forced the canary to disk are named (`steps`), and a file or directory this process may not read
is listed as "not checked (permission)" (`unchecked`), never counted as clean. `--posture` is the
static answer from the server's settings alone (PostureReport): no canary, no file read.

encbench reads only files it created or the server's own, never a shared directory's other entries: a
ScanTarget with `names` is a directory others may share (MariaDB's tmpdir is /tmp by default), whose entries
are read only when their names are the server's (and, with `owner`, owned by the server's OS user); the others
are counted in `skipped`, never opened. A scan reads at most MAX_FILES files and MAX_BYTES bytes; what the cap
leaves unread is `unchecked` (the report is then not clean).
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from ..util.units import fmt_bytes

CHUNK = 1 << 20
MAX_FILES = 100_000  # files read by one leak-check, at most (docs/leak-check.md)
MAX_BYTES = 64_000_000_000  # bytes read by one leak-check, at most: 64 GB (docs/leak-check.md)


@dataclass
class ScanTarget:
    path: str
    role: str  # "database", "rollback journal", "WAL", "backup", "redo log", ...
    fix: str = ""  # the setting that would close a leak here
    # a directory others may share: only its entries whose names match one of these patterns are the server's
    # own (read: a file, or a directory walked whole); the others are skipped unopened and counted. () : every
    # file under path is the server's or encbench's own (a data directory, a backup encbench wrote).
    names: tuple[str, ...] = ()
    owner: int | None = None  # with names: an entry is the server's only when this uid (its OS user) owns it


@dataclass
class Finding:
    path: str
    role: str
    occurrences: int
    fix: str


@dataclass
class LeakReport:
    engine: str
    configuration: str
    canary_len: int
    scanned_files: int = 0
    scanned_bytes: int = 0
    findings: list[Finding] = field(default_factory=list)
    control: dict | None = None  # the control run: where the canary was expected and found
    notes: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # how the canary was forced to disk, each step named
    unchecked: list[str] = field(default_factory=list)  # "PATH: not checked (permission)"
    skipped: dict[str, int] = field(default_factory=dict)  # shared directory -> its entries not the server's own

    @property
    def leaks(self) -> bool:
        return bool(self.findings)

    @property
    def clean(self) -> bool:
        """No leak AND every file looked at: a file that could not be read is never clean."""
        return not self.findings and not self.unchecked

    def occurrences_by_role(self) -> dict[str, int]:
        """The canary's occurrences in plaintext per kind of file (role), sorted by role."""
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.role] = out.get(f.role, 0) + f.occurrences
        return dict(sorted(out.items()))

    def to_dict(self) -> dict:
        return dict(asdict(self), leaks=self.leaks, clean=self.clean)


@dataclass
class PostureItem:
    what: str  # "binary log", "redo log", "tables", ...
    state: str  # what the server says, e.g. "encrypt_binlog=OFF (log_bin=ON)"
    plaintext: bool | None  # True: plaintext at rest; False: encrypted; None: not applicable / unknown
    fix: str = ""  # the setting that would encrypt it


@dataclass
class PostureReport:
    engine: str
    target: str  # host:port, never a password
    items: list[PostureItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def plaintext(self) -> bool:
        return any(i.plaintext for i in self.items)

    def to_dict(self) -> dict:
        return dict(asdict(self), plaintext=self.plaintext)


def new_canary() -> str:
    """Random and long enough never to appear by chance; ASCII so that it is stored as is."""
    return "encbench-canary-" + secrets.token_hex(16)


def count_in_file(path: Path, needle: bytes, *, follow: bool = True) -> int:
    """Occurrences of needle in a file, read in chunks (an occurrence across a chunk edge counts). follow=False:
    a symbolic link is refused (ELOOP), for an entry of a directory others share."""
    count, tail = 0, b""
    fd = os.open(path, os.O_RDONLY | (0 if follow else os.O_NOFOLLOW) | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0  # a FIFO or device put in place of the file: never read
        while True:
            block = f.read(CHUNK)
            if not block:
                return count
            data = tail + block
            count += data.count(needle)
            # keep the last len-1 bytes (too short to hold a whole match, so nothing is counted
            # twice): a match straddling the edge is found with the next block
            tail = data[-(len(needle) - 1):] if len(needle) > 1 else b""


NOT_CHECKED = "not checked (permission)"


def _refused(p: Path, report: LeakReport):
    def refused(e: OSError) -> None:
        report.unchecked.append(f"{e.filename or p}: {NOT_CHECKED}" if isinstance(e, PermissionError)
                                else f"{e.filename or p}: not checked ({e.strerror or e})")
    return refused


def _walk(p: Path, report: LeakReport) -> list[Path]:
    """Every regular file under the directory p (symbolic links to directories not followed)."""
    out = []
    for root, _dirs, names in os.walk(p, onerror=_refused(p, report)):
        out += [f for f in (Path(root) / n for n in names) if f.is_file()]
    return out


def is_own(entry: os.DirEntry, t: ScanTarget) -> bool:
    """An entry of a shared directory is the server's own: its name is one of the server's, it is no symbolic
    link, and (t.owner) the server's OS user owns it. Only the entry's name and inode are looked at."""
    if not any(fnmatchcase(entry.name, pattern) for pattern in t.names):
        return False
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return False  # gone meanwhile
    if stat.S_ISLNK(st.st_mode):
        return False
    return t.owner is None or st.st_uid == t.owner


def _own_entries(t: ScanTarget, report: LeakReport) -> list[Path]:
    """The server's own files in a directory others may share: its matching entries (a directory walked whole);
    the others only counted in report.skipped, never opened nor walked."""
    p, out, skipped = Path(t.path), [], 0
    try:
        with os.scandir(p) as entries:
            for entry in entries:
                if not is_own(entry, t):
                    skipped += 1
                elif entry.is_dir(follow_symlinks=False):
                    out += _walk(Path(entry.path), report)
                elif entry.is_file(follow_symlinks=False):
                    out.append(Path(entry.path))
    except OSError as e:
        _refused(p, report)(e)
    if skipped:
        key = str(p)
        report.skipped[key] = report.skipped.get(key, 0) + skipped
    return out


def _files(t: ScanTarget, report: LeakReport) -> list[Path]:
    """The files of a target to read: p itself when a file; every regular file under a directory of the server's
    own; the server's entries of a shared one (t.names). A directory that cannot be listed is `unchecked`."""
    p = Path(t.path)
    try:
        if p.is_file():
            return [p]
        if not p.is_dir():
            if not os.access(p.parent, os.X_OK) and p.parent.exists():
                report.unchecked.append(f"{p}: {NOT_CHECKED}")
            return []
    except PermissionError:
        report.unchecked.append(f"{p}: {NOT_CHECKED}")
        return []
    return sorted(_own_entries(t, report) if t.names else _walk(p, report))


def target_text(t: ScanTarget) -> str:
    """A target as a step names it: its role, its path, and, in a shared directory, the server's names read."""
    return f"{t.role} {t.path}" + (f" (only the server's own: {' '.join(t.names)})" if t.names else "")


def cap_text(max_files: int, max_bytes: int) -> str:
    return f"leak-check reads at most {max_files:,} files and {fmt_bytes(max_bytes)}"


def scan(targets: list[ScanTarget], canary: str, report: LeakReport, *, max_files: int = MAX_FILES,
         max_bytes: int = MAX_BYTES) -> None:
    """Each target's files scanned once (a file under two targets counts for the first: its role), in order,
    until max_files files or max_bytes bytes are read: the files left then are `unchecked`, one line a target."""
    needle = canary.encode()
    seen: set[str] = set()
    capped = False
    for t in targets:
        unread = 0
        for f in _files(t, report):
            real = os.path.realpath(f)
            if real in seen:
                continue
            seen.add(real)
            try:
                size = f.stat().st_size
                if capped or report.scanned_files >= max_files or report.scanned_bytes + size > max_bytes:
                    capped, unread = True, unread + 1
                    continue
                n = count_in_file(f, needle, follow=not t.names)
                report.scanned_files += 1
                report.scanned_bytes += size
            except PermissionError:
                report.unchecked.append(f"{f}: {NOT_CHECKED}")
                continue
            except FileNotFoundError:
                continue  # a temporary file gone between listing and reading: nothing left to leak
            except OSError as e:
                report.notes.append(f"could not read {f}: {e.strerror or e}")
                continue
            if n:
                report.findings.append(Finding(str(f), t.role, n, t.fix))
        if unread:
            report.unchecked.append(f"{t.path}: {unread:,} files not checked ({cap_text(max_files, max_bytes)}: "
                                    "the cap was reached)")
