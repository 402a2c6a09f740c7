"""The store: one interface, one engine module each (memory/storage/sqlite.py, postgres.py).

    Store(data_dir)                                  SQLite: <data_dir>/companion.db (the default)
    Store(data_dir, database="postgresql://...")     PostgreSQL with pgvector, shared by processes
    COMPANION_DATABASE_URL=postgresql://...          the same, for every Store the process opens

The data directory is used on both engines (downloads, the researcher credential, the CLI's
failure counts). A `synchronous="NORMAL"` store is a throwaway local copy (eval replays): it is
always a SQLite file in the given directory, whatever the setting says.
What callers may rely on, on both engines, is in memory/storage/base.py.
"""

from __future__ import annotations

import abc
import os

from memory.storage.base import OWN_DIRS, OWN_FILES, SYNCHRONOUS, BaseStore, StoreError, secure_data_dir
from memory.storage.postgres import PostgresStore
from memory.storage.sqlite import DB_NAME, SqliteStore

__all__ = ["Store", "StoreError", "DB_NAME", "OWN_FILES", "OWN_DIRS", "SYNCHRONOUS", "secure_data_dir",
           "database_url", "describe_database", "tables_with_column", "has_table"]

ENV = "COMPANION_DATABASE_URL"


def database_url(database: str | None = None) -> str | None:
    """The configured database: the argument, else $COMPANION_DATABASE_URL; None or "sqlite"
    mean the SQLite file in the data directory."""
    url = database if database is not None else os.environ.get(ENV) or None
    if url in (None, "", "sqlite"):
        return None
    if not url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        raise StoreError(f"{ENV} / --database must be a postgresql://... URL or 'sqlite', got {url.split('@')[-1]!r}")
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def describe_database(database: str | None = None) -> str:
    """Where the data lives, for messages (a server URL without its password)."""
    url = database_url(database)
    return "SQLite" if url is None else PostgresStore.redact(url)


class Store(abc.ABC):
    """`Store(data_dir, synchronous="FULL", database=None)`: the engine the setting names."""

    def __new__(cls, data_dir, synchronous: str = "FULL", database: str | None = None) -> BaseStore:
        url = None if str(synchronous).upper() == "NORMAL" else database_url(database)
        if url is None:
            return SqliteStore(data_dir, synchronous)
        return PostgresStore(data_dir, synchronous, url)


Store.register(SqliteStore)
Store.register(PostgresStore)


ENGINES = {"sqlite": SqliteStore, "postgresql": PostgresStore}


def tables_with_column(conn, column: str) -> list[str]:
    """Ordinary tables of the connection's database that have `column`, on either engine."""
    return ENGINES[conn.dialect].tables_with_column(conn, column)


def has_table(conn, name: str) -> bool:
    return ENGINES[conn.dialect].has_table(conn, name)
