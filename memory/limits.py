"""Rate limits kept in the database, so every process on the same data counts the same events.

An event (a failed sign-in, a rating) is a row (key, at, until); a limit is "at most `n` events of
a key within `window` seconds". Keys are stored as SHA-256 digests (they name a participant and a
client address), and rows go once `until` has passed.

A key that belongs to a participant (their sign-in failures from any address, their ratings) is
stored under that participant's subject digest, `<sha256(participant)>.<sha256(key)>`, so a
withdrawal finds and deletes every one of their keys (`erase`, run inside the erasure's
transaction) without the database ever holding the name or the address in clear.

`take` (check every limit, then record) runs under a lock of that one key: on SQLite the write
lock of the file (BEGIN IMMEDIATE), on PostgreSQL a transaction-level advisory lock of the key
(`store.transaction(key=...)`), so concurrent requests for the same key cannot all slip under a
limit, and requests for other keys, and every turn, go on meanwhile.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from memory.store import Store


@dataclass(frozen=True)
class Limit:
    n: int
    window: float  # seconds


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def stored_key(key: str, subject: str | None = None) -> str:
    """What `rate_events.key` holds for `key` (of the participant `subject`, if any)."""
    return _digest(key) if subject is None else f"{_digest(subject)}.{_digest(key)}"


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="microseconds")


def _now() -> datetime:
    return datetime.now(timezone.utc)


def wait(store: Store, key: str, limit: Limit, now: datetime | None = None, subject: str | None = None) -> float:
    """Seconds until `key` may have another event under `limit` (0.0: now)."""
    now = now or _now()
    since = _iso(now - timedelta(seconds=limit.window))
    rows = store.conn.execute(
        "SELECT at FROM rate_events WHERE key = ? AND at > ? ORDER BY at DESC",
        (stored_key(key, subject), since)).fetchall()
    if len(rows) < limit.n:
        return 0.0
    # the n-th newest event must leave the window before another one fits
    nth = datetime.fromisoformat(rows[limit.n - 1][0])
    return max(0.0, limit.window - (now - nth).total_seconds())


def record(store: Store, key: str, keep: float, now: datetime | None = None, subject: str | None = None) -> None:
    """One event of `key`, kept `keep` seconds (the widest window it is counted in)."""
    now = now or _now()
    k = stored_key(key, subject)
    with store.transaction(key=k) as conn:
        conn.execute("DELETE FROM rate_events WHERE until < ?", (_iso(now),))
        conn.execute("INSERT INTO rate_events (key, at, until) VALUES (?,?,?)",
                     (k, _iso(now), _iso(now + timedelta(seconds=keep))))


def take(store: Store, key: str, limits: list[Limit], now: datetime | None = None,
         subject: str | None = None) -> float:
    """Record one event of `key` if every limit allows it (checked and recorded under the key's
    lock, so concurrent requests cannot all slip under a limit); returns 0.0 when recorded, else
    the seconds to wait (nothing recorded)."""
    now = now or _now()
    with store.transaction(key=stored_key(key, subject)):
        waits = [wait(store, key, lim, now, subject) for lim in limits]
        if max(waits, default=0.0) > 0:
            return max(waits)
        record(store, key, max(lim.window for lim in limits), now, subject)
    return 0.0


def clear(store: Store, key: str, subject: str | None = None) -> None:
    k = stored_key(key, subject)
    with store.transaction(key=k) as conn:
        conn.execute("DELETE FROM rate_events WHERE key = ?", (k,))


def erase(conn, participant: str) -> int:
    """Delete every rate-limit row of `participant` (inside the caller's transaction: the
    erasure's). Returns how many went."""
    return conn.execute("DELETE FROM rate_events WHERE key LIKE ?", (f"{_digest(participant)}.%",)).rowcount
