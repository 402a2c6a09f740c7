"""The message log: append under a fresh dayid, read as of an ordinal, delete.

Every read takes `as_of`, an ordinal: it sees messages with ordinal < as_of and nothing at
or after it, so a replayed probe cannot see its own future by construction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, datetime, timezone

from memory import keys
from memory.store import Store, StoreError

SENDERS = ("user", "companion")
CONTEXTS = ("work", "personal")


@dataclass(frozen=True)
class Message:
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
        return d


def _row(r) -> Message:
    return Message(r["participant"], r["ordinal"], r["dayid"], r["sender"], r["text"], r["ts"], r["context"])


def clean_text(text) -> str:
    """Refuse what cannot be a message; keep what can, verbatim."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StoreError(f"message is not valid UTF-8 (byte {e.start})") from e
    if not isinstance(text, str):
        raise StoreError(f"message must be text, got {type(text).__name__}")
    if not text.strip():
        raise StoreError("message is empty")
    if "\x00" in text:
        raise StoreError("message contains a NUL character")
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
    if sender not in SENDERS:
        raise StoreError(f"sender must be one of {SENDERS}, got {sender!r}")
    text = clean_text(text)
    ts = ts or datetime.now(timezone.utc)
    with store.transaction() as conn:
        p = conn.execute(
            "SELECT tz, first_local_date, next_ordinal FROM participants WHERE participant=?",
            (participant,),
        ).fetchone()
        if p is None:
            raise StoreError(f"unknown participant {participant!r}")
        if p["first_local_date"] is None:
            first = keys.local_date(ts, p["tz"])
            conn.execute(
                "UPDATE participants SET first_local_date=? WHERE participant=?",
                (first.isoformat(), participant),
            )
        else:
            first = date.fromisoformat(p["first_local_date"])
        if dayid is None:
            n = keys.day_number(first, ts, p["tz"])
            row = conn.execute(
                "SELECT last_j FROM day_counters WHERE participant=? AND day_n=?", (participant, n)
            ).fetchone()
            j = (row["last_j"] if row else 0) + 1
        else:
            n, j = keys.parse_dayid(dayid)
            row = conn.execute(
                "SELECT last_j FROM day_counters WHERE participant=? AND day_n=?", (participant, n)
            ).fetchone()
            if row and j <= row["last_j"]:
                raise StoreError(f"dayid {dayid} of {participant!r} was already assigned")
        conn.execute(
            "INSERT INTO day_counters VALUES (?, ?, ?) "
            "ON CONFLICT(participant, day_n) DO UPDATE SET last_j=excluded.last_j",
            (participant, n, j),
        )
        ordinal = p["next_ordinal"]
        conn.execute(
            "UPDATE participants SET next_ordinal=? WHERE participant=?", (ordinal + 1, participant)
        )
        msg = Message(participant, ordinal, keys.format_dayid(n, j), sender, text, ts.isoformat(), context)
        conn.execute(
            "INSERT INTO messages VALUES (?,?,?,?,?,?,?,?,?)",
            (participant, ordinal, msg.dayid, n, j, sender, text, msg.ts, context),
        )
        for hook in store.on_insert:
            hook(conn, [msg])
    return msg


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


def by_ordinals(store: Store, participant: str, ordinals: list[int], as_of: int) -> dict[int, Message]:
    out: dict[int, Message] = {}
    for i in range(0, len(ordinals), 500):
        chunk = [o for o in ordinals[i : i + 500] if o < as_of]
        if not chunk:
            continue
        marks = ",".join("?" * len(chunk))
        for r in store.conn.execute(
            f"SELECT * FROM messages WHERE participant=? AND ordinal IN ({marks})", (participant, *chunk)
        ):
            out[r["ordinal"]] = _row(r)
    return out


def delete(store: Store, participant: str, dayid: str) -> Message:
    """Remove one message from the log and from every index, in one transaction."""
    keys.parse_dayid(dayid)
    with store.transaction() as conn:
        r = conn.execute(
            "SELECT * FROM messages WHERE participant=? AND dayid=?", (participant, dayid)
        ).fetchone()
        if r is None:
            raise StoreError(f"no message {dayid} for participant {participant!r}")
        msg = _row(r)
        conn.execute("DELETE FROM messages WHERE participant=? AND ordinal=?", (participant, msg.ordinal))
        for hook in store.on_delete:
            hook(conn, participant, [msg.ordinal])
    return msg
