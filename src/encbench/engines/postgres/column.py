"""PostgreSQL's side of the column workload (workloads/column.py, issue 16): the client methods, plus
pgcrypto's in-database ones, where the backend encrypts and decrypts (its CPU is the server's):

  pg-pgp  pgp_sym_encrypt_bytea / pgp_sym_decrypt_bytea (OpenPGP symmetric, cipher-algo=aes256, the
          default iterated and salted S2K key derivation per value, a random salt each time: randomized,
          so an equality lookup is a full scan that decrypts every row)
  pg-aes  encrypt_iv / decrypt_iv with 'aes-cbc/pad:pkcs' (AES-256-CBC, PKCS#7 padding, a random 16-byte
          IV per value from gen_random_bytes, stored in front of the ciphertext: randomized too). CBC has
          no tag: a wrong key shows as bad padding, which decrypt_iv raises; a row whose garbage happens
          to end in valid padding (about 1 in 256) is caught by the rest of the table in the same read

The key (a per-method HKDF subkey of the run's material) travels only as a bind parameter (psycopg
sends parameters apart from the statement text), so it is in no statement the server logs or
pg_stat_statements keeps. A wrong key on decrypt is WrongKeyError (exit 8), never garbage.
"""

from __future__ import annotations


from ...errors import CheckFailedError, EngineUnavailableError, WrongKeyError
from ...workloads import column as column_lab
from ..column_base import ServerColumn
from ..concurrent import run_together
from .client import first_line
from .state import check_may_create_pgcrypto

METHODS = {
    "pg-pgp": "pgcrypto pgp_sym_encrypt/pgp_sym_decrypt in the server (OpenPGP, AES-256, S2K per value; randomized)",
    "pg-aes": "pgcrypto encrypt_iv/decrypt_iv in the server (AES-256-CBC, random IV per value; randomized)",
}
SEARCHABLE = {"pg-pgp": False, "pg-aes": False}
# the report's table: both sides' CPU (a client method moves the cipher's cost out of the server)
TABLE_COLUMNS = ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu", "client_cpu",
                 "d_client_cpu", "rate", "d_rate", "verdict")
_AES = "aes-cbc/pad:pkcs"

# per method: (insert SQL, read expression of v, update SQL, the key's form); %(k)s is the key parameter
_SQL = {
    "pg-pgp": ("INSERT INTO {t} (id, v) VALUES (%s, pgp_sym_encrypt_bytea(%s, %s, 'cipher-algo=aes256'))",
               "pgp_sym_decrypt_bytea(v, %s)",
               "UPDATE {t} SET v = pgp_sym_encrypt_bytea(%s, %s, 'cipher-algo=aes256') WHERE id = %s", "text"),
    "pg-aes": (f"INSERT INTO {{t}} (id, v) SELECT %s, r.iv || encrypt_iv(%s, %s, r.iv, '{_AES}') "
               "FROM (SELECT gen_random_bytes(16) AS iv) r",
               f"decrypt_iv(substring(v from 17), %s, substring(v for 16), '{_AES}')",
               f"UPDATE {{t}} SET v = r.iv || encrypt_iv(%s, %s, r.iv, '{_AES}') "
               "FROM (SELECT gen_random_bytes(16) AS iv) r WHERE id = %s", "bytea"),
}


def method_key():
    return column_lab.method_key(METHODS)


def wanted(variants) -> list[str]:
    return list(dict.fromkeys(v["method"] for v in variants if "method" in v))


def prepare(admin, setup: dict, ctx, *, may_create: bool, journal=None) -> None:
    """The column workload's setup: the key (never in a result file) and pgcrypto where a method needs it."""
    methods = wanted(ctx.variants)
    if not methods:
        return
    material, source = column_lab.column_key_material(ctx.key)
    setup["column"] = {"methods": methods, "key_source": source, "value_bytes": column_lab.VALUE_BYTES}
    setup["_column_key"] = material.hex()  # keys starting with _ never reach a result file
    if not any(m in METHODS for m in methods):
        return
    if admin.execute("SELECT 1 FROM pg_extension WHERE extname = 'pgcrypto'").fetchone():
        return
    if not may_create:
        raise EngineUnavailableError("the pgcrypto extension is not installed in this database (method pg-pgp, pg-aes)",
                                     hint="run CREATE EXTENSION pgcrypto; (Debian: postgresql-contrib), pass "
                                          "--allow-reconfigure, or use --method client-gcm,client-siv")
    check_may_create_pgcrypto(admin, "use --method client-gcm,client-siv")
    if journal is not None:
        journal.data["drop_extension"] = "pgcrypto"
        journal.save()
    try:
        admin.execute("CREATE EXTENSION IF NOT EXISTS pgcrypto")
    except Exception as e:  # psycopg.Error
        raise EngineUnavailableError(f"cannot create the pgcrypto extension: {first_line(e)}",
                                     hint="install postgresql-contrib, or use --method client-gcm,client-siv") from None
    setup["column"]["created_pgcrypto"] = True




class PgColumn(ServerColumn):
    """ColumnSession for PgSession (self.conn, self.schema, self.setup): a table of its own per worker."""

    searchable = SEARCHABLE

    def _col_key(self):
        """The in-database method's key: a 32-byte subkey (bytea for AES, its hex as the OpenPGP password)."""
        sub = column_lab._hkdf(self.column_key(), self._col_method, 32)
        return sub.hex() if _SQL[self._col_method][3] == "text" else sub

    def column_create(self, method: str, indexed: bool) -> dict:
        if method not in column_lab.CLIENT_METHODS and method not in METHODS:
            raise CheckFailedError(f"PostgreSQL has no column method {method!r}")
        self._col_method = method
        if method in METHODS:
            self._col_quiet_log()
        t = self._col_table
        self.conn.execute(f"DROP TABLE IF EXISTS {t}")
        self.conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v bytea NOT NULL)")
        if indexed:
            self.conn.execute(f"CREATE INDEX ON {t} (v)")
        return {"indexed": int(indexed), "encrypts": "server" if method in METHODS else "client"}

    def _col_quiet_log(self, conn=None) -> None:
        """The key is a bind parameter: no statement text holds it, but a server that logs statements logs their
        parameters too (log_statement, log_min_duration_statement; up to log_parameter_max_length bytes). This
        session logs none (superuser: SET log_parameter_max_length = 0); where it may not, a server that would
        log them is refused rather than handed the key."""
        conn = conn or self.conn
        conn.execute("SET log_parameter_max_length_on_error = 0")  # any role
        try:
            conn.execute("SET log_parameter_max_length = 0")
            return
        except self.psycopg.Error:
            pass
        stmt, slow = (conn.execute(f"SHOW {k}").fetchone()[0] for k in ("log_statement", "log_min_duration_statement"))
        if stmt in ("mod", "all") or slow != "-1":
            raise EngineUnavailableError(
                f"the server logs statements with their parameters (log_statement={stmt}, log_min_duration_statement="
                f"{slow}) and this role may not turn that off: pg-pgp/pg-aes would put the key in its log",
                hint="run as a superuser, or set log_parameter_max_length = 0 for this role, or use --method "
                     "client-gcm,client-siv")

    def _in_db(self) -> bool:
        return self._col_method in METHODS

    def _write(self, sql: str, params: list[tuple]) -> int:
        with self.conn.transaction():
            cur = self.conn.cursor()
            cur.executemany(sql, params)
            return cur.rowcount if cur.rowcount >= 0 else len(params)

    def column_insert(self, rows: list[tuple[int, bytes]]) -> int:
        if self._in_db():
            key = self._col_key()
            return self._write(_SQL[self._col_method][0].format(t=self._col_table), [(i, v, key) for i, v in rows])
        return self._write(f"INSERT INTO {self._col_table} (id, v) VALUES (%s, %s)", rows)

    def column_read(self) -> list[tuple[int, bytes]]:
        if not self._in_db():
            return [(i, bytes(v)) for i, v in self.conn.execute(f"SELECT id, v FROM {self._col_table} ORDER BY id")]
        return [(i, bytes(v)) for i, v in self._col_decrypt_all(self.conn)]

    def _col_decrypt_all(self, conn) -> list:
        """Every (id, value) decrypted by the server on this connection; a wrong key is WrongKeyError."""
        expr = _SQL[self._col_method][1]
        try:
            return conn.execute(f"SELECT id, {expr} FROM {self._col_table} ORDER BY id", (self._col_key(),)).fetchall()
        except self.psycopg.Error as e:
            msg = first_line(e)
            if "Wrong key" in msg or "decrypt" in msg.lower():
                raise WrongKeyError(f"the encrypted column does not decrypt with the key given ({self._col_method}: "
                                    f"{msg})", hint="use the key it was encrypted with (--key-file or ENCBENCH_KEY)") from None
            raise

    def column_sessions(self):
        """Itself for an in-database method (column_readers, column_read_together, SessionsTogether's rest)."""
        return self if self.variant.get("method") in METHODS else None

    # -- k sessions decrypting the whole table together (the in-database methods) -------------------
    def column_readers(self, k: int) -> list:
        """Untimed: k more connections (SessionsTogether), each logging no parameters."""
        conns = self.open_sessions(k, parallel=False)
        for c in conns:
            self._col_quiet_log(c)
        return conns

    def column_read_together(self, conns: list) -> tuple[list[int], float]:
        """Every session has the server decrypt the whole table, released at once: (rows each, seconds). Only the
        count comes back (as the hash workload's aggregate): the client's fetching is no part of what scales."""
        sql = f"SELECT count(octet_length({_SQL[self._col_method][1]})) FROM {self._col_table}"
        return run_together(conns, lambda c: c.execute(sql, (self._col_key(),)).fetchone()[0])

    def column_lookup(self, value: bytes) -> list[int]:
        return [r[0] for r in self.conn.execute(f"SELECT id FROM {self._col_table} WHERE v = %s", (value,))]

    def column_update(self, rows: list[tuple[bytes, int]]) -> int:
        if self._in_db():
            key = self._col_key()
            return self._write(_SQL[self._col_method][2].format(t=self._col_table), [(v, key, i) for v, i in rows])
        return self._write(f"UPDATE {self._col_table} SET v = %s WHERE id = %s", rows)

    def column_size(self) -> dict:
        t = self._col_table
        self.conn.execute(f"VACUUM ANALYZE {t}")
        value_bytes, total = self.conn.execute(
            f"SELECT coalesce(sum(octet_length(v)), 0), pg_total_relation_size('{t}') FROM {t}").fetchone()
        return {"value_bytes": int(value_bytes), "db_bytes": int(total)}

    def column_explain(self, by_value: bool) -> dict:
        """The plan (ANALYZEd statistics) of the lookup by value, or of the full read and decrypt."""
        t = self._col_table
        self.conn.execute(f"ANALYZE {t}")
        if by_value:
            probe = self.conn.execute(f"SELECT v FROM {t} ORDER BY id LIMIT 1").fetchone()[0]
            sql, params = f"SELECT id FROM {t} WHERE v = %s", (bytes(probe),)
        else:  # the read's scan (the decrypting expression does not change it; the key stays out of EXPLAIN)
            sql, params = f"SELECT id, v FROM {t} ORDER BY id", ()
        plan = "; ".join(r[0].strip() for r in self.conn.execute("EXPLAIN (COSTS OFF) " + sql, params))
        return {"index_used": int(by_value and "Index" in plan), "plan": plan}
