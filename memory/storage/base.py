"""What every store engine shares: the data directory, per-thread connections, migrations on
open, the two indexes, the pending-compaction record, and the few named places where the engines
differ (each engine module fills them in).

The one connection interface every caller uses, on both engines:
- `conn.execute(sql, params)` and `conn.executemany(sql, rows)` with `?` placeholders; the result
  has `fetchone()`, `fetchall()`, iteration, `rowcount` and `lastrowid`; rows are read by position
  (`r[0]`, `for (a, b) in ...`) or by column name (`r["name"]`, `dict(r)`, `r.keys()`);
- `conn.in_transaction`, and `conn.dialect` ("sqlite" or "postgresql") for the named places below;
- writes go through `store.transaction()` (optionally `participant=` or `key=`, see the engines).

The named places where SQL differs by engine, all on the store: vectors (`vector_value`,
`read_vectors`), locking (`transaction`), compaction (`compact`), schema inspection
(`tables_with_column`, `has_table`). Everything else is written once in portable SQL.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import numpy as np

from memory import migrations

log = logging.getLogger("memory.store")


class StoreError(Exception):
    """A request the store refuses; the message names what was wrong."""


SYNCHRONOUS = ("FULL", "NORMAL")


class BaseStore:
    """`synchronous`: FULL (the default) makes every commit durable through power loss as well as
    process kills; NORMAL may lose the last commits on power loss: fine for throwaway replay
    copies (which are always local SQLite files, see memory.store.Store)."""

    engine = "base"
    busy_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, data_dir: Path | str, synchronous: str = "FULL", database: str | None = None):
        if synchronous.upper() not in SYNCHRONOUS:
            raise StoreError(f"synchronous must be one of {SYNCHRONOUS}, got {synchronous!r}")
        self.synchronous = synchronous.upper()
        self.data_dir = Path(data_dir).expanduser()
        self.permission_fixes = secure_data_dir(self.data_dir)
        self._local = threading.local()
        self._all: list = []
        self._lock = threading.Lock()
        self._later_cv = threading.Condition()
        self._later_q: list = []
        self._pending: dict[str, int] = {}
        self._later_thread: threading.Thread | None = None
        self._loader = None  # the index loader thread (load_soon), started on first use
        self._open(database)
        with self.transaction() as conn:
            migrations.apply(conn)
        self._after_migrations()
        from memory.indexes import LexicalIndex, VectorIndex

        self.bm25 = LexicalIndex(self)
        self.vectors = VectorIndex(self)
        # Written in the same transaction as the messages they index (see messages.append).
        self.indexes = [self.vectors]
        if self.compaction_pending():
            log.warning("%s: finishing the compaction an erasure left unfinished (the process stopped "
                        "before it); erased text is removed from the database files now", self.where)
            try:
                self.compact()
            except self.busy_errors as e:  # another process holds the file: the next open tries again
                log.warning("%s: compaction postponed (%s); it stays recorded and runs at the next start",
                            self.where, e)

    # ------------------------------------------------------------ engine-specific (the named places)

    where = ""  # what the store is, for messages: a file path or a server address without password

    def _open(self, database: str | None) -> None:
        raise NotImplementedError

    def _after_migrations(self) -> None:
        pass

    def _connect(self):
        raise NotImplementedError

    @contextlib.contextmanager
    def transaction(self, participant: str | None = None, key: str | None = None) -> Iterator:
        """A write transaction. `participant=p`: it writes only p's rows; `key=k`: only the rows of
        one named key (a rate limit's). Either lets the engine lock less than everything."""
        raise NotImplementedError
        yield

    def compact(self, attempts: int = 50) -> tuple[bool, bool]:
        raise NotImplementedError

    def vector_value(self, vec: np.ndarray):
        """A vector as the engine's `message_vectors.embedding` parameter."""
        raise NotImplementedError

    def read_vectors(self, participant: str, from_ordinal: int, ids=None) -> tuple[np.ndarray, np.ndarray]:
        """(ordinals, float32 matrix) of the participant's stored vectors from `from_ordinal` on,
        in ordinal order, read in one query."""
        raise NotImplementedError

    @staticmethod
    def tables_with_column(conn, column: str) -> list[str]:
        """Ordinary tables having `column` (virtual tables and their shadow tables excluded)."""
        raise NotImplementedError

    @staticmethod
    def has_table(conn, name: str) -> bool:
        raise NotImplementedError

    # ------------------------------------------------------------ work after the reply

    def later(self, participant: str, fn) -> None:
        """Run `fn()` on this store's background thread, in order: work a turn does after its
        reply is shown (the reply's vector). `settle(participant)` waits for it; a turn settles
        its participant before it reads anything, so as-of reads see every earlier turn whole."""
        with self._later_cv:
            if self._later_thread is None:
                self._later_thread = threading.Thread(target=self._later_loop, name="store-after-reply",
                                                      daemon=True)
                self._later_thread.start()
            self._later_q.append((participant, fn))
            self._pending[participant] = self._pending.get(participant, 0) + 1
            self._later_cv.notify_all()

    def load_soon(self, fn) -> None:
        """Run `fn()` on this store's loader thread, now, beside the caller: an index's cold load
        beside the other index's (memory.indexes). A failure is logged at debug level: the index
        loads itself at its next use."""
        with self._lock:
            if self._loader is None:
                from concurrent.futures import ThreadPoolExecutor

                self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-index-load")
            loader = self._loader

        def run():
            try:
                fn()
            except Exception as e:
                log.debug("an index load beside the first query stopped (%s); it loads at its next use", e)

        with contextlib.suppress(RuntimeError):  # the store closed meanwhile: nothing to load beside
            loader.submit(run)

    def settle(self, participant: str | None = None) -> None:
        """Wait until the background work of `participant` (of everyone: None) is committed."""
        with self._later_cv:
            self._later_cv.wait_for(lambda: not (self._pending.get(participant) if participant is not None
                                                 else any(self._pending.values())))

    def _later_loop(self) -> None:
        while True:
            with self._later_cv:
                self._later_cv.wait_for(lambda: self._later_q)
                participant, fn = self._later_q.pop(0)
            try:
                fn()
            except Exception:  # the work repairs itself at the next index load (memory.indexes)
                log.exception("background work after a reply failed; it is redone when the index next loads")
            finally:
                with self._later_cv:
                    self._pending[participant] -= 1
                    if not self._pending[participant]:
                        del self._pending[participant]
                    self._later_cv.notify_all()

    # ------------------------------------------------------------ shared

    def compaction_pending(self) -> bool:
        return self.conn.execute("SELECT 1 FROM maintenance WHERE task='compact'").fetchone() is not None

    def request_compaction(self, conn) -> None:
        """Record, inside the caller's transaction, that freed space must be compacted away."""
        conn.execute("INSERT INTO maintenance (task, requested_at) VALUES ('compact', ?) "
                     "ON CONFLICT (task) DO UPDATE SET requested_at=excluded.requested_at",
                     (datetime.now(timezone.utc).isoformat(),))

    @property
    def conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
            with self._lock:
                self._all.append(conn)
        return conn

    def close(self) -> None:
        self.settle()
        with self._lock:
            loader, self._loader = self._loader, None
        if loader is not None:
            loader.shutdown(wait=True)
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
