"""PostgreSQL's oltp workload end to end: pgbench's built-in scripts run by pgbench on tables `pgbench -i` made,
on oltp's own private server (TLS off/on, proven per pgbench connection from pg_stat_ssl), on the at-rest
clusters (encryption=off,fscrypt,gocryptfs: root, real mounts) and on a --dsn server; the memory share held
(shared_buffers and, as root, the server's memory cgroup) and proven by the page reads per transaction: none to
speak of at 100%, some at 25%; bad input in one line; a failing pgbench's own line kept with the runs before
it; nothing left behind (server, cgroup, mount, loop device).

--quick data (pgbench scale 1, 16 MB), --runs 2 (the at-rest clusters: 64 MB, --runs 1), seconds=2: each run module
about a minute on 2 cores.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from encbench.engines.postgres import atrest
from encbench.engines.postgres import server as pg_server
from encbench.host import memcg
from encbench.host.encfs import ledger
from encbench.util import leftovers
from integration_helpers import assert_one_line_error, encfs_unavailable, external_pg, needs_pg

pytestmark = pytest.mark.integration

QUICK = ("--workload", "oltp", "--quick", "--runs", "2", "--warmups", "0", "--param", "seconds=2")
EXTRAS = ("transactions", "tps", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "driver", "memory_pool_bytes",
          "memory_data_bytes", "memory_share", "memory_how", "memory_requested")
ROOT = os.geteuid() == 0


def _ops(doc: dict):
    for run in doc["runs"]:
        for op in run["operations"]:
            yield run, op


def _processes_in(directory: str) -> list[int]:
    return [p.pid for p in leftovers.server_processes(Path(directory))]


def _groups_left(doc: dict) -> list[str]:
    paths = [s.get("cgroup") for s in doc["dataset"]["oltp"]["servers"].values()]
    return [p for p in paths if p and Path(p).exists()] + [
        r["path"] for _, r in memcg.records() if r["path"] in paths]


def _reads_per_transaction(op: dict) -> float:
    return op["metrics"]["pages_read"] / op["extra"]["transactions"]


def _check_runs(doc: dict) -> None:
    """Every run: the contract's extras, the memory share held (pool read back, reads per transaction)."""
    for run, op in _ops(doc):
        e, m = op["extra"], op["metrics"]
        assert op["operation"] == "mix" and set(EXTRAS) <= set(e), (run["variant_label"], sorted(e))
        assert e["transactions"] > 0 and e["tps"] > 0 and 0 < e["latency_p50_ms"] <= e["latency_p95_ms"] <= e["latency_p99_ms"]
        assert e["driver"].startswith("PGOPTIONS='-c synchronous_commit=off' pgbench "), e["driver"]
        assert "-b tpcb-like -c 1 -j 1 -T 2 -n -l" in e["driver"] and "password" not in json.dumps(e)
        assert m["cpu_s"] > 0 and m["client_cpu_s"] > 0 and m["pages_written"] >= 0 and m["wal_bytes"] > 0
        assert e["memory_held"] == 1, (run["variant_label"], e.get("memory_not_held"))
        share = float(run["variant"]["memory"].rstrip("%")) / 100
        if share >= 1:
            assert e["memory_share"] >= 1 and _reads_per_transaction(op) <= 0.01, (run["variant_label"], m)
        else:
            assert abs(e["memory_share"] - share) <= 0.25 * share and _reads_per_transaction(op) > 0.1, \
                (run["variant_label"], e["memory_share"], m)
        if ROOT:  # the OS page cache held too: a few MB (gocryptfs: its plaintext and cipher pages), never all the
            # data (unheld, it keeps the data and the WAL written since the start)
            assert e["memory_os_cache_held"] == 1 and e["memory_os_cache_limit_bytes"] > e["memory_server_own_bytes"]
            assert e["os_file_cache_bytes"] < e["memory_data_bytes"] and e["oom_kills"] == 0, e


@pytest.fixture(scope="module")
def tls_run(encbench, tmp_path_factory):
    out = tmp_path_factory.mktemp("oltp") / "tls.json"
    res = encbench("run", "--engine", "postgres", *QUICK, "-o", str(out), timeout=400)
    assert res.returncode == 0, str(res)
    return res, json.loads(out.read_text())


@needs_pg
def test_tls_oltp_on_its_private_server_held_and_proven(tls_run):
    res, doc = tls_run
    assert doc["status"] == "complete"
    assert {r["variant_label"] for r in doc["runs"]} == {f"memory={m},tls={t},clients=1,script=tpcb-like"
                                                         for m in ("100%", "25%") for t in ("off", "on")}
    oltp_table = [t for t in doc["engine"]["tables"] if "oltp" in (t["workloads"] or [])]
    assert [(t["axis"], t["axis_baseline"]) for t in oltp_table] == [("tls", "off")]
    assert doc["dataset"]["oltp"]["scale"] == 1 and doc["dataset"]["oltp"]["servers"]["tls"]["data_bytes"] > 10 << 20
    _check_runs(doc)
    for run, op in _ops(doc):  # TLS as asked, on every pgbench connection (the run fails on any mismatch)
        assert op["extra"]["tls_checked_connections"] >= 1
        assert run["session"]["tls"]["ssl"] is (run["variant"]["tls"] == "on")
        assert run["server_config"]["shared_buffers"].endswith("kB")
        # pgbench's traffic counted on the server's sockets (issue 31): tpcb-like's 7 statements, a request and a
        # result each (less what pgbench sent after the last look before it closed; more where a result spills: 13
        # to 20), and their bytes: at least the statements' text (about 300 B), at most a few kB per transaction
        e = op["extra"]
        per = e["server_net_messages"] / e["transactions"], e["server_net_bytes"] / e["transactions"]
        assert 13 <= per[0] <= 20 and 300 <= per[1] <= 3000, (run["variant_label"], per, e.get("server_net_why"))
    assert {c["metric"] for c in doc["comparisons"] if c["workload"] == "oltp"} >= {"tps", "cpu_us_per_transaction"}


@needs_pg
def test_tls_oltp_leaves_nothing_behind(tls_run):
    _, doc = tls_run
    datadir = doc["dataset"]["oltp"]["servers"]["tls"]["datadir"]
    assert not Path(datadir).exists() and _processes_in(str(Path(datadir).parent)) == []
    assert _groups_left(doc) == []


def _left_behind(root: Path) -> dict:
    prefix = str(root.resolve()) + "/"
    loops = [bf.parent.parent.name for bf in Path("/sys/block").glob("loop*/loop/backing_file")
             if prefix in bf.read_text()]
    procs = [p.pid for p in psutil.process_iter(["cmdline"])
             if any(prefix in a for a in (p.info.get("cmdline") or [])) and p.pid != os.getpid()]
    return {"mounts": [mp for _, mp, _ in ledger.mounts() if mp.startswith(prefix)], "loops": loops,
            "records": [r["id"] for r in ledger.records() if r["workdir"].startswith(prefix)], "procs": procs}


@pytest.fixture(scope="module")
def at_rest_run(encbench, tmp_path_factory):
    why = encfs_unavailable()
    if why:
        pytest.skip(f"encrypted filesystems unavailable: {why}")
    need, free = atrest.disk_needed(64 << 20, 3), shutil.disk_usage("/tmp").free
    if free < need:  # the run itself refuses in one line (a unit test checks that line)
        pytest.skip(f"three 64 MB clusters need about {need >> 20} MB in /tmp; {free >> 20} MB free")
    data = Path(tempfile.mkdtemp(prefix="encbench-pgoltp-", dir="/tmp"))
    data.chmod(0o755)  # the server (user postgres) reaches its mount below
    out = tmp_path_factory.mktemp("oltp") / "atrest.json"
    try:
        # 64 MB (pgbench scale 4): the group's limit (its own memory, the gocryptfs daemon's heap swing and the
        # allowance) then stays well below the data, as on a real server
        # one run per variant: the tests read each run's own proof (memory held, page reads, the loop device's
        # reads), no comparison (the TLS run above has two per variant, for its comparisons)
        res = encbench("run", "--engine", "postgres", *QUICK, "--runs", "1", "--size", "64MB",
                       "--variant", "encryption=off,fscrypt,gocryptfs", "--data-dir", str(data), "-o", str(out),
                       timeout=900)
        assert res.returncode == 0, str(res)
        yield json.loads(out.read_text()), data
    finally:
        shutil.rmtree(data, ignore_errors=True)


@needs_pg
def test_at_rest_oltp_on_each_filesystem_held_and_proven(at_rest_run):
    doc, _ = at_rest_run
    assert {r["variant"]["encryption"] for r in doc["runs"]} == {"off", "fscrypt", "gocryptfs"}
    assert all("tls" not in r["variant"] for r in doc["runs"])  # one axis: the filesystem
    oltp_table = [t for t in doc["engine"]["tables"] if "oltp" in (t["workloads"] or [])]
    assert [(t["axis"], t["axis_baseline"]) for t in oltp_table] == [("encryption", "off")]
    clusters = doc["dataset"]["clusters"]
    assert set(doc["dataset"]["oltp"]["servers"]) == {"off", "fscrypt", "gocryptfs"}
    assert clusters["fscrypt"]["cipher"]["encrypted"] and not clusters["off"]["cipher"]["encrypted"]
    _check_runs(doc)
    for run, op in _ops(doc):  # the kernel's view: the loop device under the mount read at 25%
        m = op["metrics"]
        if run["variant"]["memory"] == "25%":
            assert m["device_read_bytes"] > 0, (run["variant_label"], m)
        if run["variant"]["encryption"] == "gocryptfs":  # its daemon ran in the server's memory cgroup
            assert clusters["gocryptfs"]["daemon_pid"]


@needs_pg
def test_at_rest_oltp_leaves_nothing_behind(at_rest_run):
    doc, data = at_rest_run
    assert _left_behind(data) == {"mounts": [], "loops": [], "records": [], "procs": []}
    assert _groups_left(doc) == []


@needs_pg
def test_oltp_on_a_dsn_server_records_the_share_as_found(encbench, tmp_path):
    with external_pg() as server:
        dsn = f"postgresql://postgres:{server.password}@127.0.0.1:{server.port}/postgres"
        out = tmp_path / "dsn.json"
        res = encbench("run", "--engine", "postgres", *QUICK, "--dsn", dsn, "-o", str(out), timeout=300)
        assert res.returncode == 0, str(res)
        doc = json.loads(out.read_text())
        assert {r["variant_label"] for r in doc["runs"]} == {f"tls={t},clients=1,script=tpcb-like" for t in ("off", "on")}
        for run, op in _ops(doc):
            e = op["extra"]
            assert e["memory_requested"] == "as found" and e["memory_external"] == 1 and "memory_held" not in e
            assert e["memory_pool_bytes"] == 256 << 20 and e["memory_share"] > 1  # as the server has it
            assert "--dsn" in e["memory_how"] and e["transactions"] > 0
        assert server.password not in out.read_text()
        import psycopg

        with psycopg.connect(**server.conninfo(), sslmode="disable") as c:  # left as found: our schema dropped
            assert c.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'encbench%'").fetchone()[0] == 0


@needs_pg
@pytest.mark.parametrize("variant, code, words", [
    ("script=tpcc", 3, "unknown value 'tpcc' for variant key 'script'"),
    ("memory=0%", 4, "variant memory='0%' is not a share of the data in (0, 100]%"),
    ("memory=150%", 4, "is not a share of the data"),
])
def test_bad_oltp_values_in_one_line(encbench, tmp_path, variant, code, words):
    res = encbench("run", "--engine", "postgres", *QUICK, "--variant", variant, "-o", str(tmp_path / "x.json"))
    assert words in assert_one_line_error(res, code)
    assert not (tmp_path / "x.json").exists()


@needs_pg
def test_both_axes_or_memory_on_dsn_are_refused_before_anything_starts(encbench, tmp_path):
    both = encbench("run", "--engine", "postgres", *QUICK, "--variant", "encryption=off,fscrypt", "--variant",
                    "tls=off,on", "-o", str(tmp_path / "x.json"))
    assert "workload oltp measures one axis at a time" in assert_one_line_error(both, 2)
    dsn = encbench("run", "--engine", "postgres", *QUICK, "--variant", "memory=25%", "--dsn",
                   "postgresql://u:pw@127.0.0.1:1/db", "-o", str(tmp_path / "x.json"))
    line = assert_one_line_error(dsn, 2)
    assert "--variant memory=... sizes a private server's memory" in line and "pw" not in line
    assert not (tmp_path / "x.json").exists()


@needs_pg
def test_pgbench_missing_is_exit_10_with_the_install_line(encbench, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = pg_server.find_bindir()
    for tool in ("initdb", "postgres"):  # the server's binaries, without pgbench
        (bindir / tool).symlink_to(real / tool)
    res = encbench("run", "--engine", "postgres", *QUICK, "-o", str(tmp_path / "x.json"),
                   env={"ENCBENCH_PG_BINDIR": str(bindir), "PATH": str(tmp_path / "nothing")})
    line = assert_one_line_error(res, 10)
    assert "pgbench not found" in line and "apt-get install postgresql" in line


FAILING_PGBENCH = """#!/bin/sh
# the real pgbench, but the second timed run (the one that logs: -l) fails as a broken server would make it
case " $* " in
  *" -l "*) n=$(cat "{count}" 2>/dev/null || echo 0); echo $((n + 1)) > "{count}"
            if [ "$n" -ge 1 ]; then
              echo "pgbench: error: connection to server at 127.0.0.1 failed: password=hunter2 is wrong" >&2
              exit 1
            fi ;;
esac
exec {real} "$@"
"""


@pytest.fixture
def open_bin():
    """A directory the server's user (postgres, when root) may reach: pytest's own are private to root."""
    d = Path(tempfile.mkdtemp(prefix="encbench-pgbin-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@needs_pg
def test_a_failing_pgbench_keeps_its_line_and_the_runs_before(encbench, tmp_path, open_bin):
    bindir = open_bin
    real = pg_server.find_bindir()
    for tool in ("initdb", "postgres"):
        (bindir / tool).symlink_to(real / tool)
    fake = bindir / "pgbench"
    fake.write_text(FAILING_PGBENCH.format(count=tmp_path / "count", real=real / "pgbench"))
    fake.chmod(0o755)
    out = tmp_path / "x.json"
    res = encbench("run", "--engine", "postgres", *QUICK, "--variant", "memory=25%", "--variant", "tls=off", "-o",
                   str(out), env={"ENCBENCH_PG_BINDIR": str(bindir)}, timeout=300)
    line = assert_one_line_error(res, 11)
    assert "pgbench failed: pgbench: error: connection to server at 127.0.0.1 failed" in line
    assert "hunter2" not in line and f"results so far kept in {out}" in line
    doc = json.loads(out.read_text())
    assert doc["status"] == "failed" and len(doc["runs"]) == 1 and "hunter2" not in out.read_text()
    datadir = doc["dataset"]["oltp"]["servers"]["tls"]["datadir"]
    assert not Path(datadir).exists() and _groups_left(doc) == []


KILLED = """
import sys, time
from encbench.engines.postgres import server as pg_server
from encbench.engines.local.server import unprivileged_user
from encbench.host import memcg
group = memcg.create("pg-test")
user = unprivileged_user("postgres")
if user:
    group.allow(user[1], user[2])
server = pg_server.start(cgroup=group.path)
print(server.root, group.path, flush=True)
time.sleep(3600)
"""


@needs_pg
@pytest.mark.skipif(not ROOT or memcg.unavailable() is not None, reason=f"memory cgroups: {memcg.unavailable()}")
def test_cleanup_removes_a_killed_runs_server_and_its_memory_cgroup(encbench):
    child = subprocess.Popen([sys.executable, "-c", KILLED], stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline().split()
        assert line, f"the child did not start a server (exit {child.poll()})"
        root, group = Path(line[0]), Path(line[1])
        assert memcg.Group(group).pids(), "the server does not run in its group"
        child.kill()  # SIGKILL: no clean-up, the server and its group outlive the run
        child.wait()
        assert group.exists() and _processes_in(str(root))
        res = encbench("cleanup")
        assert res.returncode == 0, str(res)
        assert f"memory cgroup {group} (dead pid {child.pid}): removed" in res.stdout, str(res)
        assert not group.exists() and not root.exists() and _processes_in(str(root)) == []
        assert str(group) not in [r["path"] for _, r in memcg.records()]
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()
