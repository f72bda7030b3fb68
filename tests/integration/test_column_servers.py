"""The column workload (issue 16) on real PostgreSQL and MariaDB servers: every method's operations with
the server's and the client's CPU, the lookup's plan, the in-database methods' ciphertext sizes, their
sessions sweep (--sessions 1,2: efficiency with a CI, 2 server sessions at once), a wrong
key on decrypt (WrongKeyError, exit 8), and no key in the result file, the output or the server's logs
(servers started by the test with every statement logged, as a DBA's might be)."""

from __future__ import annotations

import base64
import json

import pytest

from encbench.errors import WrongKeyError
from encbench.host import openpgp, rawcolumn
from encbench.workloads import column
from integration_helpers import external_maria, external_pg

pytestmark = pytest.mark.integration

OPERATIONS = ["insert", "read", "lookup", "update"]
PASSPHRASE = "column servers passphrase 3b9e"
ROWS = 1500  # enough rows that the planners choose the index on the value where there is one
SMALL = ("--runs", "2", "--warmups", "0", "--param", f"column_rows={ROWS}", "--param", "lookups=3",
         "--sessions", "1,2")  # the sessions sweep: the in-database methods' read in 1 and in 2 sessions together
IN_DB_OPERATIONS = ["insert", "read", "lookup", "read-sessions", "update"]  # at sessions=1


def _secrets(methods: dict[str, int]) -> list[bytes]:
    """Every form the key could take: the passphrase, the material, each method's subkey (raw, hex, base64)."""
    material = column.column_key_material(PASSPHRASE)[0]
    keys = [material] + [column._hkdf(material, m, n) for m, n in methods.items()]
    out = [PASSPHRASE.encode()]
    for k in keys:
        out += [k, k.hex().encode(), base64.b64encode(k)]
    return out


def _assert_no_key(methods: dict[str, int], where: dict[str, bytes]) -> None:
    for secret in _secrets(methods):
        for name, body in where.items():
            assert secret.lower() not in body.lower(), f"key material in the {name}"


def _run(encbench, tmp_path, engine: str, dsn: str, methods: tuple[str, ...]):
    key = tmp_path / "key"
    key.write_text(PASSPHRASE + "\n")
    out = tmp_path / f"{engine}.json"
    res = encbench("run", "--engine", engine, "--dsn", dsn, "--workload", "column", "--variant",
                   "method=" + ",".join(methods), *SMALL, "--key-file", str(key), "-o", str(out))
    assert res.returncode == 0, str(res)
    return res, out.read_bytes(), json.loads(out.read_text())


def _check_sweep(doc: dict, runs: list[dict], methods: tuple[str, ...]) -> dict[str, list[float]]:
    """--sessions 1,2: the in-database methods' read-sessions ran in 1 and in 2 server sessions at once (2
    connections, each its own backend or server thread measured); the client methods were not swept (GIL); the
    analysis gives each in-database method's efficiency at 2 sessions with a CI, and the report shows it."""
    in_db = [m for m in methods if m not in column.CLIENT_METHODS]
    overlaps = {m: [] for m in in_db}
    for run in runs:
        k, method = int(run["variant"]["sessions"]), run["variant"]["method"]
        ops = {op["operation"]: op for op in run["operations"]}
        if k == 2:
            assert list(ops) == (["read-sessions"] if method in in_db else []), (method, list(ops))
        if method in in_db:
            x = ops["read-sessions"]["extra"]
            assert x["sessions"] == k and x["rows_per_s"] > 0 and x["sessions_server_sides"] == k, x
            assert ops["read-sessions"]["metrics"]["cpu_s"] > 0  # the sessions' server side measured
            if k == 2:
                overlaps[method].append(x["sessions_overlap_s"])
    scale = {(e["function"], e["sessions"]): e for e in doc["scaling"]}
    assert sorted(scale) == sorted((m, k) for m in in_db for k in (1, 2))
    for m in in_db:
        two = scale[(m, 2)]
        assert two["workload"] == "column" and two["operation"] == "read-sessions" and two["runs"] == 2
        assert two["efficiency"] > 0 and len(two["efficiency_ci"]) == 2, two
    return overlaps


def _assert_references(doc: dict, stdout: str, in_database: dict[str, str]) -> None:
    """Every in-database method's raw reference is in the result file, naming its method, and `run` prints each
    method's per-row CPU beside it (analysis/columncost)."""
    raw = doc["calibration"]["raw_column_cipher"]
    for method, reference in in_database.items():
        ref = raw[reference]
        assert ref["methods"] == [method] and ref["encrypt"]["us_per_call"] > 0 and ref["decrypt"]["us_per_call"] > 0
        assert ref["parts"] and "in C" in ref["method"]
        for op, direction in (("insert", "encrypt"), ("read", "decrypt")):
            assert f"{method} {op} ({direction}): " in stdout and "server CPU" in stdout
    assert "Column encryption per row vs the raw cipher" in stdout and "its cipher work on this CPU" in stdout


def _check_runs(doc: dict, methods: tuple[str, ...], searchable: set[str]) -> dict[str, dict]:
    """Every method ran every operation with both sides' CPU; the lookup's plan as the method allows."""
    assert doc["status"] == "complete"
    runs = [r for r in doc["runs"] if r["workload"] == "column"]
    assert sorted(r["variant"]["method"] for r in runs) == sorted(methods * 4)  # 2 sessions levels x 2 runs
    overlaps = _check_sweep(doc, runs, methods)
    by_method = {"overlaps": overlaps}
    for run in runs:
        if run["variant"]["sessions"] != "1":
            continue
        ops = {op["operation"]: op for op in run["operations"]}
        in_db = run["variant"]["method"] not in column.CLIENT_METHODS
        assert list(ops) == (IN_DB_OPERATIONS if in_db else OPERATIONS)
        for op in ops.values():
            m = op["metrics"]
            assert m["wall_s"] > 0 and "cpu_s" in m and "client_cpu_s" in m, (run["variant"], op["operation"], m)
        method = run["variant"]["method"]
        lookup = ops["lookup"]["extra"]
        assert lookup["index_used"] == int(method in searchable), (method, lookup["plan"])
        assert lookup["rows_examined_per_lookup"] == (1 if method in searchable else ROWS)
        assert ops["read"]["extra"]["read_back_equal"] == 1
        by_method[method] = ops
    compared = {(c["operation"], c["contender"]) for c in doc["comparisons"] if c["metric"] == "client_cpu_s"}
    assert compared == {(op, f"sessions=1,method={m}") for op in OPERATIONS for m in methods if m != "none"}
    return by_method


# -- PostgreSQL ----------------------------------------------------------------------------

PG_LOGGED = {"log_statement": "all", "log_min_duration_statement": "0",
             "shared_preload_libraries": "pg_stat_statements"}
PG_METHODS = ("none", "client-gcm", "client-siv", "pg-pgp", "pg-aes")


@pytest.fixture(scope="module")
def pg_logged():
    import psycopg

    with external_pg(PG_LOGGED) as server:
        with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
            c.execute("CREATE EXTENSION pgcrypto")  # as the DBA would (encbench creates it only where it may)
            c.execute("CREATE EXTENSION pg_stat_statements")
        yield server


def test_postgres_every_method_both_sides_no_key_anywhere(encbench, tmp_path, pg_logged):
    import psycopg

    dsn = f"postgresql://postgres:{pg_logged.password}@127.0.0.1:{pg_logged.port}/postgres"
    res, text, doc = _run(encbench, tmp_path, "postgres", dsn, PG_METHODS)
    ops = _check_runs(doc, PG_METHODS, searchable={"none", "client-siv"})
    # in the server: the backend's CPU carries the cipher (pgp's key derivation per value above all)
    for method in ("pg-pgp", "pg-aes"):
        assert ops[method]["insert"]["extra"]["encrypts"] == "server"
    assert ops["pg-aes"]["insert"]["extra"]["value_bytes_per_row"] == 16 + 32  # IV + two CBC blocks (23 B padded)
    assert ops["pg-pgp"]["insert"]["extra"]["value_bytes_per_row"] > column.VALUE_BYTES + 40  # OpenPGP packets
    # the raw reference's model of pgp_sym_encrypt makes messages of the length the server's are
    assert ops["pg-pgp"]["insert"]["extra"]["value_bytes_per_row"] == openpgp.message_bytes(column.VALUE_BYTES)
    assert "Column encryption" in res.stdout and "method=pg-pgp" in res.stdout
    _assert_references(doc, res.stdout, {"pg-pgp": "openpgp-aes256-s2k", "pg-aes": "aes-256-cbc-pkcs7"})
    assert set(doc["calibration"]["raw_column_cipher"]["openpgp-aes256-s2k"]["parts"]) >= {"s2k-sha1", "sha1"}
    assert "S2K (iterated SHA-1)" in res.stdout
    assert "Scaling of the column's in-database methods" in res.stdout and "column pg-pgp/read-sessions 2" in res.stdout
    # 2 sessions really at once: pg-pgp's read (S2K per value, a few hundred ms per session) overlapped in a run
    assert max(ops["overlaps"]["pg-pgp"]) > 0, ops["overlaps"]
    with psycopg.connect(**pg_logged.conninfo(), sslmode="disable", autocommit=True) as c:
        kept = "\n".join(r[0] for r in c.execute("SELECT query FROM pg_stat_statements")).encode()
    log = pg_logged.logfile.read_bytes()
    assert b"pgp_sym_encrypt_bytea" in log and b"encrypt_iv" in log  # the log was on and saw the statements
    _assert_no_key({"pg-pgp": 32, "pg-aes": 32, "client-gcm": 32, "client-siv": 64},
                   {"result file": text, "stdout": res.stdout.encode(), "stderr": res.stderr.encode(),
                    "server log": log, "pg_stat_statements": kept})


class _PgHolder:
    """The mixin as PgSession carries it: a connection, a schema, the setup's key."""


def test_postgres_wrong_key_is_exit_8_not_garbage(pg_logged):
    import psycopg

    from encbench.engines.postgres.column import PgColumn

    holder = type("Holder", (PgColumn, _PgHolder), {})()
    holder.psycopg = psycopg
    holder.conn = psycopg.connect(**pg_logged.conninfo(), sslmode="disable", autocommit=True)
    holder.schema = "public"
    try:
        for method in ("pg-pgp", "pg-aes"):
            holder.setup = {"_column_key": column.column_key_material(PASSPHRASE)[0].hex()}
            holder.column_create(method, False)
            holder.column_insert([(i, column.value(i)) for i in range(1, 41)])
            assert holder.column_read() == [(i, column.value(i)) for i in range(1, 41)]
            holder.setup = {"_column_key": column.column_key_material("another passphrase")[0].hex()}
            with pytest.raises(WrongKeyError) as e:
                holder.column_read()
            assert e.value.exit_code == 8 and method in str(e.value)
        _pg_functions_match_the_raw_references(holder.conn)
    finally:
        holder.conn.close()


def _pg_functions_match_the_raw_references(conn) -> None:
    """The raw references model what pgcrypto does: each side decrypts the other's output, and the lengths agree."""
    value = column.value(7)
    pgp = rawcolumn.codec("openpgp-aes256-s2k")
    password = pgp.key.decode()
    real = bytes(conn.execute("SELECT pgp_sym_encrypt_bytea(%s, %s, 'cipher-algo=aes256')", (value, password)).fetchone()[0])
    assert pgp.decrypt(real) == value and len(real) == len(pgp.encrypt(value))
    assert openpgp.parse(real)["code"] in openpgp.DEFAULT_COUNT_CODES  # pgcrypto's default count range
    assert bytes(conn.execute("SELECT pgp_sym_decrypt_bytea(%s, %s)", (pgp.encrypt(value), password)).fetchone()[0]) == value
    aes = rawcolumn.codec("aes-256-cbc-pkcs7")
    iv, real = conn.execute("SELECT r.iv, encrypt_iv(%s, %s, r.iv, 'aes-cbc/pad:pkcs') FROM (SELECT gen_random_bytes(16) "
                            "AS iv) r", (value, aes.key)).fetchone()
    assert aes.decrypt(bytes(iv) + bytes(real)) == value
    model = aes.encrypt(value)
    assert bytes(conn.execute("SELECT decrypt_iv(%s, %s, %s, 'aes-cbc/pad:pkcs')",
                              (model[16:], aes.key, model[:16])).fetchone()[0]) == value


# -- MariaDB -------------------------------------------------------------------------------

MARIA_METHODS = ("none", "client-gcm", "client-siv", "maria-aes")


@pytest.fixture(scope="module")
def maria_logged():
    from encbench.engines.mariadb import server as maria_server

    # a relative general_log_file is in the data directory (the server's user can write there)
    with external_maria(settings={"general_log": "ON", "general_log_file": "general.log"}, base=maria_server.BENCH) as s:
        yield s, s.handle.datadir / "general.log"


def test_mariadb_every_method_both_sides_no_key_anywhere(encbench, tmp_path, maria_logged):
    server, general = maria_logged
    p = server.handle.tcp_params()
    dsn = f"mysql://{p['user']}:{p['password']}@127.0.0.1:{p['port']}/"
    res, text, doc = _run(encbench, tmp_path, "mariadb", dsn, MARIA_METHODS)
    # AES_ENCRYPT in 10.11 is ECB: deterministic, so the index serves the lookup (and equal values show)
    ops = _check_runs(doc, MARIA_METHODS, searchable={"none", "client-siv", "maria-aes"})
    assert ops["maria-aes"]["insert"]["extra"]["encrypts"] == "server"
    assert ops["maria-aes"]["insert"]["extra"]["value_bytes_per_row"] == 32  # 23 B padded to two blocks
    _assert_references(doc, res.stdout, {"maria-aes": "aes-128-ecb-pkcs7"})
    assert "column maria-aes/read-sessions 2 sessions" in res.stdout  # its 2 server threads: _check_sweep
    log = general.read_bytes()
    assert b"col_" in log  # the general log was on and saw the client methods' statements
    assert b"AES_ENCRYPT" not in log and b"@k" not in log  # the in-database sessions' statements: not logged
    _assert_no_key({"maria-aes": 16, "client-gcm": 32, "client-siv": 64},
                   {"result file": text, "stdout": res.stdout.encode(), "stderr": res.stderr.encode(),
                    "general log": log, "error log": server.handle.logfile.read_bytes()})


def test_mariadb_wrong_key_is_exit_8_not_garbage(maria_logged):
    from encbench.engines.mariadb.client import connect_bounded
    from encbench.engines.mariadb.column import MariaColumn

    server, _ = maria_logged
    holder = type("Holder", (MariaColumn,), {})()
    holder.conn = connect_bounded(server.handle.tcp_params(), autocommit=True)
    holder.schema = "test_col"
    try:
        holder.conn.cursor().execute("CREATE DATABASE IF NOT EXISTS test_col")
        holder.setup = {"_column_key": column.column_key_material(PASSPHRASE)[0].hex()}
        holder.column_create("maria-aes", True)
        holder.column_insert([(i, column.value(i)) for i in range(1, 41)])
        assert holder.column_read() == [(i, column.value(i)) for i in range(1, 41)]
        assert holder.column_lookup(column.value(7)) == [7]
        holder.setup = {"_column_key": column.column_key_material("another passphrase")[0].hex()}
        with pytest.raises(WrongKeyError) as e:
            holder.column_read()
        assert e.value.exit_code == 8 and "maria-aes" in str(e.value)
        # the raw reference models AES_ENCRYPT: AES-128-ECB with PKCS#7, byte for byte; 10.11 has no other mode
        ecb, cur = rawcolumn.codec("aes-128-ecb-pkcs7"), holder.conn.cursor()
        cur.execute("SELECT AES_ENCRYPT(%s, %s), VERSION()", (column.value(7), ecb.key))
        real, version = cur.fetchone()
        assert bytes(real) == ecb.encrypt(column.value(7))
        cur.execute("SHOW VARIABLES LIKE 'block_encryption_mode'")
        assert cur.fetchall() == () or not version.startswith("10."), version
    finally:
        holder.conn.close()


def test_postgres_dsn_without_pgcrypto_is_one_line_not_created(encbench, tmp_path):
    import psycopg

    from integration_helpers import assert_one_line_error

    with external_pg() as server:
        dsn = f"postgresql://postgres:{server.password}@127.0.0.1:{server.port}/postgres"
        res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--method", "pg-aes", "--runs", "1",
                       "--warmups", "0", "--param", "column_rows=50", "-o", str(tmp_path / "x.json"))
        line = assert_one_line_error(res, 10)
        assert "pgcrypto" in line and "--allow-reconfigure" in res.stderr
        with psycopg.connect(**server.conninfo(), sslmode="disable") as c:  # an external server: left as it was
            assert not c.execute("SELECT 1 FROM pg_extension WHERE extname = 'pgcrypto'").fetchone()
