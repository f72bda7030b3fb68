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


def _scan_as(uid: int, target: Path, canary: str) -> dict:
    """leakcheck.scan in a forked child that runs as `uid` (root reads everything: the check needs another user)."""
    import json

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to uid, scan, send the report back, exit without pytest's teardown
        code = 1
        try:
            os.close(r)
            if uid != os.geteuid():
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            report = leakcheck.LeakReport("e", "c", len(canary))
            leakcheck.scan([leakcheck.ScanTarget(str(target), "data", "fix")], canary, report)
            os.write(w, json.dumps(report.to_dict()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0
    return json.loads(data)


def test_unreadable_files_are_not_checked_never_clean():
    """A file or directory this process may not read is listed as 'not checked (permission)', and the report is
    not clean. Run as an unprivileged user (root reads everything), in a real child process."""
    import shutil
    import tempfile

    canary = leakcheck.new_canary()
    root = Path(tempfile.mkdtemp(prefix="encbench-test-unreadable-"))
    try:
        root.chmod(0o755)
        (root / "readable").write_bytes(os.urandom(100))
        (root / "readable").chmod(0o644)
        (root / "secret").write_bytes(canary.encode())
        (root / "secret").chmod(0o600)
        (root / "closed").mkdir(mode=0o700)
        (root / "closed" / "inside").write_bytes(canary.encode())
        if os.geteuid() == 0:
            for p in (root / "secret", root / "closed", root / "closed" / "inside"):
                os.chown(p, 0, 0)
        report = _scan_as(65534 if os.geteuid() == 0 else os.geteuid(), root, canary)  # 65534: nobody
        assert report["scanned_files"] == 1 and report["findings"] == []
        assert sorted(report["unchecked"]) == [f"{root / 'closed'}: not checked (permission)",
                                               f"{root / 'secret'}: not checked (permission)"]
        assert report["clean"] is False and report["leaks"] is False
    finally:
        shutil.rmtree(root)


def test_a_file_under_two_targets_is_scanned_once(tmp_path: Path):
    canary = leakcheck.new_canary()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "binlog.000001").write_bytes(canary.encode())
    report = leakcheck.LeakReport("e", "c", len(canary))
    leakcheck.scan([leakcheck.ScanTarget(str(tmp_path / "logs"), "binary log", "encrypt it"),
                    leakcheck.ScanTarget(str(tmp_path), "data directory", "")], canary, report)
    assert report.scanned_files == 1 and [(f.role, f.fix) for f in report.findings] == [("binary log", "encrypt it")]
    assert report.clean is False and report.to_dict()["clean"] is False
