"""MariaDB's side of the column workload (workloads/column.py, issue 16): the client methods, plus the
server's own AES_ENCRYPT / AES_DECRYPT (method maria-aes), where the server thread encrypts and decrypts.

MariaDB 10.11 (this machine's) has the two-argument form only: AES-128-ECB with PKCS#7 padding, the key
folded to 16 bytes (block_encryption_mode and the IV argument came in MariaDB 11.2). So maria-aes is
deterministic: equal values give equal ciphertexts (and equal 16-byte blocks give equal blocks), the
index on the ciphertext serves an equality lookup (WHERE v = AES_ENCRYPT(?, key)), and the method leaks
equality and block patterns. The key given is a 16-byte HKDF subkey of the run's material: no folding.

AES_DECRYPT returns NULL when the padding is wrong: a wrong key gives NULL for all but about 1 row in
256, and any NULL read back is WrongKeyError (exit 8), not garbage.

The key: pymysql puts parameters into the statement text, so it is set once per operation in a user
variable (SET @k = ...; cleared after) and every statement names @k. The statement text of that SET
reaches the general log, the slow log and a statement-based binary log: the session turns them off
for itself (sql_log_off, log_slow_query, sql_log_bin need SUPER); where it may not and the server has
one of them on, the run is refused rather than the key logged. The processlist shows a statement only
while it runs (the SET: microseconds); encbench records no statement text anywhere.
"""

from __future__ import annotations

from ...errors import CheckFailedError, EngineUnavailableError, WrongKeyError
from ...workloads import column as column_lab
from ..column_base import ServerColumn
from ..concurrent import run_together

METHODS = {"maria-aes": "AES_ENCRYPT/AES_DECRYPT in the server (MariaDB 10.11: AES-128-ECB, no IV; deterministic: "
                        "the index serves lookups, equal values show)"}
SEARCHABLE = {"maria-aes": True}
KEY_BYTES = 16
CHUNK = 500  # rows per multi-row INSERT (every method alike)
TABLE_COLUMNS = ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu", "client_cpu",
                 "d_client_cpu", "rate", "d_rate", "verdict")
# the session's own logging off; (setting, the global that says whether the server logs at all)
_QUIET = (("sql_log_off", 1, "general_log"), ("log_slow_query", 0, "log_slow_query"), ("sql_log_bin", 0, "log_bin"))


def method_key():
    return column_lab.method_key(METHODS)


def prepare(setup: dict, ctx) -> None:
    """The column workload's key (never in a result file: keys starting with _)."""
    methods = list(dict.fromkeys(v["method"] for v in ctx.variants if "method" in v))
    if not methods:
        return
    material, source = column_lab.column_key_material(ctx.key)
    setup["column"] = {"methods": methods, "key_source": source, "value_bytes": column_lab.VALUE_BYTES}
    setup["_column_key"] = material.hex()




class MariaColumn(ServerColumn):
    """ColumnSession for MariaSession (self.conn: pymysql, self.schema, self.setup)."""

    searchable = SEARCHABLE

    def _in_db(self) -> bool:
        return self._col_method in METHODS

    def _run(self, sql: str, params=None) -> list:
        cur = self.conn.cursor()
        cur.execute(sql, params)
        return list(cur.fetchall())

    def column_create(self, method: str, indexed: bool) -> dict:
        if method not in column_lab.CLIENT_METHODS and method not in METHODS:
            raise CheckFailedError(f"MariaDB has no column method {method!r}")
        self._col_method = method
        if method in METHODS:
            self._col_quiet_logs()
        t = self._col_table
        self._run(f"DROP TABLE IF EXISTS {t}")
        self._run(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARBINARY(255) NOT NULL"
                  + (", KEY v (v)" if indexed else "") + ") ENGINE=InnoDB")
        return {"indexed": int(indexed), "encrypts": "server" if method in METHODS else "client"}

    def _col_quiet_logs(self, conn=None) -> None:
        """This session's statements (the one that sets the key) out of every log that would keep them."""
        conn = conn or self.conn
        for setting, value, global_switch in _QUIET:
            try:
                conn.cursor().execute(f"SET SESSION {setting} = {value}")
                continue
            except Exception:  # pymysql error: no SUPER (or the setting does not exist here)
                pass
            cur = conn.cursor()
            cur.execute(f"SELECT @@GLOBAL.{global_switch}")
            on = cur.fetchone()[0]
            if on and str(on) not in ("0", "OFF"):
                raise EngineUnavailableError(
                    f"the server has {global_switch} on and this user may not turn it off for its session "
                    f"({setting}): maria-aes would put the key in that log",
                    hint="run as a user with SUPER, turn that log off, or use --method client-gcm,client-siv")

    def _with_key(self, fn):
        """fn() with the method's key in @k: set before, cleared after (one short statement each, timed with it)."""
        self._run("SET @k = %s", (column_lab._hkdf(self.column_key(), self._col_method, KEY_BYTES),))
        try:
            return fn()
        finally:
            self._run("SET @k = NULL")

    def column_insert(self, rows: list[tuple[int, bytes]]) -> int:
        tuple_sql = "(%s, AES_ENCRYPT(%s, @k))" if self._in_db() else "(%s, %s)"

        def go() -> int:
            self.conn.begin()
            for at in range(0, len(rows), CHUNK):
                part = rows[at:at + CHUNK]
                self._run(f"INSERT INTO {self._col_table} (id, v) VALUES " + ",".join([tuple_sql] * len(part)),
                          [x for r in part for x in r])
            self.conn.commit()
            return len(rows)

        return self._with_key(go) if self._in_db() else go()

    def column_read(self) -> list[tuple[int, bytes]]:
        if not self._in_db():
            return [(i, bytes(v)) for i, v in self._run(f"SELECT id, v FROM {self._col_table} ORDER BY id")]
        rows = self._with_key(lambda: self._col_decrypt_all(self.conn))
        return [(i, bytes(v)) for i, v in rows]

    def _col_decrypt_all(self, conn) -> list:
        """Every (id, value) decrypted by the server with @k of this connection; a NULL is WrongKeyError."""
        cur = conn.cursor()
        cur.execute(f"SELECT id, AES_DECRYPT(v, @k) FROM {self._col_table} ORDER BY id")
        rows = cur.fetchall()
        bad = sum(1 for _, v in rows if v is None)
        if bad:
            raise WrongKeyError(f"the encrypted column does not decrypt with the key given (maria-aes: AES_DECRYPT "
                                f"returned NULL, bad padding, for {bad} of {len(rows)} rows)",
                                hint="use the key it was encrypted with (--key-file or ENCBENCH_KEY)")
        return rows

    def column_sessions(self):
        """Itself for an in-database method (column_readers, column_read_together, SessionsTogether's rest)."""
        return self if self.variant.get("method") in METHODS else None

    # -- k sessions decrypting the whole table together (the in-database method) ---------------------
    def column_readers(self, k: int) -> list:
        """Untimed: k more connections (SessionsTogether), logs off, the key in each one's @k."""
        conns = self.open_sessions(k, parallel=False)
        key = column_lab._hkdf(self.column_key(), self._col_method, KEY_BYTES)
        for c in conns:
            self._col_quiet_logs(c)
            c.cursor().execute("SET @k = %s", (key,))
        return conns

    def column_read_together(self, conns: list) -> tuple[list[int], float]:
        """Every session has the server decrypt the whole table, released at once: (rows each, seconds). Only the
        count of values that decrypted comes back (as the hash workload's aggregate): no client fetching scales."""
        def one(c) -> int:
            cur = c.cursor()
            cur.execute(f"SELECT COUNT(AES_DECRYPT(v, @k)) FROM {self._col_table}")  # NULL (bad padding): not counted
            return int(cur.fetchone()[0])

        return run_together(conns, one)

    def column_lookup(self, value: bytes) -> list[int]:
        t = self._col_table
        if self._in_db():  # deterministic: the ciphertext of the value, made by the server, through the index
            return [r[0] for r in self._with_key(lambda: self._run(f"SELECT id FROM {t} WHERE v = AES_ENCRYPT(%s, @k)",
                                                                   (value,)))]
        return [r[0] for r in self._run(f"SELECT id FROM {t} WHERE v = %s", (value,))]

    def column_update(self, rows: list[tuple[bytes, int]]) -> int:
        sql = (f"UPDATE {self._col_table} SET v = AES_ENCRYPT(%s, @k) WHERE id = %s" if self._in_db()
               else f"UPDATE {self._col_table} SET v = %s WHERE id = %s")

        def go() -> int:
            self.conn.begin()
            cur = self.conn.cursor()
            changed = sum(cur.execute(sql, r) for r in rows)
            self.conn.commit()
            return changed

        return self._with_key(go) if self._in_db() else go()

    def column_size(self) -> dict:
        t = self._col_table
        self._run(f"ANALYZE TABLE {t}")
        value_bytes = self._run(f"SELECT COALESCE(SUM(LENGTH(v)), 0) FROM {t}")[0][0]
        data, index = self._run("SELECT DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES WHERE "
                                "TABLE_SCHEMA = %s AND TABLE_NAME = %s", tuple(t.split(".")))[0]
        return {"value_bytes": int(value_bytes), "db_bytes": int(data) + int(index)}

    def column_explain(self, by_value: bool) -> dict:
        """EXPLAIN of the lookup (equality on a stored ciphertext: the plan AES_ENCRYPT(?, @k) = a constant gets
        too) or of the full read; the key is not in either."""
        t = self._col_table
        if by_value:
            probe = self._run(f"SELECT v FROM {t} ORDER BY id LIMIT 1")[0][0]
            cur = self.conn.cursor()
            cur.execute(f"EXPLAIN SELECT id FROM {t} WHERE v = %s", (probe,))
        else:
            cur = self.conn.cursor()
            cur.execute(f"EXPLAIN SELECT id, v FROM {t} ORDER BY id")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        plan = "; ".join(f"{r['table']}: type={r['type']} key={r['key']} rows={r['rows']}"
                         + (f" ({r['Extra']})" if r.get("Extra") else "") for r in rows)
        used = by_value and any(r["key"] == "v" and r["type"] in ("ref", "eq_ref", "const") for r in rows)
        return {"index_used": int(used), "plan": plan}
