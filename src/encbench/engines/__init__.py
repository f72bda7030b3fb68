"""Engines: one adapter module each, registered in this table."""

from __future__ import annotations

from ..registry import Registry
from .base import Engine, PrepareContext, Session
from .mariadb import MariaDBEngine
from .postgres import PostgresEngine
from .sqlite import SQLiteEngine

ENGINES: Registry[Engine] = Registry("engine")
ENGINES.register(SQLiteEngine.name, SQLiteEngine())
ENGINES.register(PostgresEngine.name, PostgresEngine())
ENGINES.register(MariaDBEngine.name, MariaDBEngine())

DEFAULT_ENGINE = SQLiteEngine.name

__all__ = ["ENGINES", "DEFAULT_ENGINE", "Engine", "PrepareContext", "Session"]
