"""An external server's full state is the same before and after encbench, whatever happens to the run.

Real servers started here on 127.0.0.1 and addressed by --dsn, as a DBA's would be:
PostgreSQL (SHOW ALL, pg_file_settings, the bytes of postgresql.auto.conf, roles, schemas,
extensions) after (a) a successful --allow-reconfigure run, (b) 10 runs interrupted at seeded
random moments, (c) a run whose server is killed mid-run (restarted, then the next run
restores what the journal says); MariaDB (SHOW GLOBAL VARIABLES, schemas) after a plain run
and 10 interrupted runs. Excluded as moving on their own: see server_state.IGNORED_MARIADB
(the clock, GTID/binlog positions, per-session seeds); nothing is excluded on PostgreSQL.

A run SIGKILLed on one spelling of the server's address (127.0.0.1, localhost, the machine's
hostname) is restored by the next run on another, before it measures (issue 21, item 3).
"""

from __future__ import annotations

import hashlib
import json
import random
import signal
import socket
import time

import pytest

from encbench.engines.mariadb import server as maria_server
from integration_helpers import external_maria, external_pg
from server_state import diff, journals, kill_pg, maria_state, pg_state, start_encbench, start_paused

pytestmark = pytest.mark.integration

SEED = 11
INTERRUPTED_RUNS = 10
TINY = ["--workload", "connect", "--quick", "--runs", "1", "--warmups", "0", "--param", "connections=2"]
PG_FORCED = ["--allow-reconfigure", "--variant", "tls=off,TLSv1.2:ECDHE-RSA-AES256-SHA384", *TINY]
PG_SSL = ("ssl_ciphers", "ssl_min_protocol_version", "ssl_max_protocol_version")
# (the run SIGKILLed on, the next run on): loopback address, "localhost", the machine's hostname
SPELLINGS = [("127.0.0.1", "localhost"), ("localhost", socket.gethostname())]


@pytest.fixture(scope="module")
def pg():
    with external_pg() as server:
        yield server


@pytest.fixture(scope="module")
def maria():
    with external_maria(tls=True) as server:
        yield server


def _pg_dsn(server, host: str = "127.0.0.1") -> str:
    return f"postgresql://postgres:{server.password}@{host}:{server.port}/postgres"


def _maria_dsn(server, host: str = "127.0.0.1") -> str:
    return f"mysql://{maria_server.BENCH_USER}:{server.handle.password}@{host}:{server.handle.port}/"


def _interrupt_at(args, cli_env, cwd, delay: float, sig: int) -> tuple[int, str]:
    proc = start_encbench(args, cli_env, cwd)
    try:
        time.sleep(delay)
        if sig and proc.poll() is None:
            proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stderr


def _duration(args, cli_env, tmp_path) -> float:
    """One uninterrupted run of the same command: how long a run takes on this machine right now."""
    t0 = time.monotonic()
    code, stderr = _interrupt_at(args + ["-o", str(tmp_path / "timed.json")], cli_env, tmp_path, 0.0, 0)
    assert code == 0, stderr
    return time.monotonic() - t0


def _interrupted_runs(args, cli_env, tmp_path, snapshot, server) -> list[tuple]:
    """10 runs, each signalled at a seeded random fraction of a measured uninterrupted run's length."""
    rng = random.Random(SEED)
    before = snapshot(server)
    length = _duration(args, cli_env, tmp_path)
    assert diff(before, snapshot(server)) == {}
    outcomes = []
    for i in range(INTERRUPTED_RUNS):
        delay = round(rng.uniform(0.05, 0.95) * length, 3)
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        code, stderr = _interrupt_at(args + ["-o", str(tmp_path / f"i{i}.json")], cli_env, tmp_path, delay, sig)
        assert code in (0, 130), (delay, sig, code, stderr)  # 0: it ended before the signal
        assert "Traceback" not in stderr, stderr
        assert diff(before, snapshot(server)) == {}, (delay, sig, stderr)
        assert journals(cli_env) == [], (delay, sig)
        outcomes.append((delay, sig, code))
    assert sum(code == 130 for _, _, code in outcomes) >= INTERRUPTED_RUNS // 2, (length, outcomes)
    return outcomes


def test_pg_successful_reconfigure_run(encbench, tmp_path, pg, cli_env):
    before = pg_state(pg)
    res = encbench("run", "--engine", "postgres", "--dsn", _pg_dsn(pg), *PG_FORCED, "--runs", "2",
                   "-o", str(tmp_path / "a.json"))
    assert res.returncode == 0, str(res)
    assert diff(before, pg_state(pg)) == {}
    assert journals(cli_env) == []


def test_pg_interrupted_at_random_moments(tmp_path, pg, cli_env):
    # a run takes ~3-6 s here: start-up, prepare, ALTER SYSTEM, two measured runs, restore
    _interrupted_runs(["run", "--engine", "postgres", "--dsn", _pg_dsn(pg), *PG_FORCED], cli_env, tmp_path,
                      pg_state, pg)


def test_pg_server_killed_mid_run_is_restored_by_the_next_run(encbench, tmp_path, pg, cli_env):
    before = pg_state(pg)
    # one ALTER SYSTEM done, the rest and the reload to come
    proc = start_paused(["run", "--engine", "postgres", "--dsn", _pg_dsn(pg), *PG_FORCED,
                         "-o", str(tmp_path / "c.json")], cli_env, tmp_path)
    try:
        kill_pg(pg)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode not in (0, 1), stderr
    assert "Traceback" not in stderr and "could not restore" in stderr, stderr
    assert len(journals(cli_env)) == 1
    pg.restart()  # the half-made change is in postgresql.auto.conf: the server starts with it
    assert diff(before, pg_state(pg)) != {}
    res = encbench("run", "--engine", "postgres", "--dsn", _pg_dsn(pg), *TINY, "--variant", "tls=off",
                   "-o", str(tmp_path / "n.json"))
    assert res.returncode == 0, str(res)
    assert "restored what an earlier encbench run left" in res.stderr, str(res)
    assert diff(before, pg_state(pg)) == {}
    assert journals(cli_env) == []


def test_maria_plain_run(encbench, tmp_path, maria):
    before = maria_state(maria)
    res = encbench("run", "--engine", "mariadb", "--dsn", _maria_dsn(maria), *TINY, "--variant", "tls=off,on",
                   "-o", str(tmp_path / "m.json"))
    assert res.returncode == 0, str(res)
    assert diff(before, maria_state(maria)) == {}


def test_maria_interrupted_at_random_moments(tmp_path, maria, cli_env):
    _interrupted_runs(["run", "--engine", "mariadb", "--dsn", _maria_dsn(maria), *TINY, "--variant", "tls=off,on"],
                      cli_env, tmp_path, maria_state, maria)


# -- SIGKILL on one spelling of the address, the next run on another (issue 21, item 3) -------------------

def _sigkill_when(proc, ready, timeout: float = 120) -> None:
    """SIGKILL encbench and every process it started (its forkserver and workers) once ready() is true."""
    import psutil

    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"encbench ended (exit {proc.returncode}) too early: {proc.stderr.read()[-2000:]}")
        assert time.monotonic() < deadline, "the run never reached the state to be killed in"
        time.sleep(0.05)
    tree = psutil.Process(proc.pid).children(recursive=True)
    proc.kill()
    for p in tree:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.communicate(timeout=60)
    psutil.wait_procs(tree, timeout=30)


def _pg_running(server) -> dict:
    return {k: v for k, v in pg_state(server)["show_all"] if k in PG_SSL}


def _pg_killed_reconfigured(pg, cli_env, tmp_path, host: str) -> dict:
    """A run on `host` SIGKILLed while the server runs its forced suite: TLS 1.2 only, one cipher suite."""
    suite = "ECDHE-RSA-AES256-SHA384"
    proc = start_encbench(["run", "--engine", "postgres", "--dsn", _pg_dsn(pg, host), "--allow-reconfigure",
                           *TINY, "--runs", "40", "--variant", f"tls=TLSv1.2:{suite}",
                           "-o", str(tmp_path / "killed.json")], cli_env, tmp_path)
    _sigkill_when(proc, lambda: _pg_running(pg) == {"ssl_ciphers": suite, "ssl_min_protocol_version": "TLSv1.2",
                                                    "ssl_max_protocol_version": "TLSv1.2"})
    return _pg_running(pg)


def _as_format1(path):
    """The journal rewritten as encbench wrote it before identities (format 1, named by host:port as spelled)."""
    data = json.loads(path.read_text())
    server = {k: data["server"][k] for k in ("host", "port", "dbname", "user")}
    old = {k: v for k, v in data.items() if k not in ("identity", "in_recovery")}
    old.update(format=1, server=server)
    path.unlink()
    spelled = hashlib.sha256(f"{server['host']}:{server['port']}".encode()).hexdigest()[:16]
    target = path.with_name(f"postgres-{spelled}-{data['owner']['pid']}.json")
    target.write_text(json.dumps(old))
    return target


@pytest.mark.parametrize("legacy", [False, True], ids=["journal", "format1-journal"])
@pytest.mark.parametrize("killed_on, next_on", SPELLINGS, ids=lambda h: h.replace(".", "_"))
def test_pg_killed_on_one_spelling_is_restored_first_on_another(encbench, tmp_path, pg, cli_env, killed_on, next_on,
                                                                 legacy):
    before = pg_state(pg)
    left = _pg_killed_reconfigured(pg, cli_env, tmp_path, killed_on)
    changed = diff(before, pg_state(pg))
    assert {"show_all", "file_settings", "auto_conf", "schemas"} <= set(changed), changed
    assert [s for s in changed["schemas"]["new"] if s.startswith("encbench_")], changed
    [journal] = journals(cli_env)
    if legacy:
        _as_format1(journal)
    out = tmp_path / "next.json"
    res = encbench("run", "--engine", "postgres", "--dsn", _pg_dsn(pg, next_on), *TINY, "--variant", "tls=off",
                   "-o", str(out))
    assert res.returncode == 0, str(res)
    assert "restored what an earlier encbench run left" in res.stderr, str(res)
    assert diff(before, pg_state(pg)) == {}, (left, res.stderr)
    assert journals(cli_env) == []
    found = json.loads(out.read_text())["dataset"]["original_ssl_settings"]
    assert found == {k: v for k, v in before["show_all"] if k in PG_SSL} != left  # restored before it measured


def _maria_databases(server) -> list[str]:
    return [s for s in maria_state(server)["schemas"] if s.startswith("encbench_")]


@pytest.mark.parametrize("killed_on, next_on", SPELLINGS, ids=lambda h: h.replace(".", "_"))
def test_maria_killed_on_one_spelling_is_restored_first_on_another(encbench, tmp_path, maria, cli_env, killed_on,
                                                                   next_on):
    before = maria_state(maria)
    out = tmp_path / "killed.json"
    proc = start_encbench(["run", "--engine", "mariadb", "--dsn", _maria_dsn(maria, killed_on), *TINY,
                           "--runs", "40", "--variant", "tls=off,on", "-o", str(out)], cli_env, tmp_path)
    _sigkill_when(proc, lambda: bool(_maria_databases(maria)) and out.exists())  # measuring
    changed = diff(before, maria_state(maria))
    assert list(changed) == ["schemas"] and not changed["schemas"]["gone"], changed
    [left] = changed["schemas"]["new"]
    assert left.startswith("encbench_") and len(journals(cli_env)) == 1
    res = encbench("run", "--engine", "mariadb", "--dsn", _maria_dsn(maria, next_on), *TINY, "--variant", "tls=off",
                   "--progress", "lines", "-o", str(tmp_path / "next.json"))
    assert res.returncode == 0, str(res)
    assert f"database {left} dropped" in res.stderr, str(res)
    assert res.stderr.index(f"database {left} dropped") < res.stderr.index("encbench: progress:"), res.stderr
    assert diff(before, maria_state(maria)) == {}
    assert journals(cli_env) == []


def test_maria_oltp_schemas_of_a_killed_dsn_run_are_dropped_by_the_next(encbench, tmp_path, maria, cli_env):
    """Issue 22 on a --dsn server: the oltp workload's two schemas (sysbench's tables, plain and encrypted) are
    journaled before they are made, so a SIGKILL mid-run leaves nothing the next run does not drop first."""
    before = maria_state(maria)
    out = tmp_path / "killed.json"
    proc = start_encbench(["run", "--engine", "mariadb", "--dsn", _maria_dsn(maria), "--workload", "oltp", "--quick",
                           "--runs", "40", "--variant", "encryption=off,on", "-o", str(out)], cli_env, tmp_path)
    _sigkill_when(proc, lambda: len(_maria_databases(maria)) >= 3 and out.exists(), timeout=300)  # measuring
    left = sorted(diff(before, maria_state(maria))["schemas"]["new"])
    assert len(left) == 3 and {s.rsplit("_", 1)[-1] for s in left} >= {"plain", "enc"}, left
    res = encbench("run", "--engine", "mariadb", "--dsn", _maria_dsn(maria), *TINY, "--variant", "tls=off",
                   "-o", str(tmp_path / "next.json"))
    assert res.returncode == 0, str(res)
    assert all(s in res.stderr for s in left), res.stderr  # "database ..., ..., ... dropped"
    assert diff(before, maria_state(maria)) == {}
    assert journals(cli_env) == []
