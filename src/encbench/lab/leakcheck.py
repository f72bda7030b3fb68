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
"""

from __future__ import annotations

import os
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path

CHUNK = 1 << 20


@dataclass
class ScanTarget:
    path: str
    role: str  # "database", "rollback journal", "WAL", "backup", "redo log", ...
    fix: str = ""  # the setting that would close a leak here


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

    @property
    def leaks(self) -> bool:
        return bool(self.findings)

    @property
    def clean(self) -> bool:
        """No leak AND every file looked at: a file that could not be read is never clean."""
        return not self.findings and not self.unchecked

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


def count_in_file(path: Path, needle: bytes) -> int:
    """Occurrences of needle in a file, read in chunks (an occurrence across a chunk edge counts)."""
    count, tail = 0, b""
    with open(path, "rb") as f:
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


def _files(p: Path, report: LeakReport) -> list[Path]:
    """Every regular file under p (p itself when a file); a directory that cannot be listed is `unchecked`."""
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

    def refused(e: OSError) -> None:
        report.unchecked.append(f"{e.filename or p}: {NOT_CHECKED}" if isinstance(e, PermissionError)
                                else f"{e.filename or p}: not checked ({e.strerror or e})")

    out = []
    for root, _dirs, names in os.walk(p, onerror=refused):
        out += [f for f in (Path(root) / n for n in names) if f.is_file()]
    return sorted(out)


def scan(targets: list[ScanTarget], canary: str, report: LeakReport) -> None:
    """Each target's files scanned once (a file under two targets counts for the first: its role)."""
    needle = canary.encode()
    seen: set[str] = set()
    for t in targets:
        for f in _files(Path(t.path), report):
            real = os.path.realpath(f)
            if real in seen:
                continue
            seen.add(real)
            try:
                n = count_in_file(f, needle)
                report.scanned_files += 1
                report.scanned_bytes += f.stat().st_size
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
