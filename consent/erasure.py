"""Erasure: a withdrawn participant leaves every table, index and file, and the bytes go too.

`erase` runs in one transaction:
  1. vector rows (`message_vectors`, a sqlite-vec virtual table: deleted explicitly by rowid,
     since no foreign key reaches it),
  2. every table with a `participant` column, found from the schema at run time, so a table
     added later (claims, persona, file memory, preference cells, jobs, export records) is
     covered without touching this file; `participants` itself last,
  3. registered hooks (`on_erase`) for state that lives elsewhere (the release ledger's names, the
     participant's rate-limit counts, which are keyed by digests: memory.limits),
  4. the audit lines `withdrawn` and `erased` (counts only, subject hashed: see consent.audit).
Consent records are deleted with the rest: the audit log keeps the minimal trace of the
consent (versions accepted, when, when withdrawn) without the name or any text.
The transaction also records a pending compaction (table `maintenance`). After the commit: the
in-memory index caches and the process's kept parses (memory.nlp) are dropped, files registered with `on_erase_files` are removed, then VACUUM rewrites the database without the freed pages and a TRUNCATE
checkpoint empties the write-ahead log, so no byte of the participant's text stays in
`companion.db`, `companion.db-wal` or `companion.db-shm`. Only then is the pending record
removed; a process killed in between leaves it, and the next `Store` opened on the data
directory finishes the compaction before anything else. The participant is told which of the
two happened.

`delete_messages` is the partial deletion path (retention sweeps): it goes through
`memory.messages.delete`, the same path that keeps the indexes in step.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Callable

from consent import audit, ledger
from memory import embeddings, limits
from memory import nlp
from memory import messages as messages_mod
from memory.store import Store, StoreError, has_table, tables_with_column

# fn(conn, store, participant) -> {name: count}; runs inside the erasure transaction.
_HOOKS: list[Callable] = []
# fn(store, participant) -> {name: count}; runs after the commit (files cannot roll back).
_FILE_HOOKS: list[Callable] = []

VECTOR_TABLE = "message_vectors"
KEEP = {"consent_events", "consent_meta", "_migrations"}  # no participant data by construction


def on_erase(fn: Callable) -> Callable:
    """Register erasure of state outside the tables with a `participant` column."""
    _HOOKS.append(fn)
    return fn


# The release ledger keeps "release R held U03" and blanks who that was (consent.ledger).
on_erase(ledger.on_erase)


@on_erase
def _rate_limits(conn, store, participant: str) -> dict[str, int]:
    """Their rate-limit counts (sign-in failures from any address, ratings): keyed by digests
    under their subject digest (memory.limits), so they are found without a name in clear."""
    return {"rate_events": limits.erase(conn, participant)}


def on_erase_files(fn: Callable) -> Callable:
    """Register removal of a participant's files under the data directory (after the commit)."""
    _FILE_HOOKS.append(fn)
    return fn


@dataclass
class Erasure:
    participant: str
    counts: dict[str, int] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    vacuumed: bool = False
    wal_truncated: bool = False
    engine: str = "sqlite"

    def message(self) -> str:
        """What the participant is told, in plain words (the counts by table are in `as_dict`)."""
        n = self.counts.get("messages", 0)
        said = f"your {n} message{'s' if n != 1 else ''}" if n else "your account (there were no messages)"
        if self.engine == "postgresql" and self.vacuumed:
            disk = ("The database was cleaned (VACUUM), so your deleted rows no longer sit in its tables; "
                    "the database server's own logs and backups age out on the server's schedule.")
        elif self.engine == "postgresql":
            disk = ("Your records are deleted; the database's cleanup of the space they took runs when the "
                    "app next starts.")
        elif self.vacuumed and self.wal_truncated:
            disk = "The database file was rewritten, so no leftover copy of your words remains in it."
        else:
            disk = ("Your records are deleted, but the database file still holds leftover copies of your "
                    "words in unused space; they are removed when the app next starts.")
        return (f"You ({self.participant}) have withdrawn. Erased: {said}, everything the companion "
                f"learned or remembered from them, anything waiting for your approval, your settings and "
                f"your account. {disk} The study keeps only an anonymous line saying that a consent was "
                "given and withdrawn, and when: no name, no text.")

    def as_dict(self) -> dict:
        return {"participant": self.participant, "counts": self.counts, "files": self.files,
                "vacuumed": self.vacuumed, "wal_truncated": self.wal_truncated, "engine": self.engine,
                "message": self.message()}


def drop_kept_words(store: Store) -> None:
    """Drop what this process keeps by text: parses, readings and word forms (memory.nlp) and the
    texts whose vectors its embedders remember. They hold every participant's words."""
    nlp.forget()
    for embedder in {id(e): e for e in (store.vectors.embedder, embeddings.default())}.values():
        embedder.clear_cache()


_erasures_seen: dict[str, int] = {}  # database -> the latest erasure this process has acted on


def erasures_seen(store: Store) -> int:
    """The id of the latest erasure recorded in this database (0: none yet), remembered as acted on."""
    last = store.conn.execute("SELECT max(id) FROM consent_events WHERE event='erased'").fetchone()[0] or 0
    _erasures_seen[store.where] = last
    return last


def forget_erased_elsewhere(store: Store) -> bool:
    """Called before a turn reads anything: when an erasure was recorded in this database since this
    process last looked (another `serve` process, or the CLI, erased someone), drop what this process
    keeps by text (`drop_kept_words`), so no copy of the erased participant's words outlives their
    withdrawal here either. One indexed-size query per turn; True when it dropped."""
    before = _erasures_seen.get(store.where)
    last = erasures_seen(store)
    if before is None or last == before:  # the first look (serve looks before it reads ahead) or no news
        return False
    drop_kept_words(store)
    return True


def participant_tables(conn) -> list[str]:
    """Ordinary tables with a `participant` column, `participants` last (found from the schema
    at run time, on either engine)."""
    out = [t for t in tables_with_column(conn, "participant") if t not in KEEP and t != VECTOR_TABLE]
    out.sort(key=lambda n: (n == "participants", n))
    return out


def _vector_rowids(store: Store, conn, participant: str) -> list[int]:
    ids = {r[0] for r in conn.execute("SELECT id FROM messages WHERE participant=?", (participant,))}
    if has_table(conn, VECTOR_TABLE):  # rows whose message is already gone, too
        with contextlib.suppress(Exception):  # sqlite-vec not loaded: nothing can be read anyway
            ids |= {r[0] for r in conn.execute(
                f"SELECT rowid FROM {VECTOR_TABLE} WHERE participant=?", (participant,))}
    return sorted(ids)


def erase(store: Store, participant: str, vacuum: bool = True) -> Erasure:
    """Erase everything of `participant` in one transaction, then VACUUM and truncate the WAL."""
    conn = store.conn
    if conn.in_transaction:
        raise StoreError("erasure must not run inside another transaction (it ends with VACUUM)")
    if conn.execute("SELECT 1 FROM participants WHERE participant=?", (participant,)).fetchone() is None:
        raise StoreError(f"unknown participant {participant!r}: nothing to erase")
    store.settle(participant)  # no work after a reply may land once the participant is gone
    result = Erasure(participant, engine=store.engine)
    sqlite = conn.dialect == "sqlite"
    if sqlite:
        prior = conn.execute("PRAGMA secure_delete").fetchone()[0]
        conn.execute("PRAGMA secure_delete=ON")  # freed pages are zeroed even before the VACUUM
    try:
        with store.transaction() as c:
            if sqlite:
                c.execute("PRAGMA defer_foreign_keys=ON")  # tables go in any order; checked at commit
            history = [dict(r) for r in c.execute(
                "SELECT version, scopes, accepted_at, withdrawn_at FROM consent_records "
                "WHERE participant=? ORDER BY id", (participant,))]
            ids = _vector_rowids(store, c, participant)
            if ids and has_table(c, VECTOR_TABLE):
                c.executemany(f"DELETE FROM {VECTOR_TABLE} WHERE rowid=?", [(i,) for i in ids])
                result.counts[VECTOR_TABLE] = len(ids)
            for table in participant_tables(c):
                result.counts[table] = c.execute(
                    f'DELETE FROM "{table}" WHERE participant=?', (participant,)).rowcount
            for hook in _HOOKS:
                for k, n in (hook(c, store, participant) or {}).items():
                    result.counts[k] = result.counts.get(k, 0) + n
            last = history[-1] if history else {}
            audit.record(c, "withdrawn", participant, version=last.get("version"),
                         scopes=json.loads(last["scopes"]) if last else None,
                         records=[{"version": h["version"], "accepted_at": h["accepted_at"],
                                   "withdrawn_at": h["withdrawn_at"]} for h in history])
            audit.record(c, "erased", participant, counts=result.counts)
            # In the same transaction: if the process dies before the VACUUM below, the next
            # Store opened on this file finishes it (memory.store.Store.compact).
            store.request_compaction(c)
    finally:
        if sqlite:
            conn.execute(f"PRAGMA secure_delete={int(prior)}")
    store.bm25.forget(participant)
    store.vectors.forget(participant)
    drop_kept_words(store)
    erasures_seen(store)
    for hook in _FILE_HOOKS:
        for k, n in (hook(store, participant) or {}).items():
            result.files[k] = result.files.get(k, 0) + n
    from consent import downloads

    result.files["downloads"] = downloads.erase(store.data_dir, participant)
    if vacuum:
        result.vacuumed, result.wal_truncated = compact(store)
    return result


def compact(store: Store, attempts: int = 50) -> tuple[bool, bool]:
    """VACUUM, then checkpoint the WAL with TRUNCATE; returns (vacuumed, wal_truncated).
    See `Store.compact`: the pending record an erasure left goes only when both are done."""
    return store.compact(attempts)


def delete_messages(store: Store, participant: str, dayids: list[str]) -> int:
    """Delete messages through `memory.messages.delete` (log, vectors, index epoch) in one transaction,
    with the ratings of those replies (a retention sweep leaves no feedback on messages it removed)."""
    with store.transaction() as conn:
        for d in dayids:
            messages_mod.delete(store, participant, d)
        conn.executemany("DELETE FROM feedback WHERE participant=? AND dayid=?", [(participant, d) for d in dayids])
    return len(dayids)
