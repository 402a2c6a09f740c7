"""Explicit feedback: a participant's thumbs up or down on one companion reply, with an optional tag.

Rows are append-only (table `feedback`, migration m011): one row per change. Rating again with
another value replaces the earlier rating from then on, rating 0 retracts, and the same value
again stores nothing (one click, one row: `replaces`, unique per reply, m013, holds this also for
two concurrent clicks); and `after_ordinal` (the participant's newest message
when it was given) makes every read as-of: a turn at as_of sees only feedback with
after_ordinal < as_of, so a replay of a gate that learns from feedback cannot see the future.
Each row carries the reply's trace id, arm and gate, read from the trace when it is given.
Tags are versioned data (`memory/data/feedback.json`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

from memory import messages, participants, traces
from memory.store import Store, StoreError

DATA = Path(__file__).parent / "data" / "feedback.json"
RATINGS = {"up": 1, "down": -1, "none": 0}


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def tags() -> dict[str, dict]:
    """tag -> {label, means}."""
    return _data()["tags"]


def version() -> str:
    return _data()["version"]


def tag_for_label(label: str) -> str | None:
    """The tag whose label (as shown in the app) or name this is; None for an empty choice."""
    if not label:
        return None
    for name, t in tags().items():
        if label in (name, t["label"]):
            return name
    raise StoreError(f"unknown feedback tag {label!r}: one of {', '.join(tags())}")


class Feedback(BaseModel):
    id: int
    participant: str
    dayid: str
    rating: int
    tag: str | None
    trace_id: int | None
    arm: str | None
    gate: str | None
    after_ordinal: int
    via: str
    created_at: str
    replaces: int = 0  # the id of the row this one replaced (0: the first rating of the reply)

    @property
    def means(self) -> str | None:
        return tags()[self.tag]["means"] if self.tag else None

    def public(self) -> dict:
        d = self.model_dump()
        d["rating"] = {1: "up", -1: "down", 0: "none"}[self.rating]
        d["tag_label"] = tags()[self.tag]["label"] if self.tag else None
        return d


def record(store: Store, participant: str, dayid: str, rating: str | int, tag: str | None = None,
           via: str = "cli") -> Feedback | None:
    """Store one rating of the companion reply `dayid` if it changes what stands (see `change`);
    returns the standing row (None: a retraction with nothing standing)."""
    return change(store, participant, dayid, rating, tag, via)[0]


def change(store: Store, participant: str, dayid: str, rating: str | int, tag: str | None = None,
           via: str = "cli") -> tuple[Feedback | None, bool]:
    """(standing row, whether a row was stored). Refuses, naming what was wrong, a reply that is
    not the participant's, a rating other than up/down/none, or an unknown tag. The same rating
    and tag as the standing one stores nothing; nor does retracting a reply with no rating."""
    if isinstance(rating, str):
        if rating not in RATINGS:
            raise StoreError(f"rating must be one of {', '.join(RATINGS)}, got {rating!r}")
        rating = RATINGS[rating]
    if rating not in (-1, 0, 1):
        raise StoreError(f"rating must be -1, 0 or 1, got {rating!r}")
    if tag is not None:
        tag = tag_for_label(tag)
        if rating == 0:
            raise StoreError("a retracted rating (none) takes no tag")
    if not participants.exists(store, participant):
        raise StoreError(f"unknown participant {participant!r}")
    bound = messages.next_ordinal(store, participant)
    found = messages.by_dayids(store, participant, [dayid], bound)
    if not found:
        raise StoreError(f"{participant!r} has no message {dayid!r}")
    if found[0].sender != "companion":
        raise StoreError(f"{dayid!r} is the participant's own message: feedback rates companion replies")
    trace = traces.for_dayid(store, participant, dayid)
    for attempt in (1, 2):
        try:
            with store.transaction() as conn:
                last = _standing(conn, participant, dayid)
                if (last is None and rating == 0) or (last is not None and (last.rating, last.tag) == (rating, tag)):
                    return last, False
                conn.execute(
                    "INSERT INTO feedback (participant, dayid, rating, tag, trace_id, arm, gate, after_ordinal, via,"
                    " created_at, replaces) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (participant, dayid, rating, tag, trace.id if trace else None,
                     trace.arm.get("name") if trace else None, trace.gate.get("name") if trace else None,
                     bound - 1, via, datetime.now(timezone.utc).isoformat(), last.id if last else 0),
                )
                # (participant, dayid, replaces) is unique: the row just stored, on any database
                row = conn.execute("SELECT * FROM feedback WHERE participant=? AND dayid=? AND replaces=?",
                                   (participant, dayid, last.id if last else 0)).fetchone()
            return Feedback(**dict(row)), True
        except Exception:
            # another click on the same reply was stored between our read and our insert (the
            # unique `replaces` refused ours): read again, and store ours only if it still changes
            if attempt == 2 or _standing(store.conn, participant, dayid) is None:
                raise
    raise AssertionError("unreachable")


def standing(store: Store, participant: str, dayid: str) -> Feedback | None:
    """The newest row for the reply (its standing rating; rating 0: retracted), or None."""
    return _standing(store.conn, participant, dayid)


def _standing(conn, participant: str, dayid: str) -> Feedback | None:
    r = conn.execute("SELECT * FROM feedback WHERE participant=? AND dayid=? ORDER BY id DESC LIMIT 1",
                     (participant, dayid)).fetchone()
    return Feedback(**dict(r)) if r else None


def history(store: Store, participant: str) -> list[Feedback]:
    """Every row of the participant, oldest first (for "Download my data" and releases)."""
    return [Feedback(**dict(r)) for r in store.conn.execute(
        "SELECT * FROM feedback WHERE participant=? ORDER BY id", (participant,))]


def current(store: Store, participant: str | None = None, as_of: int | None = None) -> list[Feedback]:
    """The standing rating of each rated reply (the newest row per reply; retractions dropped).
    With `as_of` (one participant's ordinal bound), only rows given before it count."""
    where, args = [], []
    if participant is not None:
        where.append("participant=?")
        args.append(participant)
    if as_of is not None:
        if participant is None:
            raise ValueError("an as_of bound is one participant's: give the participant")
        where.append("after_ordinal<?")
        args.append(as_of)
    sql = "SELECT * FROM feedback" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
    latest: dict[tuple[str, str], Feedback] = {}
    for r in store.conn.execute(sql, args):
        latest[(r["participant"], r["dayid"])] = Feedback(**dict(r))
    return [f for f in latest.values() if f.rating != 0]
