"""Engines: one adapter module each, registered in this table."""

from __future__ import annotations

from ..profiling import profiler
from ..util.registry import Registry
from .base import Engine, PrepareContext, Session
from .mariadb.engine import MariaDBEngine
from .postgres.engine import PostgresEngine
from .sqlite.engine import SQLiteEngine

ENGINES: Registry[Engine] = Registry("engine")
ENGINES.register(SQLiteEngine.name, SQLiteEngine())
ENGINES.register(PostgresEngine.name, PostgresEngine())
ENGINES.register(MariaDBEngine.name, MariaDBEngine())
profiler.use_engines(e for _, e in ENGINES.items())  # --profile's categories, the engines' own among them

DEFAULT_ENGINE = SQLiteEngine.name


def engine_named(name: str) -> Engine | None:
    """The registered engine of that name; None for a name this version does not know (an old or foreign file)."""
    return ENGINES.get(name) if name in ENGINES else None


def engine_for_dsn(dsn: str) -> Engine | None:
    """The engine whose DSN this is (by scheme, or its own rule); None if none claims it."""
    return next((e for _, e in ENGINES.items() if e.owns_dsn(dsn)), None)


def tls_scan_engines() -> list[Engine]:
    """The engines tls-scan can talk to (a wire protocol with a TLS preamble), in registry order."""
    return [e for _, e in ENGINES.items() if e.wire_protocol]

__all__ = ["ENGINES", "DEFAULT_ENGINE", "Engine", "PrepareContext", "Session", "engine_for_dsn", "engine_named",
           "tls_scan_engines"]
