"""PostgreSQL's oltp workload, its pure parts (no server): pgbench's logs and output read back, the command and
environment it runs with, the sizes (scale, pool), the command line a restart changes, and the plan: which axis
oltp is measured on, and the one-line errors when a run asks for both or for memory on --dsn."""

from __future__ import annotations

from pathlib import Path

import pytest

from encbench.cli.run import _default_workloads
from encbench.engines import ENGINES
from encbench.engines.postgres import atrest, oltp, pgbench
from encbench.engines.postgres import server as pg_server
from encbench.errors import BadValueError, UsageError
from encbench.vocab.variants import matrix, parse_filters, with_placebo

PG = ENGINES.get("postgres")

PGBENCH_OUT = """pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 3
query mode: simple
number of clients: 1
number of threads: 1
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 4
number of failed transactions: 1 (20.000%)
latency average = 1.790 ms
initial connection time = 4.236 ms
tps = 558.520938 (without initial connection time)
"""


def test_pgbench_log_latencies_and_failed_transactions(tmp_path):
    """-l: one line per transaction, its latency in µs (3rd field), 'failed' for one that did not complete."""
    (tmp_path / "oltp.4242").write_text("0 0 1200 0 1700000000 100\n0 1 800 0 1700000000 200\n0 2 failed 0 1 3\n")
    (tmp_path / "oltp.4242.1").write_text("1 0 3000 0 1700000000 300\n1 1 2000 0 1700000000 400\n")
    (tmp_path / "rt.9").write_text("0 0 99999 0 1 1\n")  # another prefix: not ours
    lat, failed = pgbench.read_log(tmp_path, "oltp")
    assert sorted(lat) == [0.8, 1.2, 2.0, 3.0] and failed == 1
    out = pgbench.oltp_summary(PGBENCH_OUT, tmp_path)
    assert out["transactions"] == 4 and out["failed_transactions"] == 1 and out["pgbench_transactions"] == 4
    assert out["tps"] == 558.520938  # pgbench's own figure, as a DBA reads it
    assert out["latency_p50_ms"] == pytest.approx(1.6) and out["latency_p99_ms"] == pytest.approx(2.97)
    assert pgbench.latencies(tmp_path, "oltp") == lat  # roundtrip's reader skips a failed line too


def test_the_oltp_command_environment_and_driver_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOPTIONS", "-c work_mem=8MB")
    monkeypatch.setenv("PGSSLMODE", "verify-full")  # the variant's TLS wins over the user's
    cmd = pgbench.oltp_command("/usr/bin/pgbench", script="select-only", clients=2, seconds=10.0, vacuum=False,
                               log=True, scratch=tmp_path)
    assert cmd == ["/usr/bin/pgbench", "-b", "select-only", "-c", "2", "-j", "2", "-T", "10", "-n", "-l",
                   f"--log-prefix={tmp_path / 'oltp'}"]
    warm = pgbench.oltp_command("pgbench", script="tpcb-like", clients=1, seconds=5, vacuum=True, log=False,
                                scratch=tmp_path)
    assert "-v" in warm and "-n" not in warm and "-l" not in warm
    env = pgbench.environment({"host": "127.0.0.1", "port": 5433, "password": "s3cr3t"}, {"sslmode": "require"},
                              "encbench-oltp", {"search_path": "encbench_ab", **pgbench.OLTP_SESSION})
    assert env["PGOPTIONS"] == "-c work_mem=8MB -c search_path=encbench_ab -c synchronous_commit=off"
    assert env["PGSSLMODE"] == "require" and env["PGPORT"] == "5433" and env["PGAPPNAME"] == "encbench-oltp"
    line = pgbench.driver_text(cmd, "15.18")
    assert line == "PGOPTIONS='-c synchronous_commit=off' pgbench 15.18 -b select-only -c 2 -j 2 -T 10 -n -l"
    assert str(tmp_path) not in line and "s3cr3t" not in line


def test_pgbench_is_found_only_where_it_can_run(tmp_path, monkeypatch):
    (tmp_path / "pgbench").write_text("")  # there, but not executable
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ENCBENCH_PG_BINDIR", str(tmp_path))
    assert pgbench.find(None, tmp_path) is None
    (tmp_path / "pgbench").chmod(0o755)
    assert pgbench.find(None, tmp_path) == str(tmp_path / "pgbench")


def test_scale_and_disk_room(tmp_path, monkeypatch):
    assert oltp.scale_for(6 << 20) == 1 and oltp.scale_for(48 << 20) == 3 and oltp.scale_for(1 << 30) == 68
    oltp.check_disk(tmp_path, 1, "6MB")
    monkeypatch.setattr(oltp.shutil, "disk_usage", lambda p: type("U", (), {"free": 10 << 20})())
    with pytest.raises(BadValueError, match=r"--size 48MB \(pgbench scale 3\) needs about .* free in .*; 10.* free"):
        oltp.check_disk(tmp_path, 3, "48MB")


def test_the_pool_is_the_share_of_the_data_in_whole_blocks():
    data = 47_210_496
    assert oltp.pool_bytes(0.25, data) == 1441 * 8192  # ceil(25% of the data / 8 kB)
    assert oltp.pool_bytes(1.0, data) >= data * 1.25  # all of it, and room for what the runs add
    assert oltp.pool_bytes(0.001, 100) == 16 * 8192  # never below PostgreSQL's 16 blocks
    assert oltp.share_of("25%") == 0.25 and oltp.share_of("100") == 1.0
    with pytest.raises(BadValueError):
        oltp.share_of("0%")


def test_a_restart_changes_only_the_settings_it_names():
    args = ["/bin/pg/postgres", "-D", "/d", "-c", "port=5", "-c", "shared_buffers=256MB", "-c", "ssl=on",
            "-c", "ssl_ciphers=AES"]
    new = pg_server.with_settings(args, {"shared_buffers": "4096kB", "ssl_ciphers": None, "ssl_min_protocol_version": "TLSv1.2"})
    assert new == ["/bin/pg/postgres", "-D", "/d", "-c", "port=5", "-c", "ssl=on", "-c", "shared_buffers=4096kB",
                   "-c", "ssl_min_protocol_version=TLSv1.2"]
    assert pg_server.setting_of(new, "shared_buffers") == "4096kB" and pg_server.setting_of(new, "ssl_ciphers") is None
    wrapped = pg_server.in_cgroup(args, Path("/sys/fs/cgroup/memory/g"))
    assert wrapped[:4] == ["/bin/sh", "-c", pg_server.CGROUP_WRAPPER, "/sys/fs/cgroup/memory/g/cgroup.procs"]
    assert wrapped[4:] == args  # the shell puts itself in the group and becomes postgres (same pid)
    assert pg_server.setting_of(pg_server.with_settings(wrapped, {"shared_buffers": "1MB"}), "shared_buffers") == "1MB"


def _plan(filters: list[str], workloads=("oltp",), options=None):
    keys = with_placebo(PG.variant_keys)
    parsed = parse_filters(filters, keys)
    keys = PG.plan_keys(keys, parsed, list(workloads), options or {})
    return {w: matrix(keys, parsed, w) for w in workloads}


def test_oltp_varies_tls_by_default_and_encryption_when_named():
    default = _plan([])["oltp"]
    one = {"clients": "1", "script": "tpcb-like"}
    assert default == [{"memory": m, "tls": t, **one} for m in ("100%", "25%") for t in ("off", "on")]
    at_rest = _plan(["encryption=off,fscrypt"])["oltp"]
    assert at_rest == [{"encryption": e, "memory": m, **one} for e in ("off", "fscrypt") for m in ("100%", "25%")]
    assert _plan(["encryption=off,gocryptfs", "tls=off"])["oltp"][0] == {"encryption": "off", "memory": "100%", **one}
    two = _plan(["clients=1,2", "script=select-only"])["oltp"]
    assert {v["clients"] for v in two} == {"1", "2"} and {v["script"] for v in two} == {"select-only"}
    transit = _plan([], workloads=("storm", "roundtrip"))  # the other workloads' defaults are as they were
    assert len(transit["storm"]) == 6 and {v["clients"] for v in transit["roundtrip"]} == {"1", "2"}


def test_oltp_one_axis_at_a_time_and_no_memory_on_dsn():
    with pytest.raises(UsageError, match="workload oltp measures one axis at a time"):
        _plan(["encryption=off,fscrypt", "tls=off,on"])
    _plan(["encryption=off,fscrypt", "tls=off,on"], workloads=("storm", "scan-eq"))  # without oltp: as before
    with pytest.raises(UsageError, match=r"--variant memory=\.\.\. sizes a private server's memory"):
        _plan(["memory=25%"], options={"dsn": "postgresql://h/db"})
    assert _plan([], options={"dsn": "postgresql://h/db"})["oltp"] == [
        {"tls": t, "clients": "1", "script": "tpcb-like"} for t in ("off", "on")]


def test_oltp_table_has_the_axis_its_variants_vary():
    assert [t.axis for t in PG.tables() if t.workloads == ("oltp",)] == ["tls"]
    tables = PG.run_tables(_plan(["encryption=off,fscrypt"]))
    mine = [t for t in tables if "oltp" in (t.workloads or ())]
    assert [t.axis for t in mine] == ["encryption"] and mine[0].baseline == "off"
    assert [t.axis for t in PG.run_tables(_plan([])) if "oltp" in (t.workloads or ())] == ["tls"]
    assert all("oltp" not in (t.workloads or ()) for t in PG.run_tables({}) if t.workloads != ("oltp",))


def test_naming_encryption_alone_still_runs_only_the_at_rest_lab():
    assert _default_workloads(PG, ["encryption=off,fscrypt"]) == list(atrest.AT_REST)
    assert _default_workloads(PG, ["memory=25%"]) == ["oltp"]


def test_the_memory_line_says_what_holds_the_data():
    held = oltp.how_line({"requested": "25%", "pool_bytes": 12 << 20, "data_bytes": 48 << 20, "share": 0.25,
                          "os_cache_held": 1, "server_own_bytes": 40 << 20, "os_cache_allowance_bytes": 4 << 20})
    assert "shared_buffers 12.6 MB (25% of pgbench's 50.3 MB" in held and "memory cgroup" in held
    loose = oltp.how_line({"requested": "25%", "pool_bytes": 1, "data_bytes": 4, "share": 0.25, "os_cache_held": 0,
                           "os_cache_not_held": "a memory cgroup needs root (running as uid 1000)"})
    assert "the OS page cache NOT held (a memory cgroup needs root" in loose


def test_the_limit_covers_what_the_server_holds_when_it_is_set(monkeypatch):
    """The group's own memory can end the warm-up above its median (a gocryptfs daemon's heap): the limit is set on
    the larger of the two, else the kernel cannot reclaim down to it (EBUSY) or kills a process of the server."""

    class Group:
        path = "/sys/fs/cgroup/memory/x"
        limits: list = []

        def own_bytes(self):
            return 50 << 20

        def set_limit(self, limit):
            self.limits.append(limit)
            return limit

    session = object.__new__(oltp.PgOltp)
    session.cluster, session.setup = None, {"oltp": {"servers": {"tls": {"datadir": "/nonexistent"}}}}
    monkeypatch.setattr(oltp.atrest, "drop_os_cache", lambda paths: {"files": 0, "dropped": 0})
    group = Group()
    held = session._hold_os_cache(group, 40 << 20)
    assert group.limits == [(50 << 20) + oltp.OS_CACHE_ALLOWANCE]
    assert held["server_own_bytes"] == 50 << 20
    assert session._hold_os_cache(group, 60 << 20)["os_cache_limit_bytes"] == (60 << 20) + oltp.OS_CACHE_ALLOWANCE


def test_pgbench_failure_names_the_servers_reason_not_only_the_query():
    from encbench.engines.postgres import client

    err = ("dropping old tables...\ncreating tables...\n"
           "pgbench: error: query failed: ERROR:  could not extend file \"base/16384/16397\": No space left on device\n"
           "pgbench: detail: Query was: alter table pgbench_accounts add primary key (aid)\n")
    line = client.tool_error(err)
    assert "No space left on device" in line and "Query was: alter table" in line and "\n" not in line
    assert client.tool_error("a\nb\nlast words\n") == "last words"
    assert client.tool_error("") == "no output"


def test_one_definition_of_a_local_postgres_process_valgrind_aware():
    """oltp's server CPU and the session's probes ask the same question of a pid: one function answers it, and it
    finds a server run under valgrind (--meter instructions) too, which a comm-only check misses."""
    import os
    from encbench.engines.postgres import client, session
    from encbench.engines.postgres import oltp as pg_oltp

    assert session.is_local_postgres is client.is_local_postgres is pg_oltp.is_local_postgres
    assert not client.is_local_postgres(os.getpid())
