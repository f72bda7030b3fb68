"""The tables a MariaDB run creates in its own database (dropped after the run): the at-rest table (plain, and
its encrypted copy), each with a marker row and the server's own word on its encryption; the in-transit tables and
the storm procedure; the hash workload's source table."""

from __future__ import annotations

import secrets
import time

from ...vocab import datagen
from ...host import rawhash
from .session import RT_ROWS, check_table, copy_rows

TABLES = {"off": "plain", "on": "enc"}  # fscrypt/gocryptfs: a `plain` table on a server of their own


def create_at_rest(cur, ctx, setup: dict, encryptions: set[str]) -> None:
    schema, rows = setup["schema"], setup["rows"]
    ctx.progress(f"generating the plain table ({rows:,} rows)")
    t0 = time.perf_counter()
    load_plain(cur, schema, rows, ctx.seed)
    setup["generation_s"] = time.perf_counter() - t0
    if "on" in encryptions:
        ctx.progress(f"copying it into an encrypted table ({rows:,} rows)")
        cur.execute(f"CREATE TABLE {schema}.enc {TABLE_DDL} ENCRYPTED=YES")
        copy_rows(cur, f"{schema}.plain", f"{schema}.enc", rows)
    for enc in sorted(encryptions & set(TABLES)):
        finish_table(cur, setup, enc, TABLES[enc], TABLES[enc])
    if "off" not in encryptions:
        cur.execute(f"DROP TABLE {schema}.plain")
    setup["rows"] = rows  # the marker row (id rows+1) is outside every workload's id range


TABLE_DDL = ("(id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k BIGINT NOT NULL, grp INT NOT NULL, "
             "name VARCHAR(64) NOT NULL, body TEXT NOT NULL, KEY grp (grp)) ENGINE=InnoDB")


def load_plain(cur, schema: str, rows: int, seed: int) -> None:
    """The table `plain` (ENCRYPTED=NO) with the generated rows."""
    cur.execute(f"CREATE TABLE {schema}.plain {TABLE_DDL} ENCRYPTED=NO")
    batch: list[tuple] = []
    sql = f"INSERT INTO {schema}.plain VALUES (%s, %s, %s, %s, %s)"
    for row in datagen.rows(rows, seed):
        batch.append(row)
        if len(batch) >= 5000:
            cur.executemany(sql, batch)
            batch.clear()
    if batch:
        cur.executemany(sql, batch)


def finish_table(cur, setup: dict, value: str, table: str, key: str) -> None:
    """The marker row only this table holds (a backup of another never contains it), statistics, and the
    server's own word on its encryption (checked against the variant)."""
    rows, schema = setup["rows"], setup["schema"]
    marker = f"encbench marker {table} {value} {secrets.token_hex(8)}"
    cur.execute(f"INSERT INTO {schema}.{table} VALUES (%s, 0, 0, 'marker', %s)", (rows + 1, marker))
    setup["markers"][value] = marker
    setup["tables"][value] = table
    cur.execute(f"ANALYZE TABLE {schema}.{table}")
    cur.fetchall()
    setup.setdefault("table_encryption", {})[key] = check_table(cur, schema, table, {"encryption": value})


def create_hash_table(cur, schema: str, rows: int) -> None:
    """hashsrc: one 10-character value per row (seed 004's ID VARCHAR(10)), loaded in chunks."""
    cur.execute(f"CREATE TABLE {schema}.hashsrc (id INT NOT NULL PRIMARY KEY, v VARCHAR(16) NOT NULL) ENGINE=InnoDB")
    for lo in range(1, rows + 1, 50_000):
        hi = min(rows, lo + 49_999)
        cur.execute(f"INSERT INTO {schema}.hashsrc SELECT seq, LPAD(seq, {rawhash.VALUE_BYTES}, '0') "
                    f"FROM {schema}.seq_{lo}_to_{hi}")


def create_transit(cur, schema: str, bulk_rows: int) -> None:
    cur.execute(f"CREATE TABLE {schema}.rt (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL) ENGINE=InnoDB")
    cur.execute(f"INSERT INTO {schema}.rt SELECT seq, MD5(seq) FROM {schema}.seq_1_to_{RT_ROWS}")
    # ~1 KB rows of hex text
    cur.execute(f"CREATE TABLE {schema}.bulk (id INT NOT NULL PRIMARY KEY, payload TEXT NOT NULL) ENGINE=InnoDB")
    for lo in range(1, int(bulk_rows) + 1, 20_000):  # a transaction per chunk: see copy_rows
        hi = min(int(bulk_rows), lo + 19_999)
        cur.execute(f"INSERT INTO {schema}.bulk SELECT seq, REPEAT(MD5(seq), 31) FROM {schema}.seq_{lo}_to_{hi}")
    cur.execute(f"""CREATE PROCEDURE {schema}.storm(n INT, send BOOL)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < n DO
    IF send THEN SELECT 'x'; ELSE SET @encbench_x = 'x'; END IF;
    SET i = i + 1;
  END WHILE;
END""")
