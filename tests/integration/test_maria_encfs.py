"""MariaDB on encrypted filesystems (issue 15 item 4): `--variant encryption=off,fscrypt,gocryptfs` on real
private servers whose data directories sit on real loop-mounted ext4 / fscrypt / gocryptfs mounts.

The run completes; /proc/mounts shows each mount while it runs and each server says its @@datadir is on
its variant's mount; every cold operation is proven cold by InnoDB (pages read) and by the kernel (bytes
read from storage, after the OS page cache was dropped); nothing is left (mounts, loop devices, ledger
records, keys, servers, directories). Then `encbench atrest` builds the cross-engine table from this run
and the SQLite happy-path run. Needs root, loop devices, /dev/fuse, fscrypt, gocryptfs, mariadb-server.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from encbench import errors
from encbench.host.encfs import ledger
from integration_helpers import (HAVE_MARIADB, Result, assert_one_line_error, encbench_command, encfs_unavailable,
                                 orphan_keys, process_command_lines)

pytestmark = pytest.mark.integration
PREFIX = f"{tempfile.gettempdir()}/encbench-maria-fs-"  # the filesystems' directory: in TMPDIR
VALUES = ("off", "fscrypt", "gocryptfs")


def _unavailable() -> str | None:
    if not HAVE_MARIADB:
        return "MariaDB server binaries not installed"
    return encfs_unavailable()


def _proc_mounts() -> set[tuple[str, str]]:
    with open("/proc/mounts") as f:
        return {(parts[1], parts[2]) for parts in (line.split() for line in f) if parts[1].startswith(PREFIX)}


def leftovers() -> dict:
    loops = [bf.read_text().strip() for bf in Path("/sys/block").glob("loop*/loop/backing_file")
             if PREFIX in bf.read_text()]
    return {"mounts": sorted(_proc_mounts()), "loops": loops,
            "records": [r["id"] for r in ledger.records() if r["workdir"].startswith(PREFIX)],
            "orphan_keys": orphan_keys(),
            # every server of a filesystem run names its data directory (on a mount under PREFIX)
            "servers": [c for c in process_command_lines("mariadbd") if f"--datadir={PREFIX}" in c],
            "dirs": sorted(str(p) for p in Path(tempfile.gettempdir()).glob("encbench-maria-fs-*"))}


@pytest.fixture(scope="module")
def fs_run(tmp_path_factory, cli_env):
    """One tiny run over the three values, /proc/mounts watched while it runs."""
    if (reason := _unavailable()) is not None:
        pytest.skip(f"MariaDB on encrypted filesystems unavailable here: {reason}")
    before = leftovers()
    out = tmp_path_factory.mktemp("maria-fs") / "maria-fs.json"
    args = ["run", "--engine", "mariadb", "--size", "2MB", "--runs", "2", "--warmups", "0", "--workload", "scan-eq",
            "--variant", "encryption=" + ",".join(VALUES), "-o", str(out)]
    proc = subprocess.Popen(encbench_command() + args, cwd=tmp_path_factory.mktemp("cwd"), env=cli_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[tuple[str, str]] = set()
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        seen |= _proc_mounts()
        time.sleep(0.2)
    if proc.poll() is None:
        proc.kill()
    stdout, stderr = proc.communicate()
    return Result(args, proc.returncode, stdout, stderr), out, seen, before


def _ops(doc):
    return [(r, op) for r in doc["runs"] if not r.get("warmup") for op in r["operations"]]


def test_run_completes_with_each_server_on_its_variants_mount(fs_run):
    res, out, seen, _ = fs_run
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert doc["status"] == "complete"
    fss = doc["dataset"]["filesystems"]
    assert set(fss) == set(VALUES)
    assert {fss[v]["kind"] for v in VALUES} == {"plain", "fscrypt", "gocryptfs"}
    want_type = {"plain": "ext4", "fscrypt": "ext4", "gocryptfs": "fuse.gocryptfs"}
    for v in VALUES:  # the mount existed, with its type, while the run went on
        assert (fss[v]["mount_point"], want_type[fss[v]["kind"]]) in seen, (v, seen)
    assert fss["fscrypt"]["cipher"]["encrypted"] and fss["fscrypt"]["cipher"]["contents_mode"] == "AES_256_XTS"
    assert fss["gocryptfs"]["cipher"]["encrypted"] and fss["off"]["cipher"]["encrypted"] is False
    for r, _ in _ops(doc):  # the server the session measured says where its data directory is
        v = r["variant"]["encryption"]
        assert r["session"]["datadir"].startswith(fss[v]["path"] + "/"), (v, r["session"]["datadir"])
        assert r["session"]["table"]["encryption_scheme"] == 0  # InnoDB encryption off on every one
    assert doc["dataset"]["instance_settings"]["innodb_encrypt_log"] == "OFF"
    assert any(r["session"].get("fs_daemon_pid") for r, _ in _ops(doc) if r["variant"]["encryption"] == "gocryptfs")
    assert fss["fscrypt"]["o_direct"]["behaviour"] == "buffered"  # why the page cache must be dropped


def test_cold_is_proven_by_innodb_and_by_the_kernel(fs_run):
    res, out, _, _ = fs_run
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    cold = [(r, op) for r, op in _ops(doc) if r["variant"]["cache"] == "cold"]
    assert {r["variant"]["encryption"] for r, _ in cold} == set(VALUES)
    for r, op in cold:
        m = op["metrics"]
        assert op["extra"]["cache_verified"] == 1 and op["cache"]["restart_s"] > 0
        assert "page cache" in op["cache"]["method"] and op["cache"]["os_cache_dropped_files"] > 0
        assert m["pages_read"] >= 50 and m["read_bytes"] >= 0.5 * m["engine_read_bytes"], (r["variant"], m)
    warm = [(r, op) for r, op in _ops(doc) if r["variant"]["cache"] == "warm"]
    assert warm and all(op["metrics"]["pool_misses"] == 0 for _, op in warm)
    shown = {c["contender"] for c in json.loads(
        subprocess.run(encbench_command() + ["show", str(out), "--json"], capture_output=True, text=True,
                       check=True).stdout)["comparisons"]}
    assert {"encryption=fscrypt,cache=cold", "encryption=gocryptfs,cache=warm"} <= shown


def test_fscrypts_per_page_cost_counts_the_kernel_workers(fs_run):
    """fscrypt decrypts in kernel workers: its per-page cost adds their CPU (kworker_cpu_s) on both sides; the
    calibration (AES-CTR, InnoDB's own cipher) is not set beside it."""
    res, out, _, _ = fs_run
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    reads = [d for d in doc["derived"] if d["kind"] == "read" and d["contender"].startswith("encryption=fscrypt,")]
    assert reads and not any(n.startswith("no per-page decrypt cost") for n in doc["notes"]), doc["notes"]
    for d in reads:
        assert d["cpu_basis"] == "cpu_s + kworker_cpu_s" and d["pages_basis"] == "pages_read"
        assert d["kernel_driver"]["driver"] == doc["dataset"]["filesystems"]["fscrypt"]["cipher"]["contents"]["driver"]
        assert "raw_cipher_mb_per_s_per_core" not in d
        if d["per_page_cpu_s"] <= 0:  # at this tiny size the added CPU can come out <= 0: then no speed is claimed
            assert d["decrypt_mb_per_s_per_core"] is None


def test_nothing_is_left(fs_run):
    res, _, _, before = fs_run
    assert res.returncode == 0, str(res)
    assert leftovers() == before


def test_atrest_table_from_a_sqlite_run_and_this_one(fs_run, happy, encbench):
    _, out, _, _ = fs_run
    _, _, sqlite_path = happy
    res = encbench("atrest", str(sqlite_path), str(out), "--json")
    assert res.returncode == 0, str(res)
    report = json.loads(res.stdout)
    assert [o["name"] for o in report["options"]] == ["SQLCipher", "InnoDB on fscrypt", "InnoDB on gocryptfs"]
    row = next(r for r in report["rows"] if (r["workload"], r["cache"]) == ("scan-eq", "cold"))
    assert set(row["cells"]) == {"SQLCipher", "InnoDB on fscrypt", "InnoDB on gocryptfs"}
    assert row["outcome"] in ("cheapest", "inconclusive") and row["ranking"][0] in row["cells"]
    maria = {(c["workload"], c["operation"], c["contender"]): c for c in json.loads(
        encbench("show", str(out), "--json").stdout)["comparisons"] if c["metric"] == "wall_s"}
    cell = row["cells"]["InnoDB on fscrypt"]
    assert cell["ratio"] == maria[("scan-eq", row["operation"], cell["contender"])]["ratio"]
    text = encbench("atrest", str(sqlite_path), str(out))
    assert text.returncode == 0 and "Which at-rest option costs least" in text.stdout, str(text)
    md = encbench("atrest", str(sqlite_path), str(out), "--format", "markdown")
    assert md.returncode == 0 and "| workload | op | cache | SQLCipher |" in md.stdout, str(md)


def test_atrest_refuses_a_file_without_at_rest_comparisons(encbench, tmp_path, happy):
    _, doc, _ = happy
    plain = dict(doc, runs=[r for r in doc["runs"] if r["variant"].get("encryption") == "off"])
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(plain))
    line = assert_one_line_error(encbench("atrest", str(path)), errors.IncomparableError.exit_code)
    assert "no at-rest comparison" in line


@pytest.mark.parametrize("extra", [["--dsn", "mysql://u:p@127.0.0.1:9/x"], ["--keep"]])
def test_filesystem_values_refuse_dsn_and_keep(encbench, extra, tmp_path):
    if not HAVE_MARIADB:
        pytest.skip("MariaDB server binaries not installed")
    res = encbench("run", "--engine", "mariadb", "--workload", "scan-eq", "--variant", "encryption=off,fscrypt",
                   "--variant", "cache=warm", "--runs", "1", *extra, "-o", str(tmp_path / "x.json"))
    line = assert_one_line_error(res, errors.UsageError.exit_code)
    assert "encryption=fscrypt" in line
