"""The SQLite engine (the default): one file per data directory, in WAL mode.

Connections are per thread (the Gradio app runs handlers on worker threads); writes go through
`transaction()`, which takes SQLite's write lock up front (BEGIN IMMEDIATE), so every write
transaction of every process runs alone: two turns of one participant can never assign the same
dayid. `participant=` and `key=` change nothing here (the lock is already the whole database).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Iterator

import numpy as np
import sqlean as sqlite3  # stdlib sqlite3 here cannot load extensions (sqlite-vec)

from memory.storage.base import BaseStore

DB_NAME = "companion.db"


class Connection(sqlite3.Connection):
    """sqlite3's connection, saying which engine it is (`conn.dialect`)."""

    dialect = "sqlite"


class SqliteStore(BaseStore):
    engine = "sqlite"
    busy_errors = (sqlite3.OperationalError,)

    def _open(self, database: str | None) -> None:
        self.path = self.data_dir / DB_NAME
        self.where = str(self.path)
        # Created 0600 before SQLite opens it: SQLite gives -wal and -shm the mode of the database.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))

    def _connect(self) -> Connection:
        conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=30.0, factory=Connection,
                               check_same_thread=True)
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
        return conn

    @contextlib.contextmanager
    def transaction(self, participant: str | None = None, key: str | None = None) -> Iterator[Connection]:
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

    def compact(self, attempts: int = 50) -> tuple[bool, bool]:
        """VACUUM, then checkpoint the WAL with TRUNCATE; returns (vacuumed, wal_truncated).

        The pending-compaction record goes only once both are done, so a kill at any point
        leaves it for the next start. A reader on another connection can hold the checkpoint
        back; it is retried for a while.
        """
        conn = self.conn
        conn.execute("VACUUM")
        for _ in range(attempts):
            busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                conn.execute("DELETE FROM maintenance WHERE task='compact'")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the delete above leaves no frame
                return True, True
            time.sleep(0.1)
        return True, False

    # ------------------------------------------------------------ vectors (sqlite-vec)

    def vector_value(self, vec: np.ndarray):
        return np.asarray(vec, dtype=np.float32).tobytes()

    def read_vectors(self, participant: str, from_ordinal: int, ids=None) -> tuple[np.ndarray, np.ndarray]:
        # vec0 filters a metadata column by scanning the whole partition: a few new rows (the sync
        # of a live turn) are read by rowid instead, a cold load reads the partition once.
        if ids is not None and len(ids) <= 256:
            marks = ",".join("?" * len(ids))
            rows = self.conn.execute(f"SELECT ordinal, embedding FROM message_vectors WHERE rowid IN ({marks})",
                                     tuple(int(i) for i in ids)).fetchall()
            if not rows:
                return np.zeros(0, dtype=np.int64), np.zeros((0, 384), dtype=np.float32)
            ordinals = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        else:
            ordinals, matrix = self._read_partition(participant, from_ordinal)
        if len(ordinals) > 1 and not bool(np.all(ordinals[1:] > ordinals[:-1])):
            order = np.argsort(ordinals, kind="stable")
            return ordinals[order], matrix[order]
        return ordinals, matrix

    def _read_partition(self, participant: str, from_ordinal: int) -> tuple[np.ndarray, np.ndarray]:
        """The partition as one row of two aggregates (the ordinals as text, the vectors' bytes as
        one blob, both in the scan's one order): one step of SQLite, no Python object per row, the
        GIL released for the whole scan. Ordinals start at 1, so from 1 on needs no filter (vec0
        filters a metadata column by reading it for every row). A partition past SQLite's length
        limit (about 650,000 vectors) is read row by row."""
        where = "participant=?" + (" AND ordinal>=?" if from_ordinal > 1 else "")
        params = (participant, from_ordinal) if from_ordinal > 1 else (participant,)
        try:
            r = self.conn.execute("SELECT count(*), group_concat(ordinal), CAST(group_concat(embedding, '') AS BLOB) "
                                  f"FROM message_vectors WHERE {where}", params).fetchone()
        except sqlite3.DataError:  # SQLITE_TOOBIG
            r = None
        if r is not None and not r[0]:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 384), dtype=np.float32)
        if r is not None:
            ordinals = np.fromstring(r[1], dtype=np.int64, sep=",")
            matrix = np.frombuffer(r[2], dtype=np.float32)
            if len(ordinals) == r[0] and len(matrix) == r[0] * 384:
                return ordinals, matrix.reshape(r[0], 384)
        rows = self.conn.execute(f"SELECT ordinal, embedding FROM message_vectors WHERE {where}", params).fetchall()
        ordinals = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        return ordinals, matrix

    # ------------------------------------------------------------ schema

    @staticmethod
    def tables_with_column(conn, column: str) -> list[str]:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table'").fetchall()
        virtual = [r["name"] for r in rows if (r["sql"] or "").upper().startswith("CREATE VIRTUAL")]
        out = []
        for r in rows:
            name = r["name"]
            if name in virtual or name.startswith("sqlite_") or any(name.startswith(v + "_") for v in virtual):
                continue
            if column in {c["name"] for c in conn.execute(f'PRAGMA table_info("{name}")')}:
                out.append(name)
        return out

    @staticmethod
    def has_table(conn, name: str) -> bool:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None
