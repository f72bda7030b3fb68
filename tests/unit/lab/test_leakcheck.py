from __future__ import annotations

import os
from pathlib import Path

from encbench.lab import leakcheck


def test_canary_is_random_and_long():
    a, b = leakcheck.new_canary(), leakcheck.new_canary()
    assert a != b and len(a) >= 40


def test_count_in_file_finds_matches_on_chunk_edges(tmp_path: Path):
    needle = b"encbench-canary-0123456789"
    data = bytearray(os.urandom(3 * leakcheck.CHUNK))
    offsets = (0, leakcheck.CHUNK - 5, 2 * leakcheck.CHUNK - 1, 3 * leakcheck.CHUNK - len(needle))
    for off in offsets:
        data[off:off + len(needle)] = needle
    f = tmp_path / "blob"
    f.write_bytes(data)
    assert leakcheck.count_in_file(f, needle) == len(offsets)


def test_scan_reports_leaking_files_with_role_and_fix(tmp_path: Path):
    canary = leakcheck.new_canary()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "clean").write_bytes(os.urandom(1000))
    (tmp_path / "d" / "leaky").write_bytes(b"x" + canary.encode() * 2)
    report = leakcheck.LeakReport("e", "c", len(canary))
    leakcheck.scan([leakcheck.ScanTarget(str(tmp_path / "d"), "data", "turn it on"),
                    leakcheck.ScanTarget(str(tmp_path / "missing"), "log", "")], canary, report)
    assert report.scanned_files == 2
    assert [(Path(f.path).name, f.role, f.occurrences, f.fix) for f in report.findings] == [("leaky", "data", 2, "turn it on")]
    assert report.leaks and report.to_dict()["leaks"] is True
