"""The tables and functions a PostgreSQL run creates in its own schema (dropped after the run): the round-trip
and bulk tables, pgcrypto when a hash function needs it, the hash workload's source table."""

from __future__ import annotations

from ...errors import EngineUnavailableError
from ...host import rawhash
from . import state as pg_state
from .client import first_line
from ..concurrent import check_sessions_fit
from .session import RT_ROWS

PGCRYPTO = ("digest-sha256", "hmac-sha256")  # the hash functions pgcrypto gives


def create_objects(conn, schema: str, bulk_rows: int) -> None:
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(f"CREATE TABLE {schema}.rt (id int PRIMARY KEY, v text NOT NULL)")
    conn.execute(f"INSERT INTO {schema}.rt SELECT i, md5(i::text) FROM generate_series(1, {RT_ROWS}) i")
    # ~1 KB rows of hex text (not compressible by TOAST below 2 KB either way)
    conn.execute(f"CREATE TABLE {schema}.bulk (id int NOT NULL, payload text NOT NULL)")
    if bulk_rows:
        conn.execute(f"INSERT INTO {schema}.bulk SELECT i, repeat(md5(i::text), 31) "
                     f"FROM generate_series(1, {int(bulk_rows)}) i")
    conn.execute(f"VACUUM ANALYZE {schema}.rt")
    conn.execute(f"VACUUM ANALYZE {schema}.bulk")
    conn.execute(f"SELECT count(*) FROM {schema}.bulk")  # into shared buffers / OS cache


def ensure_pgcrypto(conn, may_create: bool) -> bool:
    """True when encbench created it (and drops it again in cleanup)."""
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pgcrypto'").fetchone():
        return False
    if not may_create:
        raise EngineUnavailableError("the pgcrypto extension is not installed on this server (digest, hmac)",
                                     hint="run CREATE EXTENSION pgcrypto; in the database (Debian: the postgresql "
                                          "package ships it), or pass --allow-reconfigure, or use --function sha256")
    pg_state.check_may_create_pgcrypto(conn, "use --function sha256")
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgcrypto")
        return True
    except Exception as e:  # psycopg.Error; not importable at module level here
        raise EngineUnavailableError(f"cannot create the pgcrypto extension: {first_line(e)}",
                                     hint="install the PostgreSQL contrib modules, or use --function sha256") from None


def create_hash_table(conn, schema: str, rows: int) -> None:
    """hashsrc: one 10-character value per row (seed 004's ID VARCHAR(10)), read into shared buffers."""
    conn.execute(f"CREATE TABLE {schema}.hashsrc (v text NOT NULL)")
    conn.execute(f"INSERT INTO {schema}.hashsrc SELECT lpad(i::text, {rawhash.VALUE_BYTES}, '0') "
                 f"FROM generate_series(1, {int(rows)}) i")
    conn.execute(f"VACUUM ANALYZE {schema}.hashsrc")
    conn.execute(f"SELECT count(v) FROM {schema}.hashsrc")


def prepare_hash(admin, setup: dict, ctx, hashing: list, journal, *, may_create: bool) -> None:
    """The hash workload's objects: its sessions checked against max_connections, pgcrypto (journaled before it is
    created, dropped after), the source table."""
    check_sessions_fit(max(int(v["sessions"]) for v in hashing), int(admin.execute("SHOW max_connections").fetchone()[0]))
    if any(v["function"] in PGCRYPTO for v in hashing):
        if not admin.execute("SELECT 1 FROM pg_extension WHERE extname = 'pgcrypto'").fetchone():
            journal.data["drop_extension"] = "pgcrypto"
            journal.save()
        setup["created_pgcrypto"] = ensure_pgcrypto(admin, may_create)
    rows = ctx.params["hash"]["hash_rows"]
    ctx.progress(f"creating the hash table ({rows:,} rows)")
    create_hash_table(admin, setup["schema"], rows)
    setup["hash_rows"] = rows
    setup["hash_functions"] = sorted({v["function"] for v in hashing})
