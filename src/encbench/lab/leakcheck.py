"""`encbench leak-check`: does plaintext still reach the disk although encryption at rest is on?

A random canary value is written into the encrypted objects and forced to disk (commit,
checkpoint, journal/WAL, a backup); then every file the engine names (data files, logs,
journals, temporary files, the backup output) is scanned for the canary in plaintext.
Each leaking file is reported with the setting that would close it. A control run puts
the same kind of canary where nothing encrypts it, to show the scan would find a leak.
"""

from __future__ import annotations

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

    @property
    def leaks(self) -> bool:
        return bool(self.findings)

    def to_dict(self) -> dict:
        return dict(asdict(self), leaks=self.leaks)


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


def scan(targets: list[ScanTarget], canary: str, report: LeakReport) -> None:
    needle = canary.encode()
    for t in targets:
        p = Path(t.path)
        files = [p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else []
        for f in files:
            try:
                n = count_in_file(f, needle)
                report.scanned_files += 1
                report.scanned_bytes += f.stat().st_size
            except OSError as e:
                report.notes.append(f"could not read {f}: {e.strerror or e}")
                continue
            if n:
                report.findings.append(Finding(str(f), t.role, n, t.fix))
