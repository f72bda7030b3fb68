"""PostgreSQL at rest on real plain / fscrypt / gocryptfs mounts (host/encfs): one private cluster per
`encryption` value with its data directory on the variant's filesystem, the same rows, cold and warm proven
per operation from the server's block reads and the loop device's, the raw cipher beside it, the leak-check
on the real image and cipher dir, and nothing left behind (mounts, loop devices, servers, keys).

Tiny data (--size 4MB), --runs 2 --warmups 0 (no verdict is asserted): about a minute and a half on 2 cores.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from encbench import errors
from encbench.engines import ENGINES
from encbench.engines.postgres import atrest
from encbench.host.encfs import ledger
from integration_helpers import assert_one_line_error, encbench_command, needs_pg, encfs_unavailable

SMALL = ("--size", "4MB", "--runs", "2", "--warmups", "0")


def _unavailable() -> str | None:
    return encfs_unavailable()


needs_mounts = pytest.mark.skipif(_unavailable() is not None, reason=f"encrypted filesystems unavailable: {_unavailable()}")


def _left_behind(root: Path) -> dict:
    """Mounts, loop devices, ledger records and server processes that belong to `root`."""
    prefix = str(root.resolve()) + "/"
    loops = [bf.parent.parent.name for bf in Path("/sys/block").glob("loop*/loop/backing_file")
             if prefix in bf.read_text()]
    procs = [p.pid for p in psutil.process_iter(["cmdline"])
             if any(prefix in a for a in (p.info.get("cmdline") or [])) and p.pid != os.getpid()]
    return {"mounts": [mp for _, mp, _ in ledger.mounts() if mp.startswith(prefix)], "loops": loops,
            "records": [r["id"] for r in ledger.records() if r["workdir"].startswith(prefix)], "procs": procs}


NOTHING = {"mounts": [], "loops": [], "records": [], "procs": []}


@pytest.fixture
def open_dir():
    """A directory the server (user postgres) can reach: pytest's own are private to root (0700)."""
    d = Path(tempfile.mkdtemp(prefix="encbench-pgat-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def scans(encbench, tmp_path_factory):
    """One run of scan-eq over the three filesystems, cold and warm (shared by the tests that read it)."""
    if _unavailable():
        pytest.skip(_unavailable())
    data = Path(tempfile.mkdtemp(prefix="encbench-pgat-", dir="/tmp"))
    data.chmod(0o755)
    out = tmp_path_factory.mktemp("pgat-out") / "scan.json"
    res = encbench("run", "--engine", "postgres", "--workload", "scan-eq", "--variant",
                   "encryption=off,fscrypt,gocryptfs", *SMALL, "--data-dir", str(data), "-o", str(out), timeout=400)
    try:
        assert res.returncode == 0, str(res)
        yield json.loads(out.read_text()), data, out
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _ops(doc: dict):
    for run in doc["runs"]:
        for op in run.get("operations", []):
            yield run, op


@needs_pg
@needs_mounts
def test_each_encryption_value_has_its_own_cluster_on_its_own_filesystem(scans):
    doc, data, _ = scans
    clusters = doc["dataset"]["clusters"]
    assert set(clusters) == {"off", "fscrypt", "gocryptfs"}
    assert {e: c["kind"] for e, c in clusters.items()} == {"off": "plain", "fscrypt": "fscrypt",
                                                            "gocryptfs": "gocryptfs"}
    for enc, c in clusters.items():
        assert c["datadir"].startswith(c["mount_point"] + "/"), c  # data, WAL, pgsql_tmp on the mount
        assert "scratch-" not in c["mount_point"]  # outside util/leftovers' scratch directories
        assert c["device"] and c["device"].startswith("loop")
        assert c["cipher"]["encrypted"] == (enc != "off")
    assert clusters["fscrypt"]["cipher"]["contents"]["driver"]  # the kernel driver, named
    assert "AES-GCM" in clusters["gocryptfs"]["cipher"]["content_encryption"]
    assert clusters["gocryptfs"]["daemon_pid"]  # its CPU is counted with the backend's
    assert not any("password" in json.dumps(c) for c in clusters.values())  # no secret in the result file
    assert doc["dataset"]["rows"] > 0 and doc["dataset"]["page_size"] == 8192
    # the same rows in every cluster: every scan found the same row
    assert len({op["extra"]["rows_returned"] for _, op in _ops(doc)}) == 1
    assert _left_behind(data) == NOTHING


@needs_pg
@needs_mounts
def test_cold_and_warm_are_proven_per_operation(scans):
    doc, _, _ = scans
    seen = set()
    for run, op in _ops(doc):
        state = run["variant"]["cache"]
        seen.add((run["variant"]["encryption"], state))
        assert op["extra"]["cache_verified"] == 1
        m = op["metrics"]
        if state == "cold":
            assert m["pages_read"] > 0 and m["read_time_us"] > 0 and m["device_read_bytes"] > 0, m
            assert op["cache"]["restart_s"] > 0 and op["cache"]["os_cache_dropped"] is True
        else:
            assert m["read_time_us"] == 0 and m["device_read_bytes"] == 0, m
            assert op["cache"]["resident_blocks"] >= op["cache"]["relation_blocks"] > 0
    assert seen == {(e, c) for e in ("off", "fscrypt", "gocryptfs") for c in ("cold", "warm")}


@needs_pg
@needs_mounts
def test_the_raw_cipher_is_beside_the_per_page_cost(scans, encbench):
    doc, _, out = scans
    raw = doc["calibration"]["raw_cipher"]["8192"]
    assert "XTS" in raw["cipher"] and raw["mb_per_s_per_core"] > 0 and raw["mb_per_s_ci"]
    shown = encbench("show", str(out), "--json")
    assert shown.returncode == 0, str(shown)
    analysis = json.loads(shown.stdout)
    per_page = [d for d in analysis["derived"] if d["kind"] == "read"]
    # gocryptfs decrypts in its daemon, whose CPU is the server side's; fscrypt in kernel workers, whose CPU the
    # kworkers probe measures (Engine.kernel_worker_crypto): both get a per-page cost
    assert {("fscrypt" in d["contender"], "gocryptfs" in d["contender"]) for d in per_page} == {(True, False),
                                                                                              (False, True)}
    assert not any(n.startswith("no per-page decrypt cost") for n in analysis["notes"]), analysis["notes"]
    for d in per_page:  # 8 KB pages, the cold table blocks read as the basis
        assert d["page_size"] == 8192 and d["pages_basis"] == "pages_read" and d["pages_read"] > 0
        assert "cache=cold" in d["contender"]
    for d in (d for d in per_page if "gocryptfs" in d["contender"]):  # AES-GCM: the XTS calibration is not its
        assert "cpu_basis" not in d and "raw_cipher_mb_per_s_per_core" not in d
    for d in (d for d in per_page if "fscrypt" in d["contender"]):
        assert d["cpu_basis"] == "cpu_s + kworker_cpu_s" and d["kworkers_exited"] >= 0
        assert d["kernel_driver"]["driver"] == doc["dataset"]["clusters"]["fscrypt"]["cipher"]["contents"]["driver"]
        where = f"{d['workload']}/{d['operation']} {d['contender']}: "
        # at this tiny size the added CPU can come out <= 0: then no speed is claimed (the note says so)
        if d["per_page_cpu_s"] > 0:
            assert d["raw_cipher_mb_per_s_per_core"] == raw["mb_per_s_per_core"]  # the userspace XTS beside
            if d["decrypt_mb_per_s_per_core"] <= raw["mb_per_s_per_core"]:
                assert d["percent_of_raw_cipher"] > 0
            else:  # a tiny added CPU reads as faster than the raw cipher: flagged, never printed as a percentage
                assert "percent_of_raw_cipher" not in d and "not possible" in d["raw_cipher_flag"]
            sentence = next(n for n in analysis["notes"] if n.startswith(where))
            assert (f"fscrypt decrypts at {d['decrypt_mb_per_s_per_core']:,.0f} MB/s per core" in sentence
                    and f"through {d['kernel_driver']['driver']}" in sentence
                    and "userspace AES-256-XTS on this CPU: " in sentence), sentence
        else:
            assert d["decrypt_mb_per_s_per_core"] is None and "percent_of_raw_cipher" not in d
            assert any(n.startswith(where + "no decrypt speed claimed") for n in analysis["notes"])
    for _, op in (x for x in _ops(doc) if x[0]["variant"]["encryption"] in ("off", "fscrypt")):
        assert op["metrics"]["kworker_cpu_s"] >= 0 and op["metrics"]["host_cpu_s"] >= 0  # the kworkers probe ran


def test_the_checks_fail_when_the_state_is_not_the_one_asked():
    """What check_operation refuses (the runs above show what it accepts)."""
    cold, warm = {"cache": "cold"}, {"cache": "warm", "relation_blocks": 10, "resident_blocks": 10}
    ok = {"pages_read": 5, "read_time_us": 40, "device_read_bytes": 8192, "pool_misses": 5}
    assert atrest.check_operation({}, ok, cold) == {"cache_verified": 1}
    with pytest.raises(errors.CheckFailedError, match="device under the mount"):  # the OS cache was not dropped
        atrest.check_operation({}, dict(ok, device_read_bytes=0), cold)
    with pytest.raises(errors.CheckFailedError, match="none of the table's blocks"):
        atrest.check_operation({}, dict(ok, pages_read=0), cold)
    with pytest.raises(errors.CheckFailedError, match="cache=warm"):
        atrest.check_operation({}, dict(ok, device_read_bytes=0), warm)
    with pytest.raises(errors.CheckFailedError, match="only 9 of the table's 10 blocks"):
        atrest.check_operation({}, dict(ok, read_time_us=0), dict(warm, resident_blocks=9))
    # an insert's new blocks count as reads in PostgreSQL 15 (blks_read) but take no read time
    assert atrest.check_operation({}, dict(ok, read_time_us=0, device_read_bytes=0), warm) == {"cache_verified": 1}
    # VACUUM FULL reads back the file it wrote past shared_buffers
    assert atrest.check_operation({}, ok, warm, rewrote=True) == {"cache_verified": 1}


@needs_pg
@needs_mounts
def test_dml_rebuild_and_backup_on_gocryptfs(encbench, tmp_path, open_dir):
    out = tmp_path / "r.json"
    res = encbench("run", "--engine", "postgres", "--workload", "dml", "--workload", "rebuild", "--workload",
                   "backup", "--variant", "encryption=gocryptfs", "--variant", "cache=warm", "--size", "4MB", "--runs",
                   "1", "--warmups", "0",
                   "--data-dir", str(open_dir), "-o", str(out), timeout=400)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    ops = {(run["workload"], op["operation"], run["variant"].get("cache")): op for run, op in _ops(doc)}  # cold: above
    assert {k[:2] for k in ops} == {("dml", "select"), ("dml", "insert"), ("dml", "update"), ("dml", "delete"),
                                    ("rebuild", "vacuum-full"), ("rebuild", "reindex"), ("backup", "to-file"),
                                    ("backup", "to-file+zstd")}
    assert ops[("dml", "insert", "warm")]["extra"]["rows_affected"] > 0
    for (wl, _, cache), op in ops.items():
        if cache:
            assert op["extra"]["cache_verified"] == 1
    backup = ops[("backup", "to-file", None)]["extra"]
    # pg_basebackup reads through the mount: the copy outside it is plaintext (it holds the marker row)
    assert backup["backup_encrypted"] == 0 and backup["backup_outside_mount"] == 1
    assert backup["output_bytes"] > 0
    assert _left_behind(open_dir) == NOTHING


@needs_pg
@needs_mounts
def test_a_data_dir_the_server_cannot_reach_is_one_line(encbench, tmp_path):
    """pytest's directories are 0700 root: the server (postgres) could not reach a mount made there."""
    res = encbench("run", "--engine", "postgres", "--workload", "scan-eq", "--variant", "encryption=off",
                   "--data-dir", str(tmp_path / "d"), "-o", str(tmp_path / "r.json"))
    line = assert_one_line_error(res, errors.BadValueError.exit_code)
    assert "cannot reach" in line and "mode 700" in line
    assert _left_behind(tmp_path) == NOTHING


@needs_pg
@needs_mounts
@pytest.mark.parametrize("kind", ["fscrypt", "gocryptfs"])
def test_leak_check_on_the_filesystem(encbench, kind):
    res = encbench("leak-check", "--engine", "postgres", "--setting", f"encryption={kind}", "--json", timeout=200)
    assert res.returncode == 13, str(res)  # leaks: outside the mount
    report = json.loads(res.stdout)
    roles = {f["role"] for f in report["findings"]}
    assert not any("image" in r or "cipher directory" in r for r in roles), roles  # absent at rest below
    assert report["control"]["occurrences"] > 0  # and present through the mount: the scan could see it
    assert {"pg_dump output (outside the mount)", "server log and files outside the mount"} <= roles
    assert all(f["fix"] for f in report["findings"])


@needs_pg
@needs_mounts
def test_leak_check_sees_the_canary_in_a_plain_image(encbench):
    res = encbench("leak-check", "--engine", "postgres", "--setting", "encryption=off", "--json", timeout=200)
    assert res.returncode == 13, str(res)
    roles = {f["role"] for f in json.loads(res.stdout)["findings"]}
    assert "plain: the ext4 image under the mount" in roles


def test_an_external_server_refuses_the_encryption_key(encbench, tmp_path):
    res = encbench("run", "--engine", "postgres", "--dsn", "postgresql://u:secretpw@127.0.0.1:1/db", "--workload",
                   "scan-eq", "--variant", "encryption=fscrypt", "--data-dir", str(tmp_path), "-o",
                   str(tmp_path / "r.json"))
    line = assert_one_line_error(res, errors.UsageError.exit_code)
    assert "--dsn" in line and "secretpw" not in res.stderr


@needs_pg
def test_not_root_is_one_line(open_dir):
    """As another user (nobody): the encfs layer's error, exit 19, before anything is made."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to another user")
    tmp_path = open_dir
    os.chmod(tmp_path, 0o777)
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    proc = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *encbench_command(),
                           "run", "--engine", "postgres", "--workload", "scan-eq", "--variant", "encryption=fscrypt",
                           "--data-dir", str(tmp_path / "d"), "-o", str(tmp_path / "r.json")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    from integration_helpers import Result

    res = Result([], proc.returncode, proc.stdout, proc.stderr)
    if "Permission denied" in proc.stderr and "encbench" not in proc.stderr:
        pytest.skip(f"the virtualenv is not readable by nobody: {proc.stderr.strip()[:200]}")
    line = assert_one_line_error(res, errors.FilesystemUnavailableError.exit_code)
    assert "root" in line


def test_the_encryption_key_picks_the_at_rest_workloads_without_workload():
    from encbench.cli.run import _default_workloads

    pg = ENGINES.get("postgres")
    assert _default_workloads(pg, ["encryption=off,fscrypt"]) == list(atrest.AT_REST)
    assert _default_workloads(pg, ["tls=off,on"]) == list(pg.default_workloads)
    assert _default_workloads(pg, []) == list(pg.default_workloads)


@needs_pg
@needs_mounts
def test_a_killed_run_leaves_nothing_the_next_cleanup_does_not_remove(tmp_path, open_dir):
    """kill -9 of the runner while its clusters run on their mounts: `encbench cleanup` stops the servers
    (processes using the mount) and removes the mounts, loop devices, keys and images."""
    data = open_dir
    proc = subprocess.Popen([*encbench_command(), "run", "--engine", "postgres", "--workload", "scan-eq", "--variant",
                             "encryption=off,fscrypt,gocryptfs", *SMALL, "--data-dir", str(data), "-o",
                             str(tmp_path / "r.json")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # until a postmaster runs on one of its mounts
            if any("postgres" in " ".join(p) for p in _cmdlines(data)):
                break
            time.sleep(0.2)
        else:
            pytest.fail("no server started on a mount within 120 s")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.5)
    done = subprocess.run([*encbench_command(), "cleanup"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _left_behind(data) == NOTHING
    assert not list(data.glob("encfs-*"))


def _cmdlines(root: Path) -> list[list[str]]:
    prefix = str(root.resolve()) + "/"
    return [p.info["cmdline"] for p in psutil.process_iter(["cmdline"])
            if any(prefix in a for a in (p.info.get("cmdline") or []))]
