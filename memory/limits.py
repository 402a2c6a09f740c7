"""Rate limits kept in the database, so every process on the same data counts the same events.

An event (a failed sign-in, a rating) is a row (key, at, until); a limit is "at most `n` events of
a key within `window` seconds". Keys are stored as SHA-256 digests (they name a participant and a
client address), and rows go once `until` has passed.
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


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="microseconds")


def _now() -> datetime:
    return datetime.now(timezone.utc)


def wait(store: Store, key: str, limit: Limit, now: datetime | None = None) -> float:
    """Seconds until `key` may have another event under `limit` (0.0: now)."""
    now = now or _now()
    since = _iso(now - timedelta(seconds=limit.window))
    rows = store.conn.execute(
        "SELECT at FROM rate_events WHERE key = ? AND at > ? ORDER BY at DESC", (_digest(key), since)).fetchall()
    if len(rows) < limit.n:
        return 0.0
    # the n-th newest event must leave the window before another one fits
    nth = datetime.fromisoformat(rows[limit.n - 1][0])
    return max(0.0, limit.window - (now - nth).total_seconds())


def record(store: Store, key: str, keep: float, now: datetime | None = None) -> None:
    """One event of `key`, kept `keep` seconds (the widest window it is counted in)."""
    now = now or _now()
    with store.transaction() as conn:
        conn.execute("DELETE FROM rate_events WHERE until < ?", (_iso(now),))
        conn.execute("INSERT INTO rate_events (key, at, until) VALUES (?,?,?)",
                     (_digest(key), _iso(now), _iso(now + timedelta(seconds=keep))))


def take(store: Store, key: str, limits: list[Limit], now: datetime | None = None) -> float:
    """Record one event of `key` if every limit allows it (checked and recorded under one write
    lock, so concurrent requests cannot all slip under a limit); returns 0.0 when recorded, else
    the seconds to wait (nothing recorded)."""
    now = now or _now()
    with store.transaction():
        waits = [wait(store, key, lim, now) for lim in limits]
        if max(waits, default=0.0) > 0:
            return max(waits)
        record(store, key, max(lim.window for lim in limits), now)
    return 0.0


def clear(store: Store, key: str) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM rate_events WHERE key = ?", (_digest(key),))
