"""The encrypted-filesystem layer (host/encfs) on real loop devices, real ext4 images, real fscrypt
and gocryptfs mounts: data goes through, the canary never reaches the image or cipher dir of an
encrypted kind (and does reach plain's), clean-up leaves no mount, loop device, key, image or
record, killed runs (SIGKILL, SIGTERM, SIGINT at random points) are reclaimed by the next run or
`encbench cleanup`, and a mount encbench did not make is never touched.
"""

from __future__ import annotations

import json
import os
import random
import select
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from encbench import errors
from encbench.host import encfs
from encbench.host.encfs import base, fscrypt, ledger
from encbench.lab import runctx
from integration_helpers import Result, assert_one_line_error, encbench_command, orphan_keys

SIZE = 32 << 20
KINDS = ("plain", "fscrypt", "gocryptfs")


def _unavailable(kind: str) -> str | None:
    try:
        encfs.check(kind)
    except errors.FilesystemUnavailableError as e:
        return e.one_line()
    return None


def needs(kind: str):
    reason = _unavailable(kind)
    return pytest.mark.skipif(reason is not None, reason=f"{kind} unavailable here: {reason}")


# -- what is left of a directory's filesystems ---------------------------------------------------


def leftovers(root: Path) -> dict:
    """Everything encfs could leave that belongs to `root`: mounts, loop devices, records, keys, processes, files."""
    prefix = str(root.resolve()) + "/"
    recs = [r for r in ledger.records() if r["workdir"].startswith(prefix)]
    loops = [f"{bf.parent.parent.name}: {bf.read_text().strip()}" for bf in Path("/sys/block").glob("loop*/loop/backing_file")
             if prefix in bf.read_text()]  # what losetup -a lists
    keys = orphan_keys()
    procs = [p.pid for p in psutil.process_iter(["cmdline"])
             if any(prefix in a for a in (p.info.get("cmdline") or [])) and p.pid != os.getpid()]
    return {"mounts": [mp for _, mp, _ in ledger.mounts() if mp.startswith(prefix)], "loops": loops,
            "records": [r["id"] for r in recs], "orphan_keys": keys, "processes": procs,
            "files": sorted(str(p) for p in root.rglob("*"))}


NOTHING = {"mounts": [], "loops": [], "records": [], "orphan_keys": [], "processes": [], "files": []}


def cli(*args: str, timeout: float = 60) -> Result:
    p = subprocess.run(encbench_command() + list(args), capture_output=True, text=True, timeout=timeout, cwd="/")
    return Result(list(args), p.returncode, p.stdout, p.stderr)


# -- each kind: data through, canary hidden (or not, for plain), nothing left --------------------


@pytest.mark.parametrize("kind", KINDS)
def test_mounts_hides_canary_and_leaves_nothing(kind, tmp_path):
    if (reason := _unavailable(kind)) is not None:
        pytest.skip(f"{kind} unavailable here: {reason}")
    canary = f"ENCBENCH-CANARY-{secrets.token_hex(8)}"
    m = encfs.create(kind, SIZE, tmp_path)
    try:
        assert m.path.is_dir() and m.image.is_file()
        assert any(mp == str(m.mount_point) for _, mp, _ in ledger.mounts())
        body = (canary + "\n").encode() * 20000  # ~0.5 MB
        f = m.path / f"{canary}.dat"
        with open(f, "wb") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        assert f.read_bytes() == body
        # a server running as another user (the next slice's postgres) can reach the data directory
        d, path = m.workdir, m.path.relative_to(m.workdir)
        for part in path.parts:
            assert os.stat(d).st_mode & 0o001, f"{d} not traversable by other users"
            d = d / part
        for key in m.key_files:  # generated, 0600, on tmpfs when there is one
            assert key.stat().st_mode & 0o777 == 0o600
            assert key.stat().st_size >= 32
        secrets_now = [k.read_bytes() for k in m.key_files]
        # what is at rest: the image (every kind) and the cipher dir's files (gocryptfs)
        subprocess.run(["sync"], check=True)
        at_rest = m.image.read_bytes()
        if m.backing_kind == "cipher-dir":
            at_rest += b"".join(p.read_bytes() for p in m.backing.rglob("*") if p.is_file())
            at_rest += "".join(p.name for p in m.backing.rglob("*")).encode()
        found = canary.encode() in at_rest
        assert found is (kind == "plain"), f"{kind}: canary {'absent from' if not found else 'found in'} the image"
        # secrets never reach what may be logged or stored
        info = encfs.cipher_info(m)
        said = json.dumps(info) + json.dumps(m.describe()) + repr(m)
        said += "".join(p.read_text() for p in ledger.STATE_DIR.glob("*.json"))
        said += (m.workdir / "gocryptfs.log").read_text() if (m.workdir / "gocryptfs.log").exists() else ""
        said += cli("cleanup", "--json").stdout
        for s in secrets_now:
            for form in (s, s.hex().encode(), s.strip()):
                assert form not in said.encode()
        record = next(r for r in ledger.records() if r["id"] == m.record_id)
    finally:
        m.destroy()
    assert leftovers(tmp_path) == NOTHING
    assert not Path(record["keydir"]).exists() and not m.image.exists()
    assert all(not k.exists() for k in m.key_files)


@needs("fscrypt")
def test_fscrypt_cipher_is_named_from_the_kernel(tmp_path):
    with encfs.create("fscrypt", SIZE, tmp_path) as m:
        info = encfs.cipher_info(m)
    assert info["encrypted"] and info["policy_version"] == "2"
    assert (info["contents_mode"], info["filenames_mode"]) == ("AES_256_XTS", "AES_256_CTS")
    c = info["contents"]
    assert c["name"] == "xts(aes)" and c["driver"]
    # the driver named is the highest-priority self-tested xts(aes) the kernel lists
    entries = [e for e in encfs.cipherinfo.proc_crypto() if e.get("name") == "xts(aes)"]
    assert c["priority"] == max(int(e["priority"]) for e in entries)
    assert c["accelerated"] is ("aesni" in c["driver"] or "vaes" in c["driver"] or "-ce" in c["driver"])
    assert c["driver"] in info["summary"]
    assert leftovers(tmp_path) == NOTHING


@needs("gocryptfs")
def test_gocryptfs_cipher_is_named(tmp_path):
    with encfs.create("gocryptfs", SIZE, tmp_path) as m:
        info = encfs.cipher_info(m)
    assert info["encrypted"] and info["content_encryption"] == "AES-GCM-256"
    assert info["backend"] in ("Go", "OpenSSL") and info["version"]
    assert leftovers(tmp_path) == NOTHING


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:  # gone, or a zombie
        return []


@needs("gocryptfs")
def test_the_gocryptfs_daemon_is_in_encbench_tree_and_its_cpu_encbench_own(tmp_path):
    """issue 31's review: the daemon (run in the foreground, a child of the mounting process in a session of its
    own) stays in encbench's process tree, so a run's context (lab/runctx) counts the CPU it decrypts with as
    encbench's own, never as other processes' load."""
    with encfs.create("gocryptfs", SIZE, tmp_path) as m:
        daemon = next((p for p in psutil.Process().children(recursive=True) if str(m.mount_point) in _cmdline(p)), None)
        assert daemon is not None and daemon.name() == "gocryptfs", "the gocryptfs daemon left the process tree"
        assert os.getsid(daemon.pid) != os.getsid(0)  # a Ctrl-C to encbench's process group leaves it serving
        before, d0 = runctx.own_cpu_s(), sum(daemon.cpu_times()[:2])
        with open(m.path / "f", "wb") as out:  # 8 MiB through the mount: the daemon encrypts it
            for _ in range(8):
                out.write(os.urandom(1 << 20))
            os.fsync(out.fileno())
        d1, after = sum(daemon.cpu_times()[:2]), runctx.own_cpu_s()
        assert after - before >= d1 - d0 - 0.02
    assert not daemon.is_running()  # it exited with its mount and was reaped (no zombie left)
    assert leftovers(tmp_path) == NOTHING


# -- bad input: one line, a distinct exit code -----------------------------------------------------


CREATE_AND_REPORT = """
import sys
from encbench.errors import EncbenchError
from encbench.host import encfs
try:
    encfs.create(sys.argv[1], 32 << 20, sys.argv[2])
except EncbenchError as e:
    print(e.one_line(), file=sys.stderr)
    sys.exit(e.exit_code)
"""


def test_not_root_is_a_one_line_error(tmp_path):
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) missing: cannot drop to another user")
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                        CREATE_AND_REPORT, "plain", "/tmp"], capture_output=True, text=True, timeout=60, cwd="/")
    assert p.returncode == errors.FilesystemUnavailableError.exit_code == 19, p.stderr
    assert "needs root" in p.stderr and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr


def test_cleanup_as_non_root_is_a_one_line_error():
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) missing: cannot drop to another user")
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *encbench_command(),
                        "cleanup"], capture_output=True, text=True, timeout=60, cwd="/")
    msg = assert_one_line_error(Result(["cleanup"], p.returncode, p.stdout, p.stderr),
                                errors.FilesystemUnavailableError.exit_code)
    assert "needs root" in msg


@pytest.mark.parametrize("device,kind", [("loop", "plain"), ("fuse", "gocryptfs")])
def test_missing_device_is_a_one_line_error(device, kind, tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    monkeypatch.setitem(base.DEVICES, device, (str(tmp_path / "no-such-device"), base.DEVICES[device][1]))
    with pytest.raises(errors.FilesystemUnavailableError) as e:
        encfs.create(kind, SIZE, tmp_path)
    assert e.value.exit_code == 19 and device in e.value.one_line() and "\n" not in e.value.one_line()
    assert leftovers(tmp_path) == NOTHING


@pytest.mark.parametrize("kind,tool,package", [("fscrypt", "fscrypt", "fscrypt"), ("gocryptfs", "gocryptfs", "gocryptfs"),
                                               ("gocryptfs", "fusermount3", "fuse3")])
def test_missing_tool_names_the_apt_command(kind, tool, package, tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for t in base.TOOLS:  # every tool but the one taken away, found where it really is
        if t != tool and (real := base.which(t)):
            (bin_dir / t).symlink_to(real)
    monkeypatch.setattr(base, "SYSTEM_PATH", "")
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(errors.FilesystemUnavailableError) as e:
        encfs.create(kind, SIZE, tmp_path)
    assert f"apt-get install {package}" in e.value.one_line() and tool in e.value.one_line()
    shutil.rmtree(bin_dir)
    assert leftovers(tmp_path) == NOTHING


@needs("fscrypt")
def test_filesystem_without_encrypt_feature_is_refused(tmp_path):
    with encfs.create("plain", SIZE, tmp_path) as m:  # ext4 made without -O encrypt
        key = fscrypt.write_key(Path(next(r for r in ledger.records() if r["id"] == m.record_id)["keydir"]))
        target = m.mount_point / "enc"
        target.mkdir()
        with pytest.raises(errors.EncryptionRefusedError) as e:
            fscrypt.encrypt_dir(m.mount_point, target, key, m.workdir)
    assert e.value.exit_code == 20 and "refuses encryption" in e.value.one_line()
    assert "\n" not in e.value.one_line()
    assert leftovers(tmp_path) == NOTHING


@needs("plain")
def test_too_small_is_a_bad_value(tmp_path):
    with pytest.raises(errors.BadValueError):
        encfs.create("plain", 1 << 20, tmp_path)
    assert leftovers(tmp_path) == NOTHING


def test_exit_codes_documented():
    text = (Path(__file__).parents[2] / "docs" / "RESULTS.md").read_text()
    for cls in (errors.FilesystemUnavailableError, errors.EncryptionRefusedError):
        assert cls.exit_code in errors.EXIT_CODES
        assert f"| {cls.exit_code} | `{cls.__name__}` |" in text


# -- killed runs, and what is not ours -------------------------------------------------------------


CHILD = """
import sys
from encbench.host import encfs
from encbench.util import interrupts
interrupts.install()
work, i, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "hold"
kinds = ("plain", "fscrypt", "gocryptfs")
print("ready", flush=True)
while True:
    interrupts.raise_if_stopped()
    m = encfs.create(kinds[i % 3], 32 << 20, work)
    i += 1
    (m.path / "f").write_bytes(b"x" * 65536)
    print("mounted", flush=True)
    if hold:
        interrupts.STOP.wait()
    else:
        interrupts.STOP.wait(0.3)  # a mount held a moment, so a kill can be aimed at one
    m.destroy()
"""


def _child(work: Path, i: int, hold: bool = False) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(work), str(i), "hold" if hold else "loop"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    assert p.stdout.readline().strip() == "ready"
    return p


def _wait_line(p: subprocess.Popen, want: str, timeout: float = 60) -> None:
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    assert ready, f"the child printed nothing in {timeout} s"
    line = p.stdout.readline().strip()
    assert line == want, line


@needs("gocryptfs")
@needs("fscrypt")
def test_interrupted_runs_leave_nothing_after_the_next_cleanup(tmp_path):
    """10 children making and destroying mounts, killed at a random point (SIGKILL, SIGTERM, SIGINT);
    after each, the next clean-up (a new run's create, or `encbench cleanup`) leaves nothing."""
    rng = random.Random(15)
    work, other = tmp_path / "work", tmp_path / "next-run"
    work.mkdir()
    other.mkdir()
    sigs = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT]
    killed_with_mounts = 0
    for i in range(10):
        p = _child(work, i)
        if i < 5:  # anywhere: while making, using or destroying a mount, or between two
            time.sleep(rng.uniform(0.05, 1.0))
        else:  # aimed: just after a mount is made (a slow machine may not have made one in 1 s)
            _wait_line(p, "mounted")
        killed_with_mounts += bool(leftovers(work)["mounts"])
        p.send_signal(sigs[i % 3])
        p.communicate(timeout=60)
        if i % 2:
            res = cli("cleanup")
            assert res.returncode == 0, str(res)
        else:
            with encfs.create("plain", SIZE, other):  # the next run reclaims before it makes anything
                pass
        assert leftovers(work) == NOTHING, f"after run {i} ({sigs[i % 3].name})"
    assert leftovers(other) == NOTHING
    assert killed_with_mounts >= 3  # the kills did land while something was mounted


@needs("plain")
def test_cleanup_never_touches_a_mount_encbench_did_not_make(tmp_path):
    """A loop mount made by hand, and a live run's mount, survive `encbench cleanup`; a dead run's is removed."""
    img, point = tmp_path / "hand.img", tmp_path / "hand"
    point.mkdir()
    with open(img, "wb") as f:
        f.truncate(SIZE)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True)
    subprocess.run(["mount", "-o", "loop", str(img), str(point)], check=True)
    dead = _child(tmp_path, 0, hold=True)
    try:
        assert dead.stdout.readline().strip() == "mounted"
        dead.kill()
        dead.wait(timeout=30)
        with encfs.create("plain", SIZE, tmp_path) as live:  # reclaims the dead one itself: make another dead one
            dead2 = _child(tmp_path, 2, hold=True)
            assert dead2.stdout.readline().strip() == "mounted"
            dead2.kill()
            dead2.wait(timeout=30)
            stale = [r["id"] for r in ledger.records() if r["owner"]["pid"] == dead2.pid]
            assert len(stale) == 1
            res = cli("cleanup", "--json")
            assert res.returncode == 0, str(res)
            out = json.loads(res.stdout)
            assert [r["id"] for r in out["reclaimed"]] == stale and out["reclaimed"][0]["removed"]
            assert live.record_id in out["live_kept"]
            mounted = [mp for _, mp, _ in ledger.mounts()]
            assert str(point) in mounted and str(live.mount_point) in mounted
            (live.path / "still-here").write_text("yes")
        assert str(point) in [mp for _, mp, _ in ledger.mounts()]
    finally:
        subprocess.run(["umount", str(point)], check=False)
    assert leftovers(tmp_path)["files"] == sorted([str(img), str(point)])
    img.unlink()
    point.rmdir()
    assert leftovers(tmp_path) == NOTHING


@needs("plain")
def test_a_foreign_mount_inside_a_dead_runs_filesystem_is_left_alone(tmp_path):
    """Someone mounted a tmpfs inside a dead run's filesystem: cleanup unmounts nothing above it (a lazy unmount
    would take it along), deletes nothing, says so (exit 19), and finishes once it is gone."""
    dead = _child(tmp_path, 0, hold=True)
    assert dead.stdout.readline().strip() == "mounted"
    rec = next(r for r in ledger.records() if r["owner"]["pid"] == dead.pid)
    dead.kill()
    dead.wait(timeout=30)
    foreign = Path(rec["workdir"]) / "mnt" / "data" / "foreign"
    foreign.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(foreign)], check=True)
    try:
        (foreign / "theirs").write_text("keep me")
        res = cli("cleanup")
        msg = assert_one_line_error(res, errors.FilesystemUnavailableError.exit_code)
        assert "could not be removed" in msg and "not encbench's" in res.stdout, str(res)
        assert (foreign / "theirs").read_text() == "keep me"
        assert [r["id"] for r in ledger.records() if r["id"] == rec["id"]] == [rec["id"]]
    finally:
        subprocess.run(["umount", str(foreign)], check=False)
    res = cli("cleanup")
    assert res.returncode == 0 and "1 removed" in res.stdout, str(res)
    assert leftovers(tmp_path) == NOTHING


def test_cleanup_with_nothing_to_do():
    res = cli("cleanup")
    assert res.returncode == 0 and "removed" in res.stdout, str(res)
