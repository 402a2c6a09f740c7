"""One SQLite file per data directory, in WAL mode, with numbered migrations.

Connections are per thread (the Gradio app runs handlers on worker threads); writes go
through `transaction()`, which takes SQLite's write lock up front (BEGIN IMMEDIATE) so two
turns of one participant can never assign the same dayid.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import sqlean as sqlite3  # stdlib sqlite3 here cannot load extensions (sqlite-vec)

from memory import migrations

DB_NAME = "companion.db"
log = logging.getLogger(__name__)


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
        self.permission_fixes = secure_data_dir(self.data_dir)
        self.path = self.data_dir / DB_NAME
        # Created 0600 before SQLite opens it: SQLite gives -wal and -shm the mode of the database.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
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
        if self.compaction_pending():
            log.warning("%s: finishing the compaction an erasure left unfinished (the process stopped "
                        "before it); erased text is removed from the database files now", self.path)
            try:
                self.compact()
            except sqlite3.OperationalError as e:  # another process holds the file: the next open tries again
                log.warning("%s: compaction postponed (%s); it stays recorded and runs at the next start",
                            self.path, e)

    def compaction_pending(self) -> bool:
        return self.conn.execute("SELECT 1 FROM maintenance WHERE task='compact'").fetchone() is not None

    def request_compaction(self, conn) -> None:
        """Record, inside the caller's transaction, that freed pages must be compacted away."""
        conn.execute("INSERT OR REPLACE INTO maintenance (task, requested_at) VALUES ('compact', ?)",
                     (datetime.now(timezone.utc).isoformat(),))

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


# What companion itself keeps in a data directory. Only these are changed: the data directory may
# have been pointed at a folder that holds other things, and its own mode 0700 already keeps
# other accounts away from everything inside it.
OWN_FILES = ("companion.db", "companion.db-wal", "companion.db-shm", "researcher.scrypt",
             "researcher.scrypt.tmp", "auth-failures.json")
OWN_DIRS = ("downloads",)


def secure_data_dir(data_dir: Path) -> list[str]:
    """Make the data directory 0700 and companion's files in it 0600 (its folders 0700), saying
    what was changed. The database holds every participant's text; file modes are what keep
    another account on the machine from reading it around every passphrase. Returns what was
    fixed."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    entries = [(data_dir, 0o700)] + [(data_dir / f, 0o600) for f in OWN_FILES]
    for d in OWN_DIRS:
        if (data_dir / d).is_dir():
            entries.append((data_dir / d, 0o700))
            for root, dirs, files in os.walk(data_dir / d):
                entries += [(Path(root, x), 0o700) for x in dirs] + [(Path(root, x), 0o600) for x in files]
    fixed = []
    try:
        for path, want in entries:
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                continue
            if stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(path, want)
                fixed.append(f"{path} {stat.S_IMODE(st.st_mode):04o} -> {want:04o}")
    except PermissionError as e:
        raise StoreError(f"the data directory {data_dir} cannot be secured ({e}): it must belong to the "
                         "account that runs companion, mode 0700") from None
    if fixed:
        log.warning("the data directory %s was readable by other accounts on this machine; fixed: %s",
                    data_dir, "; ".join(fixed))
    return fixed
