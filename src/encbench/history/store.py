"""The history store: one interface (Store), two backends (a SQLite file, a PostgreSQL database).

`Store.open(url)` connects, runs the missing migrations (schema.MIGRATIONS) in one transaction and
refuses a store of a newer schema; `record(entry)` writes a run and its rows in ONE transaction
(nothing half-written); the readers (`runs`, `figures`, `scans`, `leak_checks`) return plain dicts.

URLs: `postgresql://...` or `postgres://...` (libpq URI; PG* variables and ~/.pgpass also apply; the
tables live in the schema `encbench`), `sqlite:///abs/path.db`, `sqlite:rel/path.db`, a plain file
path, or `default`: $XDG_DATA_HOME/encbench/history.db (~/.local/share/encbench/history.db).
Every database error becomes errors.StoreUnavailableError (exit 21), with any password hidden.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .. import __version__
from ..errors import BadValueError, StoreSchemaError, StoreUnavailableError
from ..util.redact import redact
from . import schema
from .record import Entry, now_utc, to_json

CONNECT_TIMEOUT_S = 10  # as the engines' clients: an unreachable store fails within this
SQLITE_BUSY_S = 10  # another writer holding the file: wait this long
PG_SCHEMA = "encbench"
PG_LOCK_KEY = 0x656E6362  # pg_advisory_xact_lock while migrating: two first writers do not race
URL_FORMS = "postgresql://user@host/db, sqlite:///path/history.db, a file path, or 'default'"


def default_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "encbench" / "history.db"


@dataclass(frozen=True)
class StoreURL:
    backend: str  # a BACKENDS key
    location: str  # the file path (sqlite) or the libpq URI (postgresql)
    default: bool = False

    @property
    def label(self) -> str:
        return redact(self.location)


def parse_url(text: str | None) -> StoreURL:
    """--store's value; checked before anything is measured (no connection is made here)."""
    if text is None or text.strip() in ("", "default"):
        return StoreURL("sqlite", str(default_path()), default=True)
    text = text.strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("postgresql", "postgres"):
        return StoreURL("postgresql", text)
    if text.lower().startswith("sqlite:"):
        path = text[len("sqlite:"):]
        path = path[2:] if path.startswith("//") else path  # sqlite:///abs -> /abs, sqlite://rel -> rel
        if not path:
            raise BadValueError(f"--store {redact(text)!r} names no file", hint=f"e.g. {URL_FORMS}")
        return StoreURL("sqlite", path)
    if scheme:
        raise BadValueError(f"--store {redact(text)!r}: no history store of kind {scheme!r}",
                            hint=f"use {URL_FORMS}")
    return StoreURL("sqlite", text)


def holds_something(url: StoreURL) -> bool:
    """Is there something at a SQLite store's path (so that finding no store there is an error, not "no history
    yet")? A PostgreSQL database is never "something else": its schema `encbench` is the store."""
    return url.backend == "sqlite" and Path(url.location).exists()


# -- backends: how to connect, run a transaction, list tables -----------------------------------

class SQLiteBackend:
    dialect = schema.SQLITE

    def __init__(self, url: StoreURL, read_only: bool = False):
        import sqlite3

        self.url, self.errors, self.read_only = url, (sqlite3.Error,), read_only

    def exists(self) -> bool:
        return Path(self.url.location).exists()

    def connect(self):
        import sqlite3

        path = Path(self.url.location)
        if path.exists() and not path.is_file():
            raise StoreUnavailableError(f"history store {path} is not a regular file",
                                        hint="give a file path for --store")
        if self.read_only:  # a reader (encbench history, the preflight) writes nothing: not even an empty file
            from urllib.parse import quote

            return sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=ro", uri=True, timeout=SQLITE_BUSY_S,
                                   isolation_level=None)
        if self.url.default:
            path.parent.mkdir(parents=True, exist_ok=True)
        if not path.parent.is_dir():
            raise StoreUnavailableError(f"history store {path}: directory {path.parent} does not exist",
                                        hint="create it, or give another --store")
        if not path.exists():
            try:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))  # never world-readable: targets, hosts
            except OSError as e:
                raise StoreUnavailableError(f"cannot create history store {path}: {e.strerror or e}",
                                            hint="choose a writable --store") from None
        conn = sqlite3.connect(path, timeout=SQLITE_BUSY_S, isolation_level=None)  # transactions: explicit
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    @contextlib.contextmanager
    def transaction(self, conn) -> Iterator:
        cur = conn.cursor()
        cur.execute("BEGIN" if self.read_only else "BEGIN IMMEDIATE")  # a writer: the lock now, never interleaved
        try:
            yield cur
        except BaseException:
            conn.rollback()
            raise
        else:
            conn.commit()

    def prepare(self, cur, create: bool) -> None:
        pass

    def tables(self, cur) -> set[str]:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'")
        return {r[0] for r in cur.fetchall()}


class PostgresBackend:
    dialect = schema.POSTGRES

    def __init__(self, url: StoreURL, read_only: bool = False):
        import psycopg

        self.url, self.errors, self._psycopg, self.read_only = url, (psycopg.Error,), psycopg, read_only

    def exists(self) -> bool:
        return True  # whether the schema exists is known once connected (prepare)

    def connect(self):
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        try:
            params = conninfo_to_dict(self.url.location)
        except self._psycopg.ProgrammingError as e:
            raise BadValueError(f"--store {self.url.label}: not a valid PostgreSQL URI: {redact(str(e))}",
                                hint="e.g. postgresql://user@host:5432/db") from None
        params.setdefault("connect_timeout", str(CONNECT_TIMEOUT_S))
        params.setdefault("application_name", "encbench-history")
        conn = self._psycopg.connect(make_conninfo(**params), autocommit=True)
        conn.read_only = self.read_only  # a reader's transactions are READ ONLY
        return conn

    @contextlib.contextmanager
    def transaction(self, conn) -> Iterator:
        with conn.transaction(), conn.cursor() as cur:
            yield cur

    def prepare(self, cur, create: bool) -> None:
        """The schema `encbench` holds the tables (a team's database may hold others)."""
        if create:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK_KEY,))
            cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (PG_SCHEMA,))
            if cur.fetchone() is None:
                cur.execute(f"CREATE SCHEMA {PG_SCHEMA}")
        cur.execute(f"SET LOCAL search_path TO {PG_SCHEMA}")

    def tables(self, cur) -> set[str]:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (PG_SCHEMA,))
        return {r[0] for r in cur.fetchall()}


BACKENDS = {"sqlite": SQLiteBackend, "postgresql": PostgresBackend}


# -- the store -----------------------------------------------------------------------------------

class Store:
    """A migrated, open history store. Use `with Store.open(url) as store:`."""

    def __init__(self, url: StoreURL, backend, conn):
        self.url, self.backend, self.conn = url, backend, conn
        self.sql = backend.dialect.sql

    @classmethod
    def open(cls, url: StoreURL | str | None, *, create: bool = True) -> Store | None:
        """Connect and migrate. create=False (reading): None when there is no store yet; nothing is created,
        migrated or written (a store of an older schema is read as it is)."""
        url = url if isinstance(url, StoreURL) else parse_url(url)
        backend = BACKENDS[url.backend](url, read_only=not create)
        if not create and not backend.exists():
            return None
        store = None
        with _guard(url, "open"):
            store = cls(url, backend, backend.connect())
        try:
            with _guard(url, "migrate" if create else "read"):
                if not store._migrate(create):
                    store.close()
                    return None
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def preflight(cls, url: StoreURL) -> None:
        """Before a command measures: an existing SQLite store (a local file: no network) is opened, so a store
        of a newer schema or a file that is no store is refused at once. A PostgreSQL store is first
        connected to when the result is recorded (after the result file is written)."""
        if url.backend == "sqlite" and Path(url.location).exists():
            store = cls.open(url, create=False)
            if store is not None:
                store.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()

    @contextlib.contextmanager
    def _transaction(self, create: bool = False) -> Iterator:
        with self.backend.transaction(self.conn) as cur:
            self.backend.prepare(cur, create)
            yield cur

    def _migrate(self, create: bool) -> bool:
        """Run the missing migrations in one transaction; False: no store there and create=False."""
        with self._transaction(create) as cur:
            tables = self.backend.tables(cur)
            if "schema_version" not in tables:
                if tables:
                    raise StoreUnavailableError(
                        f"history store {self.url.label} is a database but not an encbench history store "
                        f"(it has tables {', '.join(sorted(tables)[:5])} and no schema_version)",
                        hint="give another --store: encbench does not write into other tables")
                if not create:
                    return False
                cur.execute(schema.VERSION_TABLE)
            have = self._version(cur)
            if have > schema.CURRENT:
                raise StoreSchemaError(
                    f"history store {self.url.label} has schema version {have}; this encbench ({__version__}) "
                    f"knows up to {schema.CURRENT}", hint="upgrade encbench, or use another --store")
            for m in schema.MIGRATIONS:
                if m.version <= have or not create:  # a reader never migrates: the next record does
                    continue
                for statement in m.statements:
                    cur.execute(self.sql(statement))
                cur.execute(self.sql("INSERT INTO schema_version (version, description, applied_at, encbench_version) "
                                     "VALUES (?, ?, ?, ?)"), (m.version, m.description, now_utc(), __version__))
        return True

    @staticmethod
    def _version(cur) -> int:
        cur.execute("SELECT MAX(version) FROM schema_version")
        row = cur.fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def version(self) -> int:
        with _guard(self.url, "read"), self._transaction() as cur:
            return self._version(cur)

    # -- writing -----------------------------------------------------------------------------
    def record(self, entry: Entry) -> int:
        """The run and all its rows in one transaction; returns the run's id."""
        run = {"kind": entry.kind, "measured_at": entry.measured_at, "recorded_at": now_utc(),
               "encbench_version": entry.encbench_version, "host": entry.host,
               "environment": to_json(entry.environment), "engine": entry.engine, "target": entry.target,
               "command": entry.command, "status": entry.status, "exit_code": entry.exit_code,
               "result_file": entry.result_file, "summary": to_json(entry.summary)}
        with _guard(self.url, "record the run in"), self._transaction() as cur:
            cur.execute(self.sql(_insert("runs", run) + " RETURNING id"), _clean(run.values()))
            run_id = int(cur.fetchone()[0])
            for table, rows in (("figures", entry.figures), ("scans", [_scan_columns(s) for s in entry.scans]),
                                ("findings", entry.findings)):
                for row in rows:
                    cur.execute(self.sql(_insert(table, {"run_id": run_id, **row})), (run_id, *_clean(row.values())))
        return run_id

    # -- reading -----------------------------------------------------------------------------
    def _rows(self, sql: str, params: list) -> list[dict]:
        with _guard(self.url, "read"), self._transaction() as cur:
            cur.execute(self.sql(sql), params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    def runs(self, *, target: str | None = None, kind: str | None = None, limit: int | None = None) -> list[dict]:
        """The runs, oldest first (the last `limit` of them)."""
        where, params = _filters(("r.target", target, True), ("r.kind", kind, False))
        sql = ("SELECT r.id, r.kind, r.measured_at, r.engine, r.target, r.status, r.exit_code, r.encbench_version, "
               "r.host, r.command, r.result_file, r.summary, r.environment FROM runs r" + where
               + " ORDER BY r.measured_at DESC, r.id DESC")
        if limit:
            sql += f" LIMIT {int(limit)}"
        return list(reversed(self._rows(sql, params)))

    def figures(self, metric: str, *, workload: str | list[str] | None = None, target: str | None = None) -> list[dict]:
        where, params = _filters(("f.metric", metric, False), ("f.workload", workload, False),
                                 ("r.target", target, True))
        return self._rows("SELECT r.id AS run_id, r.measured_at, r.engine, r.target, f.workload, f.operation, "
                          "f.variant, f.baseline, f.metric, f.ratio, f.ci_low, f.ci_high, f.verdict, f.n_baseline, "
                          "f.n_contender FROM figures f JOIN runs r ON r.id = f.run_id" + where
                          + " ORDER BY r.measured_at, r.id", params)

    def scans(self, *, target: str | None = None) -> list[dict]:
        where, params = _filters(("s.target", target, True))
        return self._rows("SELECT r.id AS run_id, r.measured_at, s.target, s.protocols, s.suites, s.suites_count, "
                          "s.weakest_grade, s.default_suite, s.drift, s.drifted FROM scans s "
                          "JOIN runs r ON r.id = s.run_id" + where + " ORDER BY r.measured_at, r.id", params)

    def leak_checks(self, *, target: str | None = None) -> list[dict]:
        where, params = _filters(("r.kind", "leak-check", False), ("r.target", target, True))
        return self._rows("SELECT r.id AS run_id, r.measured_at, r.engine, r.target, r.exit_code, "
                          "COUNT(f.run_id) AS findings FROM runs r LEFT JOIN findings f ON f.run_id = r.id" + where
                          + " GROUP BY r.id, r.measured_at, r.engine, r.target, r.exit_code"
                            " ORDER BY r.measured_at, r.id", params)


def _scan_columns(row: dict) -> dict:
    return dict(row, protocols=to_json(row["protocols"]), suites=to_json(row["suites"]),
                drift=None if row["drift"] is None else to_json(row["drift"]),
                drifted=None if row["drifted"] is None else int(row["drifted"]))


def _insert(table: str, row: dict) -> str:
    return f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})"


def _clean(values) -> list:
    """Every text redacted once more on its way into the store: no password is ever written."""
    return [redact(v) if isinstance(v, str) else v for v in values]


def like_pattern(text: str) -> str:
    """A substring match of `text` (LIKE ... ESCAPE '!'), the text redacted as the stored targets are."""
    escaped = "".join("!" + c if c in "!%_" else c for c in redact(text))
    return f"%{escaped}%"


def _filters(*conditions: tuple[str, str | list[str] | None, bool]) -> tuple[str, list]:
    """(column, value, substring) each: WHERE ... with '?' markers; a None value adds nothing; a list of exact
    values: any of them."""
    parts, params = [], []
    for column, value, substring in conditions:
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            parts.append(f"{column} IN ({', '.join('?' for _ in value)})")
            params.extend(value)
            continue
        parts.append(f"{column} LIKE ? ESCAPE '!'" if substring else f"{column} = ?")
        params.append(like_pattern(value) if substring else value)
    return (" WHERE " + " AND ".join(parts) if parts else ""), params


@contextlib.contextmanager
def _guard(url: StoreURL, what: str) -> Iterator[None]:
    """A database error as a one-line StoreUnavailableError (exit 21), any password hidden."""
    try:
        yield
    except (StoreUnavailableError, BadValueError):
        raise
    except Exception as e:  # noqa: BLE001 - sqlite3.Error / psycopg.Error / OSError: the store failed us
        if not isinstance(e, _store_errors()):
            raise
        message = " ".join(str(e).split()) or type(e).__name__
        raise StoreUnavailableError(f"cannot {what} history store {url.label}: {redact(message)}",
                                    hint="check --store (the server is reachable, the file a store)" if what == "read"
                                    else "check --store (the server is reachable, the file writable); "
                                         "nothing of this run was stored") from None


def _store_errors() -> tuple[type[BaseException], ...]:
    import sqlite3

    out: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)
    try:
        import psycopg

        out += (psycopg.Error,)
    except ImportError:
        pass
    return out
