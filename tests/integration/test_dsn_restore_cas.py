"""A restore is compare-and-swap (issue 28, item 1), on real servers started here and addressed by --dsn.

A run is SIGKILLed while it has changed the server; the test then changes the same thing itself, as a DBA
would (PostgreSQL: ALTER SYSTEM SET ssl_ecdh_curve + pg_reload_conf; MariaDB: a table of its own in the
database encbench left: a --dsn MariaDB run sets no global variable, its only changes are its databases);
the next plain run keeps the DBA's change, says so in one line, and keeps the journal until
`encbench cleanup --forget-journal` drops it. And (item 6) a MariaDB user without CREATE leaves no journal,
and journals of databases that do not exist are dropped without a word.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from encbench.engines.local import restore_journal
from encbench.engines.mariadb import server as maria_server
from encbench.engines.mariadb import state as maria_state
from integration_helpers import external_maria, external_pg
from server_state import journals, maria_state as maria_snapshot, start_encbench

pytestmark = pytest.mark.integration

TINY = ["--workload", "connect", "--quick", "--runs", "1", "--warmups", "0", "--param", "connections=2"]


@pytest.fixture(scope="module")
def pg():
    with external_pg() as server:
        yield server


@pytest.fixture(scope="module")
def maria():
    with external_maria() as server:
        yield server


def _sigkill_when(proc, ready, timeout: float = 120) -> None:
    """SIGKILL encbench and every process it started once ready() is true (as test_external_state does)."""
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


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("encbench: note:")]


# -- PostgreSQL: the curve a DBA set after the kill is kept ------------------------------------------------------

def _pg(server, *statements: str) -> str:
    import psycopg

    with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
        for sql in statements:
            c.execute(sql)
        return c.execute("SHOW ssl_ecdh_curve").fetchone()[0]


def test_pg_a_setting_a_dba_changed_after_the_kill_is_kept_with_its_journal(encbench, tmp_path, pg, cli_env):
    dsn = f"postgresql://postgres:{pg.password}@127.0.0.1:{pg.port}/postgres"
    found = _pg(pg)
    proc = start_encbench(["run", "--engine", "postgres", "--dsn", dsn, "--allow-reconfigure", *TINY, "--runs", "40",
                           "--variant", "tls=on", "--variant", "ecdh_curve=secp384r1",
                           "-o", str(tmp_path / "killed.json")], cli_env, tmp_path)
    _sigkill_when(proc, lambda: _pg(pg) == "secp384r1")
    [journal] = journals(cli_env)
    _pg(pg, "ALTER SYSTEM SET ssl_ecdh_curve = 'secp521r1'", "SELECT pg_reload_conf()")  # the DBA's, after the kill
    res = encbench("run", "--engine", "postgres", "--dsn", dsn, *TINY, "--variant", "tls=off",
                   "-o", str(tmp_path / "next.json"))
    assert res.returncode == 0, str(res)
    [note] = _notes(res.stderr)
    assert "ssl_ecdh_curve is 'secp521r1' now (encbench set 'secp384r1'): left as it is" in note, note
    assert f"encbench cleanup --forget-journal {journal}" in note and pg.password not in res.stderr
    assert "schema encbench_" in note  # what was still encbench's was undone: its schema dropped
    assert _pg(pg) == "secp521r1" and journals(cli_env) == [journal]
    assert json.loads(journal.read_text())["settings"].keys() == {"ssl_ecdh_curve"}  # only what was kept
    # --allow-reconfigure waits for the DBA's decision, and says how to give it
    res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--allow-reconfigure", *TINY, "--variant", "tls=on",
                   "-o", str(tmp_path / "refused.json"))
    assert res.returncode == 10 and "--forget-journal" in res.stderr.splitlines()[-1], str(res)
    res = encbench("cleanup", "--forget-journal", str(journal))
    assert res.returncode == 0 and "forgotten" in res.stdout, str(res)
    assert journals(cli_env) == [] and _pg(pg) == "secp521r1"  # the server untouched by forgetting
    assert _pg(pg, "ALTER SYSTEM RESET ssl_ecdh_curve", "SELECT pg_reload_conf()") in (found, "secp521r1")


# -- MariaDB: a database holding a DBA's table is kept; a user without CREATE journals nothing ----------------

def _maria_dsn(server, user: str = maria_server.BENCH_USER, password: str | None = None) -> str:
    return f"mysql://{user}:{password or server.handle.password}@127.0.0.1:{server.handle.port}/"


def _maria(server, *statements: str) -> list:
    conn = server.connect()
    try:
        cur = conn.cursor()
        for sql in statements:
            cur.execute(sql)
        return list(cur.fetchall())
    finally:
        conn.close()


def _ours(server) -> list[str]:
    return [s for s in maria_snapshot(server)["schemas"] if s.startswith("encbench_")]


def _stale_journal(server, cli_env, schema: str) -> None:
    """A journal a dead run left naming a database that was never made (an encbench before this fix, a user
    without CREATE)."""
    conn = server.connect()
    try:
        ident = maria_state.identity(conn.cursor())
    finally:
        conn.close()
    gone = subprocess.Popen(["true"])
    gone.wait()
    data = {"format": 2, "engine": "mariadb", "identity": ident, "schema": schema, "created": "2026-01-01T00:00:00",
            "server": {"host": "127.0.0.1", "port": server.handle.port, "dbname": None, "user": "encbench"},
            "owner": {"pid": gone.pid, "start": "1", "hostname": restore_journal.socket.gethostname()}}
    base = restore_journal.directory().__class__(cli_env["XDG_CACHE_HOME"]) / "encbench" / "restore"
    base.mkdir(parents=True, exist_ok=True)
    (base / f"{restore_journal.server_key('mariadb', ident)}-{gone.pid}.json").write_text(json.dumps(data))


def test_maria_a_database_holding_a_dbas_table_is_kept_with_its_journal(encbench, tmp_path, maria, cli_env):
    out = tmp_path / "killed.json"
    proc = start_encbench(["run", "--engine", "mariadb", "--dsn", _maria_dsn(maria), *TINY, "--runs", "40",
                           "--variant", "tls=off", "-o", str(out)], cli_env, tmp_path)
    _sigkill_when(proc, lambda: bool(_ours(maria)) and out.exists())  # measuring
    [left] = _ours(maria)
    [journal] = journals(cli_env)
    _maria(maria, f"CREATE TABLE {left}.orders (id INT PRIMARY KEY)")  # the DBA's, after the kill
    for i in range(2):
        _stale_journal(maria, cli_env, f"encbench_0badc0d{i}")
    res = encbench("run", "--engine", "mariadb", "--dsn", _maria_dsn(maria), *TINY, "--variant", "tls=off",
                   "-o", str(tmp_path / "next.json"))
    assert res.returncode == 0, str(res)
    [note] = _notes(res.stderr)  # the kept database; the two stale journals go without a word
    assert f"database {left} holds orders, which encbench does not make: not dropped" in note, note
    assert f"encbench cleanup --forget-journal {journal}" in note
    assert _ours(maria) == [left] and journals(cli_env) == [journal]
    res = encbench("cleanup", "--forget-journal", "all")
    assert res.returncode == 0 and "1 journals forgotten" in res.stdout, str(res)
    assert journals(cli_env) == [] and _ours(maria) == [left]  # the DBA's to drop
    _maria(maria, f"DROP DATABASE {left}")


def test_maria_a_user_without_create_leaves_no_journal(encbench, tmp_path, maria, cli_env):
    _maria(maria, "CREATE DATABASE IF NOT EXISTS shop", "CREATE USER IF NOT EXISTS 'shopper'@'%' IDENTIFIED BY 'shoppw'",
           "GRANT SELECT, INSERT ON shop.* TO 'shopper'@'%'")
    for i in range(2):
        res = encbench("run", "--engine", "mariadb", "--dsn", _maria_dsn(maria, "shopper", "shoppw"), *TINY,
                       "--variant", "tls=off", "-o", str(tmp_path / f"r{i}.json"))
        lines = [line for line in res.stderr.splitlines() if not line.startswith("encbench: reclaimed")]
        assert res.returncode == 10 and len(lines) == 1 and lines[0].startswith("encbench: error:"), str(res)
        assert "CREATE" in res.stderr and "shoppw" not in res.stderr
        assert journals(cli_env) == [] and _ours(maria) == []
