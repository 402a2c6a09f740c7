"""Shared pieces of derived memory (claims, preference cells, persona, file memory), and the
base of the three derived items: `Item` (provenance and validity fields) and `Items` (the reads
and the deletion every item table shares: current, all_, get, history, drop).

Time: an item derived from the message at ordinal `o` exists from `o` on, i.e. it is visible
to reads with as_of > o (the message itself is visible from then on too). An item superseded
by one derived from ordinal `s` stops at `s`: visible while as_of <= s. So at every bound
exactly one value of a slot is current. An edit made by hand (no message) takes effect at the
ordinal of the newest stored message (`effective_ordinal`), visible to the next turn.

Sources are stored as JSON [[dayid, ordinal], ...]; as-of reads drop sources at or after the
bound, so a later repetition of a claim does not leak into an earlier view.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Callable

from memory.store import Store, StoreError

_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s']+")


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


def norm(text: str) -> str:
    """Lowercase, curly quotes straightened, punctuation dropped, spaces collapsed."""
    t = (text or "").replace("\u2019", "'").replace("\u2018", "'").lower()
    return _SPACE.sub(" ", _PUNCT.sub(" ", t)).strip()


def norm_hash(text: str) -> str:
    return hashlib.sha256(norm(text).encode("utf-8")).hexdigest()


def current_sql(alias: str = "") -> str:
    """SQL condition: the item holds at the bound given as the two `?` parameters (as_of, as_of)."""
    a = f"{alias}." if alias else ""
    return f"{a}valid_from < ? AND ({a}valid_to IS NULL OR ? <= {a}valid_to)"


def current_rows(store: Store, table: str, participant: str, as_of: int | None = None) -> list:
    """Rows of a derived-memory table that hold at the bound (None: now), oldest first."""
    if as_of is None:
        return store.conn.execute(f"SELECT * FROM {table} WHERE participant=? AND status='current' "
                                  "ORDER BY valid_from, id", (participant,)).fetchall()
    return store.conn.execute(f"SELECT * FROM {table} WHERE participant=? AND {current_sql()} "
                              "ORDER BY valid_from, id", (participant, as_of, as_of)).fetchall()


def all_rows(store: Store, table: str, participant: str, as_of: int | None = None,
             order: str = "valid_from, id") -> list:
    """Every row, superseded ones too (as of a bound: only those that existed before it)."""
    if as_of is None:
        return store.conn.execute(f"SELECT * FROM {table} WHERE participant=? ORDER BY {order}",
                                  (participant,)).fetchall()
    return store.conn.execute(f"SELECT * FROM {table} WHERE participant=? AND valid_from < ? "
                              f"ORDER BY {order}", (participant, as_of)).fetchall()


def supersede(conn, table: str, kind: str, participant: str, old_id: int, new_id: int, at: int, to_dayid: str,
              old_detail: dict, old_key: str, new_detail: dict | None = None, new_key: str | None = None) -> None:
    """Close the old row at `at` (its successor starts there, so exactly one value holds at any
    bound) and log both sides; the old row stays, as history."""
    conn.execute(f"UPDATE {table} SET status='superseded', valid_to=?, to_dayid=?, superseded_by=? WHERE id=?",
                 (at, to_dayid, new_id, old_id))
    log(conn, participant, kind, old_id, "superseded", {"by": new_id, "at_ordinal": at, **old_detail}, old_key)
    if new_detail is not None:
        log(conn, participant, kind, new_id, "supersedes", {"old": old_id, **new_detail}, new_key)


@dataclass(frozen=True, kw_only=True)
class Item:
    """Provenance and validity of a derived item: where it came from (source dayids, origin,
    verdict), when it holds (valid_from/valid_to as ordinals, from_dayid/to_dayid) and what
    replaced it. Read as of a bound, an item that held then shows as current then."""

    id: int
    source_dayids: list[str]
    valid_from: int
    valid_to: int | None
    from_dayid: str
    to_dayid: str | None
    status: str
    verdict: str
    superseded_by: int | None
    origin: str

    def public(self) -> dict:
        return asdict(self)


def provenance(r, as_of: int | None, source_dayids: list[str]) -> dict:
    """The `Item` fields of row `r` as of the bound (None: as stored)."""
    then = as_of is not None and (r["valid_to"] is None or as_of <= r["valid_to"])
    return {"id": r["id"], "source_dayids": source_dayids, "valid_from": r["valid_from"],
            "valid_to": None if then else r["valid_to"], "from_dayid": r["from_dayid"],
            "to_dayid": None if then else r["to_dayid"], "status": "current" if then else r["status"],
            "verdict": r["verdict"], "superseded_by": None if then else r["superseded_by"], "origin": r["origin"]}


class Items:
    """The reads and the deletion shared by one derived-item table. `row(r, as_of)` makes an
    item of a row; `noun` names it in errors ("claim", "persona item" ...); `kind` is its kind in
    the event log."""

    def __init__(self, table: str, kind: str, noun: str, row: Callable, order: str = "valid_from, id"):
        self.table, self.kind, self.noun, self.row, self.order = table, kind, noun, row, order

    def current(self, store: Store, participant: str, as_of: int | None = None) -> list:
        """Items that hold at the bound (None: now), oldest first."""
        return [self.row(r, as_of) for r in current_rows(store, self.table, participant, as_of)]

    def all_(self, store: Store, participant: str, as_of: int | None = None) -> list:
        """Every item, superseded ones too (as of a bound: only those that existed before it)."""
        return [self.row(r, as_of) for r in all_rows(store, self.table, participant, as_of, self.order)]

    def stored(self, conn, participant: str, item_id: int):
        r = conn.execute(f"SELECT * FROM {self.table} WHERE participant=? AND id=?", (participant, item_id)).fetchone()
        if r is None:
            raise StoreError(f"no {self.noun} {item_id} for participant {participant!r}")
        return r

    def get(self, store: Store, participant: str, item_id: int):
        return self.row(self.stored(store.conn, participant, item_id))

    def history(self, store: Store, participant: str, item_id: int, same: Callable, key: str) -> dict:
        """The item (under `key`), every item `same(item, other)` puts in its chain, its events."""
        it = self.get(store, participant, item_id)
        chain = [x for x in self.all_(store, participant) if x.id == it.id or same(it, x)]
        return {key: it.public(), "slot_history": [x.public() for x in chain],
                "events": events(store, participant, self.kind, item_id)}

    def drop(self, conn, participant: str, item_id: int) -> None:
        """The row and its log go; a successor pointing at it points at nothing (it stays itself)."""
        conn.execute("DELETE FROM memory_events WHERE participant=? AND kind=? AND item_id=?",
                     (participant, self.kind, item_id))
        conn.execute(f"UPDATE {self.table} SET superseded_by=NULL WHERE participant=? AND superseded_by=?",
                     (participant, item_id))
        conn.execute(f"DELETE FROM {self.table} WHERE id=?", (item_id,))


def sources_as_of(sources_json: str, as_of: int | None) -> list[list]:
    src = json.loads(sources_json)
    if as_of is None:
        return src
    return [s for s in src if s[1] < as_of]


def effective_ordinal(store: Store, participant: str) -> int:
    r = store.conn.execute(
        "SELECT next_ordinal FROM participants WHERE participant=?", (participant,)
    ).fetchone()
    if r is None:
        raise StoreError(f"unknown participant {participant!r}")
    return r["next_ordinal"] - 1


def log(conn, participant: str, kind: str, item_id: int | None, event: str,
        detail: dict | None = None, text: str | None = None) -> None:
    conn.execute(
        "INSERT INTO memory_events (participant, at, kind, item_id, event, norm_hash, detail) "
        "VALUES (?,?,?,?,?,?,?)",
        (participant, now(), kind, item_id, event, norm_hash(text) if text else None,
         json.dumps(detail or {}, ensure_ascii=False)),
    )


def events(store: Store, participant: str, kind: str, item_id: int) -> list[dict]:
    rows = store.conn.execute(
        "SELECT at, event, detail FROM memory_events WHERE participant=? AND kind=? AND item_id=? ORDER BY id",
        (participant, kind, item_id),
    ).fetchall()
    return [{"at": r["at"], "event": r["event"], **json.loads(r["detail"])} for r in rows]


def forget_text(conn, participant: str, text: str) -> None:
    """Remove every log line about this text (deletion means gone everywhere)."""
    conn.execute("DELETE FROM memory_events WHERE participant=? AND norm_hash=?", (participant, norm_hash(text)))


def tombstone(conn, participant: str, dayids: list[str], text: str) -> None:
    """A deleted item is not derived again from the same messages (hash only: no text kept)."""
    h = norm_hash(text)
    for d in dayids:
        conn.execute("INSERT INTO memory_tombstones VALUES (?,?,?,?) ON CONFLICT DO NOTHING", (participant, d, h, now()))


def tombstoned(conn, participant: str, dayid: str, text: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM memory_tombstones WHERE participant=? AND dayid=? AND norm_hash=?",
        (participant, dayid, norm_hash(text)),
    ).fetchone() is not None


def processed_ordinal(store: Store, participant: str) -> int:
    r = store.conn.execute(
        "SELECT processed_ordinal FROM memory_state WHERE participant=?", (participant,)
    ).fetchone()
    return r["processed_ordinal"] if r else 0


def set_processed(conn, participant: str, ordinal: int) -> None:
    conn.execute(
        "INSERT INTO memory_state VALUES (?,?,?) ON CONFLICT(participant) DO UPDATE SET "
        "processed_ordinal=excluded.processed_ordinal, updated_at=excluded.updated_at",
        (participant, ordinal, now()),
    )


def note_injected(store: Store, participant: str, ordinal: int, texts: list[str]) -> None:
    """Record memory text put into the prompt of the turn at `ordinal` (the re-capture guard)."""
    with store.transaction() as conn:
        for t in texts:
            if t and t.strip() and conn.execute(  # the first injection is what the guard needs
                    "SELECT 1 FROM memory_injected WHERE participant=? AND text=?", (participant, t)).fetchone() is None:
                conn.execute("INSERT INTO memory_injected (participant, ordinal, text) VALUES (?,?,?)",
                             (participant, ordinal, t))


def injected_before(store: Store, participant: str, ordinal: int) -> list[str]:
    return [r[0] for r in store.conn.execute(
        "SELECT DISTINCT text FROM memory_injected WHERE participant=? AND ordinal<=?", (participant, ordinal))]


# File memory keeps lines that follow claims and cells. It registers here rather than being
# imported by the items' modules (which would make a cycle: file memory deletes items too).
# Deletion hooks run inside the deleting transaction: (conn, participant, origin).
# Edit hooks run after the new item is stored: (store, participant, old_origin, new_origin,
# scope, text, sources, at).
on_deleted: list = []
on_edited: list = []


def follow(deleted=None, edited=None) -> None:
    """Register a follower of item changes, once per function (a module reload does not double it)."""
    def key(fn):
        return fn.__module__, fn.__qualname__

    for hooks, fn in ((on_deleted, deleted), (on_edited, edited)):
        if fn is not None:
            hooks[:] = [h for h in hooks if key(h) != key(fn)] + [fn]


def item_deleted(conn, participant: str, origin: str) -> None:
    for fn in on_deleted:
        fn(conn, participant, origin)


def item_edited(store: Store, participant: str, old_origin: str, new_origin: str, scope: str, text: str,
                sources: list, at: int) -> None:
    for fn in on_edited:
        fn(store, participant, old_origin, new_origin, scope, text, sources, at)
