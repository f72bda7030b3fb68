"""issue 31's review: the gocryptfs daemon encbench mounts is a child of the mounting process (run in the foreground,
in a session of its own), so a run's context (lab/runctx.own_cpu) counts its CPU, the decryption the server asks of
it, as encbench's own, not as other processes' load. A fake gocryptfs stands in for the real one (the integration
test mounts the real one): left to itself it daemonizes as gocryptfs does (a child in a new session, the parent
exits); with -fg it serves in place, burning CPU until told to stop."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from encbench.errors import FilesystemUnavailableError
from encbench.host.encfs import gocryptfs
from encbench.lab import runctx
from encbench.util import proc

FAKE = """#!{python}
import os, subprocess, sys, time
args = sys.argv[1:]
if os.environ.get("FAKE_GOCRYPTFS_FAIL"):
    print("fuse: device not found, try 'modprobe fuse' first", file=sys.stderr)
    sys.exit(7)
if "-fg" not in args:  # gocryptfs's default: the daemon forks away in a session of its own, the parent exits
    subprocess.Popen([sys.executable, __file__, "-fg", *args], start_new_session=True, stdin=subprocess.DEVNULL)
    sys.exit(0)
stop, end = os.path.join(os.path.dirname(__file__), "stop"), time.monotonic() + 30
while not os.path.exists(stop) and time.monotonic() < end:  # serving: CPU spent decrypting
    sum(range(20000))
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    exe = tmp_path / "gocryptfs"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(0o755)
    point = tmp_path / "mnt"
    monkeypatch.setattr(gocryptfs.base, "which", lambda tool: str(exe) if tool == "gocryptfs" else None)
    monkeypatch.setattr(gocryptfs.ledger, "mounts", lambda: [(str(tmp_path / "cipher"), str(point), "fuse.gocryptfs")])
    yield exe, point
    (tmp_path / "stop").touch()
    for p in _daemons(exe):  # whatever a failed assertion left serving
        try:
            p.kill()
            p.wait(10)
        except psutil.Error:
            pass


def _daemons(exe: Path) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if str(exe) in (p.info.get("cmdline") or [])
            and "-fg" in (p.info.get("cmdline") or [])]


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def test_the_gocryptfs_daemon_stays_in_encbench_tree_and_its_cpu_counts_as_encbench_own(fake, tmp_path):
    exe, point = fake
    child = gocryptfs._mount(tmp_path / "cipher", point, tmp_path / "pass", tmp_path / "gocryptfs.log")
    deadline = time.monotonic() + 10
    while not _daemons(exe) and time.monotonic() < deadline:
        time.sleep(0.02)
    (daemon,) = _daemons(exe)
    assert daemon.pid in {p.pid for p in psutil.Process().children(recursive=True)}, "the daemon left the tree"
    assert os.getsid(daemon.pid) != os.getsid(0)  # a Ctrl-C to encbench's process group does not stop it
    own0, d0 = runctx.own_cpu_s(), _cpu(daemon)
    while _cpu(daemon) - d0 < 0.2 and time.monotonic() < deadline + 20:  # the daemon decrypts; encbench waits
        time.sleep(0.02)
    d1, own1 = _cpu(daemon), runctx.own_cpu_s()
    assert d1 - d0 >= 0.2
    # what the daemon used in the window is in encbench's own CPU (one 10 ms tick each side of truncation)
    assert own1 - own0 >= d1 - d0 - 0.02
    (tmp_path / "stop").touch()
    proc.kill_and_reap(child, 10)  # the Mount's destroy reaps it so (host/encfs._destroyer)


def test_a_daemon_that_exits_before_its_mount_shows_is_a_one_line_error_naming_its_log(fake, tmp_path, monkeypatch):
    _, point = fake
    monkeypatch.setattr(gocryptfs.ledger, "mounts", lambda: [])
    monkeypatch.setenv("FAKE_GOCRYPTFS_FAIL", "1")
    log = tmp_path / "gocryptfs.log"
    with pytest.raises(FilesystemUnavailableError, match=r"gocryptfs mount failed \(exit 7\): fuse: device not found"):
        gocryptfs._mount(tmp_path / "cipher", point, tmp_path / "pass", log)


def test_a_mount_that_never_shows_stops_its_daemon_and_says_so(fake, tmp_path, monkeypatch):
    exe, point = fake
    monkeypatch.setattr(gocryptfs.ledger, "mounts", lambda: [])
    monkeypatch.setattr(gocryptfs, "MOUNT_TIMEOUT_S", 0.3)
    with pytest.raises(FilesystemUnavailableError, match="not mounted after 0.3 s"):
        gocryptfs._mount(tmp_path / "cipher", point, tmp_path / "pass", tmp_path / "gocryptfs.log")
    assert not _daemons(exe)  # killed and reaped, not left serving nothing
