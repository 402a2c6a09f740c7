"""The message log: append under a fresh dayid, read as of an ordinal, delete.

Every read takes `as_of`, an ordinal: it sees messages with ordinal < as_of and nothing at
or after it, so a replayed probe cannot see its own future by construction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, datetime, timezone

from memory import keys, parses
from memory.store import Store, StoreError

SENDERS = ("user", "companion")
CONTEXTS = ("work", "personal")
# The longest participant message taken, in characters (about 25k words: far beyond any chat
# message, small enough that tokenizing, embedding and storing it stays well under a second).
# A companion reply is bounded by the model's max_tokens instead (an echo of a message at the
# limit is slightly longer than the limit and must still be stored).
MAX_MESSAGE_CHARS = 20_000


@dataclass(frozen=True)
class Message:
    id: int
    participant: str
    ordinal: int
    dayid: str
    sender: str
    text: str
    ts: str
    context: str

    def public(self) -> dict:
        d = asdict(self)
        d.pop("participant")
        d.pop("id")
        return d


def _row(r) -> Message:
    return Message(r["id"], r["participant"], r["ordinal"], r["dayid"], r["sender"], r["text"], r["ts"], r["context"])


def clean_text(text, max_chars: int | None = None) -> str:
    """Refuse what cannot be a message; keep what can, verbatim (control characters included,
    NUL excepted). `max_chars` bounds the length (participant messages: MAX_MESSAGE_CHARS)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StoreError(f"message is not valid UTF-8 (byte {e.start})") from e
    if not isinstance(text, str):
        raise StoreError(f"message must be text, got {type(text).__name__}")
    if not text.strip():
        raise StoreError("message is empty")
    if max_chars is not None and len(text) > max_chars:
        raise StoreError(f"message is too long: {len(text)} characters, the limit is {max_chars}")
    if "\x00" in text:
        raise StoreError("message contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate (e.g. "\\ud800" in JSON) cannot be stored
        raise StoreError(f"message is not valid Unicode (lone surrogate at character {e.start}; "
                         "an undecodable byte read with surrogateescape looks like this)") from None
    return text


def append(
    store: Store,
    participant: str,
    sender: str,
    text: str,
    context: str,
    ts: datetime | None = None,
    dayid: str | None = None,
) -> Message:
    """Store one message under the next dayid (or a given one, for corpus ingest)."""
    return append_many(store, participant, [dict(sender=sender, text=text, context=context, ts=ts, dayid=dayid)])[0]


def append_many(store: Store, participant: str, rows: list[dict], also=None, index_later: bool = False) -> list[Message]:
    """Store messages in order, in one transaction with their index entries.

    Each row has sender, text, context and optionally ts and dayid (a corpus's own key).
    `also(conn, messages)` runs inside the same transaction (the turn saves its trace there).
    `index_later`: the vectors are computed and stored after this returns, on the store's
    background thread (`store.later`), for a reply that no step of its own turn searches; until
    then, and if a crash cuts that off, the index embeds the message itself when it loads it.
    """
    for r in rows:
        if r["sender"] not in SENDERS:
            raise StoreError(f"sender must be one of {SENDERS}, got {r['sender']!r}")
        r["text"] = clean_text(r["text"], MAX_MESSAGE_CHARS if r["sender"] == "user" else None)
        r["ts"] = r.get("ts") or datetime.now(timezone.utc)
    # Slow index work (embedding) happens before the write lock is taken.
    prepared = [] if index_later else [ix.prepare([r["text"] for r in rows]) for ix in store.indexes]
    out: list[Message] = []
    with store.transaction(participant=participant) as conn:
        p = conn.execute(
            "SELECT tz, first_local_date, next_ordinal FROM participants WHERE participant=?",
            (participant,),
        ).fetchone()
        if p is None:
            raise StoreError(f"unknown participant {participant!r}")
        first = date.fromisoformat(p["first_local_date"]) if p["first_local_date"] else None
        ordinal = p["next_ordinal"]
        for r in rows:
            ts = r["ts"]
            if first is None:
                first = keys.local_date(ts, p["tz"])
                conn.execute(
                    "UPDATE participants SET first_local_date=? WHERE participant=?",
                    (first.isoformat(), participant),
                )
            if r.get("dayid") is None:
                n = keys.day_number(first, ts, p["tz"])
                last = conn.execute(
                    "SELECT last_j FROM day_counters WHERE participant=? AND day_n=?", (participant, n)
                ).fetchone()
                j = (last["last_j"] if last else 0) + 1
            else:
                n, j = keys.parse_dayid(r["dayid"])
                last = conn.execute(
                    "SELECT last_j FROM day_counters WHERE participant=? AND day_n=?", (participant, n)
                ).fetchone()
                if last and j <= last["last_j"]:
                    raise StoreError(f"dayid {r['dayid']} of {participant!r} was already assigned")
            conn.execute(
                "INSERT INTO day_counters VALUES (?, ?, ?) "
                "ON CONFLICT(participant, day_n) DO UPDATE SET last_j=excluded.last_j",
                (participant, n, j),
            )
            dayid = keys.format_dayid(n, j)
            cur = conn.execute(
                "INSERT INTO messages (participant, ordinal, dayid, day_n, day_j, sender, text, ts, context) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (participant, ordinal, dayid, n, j, r["sender"], r["text"], ts.isoformat(), r["context"]),
            )
            out.append(Message(cur.lastrowid, participant, ordinal, dayid, r["sender"], r["text"],
                               ts.isoformat(), r["context"]))
            ordinal += 1
        conn.execute("UPDATE participants SET next_ordinal=? WHERE participant=?", (ordinal, participant))
        for ix, prep in zip(store.indexes, prepared):
            ix.insert(conn, out, prep)
        if also is not None:
            also(conn, out)
    if index_later:
        for ix in store.indexes:
            store.later(participant, lambda ix=ix: ix.complete(participant, out))
    return out


def next_ordinal(store: Store, participant: str) -> int:
    """The as_of bound that sees every message stored so far."""
    r = store.conn.execute(
        "SELECT next_ordinal FROM participants WHERE participant=?", (participant,)
    ).fetchone()
    if r is None:
        raise StoreError(f"unknown participant {participant!r}")
    return r["next_ordinal"]


def read(store: Store, participant: str, as_of: int, limit: int | None = None) -> list[Message]:
    """Messages with ordinal < as_of, oldest first; with `limit`, only the newest `limit`."""
    if limit is not None:
        rows = store.conn.execute(
            "SELECT * FROM messages WHERE participant=? AND ordinal<? ORDER BY ordinal DESC LIMIT ?",
            (participant, as_of, limit),
        ).fetchall()
        return [_row(r) for r in reversed(rows)]
    rows = store.conn.execute(
        "SELECT * FROM messages WHERE participant=? AND ordinal<? ORDER BY ordinal",
        (participant, as_of),
    ).fetchall()
    return [_row(r) for r in rows]


def by_dayids(store: Store, participant: str, dayids: list[str], as_of: int) -> list[Message]:
    if not dayids:
        return []
    marks = ",".join("?" * len(dayids))
    rows = store.conn.execute(
        f"SELECT * FROM messages WHERE participant=? AND ordinal<? AND dayid IN ({marks}) ORDER BY ordinal",
        (participant, as_of, *dayids),
    ).fetchall()
    return [_row(r) for r in rows]


def _below(ordinals: list[int], as_of: int):
    """(ordinals, their "?" marks) in chunks of at most 500, only those below the bound `as_of`."""
    for i in range(0, len(ordinals), 500):
        chunk = [o for o in ordinals[i : i + 500] if o < as_of]
        if chunk:
            yield chunk, ",".join("?" * len(chunk))


def by_ordinals(store: Store, participant: str, ordinals: list[int], as_of: int) -> dict[int, Message]:
    out: dict[int, Message] = {}
    for chunk, marks in _below(ordinals, as_of):
        for r in store.conn.execute(
            f"SELECT * FROM messages WHERE participant=? AND ordinal IN ({marks})", (participant, *chunk)
        ):
            out[r["ordinal"]] = _row(r)
    return out


def own_before(store: Store, participant: str, ordinals: list[int], as_of: int) -> dict[int, str]:
    """For each ordinal below `as_of`, the text of the participant's own message just before it
    (who "she" is in "actually she moved to Leeds"), in one query per 500 ordinals."""
    out: dict[int, str] = {}
    for chunk, marks in _below(ordinals, as_of):
        for r in store.conn.execute(
            "SELECT m.ordinal AS ordinal, (SELECT p.text FROM messages p WHERE p.participant=m.participant "
            "AND p.sender='user' AND p.ordinal<m.ordinal ORDER BY p.ordinal DESC LIMIT 1) AS before "
            f"FROM messages m WHERE m.participant=? AND m.ordinal IN ({marks})", (participant, *chunk)
        ):
            if r["before"] is not None:
                out[r["ordinal"]] = r["before"]
    return out


def delete(store: Store, participant: str, dayid: str) -> Message:
    """Remove one message from the log and from every index, in one transaction."""
    keys.parse_dayid(dayid)
    with store.transaction(participant=participant) as conn:
        r = conn.execute(
            "SELECT * FROM messages WHERE participant=? AND dayid=?", (participant, dayid)
        ).fetchone()
        if r is None:
            raise StoreError(f"no message {dayid} for participant {participant!r}")
        msg = _row(r)
        parses.delete(conn, [msg.id])  # its stored parse (memory.parses) goes with it
        conn.execute("DELETE FROM messages WHERE id=?", (msg.id,))
        for ix in store.indexes:
            ix.delete(conn, [msg.id])
        # Caches of every process rebuild on their next query.
        conn.execute("UPDATE participants SET index_epoch=index_epoch+1 WHERE participant=?", (participant,))
    return msg
