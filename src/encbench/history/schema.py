"""The history store's tables, as an ordered list of migrations (docs/RESULTS.md, "History store").

A store records the migrations it has run in `schema_version` (one row per version). Opening a
store runs the missing ones, in order, inside one transaction; a store whose highest version is
above `CURRENT` was written by a newer encbench and is refused (errors.StoreSchemaError).

Adding a migration: append a `Migration(N + 1, ...)` (never edit one that has shipped: stores out
there already ran it), write its statements with the dialect tokens below, and describe the change
in docs/RESULTS.md.

Dialect tokens, filled in per backend (Dialect): `{pk}` an auto-numbered primary key, `{real}` a
double, `{fk_runs}` a reference to runs(id) that goes with its run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    name: str
    pk: str
    real: str
    placeholder: str  # the DB-API parameter marker: '?' (sqlite3) or '%s' (psycopg)

    def sql(self, text: str) -> str:
        """A statement written with '?' markers and {tokens}, in this dialect."""
        return text.format(pk=self.pk, real=self.real, fk_runs="BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE"
                           ).replace("?", self.placeholder)


SQLITE = Dialect("sqlite", pk="INTEGER PRIMARY KEY AUTOINCREMENT", real="REAL", placeholder="?")
POSTGRES = Dialect("postgresql", pk="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", real="DOUBLE PRECISION",
                   placeholder="%s")


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at TEXT NOT NULL,
    encbench_version TEXT NOT NULL)"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs, figures, scans, findings", (
        """CREATE TABLE runs (
            id {pk},
            kind TEXT NOT NULL CHECK (kind IN ('run', 'tls-scan', 'leak-check')),
            measured_at TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            encbench_version TEXT NOT NULL,
            host TEXT,
            environment TEXT,
            engine TEXT,
            target TEXT,
            command TEXT,
            status TEXT,
            exit_code INTEGER,
            result_file TEXT,
            summary TEXT)""",
        "CREATE INDEX runs_target ON runs (target, measured_at)",
        """CREATE TABLE figures (
            run_id {fk_runs},
            workload TEXT NOT NULL,
            operation TEXT NOT NULL,
            variant TEXT NOT NULL,
            baseline TEXT NOT NULL,
            metric TEXT NOT NULL,
            ratio {real},
            ci_low {real},
            ci_high {real},
            verdict TEXT,
            n_baseline INTEGER,
            n_contender INTEGER)""",
        "CREATE INDEX figures_metric ON figures (metric, workload, run_id)",
        """CREATE TABLE scans (
            run_id {fk_runs},
            target TEXT NOT NULL,
            protocols TEXT NOT NULL,
            suites TEXT NOT NULL,
            suites_count INTEGER NOT NULL,
            weakest_grade TEXT,
            default_suite TEXT,
            drift TEXT,
            drifted INTEGER)""",
        """CREATE TABLE findings (
            run_id {fk_runs},
            role TEXT NOT NULL,
            path TEXT NOT NULL,
            occurrences INTEGER NOT NULL,
            fix TEXT)""",
    )),
)

CURRENT = MIGRATIONS[-1].version
