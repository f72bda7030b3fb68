from __future__ import annotations

import os
from pathlib import Path

from encbench.vocab import leakcheck


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


MARIADB_TMP_NAMES = ("#sql*", "ib*", "ML*", "MY*")  # engines/mariadb/leakcheck.DIRECTORIES' tmpdir names


def _spy_reads(monkeypatch) -> list[str]:
    """Every file leakcheck.scan opens, recorded."""
    opened: list[str] = []
    real = leakcheck.count_in_file

    def spy(path, needle, **kw):
        opened.append(str(path))
        return real(path, needle, **kw)

    monkeypatch.setattr(leakcheck, "count_in_file", spy)
    return opened


def test_a_shared_tmpdir_is_read_only_for_the_servers_own_files(tmp_path: Path, monkeypatch):
    """Issue 28 item 3: a tmpdir of /tmp holds everyone's files. Only the server's own temporary files (its names,
    its OS user, no symbolic link) are opened; every other entry is counted as skipped, never opened nor walked."""
    canary = leakcheck.new_canary()
    shared = tmp_path / "tmp"
    shared.mkdir()
    own = ["#sql-temptable-1b3-5-1.MAD", "#sql-temptable-1b3-5-1.MAI", "MLa1b2c3", "ibX9y8z7"]
    for name in own:
        (shared / name).write_bytes(b"row " + canary.encode())
    others = [f"report-{i}.txt" for i in range(300)]  # other users' files, some holding the very same text
    for i, name in enumerate(others):
        (shared / name).write_bytes(canary.encode() if i % 7 == 0 else os.urandom(64))
    (shared / "otheruser").mkdir()  # someone's directory: not walked
    for i in range(50):
        (shared / "otheruser" / f"f{i}").write_bytes(canary.encode())
    outside = tmp_path / "elsewhere"
    outside.write_bytes(canary.encode())
    (shared / "#sql-a-link.MAD").symlink_to(outside)  # the server's name, but a link: not the server's file
    skipped = len(others) + 2
    if os.geteuid() == 0:  # the server's name, another user's file
        (shared / "#sql-foreign.MAD").write_bytes(canary.encode())
        os.chown(shared / "#sql-foreign.MAD", 65534, 65534)
        skipped += 1
    opened = _spy_reads(monkeypatch)
    report = leakcheck.LeakReport("mariadb", "c", len(canary))
    leakcheck.scan([leakcheck.ScanTarget(str(shared), "temporary file", "encrypt_tmp_files=ON", MARIADB_TMP_NAMES,
                                         os.geteuid())], canary, report)
    assert sorted(Path(p).name for p in opened) == sorted(own)
    assert report.scanned_files == len(own)
    assert sorted(Path(f.path).name for f in report.findings) == sorted(own)
    assert report.skipped == {str(shared): skipped}
    assert report.to_dict()["skipped"] == {str(shared): skipped}


def test_a_shared_directory_entry_of_the_server_is_walked_whole(tmp_path: Path):
    """A tablespace location: the server's PG_15_* directory read whole, the location's other entries skipped."""
    canary = leakcheck.new_canary()
    (tmp_path / "PG_15_202209061" / "16384").mkdir(parents=True)
    (tmp_path / "PG_15_202209061" / "16384" / "16385").write_bytes(canary.encode())
    (tmp_path / "lost+found").mkdir()
    (tmp_path / "lost+found" / "x").write_bytes(canary.encode())
    report = leakcheck.LeakReport("postgres", "c", len(canary))
    leakcheck.scan([leakcheck.ScanTarget(str(tmp_path), "tablespace t", "", ("PG_*",))], canary, report)
    assert [Path(f.path).name for f in report.findings] == ["16385"] and report.skipped == {str(tmp_path): 1}


def test_the_cap_on_files_and_bytes_leaves_the_rest_unchecked(tmp_path: Path, monkeypatch):
    canary = leakcheck.new_canary()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        for i in range(5):
            (tmp_path / d / f"f{i}").write_bytes(os.urandom(100))
    targets = [leakcheck.ScanTarget(str(tmp_path / d), d, "") for d in ("a", "b")]

    opened = _spy_reads(monkeypatch)
    report = leakcheck.LeakReport("e", "c", len(canary))
    leakcheck.scan(targets, canary, report, max_files=3)
    assert report.scanned_files == 3 and len(opened) == 3
    assert report.unchecked == [f"{tmp_path / 'a'}: 2 files not checked (leak-check reads at most 3 files and "
                                f"64 GB: the cap was reached)",
                                f"{tmp_path / 'b'}: 5 files not checked (leak-check reads at most 3 files and "
                                f"64 GB: the cap was reached)"]
    assert not report.clean

    report = leakcheck.LeakReport("e", "c", len(canary))
    leakcheck.scan(targets, canary, report, max_bytes=250)
    assert report.scanned_files == 2 and report.scanned_bytes == 200
    assert report.unchecked[0].startswith(f"{tmp_path / 'a'}: 3 files not checked (leak-check reads at most "
                                          f"100,000 files and 250 B")
    assert not report.clean


def test_the_caps_are_the_documented_ones():
    doc = (Path(__file__).resolve().parents[3] / "docs" / "leak-check.md").read_text()
    assert f"{leakcheck.MAX_FILES:,} files" in doc and "64 GB" in doc and leakcheck.MAX_BYTES == 64_000_000_000
