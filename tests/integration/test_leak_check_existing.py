"""leak-check of an existing server on this host (--dsn) and its static posture (--posture), issue 17 item 1.

The servers are started by the tests (integration_helpers.external_maria / external_pg), as a DBA's
would be; encbench only gets a DSN. What it leaves behind is checked: its schema gone, every global
variable / setting as before.
"""

from __future__ import annotations

import json
import os
import tempfile

import pytest

from integration_helpers import external_maria, external_pg, needs_mariadb, needs_pg

pytestmark = pytest.mark.integration


def _maria_dsn(server) -> str:
    return f"mysql://encbench:{server.handle.password}@127.0.0.1:{server.port}/"


def _maria_state(server) -> tuple[dict, list]:
    conn = server.connect()
    try:
        cur = conn.cursor()
        # counters of what the check itself did (binlog position, uptime...) are status, not variables
        cur.execute("SHOW GLOBAL VARIABLES")
        variables = {k: v for k, v in cur.fetchall() if k not in ("gtid_binlog_pos", "gtid_current_pos",
                                                                   "gtid_binlog_state", "timestamp")}
        cur.execute("SHOW DATABASES")
        return variables, sorted(r[0] for r in cur.fetchall())
    finally:
        conn.close()


@needs_mariadb
def test_existing_mariadb_binlog_not_encrypted_is_named(encbench):
    from encbench.engines.mariadb import server as maria_server

    # tables, redo, temp and Aria encrypted; the binary log on and NOT encrypted
    with external_maria(settings={"encrypt_binlog": "OFF"}, base=maria_server.ENCRYPTED) as server:
        before = _maria_state(server)
        dsn = _maria_dsn(server)
        res = encbench("leak-check", "--engine", "mariadb", "--dsn", dsn, "--json")
        assert res.returncode == 13, str(res)
        report = json.loads(res.stdout)
        found = {(f["role"], f["fix"]) for f in report["findings"]}
        assert found == {("binary log", "encrypt_binlog=ON")}, report["findings"]
        assert any("encrypted per INNODB_TABLESPACES_ENCRYPTION: True" in n for n in report["notes"])
        assert any(s.startswith("FLUSH TABLES encbench_leak_") for s in report["steps"])
        assert report["steps"][-1].startswith("DROP DATABASE encbench_leak_")
        assert report["unchecked"] == [] and report["scanned_files"] > 10
        assert server.handle.password not in res.stdout + res.stderr

        res = encbench("leak-check", "--engine", "mariadb", "--dsn", dsn)  # the text output names it too
        assert res.returncode == 13, str(res)
        assert "LEAK  binary log:" in res.stdout and "-> encrypt_binlog=ON" in res.stdout, str(res)

        res = encbench("leak-check", "--engine", "mariadb", "--dsn", dsn, "--posture", "--json")
        assert res.returncode == 13, str(res)
        posture = {i["what"]: i for i in json.loads(res.stdout)["items"]}
        assert posture["binary log"]["plaintext"] is True and posture["binary log"]["fix"] == "encrypt_binlog=ON"
        assert posture["redo log"]["plaintext"] is False and posture["key management plugin"]["plaintext"] is False
        res = encbench("leak-check", "--engine", "mariadb", "--dsn", dsn, "--posture")
        assert res.returncode == 13 and "PLAINTEXT at rest" in res.stdout, str(res)
        assert _maria_state(server) == before  # its schema gone, every global variable unchanged

        # a user without RELOAD/PROCESS: the flush it may not do is named as refused, the leak still found
        conn = server.connect()
        try:
            cur = conn.cursor()
            cur.execute("CREATE USER 'lim'@'127.0.0.1' IDENTIFIED BY 'limpw'")
            cur.execute("GRANT CREATE, DROP, INSERT, SELECT ON `encbench\\_leak\\_%`.* TO 'lim'@'127.0.0.1'")
            cur.execute("CREATE USER 'ro'@'127.0.0.1' IDENTIFIED BY 'ropw'")
        finally:
            conn.close()
        lim = f"mysql://lim:limpw@127.0.0.1:{server.port}/"
        res = encbench("leak-check", "--engine", "mariadb", "--dsn", lim, "--json")
        assert res.returncode == 13, str(res)
        report = json.loads(res.stdout)
        assert any(s.startswith("FLUSH TABLES encbench_leak_") and " refused (" in s for s in report["steps"])
        assert {f["role"] for f in report["findings"]} == {"binary log"}
        res = encbench("leak-check", "--engine", "mariadb", "--dsn", lim, "--posture", "--json")
        assert res.returncode == 13, str(res)  # the binary log still; the tables unknown, not called encrypted
        assert {i["what"]: i for i in json.loads(res.stdout)["items"]}["tables"]["plaintext"] is None
        res = encbench("leak-check", "--engine", "mariadb", "--dsn", f"mysql://ro:ropw@127.0.0.1:{server.port}/")
        assert res.returncode == 10 and len(res.stderr.splitlines()) == 1 and "GRANT CREATE" in res.stderr, str(res)
        assert _maria_state(server)[1] == before[1]


@needs_mariadb
def test_existing_mariadb_fully_encrypted_is_clean(encbench):
    from encbench.engines.mariadb import server as maria_server

    with external_maria(base=maria_server.ENCRYPTED) as server:
        before = _maria_state(server)
        dsn = _maria_dsn(server)
        res = encbench("leak-check", "--engine", "mariadb", "--dsn", dsn, "--json", "--allow-flush-logs")
        assert res.returncode == 0, str(res)
        report = json.loads(res.stdout)
        assert report["findings"] == [] and report["clean"] and report["scanned_files"] > 10
        assert any(s.startswith("FLUSH BINARY LOGS") for s in report["steps"])  # only with the flag
        res = encbench("leak-check", "--engine", "mariadb", "--dsn", dsn, "--posture")
        assert res.returncode == 0, str(res)
        assert "PLAIN " not in res.stdout and "everything the settings name is encrypted" in res.stdout
        variables, schemas = _maria_state(server)
        assert schemas == before[1]
        # FLUSH BINARY LOGS (asked for) moves the binary log on; no variable changes
        assert {k: v for k, v in variables.items() if k != "log_bin_index"} == \
            {k: v for k, v in before[0].items() if k != "log_bin_index"}


@needs_mariadb
def test_existing_mariadb_bad_input(encbench):
    res = encbench("leak-check", "--engine", "mariadb", "--dsn", "mysql://u@192.0.2.1:3306/")
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1 and "not on this host" in res.stderr, str(res)
    res = encbench("leak-check", "--engine", "mariadb", "--dsn", "mysql://u@127.0.0.1:1/")
    assert res.returncode == 10 and len(res.stderr.splitlines()) == 1, str(res)
    res = encbench("leak-check", "--engine", "mariadb", "--posture")
    assert res.returncode == 2 and "needs --dsn" in res.stderr, str(res)
    res = encbench("leak-check", "--engine", "mariadb", "--allow-flush-logs")
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, str(res)


def _pg_dsn(server) -> str:
    return f"postgresql://postgres:{server.password}@127.0.0.1:{server.port}/postgres"


def _pg_state(server) -> tuple[dict, list]:
    import psycopg

    with psycopg.connect(**server.conninfo(), autocommit=True) as conn:
        settings = dict(conn.execute("SELECT name, setting FROM pg_settings").fetchall())
        schemas = sorted(r[0] for r in conn.execute("SELECT nspname FROM pg_namespace").fetchall())
    return settings, schemas


@needs_pg
def test_existing_postgres_table_files_leak_with_the_advice(encbench):
    with external_pg() as server:
        before = _pg_state(server)
        dsn = _pg_dsn(server)
        res = encbench("leak-check", "--engine", "postgres", "--dsn", dsn, "--json", "--allow-flush-logs", timeout=300)
        assert res.returncode == 13, str(res)
        report = json.loads(res.stdout)
        roles = {f["role"] for f in report["findings"]}
        assert {"table data", "WAL", "backup (pg_dump)"} <= roles, report["findings"]
        assert all("--variant encryption=off,fscrypt" in f["fix"] for f in report["findings"])
        assert any(s.startswith("CHECKPOINT (") for s in report["steps"])
        assert any(s.startswith("SELECT pg_switch_wal()") for s in report["steps"])  # asked for
        assert report["unchecked"] == []
        assert server.password not in res.stdout + res.stderr

        res = encbench("leak-check", "--engine", "postgres", "--dsn", dsn, "--posture", "--json")
        assert res.returncode == 13, str(res)  # a data directory on a filesystem that does not encrypt
        items = {i["what"]: i for i in json.loads(res.stdout)["items"]}
        assert items["data directory"]["plaintext"] is True, items
        assert "not encrypted" in items["data directory"]["state"] and "fscrypt" in items["data directory"]["fix"]
        assert items["in transit (not at rest)"]["state"] == "ssl=on"
        res = encbench("leak-check", "--engine", "postgres", "--dsn", dsn, "--posture")
        assert res.returncode == 13 and "PLAINTEXT at rest" in res.stdout, str(res)
        after = _pg_state(server)
        assert after[1] == before[1]  # its schema gone
        assert after[0] == before[0]  # every setting as found


@needs_pg
def test_existing_postgres_posture_sees_an_fscrypt_data_directory(encbench):
    """The same server on an fscrypt filesystem: the posture finds the policy on its data directory (exit 0)."""
    from encbench import errors
    from encbench.engines.postgres import server as pg_server
    from encbench.host import encfs

    try:
        encfs.check("fscrypt")
    except errors.EncbenchError as e:
        pytest.skip(f"fscrypt unavailable here: {e}")
    with tempfile.TemporaryDirectory(prefix="encbench-test-posture-") as work:
        os.chmod(work, 0o755)  # the postgres user reaches its data directory below (pytest's tmp is 0700)
        mount = encfs.create("fscrypt", 64 << 20, work)
        try:
            server = pg_server.start(data_parent=mount.path, root_parent=mount.workdir, unix_socket=False)
            try:
                res = encbench("leak-check", "--engine", "postgres", "--dsn", _pg_dsn(server), "--posture", "--json")
            finally:
                server.stop()
        finally:
            mount.destroy()
    assert res.returncode == 0, str(res)
    items = {i["what"]: i for i in json.loads(res.stdout)["items"]}
    assert items["data directory"]["plaintext"] is False and "fscrypt policy on" in items["data directory"]["state"]
    assert "an encbench fscrypt mount" in items["data directory"]["state"]


@needs_mariadb
@needs_pg
def test_posture_of_a_fleet_with_one_closed_port(encbench, tmp_path):
    """leak-check --posture --targets: a real MariaDB, a real PostgreSQL and a closed port, read concurrently."""
    import socket

    from encbench.engines.mariadb import server as maria_server

    with socket.socket() as s:  # a port nothing listens on (bound, then released)
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with external_maria(base=maria_server.ENCRYPTED) as maria, external_pg() as pg:
        targets = tmp_path / "fleet.txt"
        targets.write_text(f"# the fleet\n{_maria_dsn(maria)}\n\n{_pg_dsn(pg)}   # no TDE\n"
                           f"mysql://nobody:closedpw@127.0.0.1:{closed}/\nnot-a-dsn\n")
        out = tmp_path / "fleet.jsonl"
        res = encbench("leak-check", "--posture", "--targets", str(targets), "--jobs", "3", "--jsonl", str(out),
                       env={"COLUMNS": "100"})
        text = encbench("leak-check", "--posture", "--targets", str(targets), "--format", "jsonl")
        secrets = (maria.handle.password, pg.password, "closedpw")
    assert res.returncode == 13, str(res)  # PostgreSQL has no TDE: its data directory is plaintext here
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in rows] == [2, 4, 5, 6]  # a bad line is its own failure, the others still read
    by_engine = {(r["engine"], r["exit_code"]) for r in rows}
    assert by_engine == {("mariadb", 0), ("postgres", 13), ("mariadb", 10), ("-", 4)}, rows
    m, p, c, bad = rows
    assert bad["posture"] is None and "line 6" in bad["error"] and bad["target"] == "not-a-dsn"
    assert m["posture"]["plaintext"] is False and m["plaintext_places"] == 0 and m["verdict"] == "encrypted"
    assert "file_key_management" in m["key_management"]
    assert p["plaintext_places"] >= 1 and p["verdict"] == "PLAINTEXT" and "no TDE" in p["key_management"]
    assert {i["what"] for i in p["posture"]["items"]} >= {"data directory"}
    assert c["posture"] is None and c["target"] == f"mysql://127.0.0.1:{closed}" and "127.0.0.1" in c["error"]
    table = res.stdout.splitlines()
    assert table[0].split() == ["target", "engine", "plaintext", "verdict", "key", "management", "/", "TDE"]
    assert any(f"127.0.0.1:{closed}" in line and "ERROR (exit 10)" in line for line in table)
    assert all(len(line) <= 100 for line in table[:4])  # the table fits a pipe's 100 columns (issue 30 item 6)
    assert table[-1] == "4 target(s): 2 read, 2 failed, 1 with plaintext at rest", str(res)
    assert text.returncode == 13 and [json.loads(line)["exit_code"] for line in text.stdout.splitlines()] == \
        [0, 13, 10, 4], str(text)
    for secret in secrets:
        assert secret not in res.stdout + res.stderr + text.stdout + text.stderr + out.read_text()


@needs_mariadb
def test_existing_mariadb_with_a_shared_tmpdir_reads_only_its_own_files(encbench):
    """Issue 28 item 3: a tmpdir others share (MariaDB's default is /tmp). Another user's file holding the very
    canary (a hard link to the server's binary log, under a name that is not the server's) is never reported,
    the foreign entries are counted as skipped in one line; the server's own #sql-temptable-* files are read."""
    import shutil

    from encbench.engines.mariadb import server as maria_server

    shared = tempfile.mkdtemp(prefix="encbench-test-sharedtmp-")
    try:
        os.chmod(shared, 0o1777)
        foreign = ["report.txt", "#sql-not-the-servers.MAD", "otheruser", "notes-of-another-user.log"]
        with open(os.path.join(shared, "report.txt"), "w") as f:
            f.write("another user's file\n")
        with open(os.path.join(shared, "#sql-not-the-servers.MAD"), "w") as f:  # the server's name, root's file
            f.write("not the server's\n")
        os.mkdir(os.path.join(shared, "otheruser"))
        with open(os.path.join(shared, "otheruser", "inside"), "w") as f:
            f.write("x\n")
        settings = {"encrypt_binlog": "OFF", "tmpdir": shared}
        with external_maria(settings=settings, base=maria_server.ENCRYPTED) as server:
            assert server.handle.user, "the server runs as its own OS user (the suite runs as root)"
            conn = server.connect()
            try:
                cur = conn.cursor()
                cur.execute("SELECT @@log_bin_basename")
                binlog_dir = os.path.dirname(cur.fetchone()[0])
                cur.execute("SHOW MASTER STATUS")
                current = cur.fetchone()[0]
                # everything the server writes to its binary log (the canary's INSERTs) lands in this file too
                os.link(os.path.join(binlog_dir, current), os.path.join(shared, "notes-of-another-user.log"))
                cur.execute("CREATE DATABASE scratch")
                cur.execute("CREATE TEMPORARY TABLE scratch.held (a INT) ENGINE=Aria")  # the server's own files
                cur.execute("INSERT INTO scratch.held VALUES (1)")
                own = sorted(n for n in os.listdir(shared) if n.startswith("#sql-temptable-"))
                assert own, os.listdir(shared)
                dsn = _maria_dsn(server)
                res = encbench("leak-check", "--engine", "mariadb", "--dsn", dsn, "--json")
                text = encbench("leak-check", "--engine", "mariadb", "--dsn", dsn)
            finally:
                conn.close()
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    assert res.returncode == 13, str(res)
    report = json.loads(res.stdout)
    assert {f["role"] for f in report["findings"]} == {"binary log"}, report["findings"]
    assert not [f for f in report["findings"] if f["path"].startswith(shared)], report["findings"]
    assert report["skipped"] == {shared: len(foreign)}, report
    assert any(f"temporary file {shared} (only the server's own: #sql*" in s for s in report["steps"]), report["steps"]
    assert text.returncode == 13, str(text)
    assert f"  skipped {len(foreign)} entries in {shared} that are not the server's own (never opened)" in \
        text.stdout.splitlines(), str(text)


def _pg_schemas(server) -> list[str]:
    import psycopg

    with psycopg.connect(**server.conninfo(), autocommit=True) as conn:
        return sorted(r[0] for r in conn.execute("SELECT nspname FROM pg_namespace").fetchall())


@pytest.fixture(scope="module")
def pg_of_issue_28():
    """One PostgreSQL server, started as a DBA's would be, for the two tests below."""
    with external_pg() as server:
        import psycopg

        with psycopg.connect(**server.conninfo(), autocommit=True) as conn:
            conn.execute("CREATE ROLE nocreate LOGIN PASSWORD 'nocreatepw'")
        yield server


@needs_pg
def test_existing_postgres_role_without_create_gets_the_grant(encbench, pg_of_issue_28):
    """Issue 28 item 5: a role without CREATE gets the GRANT it needs: one line, exit 10 as `run` gives."""
    from integration_helpers import assert_one_line_error

    server = pg_of_issue_28
    before = _pg_schemas(server)
    res = encbench("leak-check", "--engine", "postgres", "--dsn",
                   f"postgresql://nocreate:nocreatepw@127.0.0.1:{server.port}/postgres")
    line = assert_one_line_error(res, 10)
    assert "GRANT CREATE ON DATABASE postgres TO nocreate" in line and "nocreatepw" not in line, str(res)
    assert _pg_schemas(server) == before


@needs_pg
def test_existing_postgres_given_by_pg_variables(encbench, pg_of_issue_28, tmp_path):
    """Issue 28 item 6: a server given only by PGHOST/PGPORT/PGUSER/PGPASSWORD is checked end to end (pg_dump
    reaches it too); a pg_dump that fails is reported by its first error line, and encbench's schema and canary
    are gone after it."""
    from integration_helpers import assert_one_line_error

    server = pg_of_issue_28
    before = _pg_schemas(server)
    env = {"PGHOST": "127.0.0.1", "PGPORT": str(server.port), "PGUSER": "postgres", "PGPASSWORD": server.password,
           "PGDATABASE": "postgres"}
    res = encbench("leak-check", "--engine", "postgres", "--dsn", "postgresql://", "--json", env=env)
    assert res.returncode == 13, str(res)
    assert "backup (pg_dump)" in {f["role"] for f in json.loads(res.stdout)["findings"]}, res.stdout
    assert _pg_schemas(server) == before

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pg_dump").write_text("#!/bin/sh\necho 'pg_dump: error: query failed: ERROR:  permission denied for "
                                  "table leak' >&2\necho 'pg_dump: detail: Query was: LOCK TABLE x' >&2\nexit 1\n")
    (fake / "pg_dump").chmod(0o755)
    res = encbench("leak-check", "--engine", "postgres", "--dsn", "postgresql://",
                   env=dict(env, PATH=f"{fake}:{os.environ['PATH']}"))
    line = assert_one_line_error(res, 10)
    assert "pg_dump failed: pg_dump: error: query failed: ERROR: permission denied" in line, str(res)
    assert server.password not in res.stdout + res.stderr
    assert _pg_schemas(server) == before  # the canary's schema dropped on the failure path
