"""One SQLite file per data directory, in WAL mode, with numbered migrations.

Connections are per thread (the Gradio app runs handlers on worker threads); writes go
through `transaction()`, which takes SQLite's write lock up front (BEGIN IMMEDIATE) so two
turns of one participant can never assign the same dayid.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Iterator

import sqlean as sqlite3  # stdlib sqlite3 here cannot load extensions (sqlite-vec)

from memory import migrations

DB_NAME = "companion.db"


class StoreError(Exception):
    """A request the store refuses; the message names what was wrong."""


SYNCHRONOUS = ("FULL", "NORMAL")


class Store:
    """`synchronous`: FULL (the default) makes every commit durable through power loss as well as
    process kills, for ~0.5 ms of fsync per commit measured here; NORMAL (WAL) survives process
    kills but may lose the last commits on power loss; fine for throwaway replay copies."""

    def __init__(self, data_dir: Path | str, synchronous: str = "FULL"):
        if synchronous.upper() not in SYNCHRONOUS:
            raise StoreError(f"synchronous must be one of {SYNCHRONOUS}, got {synchronous!r}")
        self.synchronous = synchronous.upper()
        self.data_dir = Path(data_dir).expanduser()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / DB_NAME
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        with self.transaction() as conn:
            migrations.apply(conn)
        from memory.indexes import LexicalIndex, VectorIndex

        self.bm25 = LexicalIndex(self)
        self.vectors = VectorIndex(self)
        # Written in the same transaction as the messages they index (see messages.append).
        self.indexes = [self.vectors]

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=30.0)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        try:
            import sqlite_vec

            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
        except ImportError:  # the vector index reports its own absence
            pass
        with self._lock:
            self._all.append(conn)
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self.conn
        if conn.in_transaction:  # nested: join the outer transaction
            yield conn
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                with contextlib.suppress(Exception):
                    conn.close()
            self._all.clear()
        self._local = threading.local()
