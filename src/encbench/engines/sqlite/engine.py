"""SQLite + SQLCipher: the embedded engine, encrypted at rest page by page.

Both variants run through the same library (sqlcipher3, SQLCipher's build of SQLite), so
the only difference between encryption=off and encryption=on is the page codec.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from ...vocab import datagen
from . import knobs as sqlcipher_knobs, oltp as tpcb
from ...host import oscache
from ...host import rawcipher
from ...errors import BadValueError, CheckFailedError, EngineUnavailableError, WrongKeyError
from ...util.files import check_free_space, replace_atomic
from ...util.units import fmt_bytes
from ...vocab.probe import Target
from ...vocab.variants import Variant, VariantKey, int_validator, normalize
from ...util import filelock
from ...workloads import column as column_lab
from ...vocab import oltp as oltp_lab
from ..base import Engine, PrepareContext, Session, Table
from ...vocab.leakcheck import ScanTarget, scan
from ...host import rawcolumn
from ...host import cpugap
from ...vocab import leakcheck

TABLE = "bench"
DEFAULT_PASSPHRASE = "encbench-synthetic-data"  # the data is synthetic: this key protects nothing
DEFAULT_CACHE_KIB = 2000  # SQLite's default page cache (cache_size=-2000)
AT_REST = ("scan-like", "scan-eq", "dml", "rebuild", "backup")  # SQLCipher's workloads: the keys below vary them
OLTP_COLUMNS = ("workload", "op", "variant", "rate", "d_rate", "cpu_per_unit", "d_cpu_per_unit", "verdict")
FILES = AT_REST + ("oltp",)  # the workloads on a generated database file, plain or SQLCipher

# the page HMAC and the key derivation's hash: variant value -> what SQLCipher's PRAGMAs take and read back
HMAC, KDF_ALGORITHMS = sqlcipher_knobs.HMAC, sqlcipher_knobs.KDF_ALGORITHMS
DEFAULT_HMAC, DEFAULT_KDF = sqlcipher_knobs.DEFAULT_HMAC, sqlcipher_knobs.DEFAULT_KDF

VARIANT_KEYS = (
    VariantKey("encryption", "SQLCipher page encryption off (plain SQLite) or on", ("off", "on"), ("off", "on"),
               workloads=FILES),
    VariantKey("cache", "cold: caches dropped before each operation; warm: table already in the page cache",
               ("cold", "warm"), ("cold", "warm"), workloads=AT_REST),
    VariantKey("page_size", "database page size in bytes (a power of two: 512..65536 plain, 1024..65536 with "
               "encryption=on)", ("4096",),
               validate=int_validator("page_size", lambda n: 512 <= n <= 65536 and n & (n - 1) == 0,
                                      "use a power of two from 512 to 65536"), workloads=FILES),
    VariantKey("kdf_iter", "PBKDF2 iterations of the key derivation", ("256000",),
               validate=int_validator("kdf_iter", lambda n: 1 <= n <= 10_000_000, "use 1 to 10000000"),
               applies_when=(("encryption", "on"),), workloads=FILES),
    VariantKey("key", "passphrase (derived with PBKDF2 at open) or raw (a 256-bit key, no derivation)",
               ("passphrase",), ("passphrase", "raw"), applies_when=(("encryption", "on"),), workloads=FILES),
    VariantKey("hmac", "the page HMAC: sha512 (SQLCipher 4's default), sha256, sha1 (SQLCipher 3's), or off (pages "
               "not authenticated): PRAGMA cipher_hmac_algorithm / cipher_use_hmac; only when named (the default "
               "otherwise, unnamed in labels)", ("sha512",), tuple(HMAC),
               applies_when=(("encryption", "on"),), workloads=FILES, named_only=FILES),
    VariantKey("kdf_algorithm", "the key derivation's PBKDF2 hash: sha512 (default), sha256, sha1 "
               "(PRAGMA cipher_kdf_algorithm); only when named", ("sha512",), tuple(KDF_ALGORITHMS),
               applies_when=(("encryption", "on"),), workloads=FILES, named_only=FILES),
    oltp_lab.script_key(tpcb.SCRIPTS),
    oltp_lab.memory_key(),
    oltp_lab.clients_key(),
)
LOCK_FILE = ".lock"  # in a dataset's directory: held while its files are checked and built
# SQLCipher 4 keeps a 16-byte IV and a 64-byte HMAC-SHA512 at the end of every page (80 reserved bytes);
# SQLite allows a 512-byte page at most 32 (sqlite3BtreeSetPageSize turns such a page into 1024 bytes while
# SQLCipher's codec still works in 512-byte units: the file written opens again neither at 512 nor at 1024).
# Encrypted pages start at 1024 bytes.
SQLCIPHER_RESERVE_BYTES = 80
SQLITE_MAX_RESERVE_AT_512 = 32
MIN_ENCRYPTED_PAGE_SIZE = 1024
COLUMN_TABLE = "col"  # the column workload's table, in a plain database file of its own per run
EMBEDDED = "an embedded engine: no connection, no TLS"  # why the in-transit terms are absent from its bill


def _import():
    try:
        import sqlcipher3
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise EngineUnavailableError(
            f"the SQLCipher library is not importable ({e})",
            hint="install it with: pip install sqlcipher3-wheels",
        ) from None
    return sqlcipher3


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def key_sql(variant: Variant, passphrase: str) -> str | None:
    """The PRAGMA key argument for a variant (None for a plain database)."""
    if variant.get("encryption") != "on":
        return None
    if variant.get("key") == "raw":
        return "\"x'" + hashlib.sha256(passphrase.encode()).hexdigest() + "'\""
    return _quote(passphrase)


def _reusable(ddir: Path, name: str, regenerate: bool) -> bool:
    """A database file built before for this data set (its metadata written last), and not --regenerate."""
    return not regenerate and (ddir / name).exists() and (ddir / (name + ".json")).exists()


def file_name(variant: Variant) -> str:
    """The data file of a variant: the bench table's, or (an oltp variant) the TPC-B tables' ("tpcb-...")."""
    ps = variant.get("page_size", "4096")
    prefix = "tpcb-" if "script" in variant else ""
    if variant.get("encryption") != "on":
        return f"{prefix}plain-p{ps}.db"
    hmac, kdf = variant.get("hmac", DEFAULT_HMAC), variant.get("kdf_algorithm", DEFAULT_KDF)
    settings = (f"-h{hmac}" if hmac != DEFAULT_HMAC else "") + (f"-kd{kdf}" if kdf != DEFAULT_KDF else "")
    return f"{prefix}enc-p{ps}-k{variant['kdf_iter']}-{variant['key']}{settings}.db"


def cipher_pragmas(variant: Variant, schema: str = "") -> list[str]:
    """The PRAGMAs (after the key) that set a variant's page size, key derivation and page HMAC."""
    at = f"{schema}." if schema else ""
    values = {"page_size": variant.get("page_size", "4096"), "kdf_iter": variant["kdf_iter"],
              "kdf_algorithm": variant.get("kdf_algorithm", DEFAULT_KDF), "hmac": variant.get("hmac", DEFAULT_HMAC)}
    return [p for key, value in values.items() for p in sqlcipher_knobs.PRAGMAS[key](value, at)]


def check_cipher_settings(conn, variant: Variant, path: Path) -> dict:
    """What SQLCipher says the open connection runs (read back), against the variant: CheckFailedError if not it."""
    got = {"hmac": conn.execute("PRAGMA cipher_hmac_algorithm").fetchone()[0],
           "use_hmac": conn.execute("PRAGMA cipher_use_hmac").fetchone()[0],
           "kdf_algorithm": conn.execute("PRAGMA cipher_kdf_algorithm").fetchone()[0],
           "kdf_iter": conn.execute("PRAGMA kdf_iter").fetchone()[0],
           "page_size": conn.execute("PRAGMA cipher_page_size").fetchone()[0]}
    hmac = HMAC[variant.get("hmac", DEFAULT_HMAC)]
    want = {"use_hmac": "1" if hmac else "0", "kdf_algorithm": KDF_ALGORITHMS[variant.get("kdf_algorithm", DEFAULT_KDF)],
            "kdf_iter": str(variant["kdf_iter"]), "page_size": str(variant.get("page_size", "4096")),
            **({"hmac": hmac} if hmac else {})}
    wrong = {k: (got[k], v) for k, v in want.items() if str(got[k]) != v}
    if wrong:
        raise CheckFailedError(f"{path.name} does not run the settings asked for: " + ", ".join(
            f"{k} is {g}, not {w}" for k, (g, w) in wrong.items()))
    return got


class SQLiteSession(tpcb.OltpSessionMixin, Session):
    def __init__(self, path: Path, variant: Variant, setup: dict, *, copy_of: Path | None, create: bool = False):
        sqlcipher3 = _import()
        self.path, self.variant, self.copy_of = path, variant, copy_of
        self.table, self.row_count = TABLE, setup["rows"]
        self.page_size = int(variant.get("page_size", "4096"))
        self._key = key_sql(variant, setup["_passphrase"])
        self._column_key = bytes.fromhex(setup["_column_key"]) if setup.get("_column_key") else b""
        self._warm = False
        t0, ru0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        self.conn = _connect(sqlcipher3, path, variant, self._key, create=create)
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        self.open_metrics = {
            "wall_s": time.perf_counter() - t0,
            "cpu_s": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        }
        self._counters = page_counters(self.conn, path)
        if self._key is not None:  # what SQLCipher really runs, read back (a run on other settings fails)
            self.info = {"cipher": check_cipher_settings(self.conn, variant, path)}
        self._target: Target | None = None
        self.setup_oltp = setup.get("oltp") or {}

    def target(self) -> Target:
        if self._target is not None:  # an operation's own (the oltp clients' connections)
            return self._target
        extra = {"counters": self._counters} if self._counters else {}
        return Target(pids=[os.getpid()], page_size=self.page_size, extra=extra)

    def use_target(self, target: Target | None) -> None:
        self._target = target

    def _connect_to(self, path: Path):
        """Another connection to this session's file, keyed like its own (the oltp workload's clients)."""
        return _connect(_import(), path, self.variant, self._key)

    def _counters_of(self, conn):
        return page_counters(conn, self.path)

    def _files(self) -> list[Path]:
        return [p for p in (self.path, Path(f"{self.path}-journal"), Path(f"{self.path}-wal")) if p.exists()]

    def set_cache(self, state: str) -> dict:
        if state == "cold":
            self.conn.execute(f"PRAGMA cache_size = -{DEFAULT_CACHE_KIB}")
            self.conn.execute("PRAGMA shrink_memory")  # empties SQLite's own page cache
            dropped = all(oscache.drop_file(p) for p in self._files())
            self._warm = False
            return {"cache": "cold", "os_cache_dropped": dropped, "method": oscache.METHOD}
        kib = self.path.stat().st_size * 5 // 4 // 1024 + 4096
        self.conn.execute(f"PRAGMA cache_size = -{kib}")
        if not self._warm:
            self.conn.execute("PRAGMA quick_check").fetchall()  # reads every page once
            self._warm = True
        return {"cache": "warm", "page_cache_kib": kib}

    def execute(self, sql: str, params: tuple = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    def query(self, sql: str, params: tuple = ()) -> list:
        return self.conn.execute(sql, params).fetchall()

    def begin(self) -> None:
        self.conn.execute("BEGIN")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rebuild_operations(self) -> list[tuple[str, Callable[[], Any]]]:
        return [
            ("reindex", lambda: self.conn.execute("REINDEX")),
            ("vacuum", lambda: self.conn.execute("VACUUM")),
        ]

    def prepare_backup(self, dest: Path):
        """Untimed: a connection to the new backup file, same key and settings.

        A new encrypted file derives its key only at its first write: write once here
        so that the key derivation stays out of the backup's timing.
        """
        conn = _connect(_import(), dest, self.variant, self._key, create=True)
        conn.execute("PRAGMA user_version = 0")
        return conn

    def run_backup(self, handle) -> None:
        """Timed: an online backup of every page."""
        self.conn.backup(handle)
        handle.close()

    def check_backup(self, dest: Path) -> dict:
        """Untimed: an encrypted source must give an encrypted copy (CheckFailedError if not)."""
        return {"backup_encrypted": int(check_at_rest(dest, self.variant))}

    def close(self) -> None:
        if self._clients is not None:  # the oltp workload's client connections
            self._clients.close()
        self.conn.close()
        if self.copy_of is not None:
            for p in self._files():
                p.unlink()

    # -- the column workload (workloads/column.py): a table of its own in a fresh plain file ----------
    # SQLite is embedded: the database's work and the cipher's run in the same process, so all of the CPU
    # measured is the application's (the client's). It has no in-database column functions: client methods only.
    def column_key(self) -> bytes:
        return self._column_key

    def column_methods(self) -> dict[str, bool]:
        return {}

    def column_create(self, method: str, indexed: bool) -> dict:
        if method not in column_lab.CLIENT_METHODS:
            raise CheckFailedError(f"SQLite has no in-database column method {method!r}")
        self.conn.execute(f"DROP TABLE IF EXISTS {COLUMN_TABLE}")
        self.conn.execute(f"CREATE TABLE {COLUMN_TABLE} (id INTEGER PRIMARY KEY, v BLOB NOT NULL)")
        if indexed:
            self.conn.execute(f"CREATE INDEX {COLUMN_TABLE}_v ON {COLUMN_TABLE} (v)")
        return {"indexed": int(indexed)}

    def column_insert(self, rows: list[tuple[int, bytes]]) -> int:
        self.conn.execute("BEGIN")
        self.conn.executemany(f"INSERT INTO {COLUMN_TABLE} (id, v) VALUES (?, ?)", rows)
        self.conn.execute("COMMIT")
        return len(rows)

    def column_read(self) -> list[tuple[int, bytes]]:
        return self.conn.execute(f"SELECT id, v FROM {COLUMN_TABLE} ORDER BY id").fetchall()

    def column_lookup(self, value: bytes) -> list[int]:
        return [r[0] for r in self.conn.execute(f"SELECT id FROM {COLUMN_TABLE} WHERE v = ?", (value,))]

    def column_update(self, rows: list[tuple[bytes, int]]) -> int:
        self.conn.execute("BEGIN")
        changed = self.conn.executemany(f"UPDATE {COLUMN_TABLE} SET v = ? WHERE id = ?", rows).rowcount
        self.conn.execute("COMMIT")
        return changed

    def column_size(self) -> dict:
        value_bytes = self.conn.execute(f"SELECT coalesce(sum(length(v)), 0) FROM {COLUMN_TABLE}").fetchone()[0]
        pages, free, size = (self.conn.execute(f"PRAGMA {p}").fetchone()[0]
                             for p in ("page_count", "freelist_count", "page_size"))
        return {"value_bytes": value_bytes, "db_bytes": (pages - free) * size}  # the file holds only this table

    def column_sessions(self) -> None:
        return None  # embedded: no server sessions to decrypt in

    def column_explain(self, by_value: bool) -> dict:
        sql = (f"SELECT id FROM {COLUMN_TABLE} WHERE v = ?" if by_value else f"SELECT id, v FROM {COLUMN_TABLE} ORDER BY id")
        plan = "; ".join(r[-1] for r in self.conn.execute("EXPLAIN QUERY PLAN " + sql, (b"",) if by_value else ()))
        return {"index_used": int(" USING " in plan and "INDEX" in plan and plan.startswith("SEARCH")), "plan": plan}


# sqlite3_db_status counters: pages read into / written from the page cache
_DBSTATUS_CACHE_MISS, _DBSTATUS_CACHE_WRITE = 8, 9


@contextlib.contextmanager
def _building(path: Path):
    """Build a file under a temporary name; rename it into place only when complete. Only under the data
    directory's lock (prepare): the one name is then never built twice at once, and what a killed build
    left under it is deleted by the next."""
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}-journal").unlink(missing_ok=True)


SQLITE_HEADER = b"SQLite format 3\x00"


def is_encrypted_file(path: Path) -> bool:
    """A plain SQLite file starts with its magic header; a SQLCipher file starts with random salt."""
    with open(path, "rb") as f:
        return f.read(len(SQLITE_HEADER)) != SQLITE_HEADER


def tpcb_spec(ctx: PrepareContext) -> dict:
    """The oltp workload's data set: pgbench's tables, the accounts sized from --size (`rows`: its accounts)."""
    return {"generator": "tpcb-1", "rows": tpcb.accounts_for(ctx.size_bytes), "seed": ctx.seed,
            "accounts": tpcb.accounts_for(ctx.size_bytes)}


def check_at_rest(path: Path, variant: Variant) -> bool:
    """Fail loudly when a file is not in the state its variant claims."""
    encrypted = is_encrypted_file(path)
    if encrypted != (variant.get("encryption") == "on"):
        raise CheckFailedError(
            f"{path} is {'encrypted' if encrypted else 'plain'} on disk but the variant says encryption="
            f"{variant.get('encryption')}",
            hint="remove the data directory or run with --regenerate",
        )
    return encrypted


def page_counters(conn, path: Path) -> Callable[[], dict[str, int]] | None:
    """SQLite's own page counters for a connection, or None where they cannot be reached.

    The Python module does not expose sqlite3_db_status, so the sqlite3* handle is read
    from the connection object (the first field after the object header) and checked by
    asking SQLite for that handle's file name: a mismatch means no counters, never
    wrong ones (the pages probe then falls back to read() bytes / page size).
    """
    import ctypes

    try:
        lib = ctypes.CDLL(_import()._sqlite3.__file__)
        lib.sqlite3_db_filename.restype = ctypes.c_char_p
        lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.sqlite3_db_status.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                          ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
        name = lib.sqlite3_db_filename(handle, b"main") if handle else None
        if not name or os.path.realpath(name.decode()) != os.path.realpath(path):
            return None
    except (OSError, AttributeError, ValueError):
        return None
    cur, high = ctypes.c_int(), ctypes.c_int()

    def read(op: int) -> int:
        lib.sqlite3_db_status(handle, op, ctypes.byref(cur), ctypes.byref(high), 0)
        return cur.value

    return lambda: {"pages_read": read(_DBSTATUS_CACHE_MISS), "pages_written": read(_DBSTATUS_CACHE_WRITE)}


def _connect(sqlcipher3, path: Path, variant: Variant, key: str | None, *, create: bool = False):
    if not create and not path.exists():
        raise EngineUnavailableError(f"database file {path} is missing", hint="run again with --regenerate")
    conn = sqlcipher3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA cipher_log_level = NONE")  # errors are ours to report, on one line
    if key is not None:
        conn.execute(f"PRAGMA key = {key}")
        for pragma in cipher_pragmas(variant):
            conn.execute(pragma)
    elif create:
        conn.execute(f"PRAGMA page_size = {variant.get('page_size', '4096')}")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # derives the key, reads page 1
    except sqlcipher3.DatabaseError:
        conn.close()
        raise WrongKeyError(
            f"the encrypted database {path} does not open with the key given",
            hint="use the key it was created with (ENCBENCH_KEY or --key-file), or --regenerate to rebuild it",
        ) from None
    return conn


def _plant_sqlite(sqlcipher3, directory: Path, variant: Variant, canary: str, report) -> None:
    """Write the canary, commit, back it up, then hold a write transaction open so that the
    rollback journal (old pages) and the WAL (new frames) are on disk while they are scanned."""
    directory.mkdir(parents=True, exist_ok=True)
    key = key_sql(variant, DEFAULT_PASSPHRASE)
    fix = "open the database with a key (PRAGMA key): SQLCipher encrypts it, its journal, WAL and backups"
    for mode in ("delete", "wal"):
        path = directory / f"leak-{mode}.db"
        conn = _connect(sqlcipher3, path, variant, key, create=True)
        try:
            conn.execute(f"PRAGMA journal_mode = {mode}")
            conn.execute("CREATE TABLE leak (v TEXT NOT NULL)")
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO leak VALUES (?)", [(f"{canary} {i}",) for i in range(200)])
            conn.execute("COMMIT")
            backup = directory / f"leak-{mode}-backup.db"
            dest = _connect(sqlcipher3, backup, variant, key, create=True)
            dest.execute("PRAGMA user_version = 0")
            conn.backup(dest)
            dest.close()
            conn.execute("BEGIN")
            conn.execute("UPDATE leak SET v = v || ' updated'")
            scan([ScanTarget(str(path), "database", fix), ScanTarget(f"{path}-journal", "rollback journal", fix),
                  ScanTarget(f"{path}-wal", "WAL", fix), ScanTarget(str(backup), "backup", fix)], canary, report)
        finally:
            conn.close()  # rolls the open transaction back


class SQLiteEngine(Engine):
    name = "sqlite"
    description = "SQLite plain vs SQLCipher 4 (embedded, no server; PyPI sqlcipher3-wheels)"
    variant_keys = (*VARIANT_KEYS, column_lab.method_key())
    workloads = (*AT_REST, "column", "oltp")
    default_workloads = AT_REST  # the column lab on request: --workload column, --method or --variant method=
    # --quick: at rest: a cold scan, every page read decrypted
    quick_workloads, quick_variants = ("scan-like",), ("cache=cold",)
    session_class = SQLiteSession
    label = "SQLite/SQLCipher"
    heldout_setups = {"at rest": "sqlcipher"}
    open_includes = "key derivation included"  # SQLCipher derives the page key from the passphrase per open
    at_rest_names = {"on": "SQLCipher"}
    # selftest: one minute on 2 cores at the default size and runs (scan-eq has cold reads and warm CPU)
    selftest_workloads = ("scan-eq",)
    # sqlcipher3's extension links SQLite, SQLCipher and OpenSSL statically: the symbol says which one
    profile_categories = (
        ("libcrypto", r"_sqlite3|sqlcipher", r"^(aesni_|aes_|_?vpaes|sha\d+_|sha512|sha256|sha1_|EVP_|HMAC|hmac_|ossl_|"
                                             r"OPENSSL_|CRYPTO_|PKCS5_|evp_|bn_|BN_|md_|gcm_|ctr_|cbc_|RAND_)"),
        ("sqlcipher", r"_sqlite3|sqlcipher", r"^(sqlcipher|sqlite3Codec|codec)"),
        ("sqlite", r"_sqlite3|libsqlite|sqlcipher", r""),
    )
    profile_in_process = True
    knobs = sqlcipher_knobs.KNOBS
    # a read-only mix and encbench's own update-one (1 page written per commit) and update-batch (8): the cost of a
    # commit and of a page written come apart (a commit costs about a page's encryption here, which a fit over
    # tpcb-like's 4 pages per commit alone would hide in the page's cost); pgbench's tpcb-like and simple-update are
    # left to the held-out check
    calibration_variants = ("script=select-only,update-one,update-batch", "memory=100%,25%", "encryption=off,on")
    # the bill's terms that never apply to an embedded engine, and those calibrate's mixes do not fit; no server to
    # sample: `estimate` takes SQLite's rates with --rate
    calibration_absent = {"log_bytes": "SQLCipher encrypts the WAL as pages (each frame one page): counted as page "
                                       "writes",
                          **{t: EMBEDDED for t in ("tls_handshakes", "tls_resumptions", "tls_bytes", "tls_records_in",
                                                    "tls_records_out")}}
    calibration_not_fitted = {"temp_bytes": "no calibrated mix spills to temporary files (encbench's SQLite mixes sort "
                                            "in memory)"}

    def advise_sweeps(self, quick: bool, options: dict) -> list:
        return sqlcipher_knobs.sweeps(quick)
    metered = "worker"  # --meter instructions: the worker (and so SQLite, SQLCipher and its OpenSSL) under callgrind
    metered_workloads = (*AT_REST, "column")
    # the attribution's own groups (sqlcipher3 links SQLite, SQLCipher and OpenSSL into one object: by the symbol)
    instruction_groups = (
        ("SQLCipher page codec", r"_sqlite3|sqlcipher", r"^(sqlcipher|sqlite3Codec|codec)"),
        ("SQLite pager and B-tree", r"_sqlite3|sqlcipher", r"^(sqlite3Pager|pager|sqlite3Pcache|pcache|readDbPage|"
                                                           r"sqlite3Btree|btree|getAndInitPage|moveTo|unixRead|"
                                                           r"sqlite3OsRead|sqlite3PagerGet)"),
        ("SQLite (other)", r"_sqlite3|sqlcipher", r""),  # after the crypto library's groups: the same object
    )
    # what SQLCipher 4's defaults use each family for (the open's SHA-512 is PBKDF2's: analysis/instrattr.py)
    crypto_roles = {"SHA-512": "the page HMAC", "AES-CBC": "the page cipher", "HMAC": "the page HMAC",
                    "SHA-512@(open)": "the PBKDF2 key derivation", "HMAC@(open)": "the PBKDF2 key derivation"}

    def tables(self) -> tuple[Table, ...]:
        return (Table("", "encryption", "off", AT_REST),
                # a transaction mix runs for a set time: its table leads with throughput and CPU per transaction
                Table("The transaction mix (oltp): SQLCipher vs plain, a share of the data in SQLite's page cache",
                      "encryption", "off", ("oltp",), OLTP_COLUMNS),
                Table("Column encryption (SQLite is embedded: every CPU figure is the application's, the client's)",
                      "method", column_lab.BASELINE, ("column",), column_lab.TABLE_COLUMNS))

    def check_available(self) -> None:
        _import()

    def check_variants(self, variants: list[Variant]) -> None:
        small = sorted({int(v["page_size"]) for v in variants
                        if v.get("encryption") == "on" and int(v.get("page_size", 4096)) < MIN_ENCRYPTED_PAGE_SIZE})
        if small:
            raise BadValueError(
                f"SQLCipher cannot encrypt page_size={small[0]}: it reserves {SQLCIPHER_RESERVE_BYTES} bytes per page "
                f"(16-byte IV + 64-byte HMAC-SHA512) and SQLite allows a 512-byte page at most "
                f"{SQLITE_MAX_RESERVE_AT_512}",
                hint=f"use page_size={MIN_ENCRYPTED_PAGE_SIZE}..65536, or --variant encryption=off for plain SQLite "
                     f"at {small[0]}")

    def versions(self) -> dict[str, str]:
        sqlcipher3 = _import()
        conn = sqlcipher3.connect(":memory:")
        conn.execute("PRAGMA key = 'probe'")
        out = {
            "sqlite": sqlcipher3.sqlite_version,
            "sqlcipher": conn.execute("PRAGMA cipher_version").fetchone()[0],
            "sqlcipher_crypto_provider": conn.execute("PRAGMA cipher_provider").fetchone()[0],
            "sqlcipher_crypto_provider_version": conn.execute("PRAGMA cipher_provider_version").fetchone()[0],
        }
        conn.close()
        return out

    # -- data -----------------------------------------------------------------------
    def prepare(self, ctx: PrepareContext) -> dict:
        sqlcipher3 = _import()
        rows = datagen.row_count_for(ctx.size_bytes)
        spec = {"generator": datagen.GENERATOR_VERSION, "rows": rows, "seed": ctx.seed}
        dataset_id = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
        ddir = ctx.data_dir / f"sqlite-{dataset_id}"
        pending = self._to_generate(ctx, ddir)
        if pending:  # every file is about --size: refused before the first is begun, not half-way
            check_free_space(ddir, len(pending) * ctx.size_bytes,
                             what=f"--size {fmt_bytes(ctx.size_bytes)} ({len(pending)} database "
                                  f"file{'s' if len(pending) > 1 else ''} to generate)",
                             hint="free some space, give another --data-dir, or a smaller --size")
        if any("encryption" in v for v in ctx.variants):  # a column-only run needs no data directory
            ddir.mkdir(parents=True, exist_ok=True)
        passphrase = ctx.key or DEFAULT_PASSPHRASE
        files: dict[str, dict] = {}
        at_rest = [v for v in ctx.variants if "encryption" in v]  # the column workload makes its own table per run
        oltp = tpcb_spec(ctx) if any("script" in v for v in at_rest) else None
        if at_rest:
            # runs sharing a data directory: one checks and builds while the others wait, then reuse its files
            with filelock.locked(ddir / LOCK_FILE, on_wait=lambda: ctx.progress(
                    f"waiting for another run building the data in {ddir}")):
                for variant in at_rest:
                    self._ensure(sqlcipher3, ctx, ddir, oltp if "script" in variant else spec, variant, passphrase,
                                 files)
        column = self._column_setup(ctx)
        return {
            "dataset_id": dataset_id,
            "data_dir": str(ddir),
            "rows": rows,
            "seed": ctx.seed,
            "generator_version": datagen.GENERATOR_VERSION,
            "table": TABLE,
            "files": files,
            "key_source": ctx.key_source,
            **({"metered": True} if ctx.meter else {}),  # --meter instructions: the raw cipher counted too
            "_passphrase": passphrase,  # keys starting with _ never reach result files
            **({"oltp": oltp} if oltp else {}),
            **column,
        }

    @staticmethod
    def _to_generate(ctx: PrepareContext, ddir: Path) -> list[str]:
        """The database files prepare will build (as _ensure decides): each variant's, and an encrypted one's plain
        twin (it is exported from it), unless reused."""
        names = []
        for variant in ctx.variants:
            if "encryption" not in variant or _reusable(ddir, file_name(variant), ctx.regenerate):
                continue
            names.append(file_name(variant))
            if variant.get("encryption") == "on":
                plain = file_name(normalize({**variant, "encryption": "off"}, VARIANT_KEYS))
                names += [] if _reusable(ddir, plain, ctx.regenerate) else [plain]
        return list(dict.fromkeys(names))

    @staticmethod
    def _column_setup(ctx: PrepareContext) -> dict:
        """The column workload's methods and key (derived from --key-file / ENCBENCH_KEY, else generated)."""
        methods = [v["method"] for v in ctx.variants if "method" in v]
        if not methods:
            return {}
        material, source = column_lab.column_key_material(ctx.key)
        return {"column": {"methods": list(dict.fromkeys(methods)), "key_source": source,
                           "value_bytes": column_lab.VALUE_BYTES},
                "_column_key": material.hex()}  # never in a result file (keys starting with _)

    def _ensure(self, sqlcipher3, ctx: PrepareContext, ddir: Path, spec: dict, variant: Variant,
                passphrase: str, files: dict[str, dict]) -> dict:
        """Reuse the database file of a variant when it exists for this spec, else build it (once)."""
        name = file_name(variant)
        if name in files:
            return files[name]
        path, meta_path = ddir / name, ddir / (name + ".json")
        key = key_sql(variant, passphrase)
        if _reusable(ddir, name, ctx.regenerate):
            _connect(sqlcipher3, path, variant, key).close()  # a wrong key fails here, before any run
            files[name] = dict(json.loads(meta_path.read_text()), reused=True, path=str(path),
                               encrypted_on_disk=check_at_rest(path, variant))
            return files[name]
        meta_path.unlink(missing_ok=True)
        if variant.get("encryption") == "on":
            plain_variant = normalize({**variant, "encryption": "off"}, VARIANT_KEYS)
            plain = self._ensure(sqlcipher3, ctx, ddir, spec, plain_variant, passphrase, files)
            ctx.progress(f"encrypting {name} ({spec['rows']:,} rows)")  # an oltp spec's rows: its accounts
            t0 = time.perf_counter()
            self._export_encrypted(sqlcipher3, Path(plain["path"]), path, variant, passphrase)
        else:
            ctx.progress(f"generating {name} ({spec['rows']:,} rows)")
            t0 = time.perf_counter()
            self._write_plain(sqlcipher3, path, variant, spec)
        meta = {"spec": spec, "variant": {k: v for k, v in variant.items() if k != "cache"},
                "generation_s": time.perf_counter() - t0,
                "bytes": path.stat().st_size}
        # the file's completion mark, written after the file is in place: a build cut short leaves no mark
        replace_atomic(meta_path, json.dumps(meta), what="the data file's description",
                       hint="check free space in the data directory")
        files[name] = dict(meta, reused=False, path=str(path), encrypted_on_disk=check_at_rest(path, variant))
        return files[name]

    @staticmethod
    def _write_plain(sqlcipher3, path: Path, variant: Variant, spec: dict) -> None:
        rows, seed = spec["rows"], spec["seed"]
        with _building(path) as tmp:
            conn = _connect(sqlcipher3, tmp, variant, None, create=True)
            if "script" in variant:  # the oltp workload's TPC-B tables, as pgbench -i makes them
                conn.execute("PRAGMA journal_mode = WAL")
                tpcb.populate(conn, rows)
                conn.close()
                return
            conn.execute(f"CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, k INTEGER NOT NULL,"
                         " grp INTEGER NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL)")
            conn.execute("BEGIN")
            conn.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?)", datagen.rows(rows, seed))
            conn.execute(f"CREATE INDEX {TABLE}_grp ON {TABLE} (grp)")
            conn.execute("COMMIT")
            conn.close()

    @staticmethod
    def _export_encrypted(sqlcipher3, plain_path: Path, path: Path, variant: Variant, passphrase: str) -> None:
        with _building(path) as tmp:
            conn = sqlcipher3.connect(str(plain_path), isolation_level=None)
            conn.execute("PRAGMA cipher_log_level = NONE")
            conn.execute(f"ATTACH DATABASE {_quote(str(tmp))} AS enc KEY {key_sql(variant, passphrase)}")
            for pragma in cipher_pragmas(variant, "enc"):
                conn.execute(pragma)
            conn.execute("SELECT sqlcipher_export('enc')")
            conn.execute("DETACH DATABASE enc")
            conn.close()

    # -- measurement ------------------------------------------------------------------
    def raw_cipher_key(self, variant: dict, page_size: int) -> str:
        """'4096' for SQLCipher 4's defaults, '4096/hmac=sha256' for another page HMAC: each its own reference."""
        hmac = variant.get("hmac", DEFAULT_HMAC)
        return str(page_size) if hmac == DEFAULT_HMAC else f"{page_size}/hmac={hmac}"

    def calibrate(self, setup: dict) -> dict:
        pages = sorted({(int(f["variant"].get("page_size", 4096)), f["variant"].get("hmac", DEFAULT_HMAC))
                        for f in setup["files"].values() if f["variant"].get("encryption") == "on"})
        lib = _import()._sqlite3.__file__  # the OpenSSL SQLCipher links (sqlcipher3 bundles its own)
        out = {"raw_cipher": {self.raw_cipher_key({"hmac": h}, ps): rawcipher.sqlcipher_page(
            ps, engine_lib=lib, hmac=HMAC[h] and h) for ps, h in pages}}
        if setup.get("metered"):  # the same primitives per page, counted as the engine's are (callgrind)
            sizes = sorted({ps for ps, h in pages if h == DEFAULT_HMAC})  # SQLCipher 4's default HMAC
            out["raw_cipher_instructions"] = {str(ps): rawcipher.page_instructions(ps, lib) for ps in sizes}
        if setup.get("column"):  # the column methods' AEADs on one value: the floor of their per-row cost

            algorithms = [column_lab.CLIENT_METHODS[m].algorithm for m in setup["column"]["methods"]
                          if m in column_lab.CLIENT_METHODS and column_lab.CLIENT_METHODS[m].algorithm]
            out["raw_column_cipher"] = rawcolumn.reference(algorithms, setup["column"]["value_bytes"])
        return out

    def crypto_probes(self, setup: dict) -> dict[str, dict]:
        """SQLCipher's own bundled libcrypto (not the system's): AES-256-CBC and HMAC-SHA512, as the raw cipher."""
        return cpugap.sqlcipher_probes(_import()._sqlite3.__file__)

    def leak_check(self, options: dict, workdir: Path):
        """SQLCipher with its defaults, rollback journal and WAL, plus a backup; a plain control."""
        sqlcipher3 = _import()
        canary = leakcheck.new_canary()
        encrypted = {"encryption": "on", "page_size": "4096", "kdf_iter": "256000", "key": "passphrase"}
        report = leakcheck.LeakReport("sqlite", "SQLCipher 4 defaults (AES-256-CBC + HMAC-SHA512), rollback journal "
                                      "and WAL modes, online backup", len(canary))
        _plant_sqlite(sqlcipher3, workdir / "encrypted", encrypted, canary, report)
        control = leakcheck.LeakReport("sqlite", "plain SQLite (control)", len(canary))
        _plant_sqlite(sqlcipher3, workdir / "plain", {"encryption": "off", "page_size": "4096"}, canary, control)
        report.control = {"configuration": control.configuration,
                          "found_in": sorted({f.role for f in control.findings})}
        return report

    def open_session(self, setup: dict, variant: Variant, *, mutable: bool, scratch_dir: Path) -> Session:
        if "script" in variant:  # the oltp mix writes: every run on its own copy of the TPC-B file
            mutable = True
        if "method" in variant:  # the column workload: a fresh plain database file in the run's scratch directory
            return SQLiteSession(scratch_dir / f"column-{os.getpid()}.db", variant, setup, copy_of=None, create=True)
        source = Path(setup["files"][file_name(variant)]["path"])
        if not mutable:
            return SQLiteSession(source, variant, setup, copy_of=None)
        copy = scratch_dir / f"run-{os.getpid()}-{source.name}"
        shutil.copyfile(source, copy)
        return SQLiteSession(copy, variant, setup, copy_of=source)
