"""The PostgreSQL engine (with pgvector): one database that many processes share.

The connection (`PgConnection`) gives callers the same interface as sqlite3's: `execute(sql,
params)` with `?` placeholders (translated once per statement text, cached), rows by position and
by name, `rowcount`, `lastrowid` (an INSERT into a table with a generated `id` gets `RETURNING
id` appended), `in_transaction`. Values come back as SQLite gives them: BIGINT as int, TEXT as
str, SUM() as int (not Decimal); Python bools are sent as 0/1 and datetimes as ISO text, as
sqlite3 sends them. Connections are in autocommit mode outside `transaction()`, so a lone read
sees the latest commit, as on SQLite.

Locking (`transaction`): SQLite runs one write transaction at a time. Here every write
transaction takes an advisory lock first, so the same holds without any caller changing:
- `transaction()` takes the global writer lock exclusively: it runs alone, as on SQLite;
- `transaction(participant=p)` takes the global lock shared plus p's own lock exclusively: the
  writes of one participant (a turn's message, its reply, trace and actions; the dayid counter)
  are serialized across all processes, different participants' writes run side by side. Only
  code that reads and writes that participant's rows alone may pass `participant=`;
- `transaction(key=k)` likewise takes the global lock shared plus k's own lock exclusively: a
  rate limit's check-and-record (memory.limits) is atomic per key without stopping anyone else.

Compaction (`compact`): after an erasure's commit the rows are gone for every reader; their dead
tuples stay in the table and index pages until VACUUM, which the erasure runs on every table it
touched (see docs/SECURITY.md for what that does and does not remove).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from datetime import date, datetime
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from memory import schema
from memory.storage.base import BaseStore, StoreError

try:
    import psycopg
    from psycopg.adapt import Dumper, Loader
except ImportError:  # pragma: no cover - reported when a postgresql:// URL is used
    psycopg = None
    Dumper = Loader = object

WRITER_LOCK = 0x636F6D70  # "comp": the global writer lock (one bigint key)
PARTICIPANT_SPACE = 1668  # two-int4 key space of the per-participant locks
KEY_SPACE = 1669  # two-int4 key space of the per-key locks (rate limits, memory.limits)


# ---------------------------------------------------------------- SQL text: ? -> %s, % -> %%

_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+\"?([A-Za-z_][A-Za-z0-9_]*)\"?", re.IGNORECASE)
_WITH_ID = schema.tables_with_id()


@functools.lru_cache(maxsize=8192)
def translate(sql: str) -> tuple[str, bool]:
    """The statement for psycopg: `?` placeholders outside quotes become `%s`, a literal `%`
    becomes `%%`; and whether `RETURNING id` was appended (for `lastrowid`)."""
    out = []
    quote = None
    for ch in sql:
        if quote:
            if ch == quote:
                quote = None
            out.append("%%" if ch == "%" else ch)
        elif ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    text = "".join(out)
    m = _INSERT.match(text)
    returning = bool(m and m.group(1).lower() in _WITH_ID and not re.search(r"\bRETURNING\b", text, re.I))
    if returning:
        text = text.rstrip().rstrip(";") + " RETURNING id"
    return text, returning


# ---------------------------------------------------------------- rows like sqlite3.Row


class Row(tuple):
    """A result row: a tuple (position, unpacking, equality) that is also read by column name."""

    __slots__ = ()
    _index: dict[str, int] = {}
    _names: tuple[str, ...] = ()

    def __getitem__(self, key):
        if isinstance(key, str):
            try:
                key = self._index[key]
            except KeyError:
                raise IndexError(f"No item with that key: {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


_row_classes: dict[tuple[str, ...], type] = {}
_row_lock = threading.Lock()


def _row_factory(cursor):
    desc = cursor.description
    if desc is None:
        return tuple
    names = tuple(d.name for d in desc)
    cls = _row_classes.get(names)
    if cls is None:
        with _row_lock:
            cls = _row_classes.setdefault(names, type("Row", (Row,), {
                "__slots__": (), "_index": {n: i for i, n in reversed(list(enumerate(names)))}, "_names": names}))
    return cls


# ---------------------------------------------------------------- values as sqlite3 gives them


if psycopg is not None:
    class _BoolAsInt(Dumper):
        oid = psycopg.adapters.types["int8"].oid

        def dump(self, obj):
            return b"1" if obj else b"0"

    class _IsoText(Dumper):  # sqlite3's default adapters: date.isoformat(), datetime.isoformat(" ")
        oid = 0  # unknown: the server infers TEXT from the column

        def dump(self, obj):
            return (obj.isoformat(" ") if isinstance(obj, datetime) else obj.isoformat()).encode()

    class _NumericAsNumber(Loader):  # SUM() and AVG() give numeric; SQLite gives int or float
        def load(self, data):
            s = bytes(data).decode()
            return int(s) if s.lstrip("-").isdigit() else float(s)



class Cursor:
    """What `execute` returns: fetchone / fetchall / iteration / rowcount / lastrowid."""

    __slots__ = ("_cur", "rowcount", "lastrowid")

    def __init__(self, cur, returning: bool):
        self._cur = cur
        self.rowcount = cur.rowcount
        self.lastrowid = None
        if returning:
            r = cur.fetchone()
            self.lastrowid = r[0] if r is not None else None

    def fetchone(self):
        return self._cur.fetchone() if self._cur.description is not None else None

    def fetchall(self):
        return self._cur.fetchall() if self._cur.description is not None else []

    def fetchmany(self, size: int = 1):
        return self._cur.fetchmany(size) if self._cur.description is not None else []

    def __iter__(self):
        return iter(self.fetchall())

    @property
    def description(self):
        return self._cur.description


class _Pool:
    """At most `size` server connections per store, shared by its threads: a statement outside a
    transaction borrows one for itself (its rows are read into the cursor before it goes back), a
    transaction keeps one until it ends. So a process with many handler threads holds a bounded
    number of the server's connections (`max_connections`, 100 by default, is shared by every
    process)."""

    def __init__(self, connect, size: int):
        self._connect, self._size = connect, size
        self._free: list = []
        self._all: list = []
        self._cv = threading.Condition()

    def get(self):
        with self._cv:
            while not self._free and len(self._all) >= self._size:
                self._cv.wait()
            if self._free:
                return self._free.pop()
            self._all.append(None)  # reserve the slot while connecting
        try:
            raw = self._connect()
        except BaseException:
            with self._cv:
                self._all.remove(None)
                self._cv.notify()
            raise
        with self._cv:
            self._all[self._all.index(None)] = raw
        return raw

    def put(self, raw) -> None:
        with self._cv:
            if raw.closed or raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                with contextlib.suppress(Exception):
                    raw.close()
                self._all.remove(raw)
            else:
                self._free.append(raw)
            self._cv.notify()

    def each(self):
        with self._cv:
            return [c for c in self._all if c is not None]

    def close(self) -> None:
        with self._cv:
            for c in self._all:
                if c is not None:
                    with contextlib.suppress(Exception):
                        c.close()
            self._all.clear()
            self._free.clear()
            self._cv.notify_all()


class PgConnection:
    """One thread's view of the store's connections (what `store.conn` is on PostgreSQL)."""

    dialect = "postgresql"

    def __init__(self, pool: _Pool):
        self.pool = pool
        self.raw = None  # pinned for the length of a transaction
        self.in_transaction = False

    @contextlib.contextmanager
    def checkout(self):
        if self.raw is not None:
            yield self.raw
            return
        raw = self.pool.get()
        try:
            yield raw
        finally:
            self.pool.put(raw)

    def execute(self, sql: str, params=()) -> Cursor:
        text, returning = translate(sql)
        with self.checkout() as raw:
            cur = raw.cursor()
            cur.execute(text, tuple(params) if params is not None else ())
            return Cursor(cur, returning)

    def executemany(self, sql: str, rows) -> Cursor:
        text, returning = translate(sql)
        if returning:
            text = text[: -len(" RETURNING id")]
        rows = [tuple(r) for r in rows]
        with self.checkout() as raw:
            cur = raw.cursor()
            if rows:
                cur.executemany(text, rows)
            return Cursor(cur, False)

    def close(self) -> None:
        pass  # the pool's connections are closed with the store


# ---------------------------------------------------------------- the store


class PostgresStore(BaseStore):
    engine = "postgresql"

    @staticmethod
    def redact(url: str) -> str:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            cred, host = netloc.rsplit("@", 1)
            netloc = f"{cred.split(':', 1)[0]}@{host}" if cred else host
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))

    def _open(self, database: str | None) -> None:
        if psycopg is None:
            raise StoreError("a postgresql:// database needs psycopg: pip install 'psycopg[binary]' pgvector")
        self.url = database
        self.path = None
        self.where = self.redact(database)
        self._vector_ready = False
        self._pool = _Pool(self._raw, int(os.environ.get("COMPANION_DATABASE_POOL", "8")))
        if self.busy_errors == ():
            type(self).busy_errors = (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled)

    def _connect(self) -> PgConnection:
        return PgConnection(self._pool)

    def _raw(self):
        try:
            raw = psycopg.connect(self.url, autocommit=True, row_factory=_row_factory)
        except psycopg.OperationalError as e:
            raise StoreError(f"cannot connect to {self.where}: {str(e).strip()}") from None
        raw.adapters.register_dumper(bool, _BoolAsInt)
        raw.adapters.register_dumper(datetime, _IsoText)
        raw.adapters.register_dumper(date, _IsoText)
        raw.adapters.register_loader("numeric", _NumericAsNumber)
        if self._vector_ready:
            from pgvector.psycopg import register_vector

            register_vector(raw)
        return raw

    def _after_migrations(self) -> None:
        """numpy arrays as pgvector values (pgvector's own adapters) on every connection, now
        that the baseline has created the type."""
        from pgvector.psycopg import register_vector

        self._vector_ready = True
        for raw in self._pool.each():
            register_vector(raw)

    def close(self) -> None:
        super().close()
        self._pool.close()

    @contextlib.contextmanager
    def transaction(self, participant: str | None = None, key: str | None = None) -> Iterator[PgConnection]:
        conn = self.conn
        if conn.in_transaction:  # nested: join the outer transaction
            yield conn
            return
        raw = conn.raw = self._pool.get()
        try:
            raw.execute("BEGIN")
        except BaseException:
            conn.raw = None
            self._pool.put(raw)
            raise
        conn.in_transaction = True
        try:
            if participant is not None:
                raw.execute("SELECT pg_advisory_xact_lock_shared(%s), pg_advisory_xact_lock(%s, hashtext(%s))",
                            (WRITER_LOCK, PARTICIPANT_SPACE, participant))
            elif key is not None:
                raw.execute("SELECT pg_advisory_xact_lock_shared(%s), pg_advisory_xact_lock(%s, hashtext(%s))",
                            (WRITER_LOCK, KEY_SPACE, key))
            else:
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
            yield conn
        except BaseException:
            conn.in_transaction = False
            with contextlib.suppress(Exception):
                raw.execute("ROLLBACK")
            conn.raw = None
            self._pool.put(raw)
            raise
        conn.in_transaction = False
        conn.raw = None
        try:
            raw.execute("COMMIT")
        finally:
            self._pool.put(raw)

    def compact(self, attempts: int = 50) -> tuple[bool, bool]:
        """VACUUM every table that holds participant rows (dead tuples of deleted rows are removed
        from table and index pages), then drop the pending record. Returns (vacuumed, False):
        there is no write-ahead log of ours to truncate (the server's WAL is recycled by the
        server; see docs/SECURITY.md)."""
        conn = self.conn
        tables = sorted(set(self.tables_with_column(conn, "participant")) | {"message_vectors"})
        with conn.checkout() as raw:
            for t in tables:
                raw.execute(f'VACUUM "{t}"')
        conn.execute("DELETE FROM maintenance WHERE task='compact'")
        return True, False

    # ------------------------------------------------------------ vectors (pgvector)

    def vector_value(self, vec: np.ndarray):
        return np.asarray(vec, dtype=np.float32)

    _COPY_ROW = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("ordinal", ">i8"), ("l2", ">i4"), ("dim", ">i2"),
                          ("unused", ">i2"), ("vec", ">f4", (schema.DIM,))])

    def read_vectors(self, participant: str, from_ordinal: int, ids=None) -> tuple[np.ndarray, np.ndarray]:
        """One binary COPY of (ordinal, embedding), parsed by numpy as fixed-size records."""
        with self.conn.checkout() as raw, raw.cursor().copy(
                "COPY (SELECT ordinal::int8, embedding FROM message_vectors WHERE participant=%s AND ordinal>=%s "
                "ORDER BY ordinal) TO STDOUT (FORMAT BINARY)", (participant, from_ordinal)) as cp:
            data = b"".join(bytes(b) for b in cp)
        header = 19  # signature (11) + flags (4) + header extension length (4, zero)
        body = memoryview(data)[header: len(data) - 2]  # trailer: int16 -1
        n = len(body) // self._COPY_ROW.itemsize
        if n * self._COPY_ROW.itemsize != len(body):
            raise StoreError("message_vectors: unexpected COPY row size (is embedding vector(384)?)")
        rec = np.frombuffer(body, dtype=self._COPY_ROW, count=n)
        return rec["ordinal"].astype(np.int64), rec["vec"].astype(np.float32)

    # ------------------------------------------------------------ schema

    @staticmethod
    def tables_with_column(conn, column: str) -> list[str]:
        return [r[0] for r in conn.execute(
            "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = current_schema() AND c.column_name = ? AND t.table_type = 'BASE TABLE' "
            "ORDER BY c.table_name", (column,))]

    @staticmethod
    def has_table(conn, name: str) -> bool:
        return conn.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
                            "AND table_name = ?", (name,)).fetchone() is not None
