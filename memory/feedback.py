"""Explicit feedback: a participant's thumbs up or down on one companion reply, with an optional tag.

Rows are append-only (table `feedback`, migration m011): rating again replaces the earlier
rating from then on, rating 0 retracts, and `after_ordinal` (the participant's newest message
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

    @property
    def means(self) -> str | None:
        return tags()[self.tag]["means"] if self.tag else None

    def public(self) -> dict:
        d = self.model_dump()
        d["rating"] = {1: "up", -1: "down", 0: "none"}[self.rating]
        d["tag_label"] = tags()[self.tag]["label"] if self.tag else None
        return d


def record(store: Store, participant: str, dayid: str, rating: str | int, tag: str | None = None,
           via: str = "cli") -> Feedback:
    """Store one rating of the companion reply `dayid`; refuses, naming what was wrong, a reply
    that is not the participant's, a rating other than up/down/none, or an unknown tag."""
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
    with store.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO feedback (participant, dayid, rating, tag, trace_id, arm, gate, after_ordinal, via, created_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            (participant, dayid, rating, tag, trace.id if trace else None,
             trace.arm.get("name") if trace else None, trace.gate.get("name") if trace else None,
             bound - 1, via, datetime.now(timezone.utc).isoformat()),
        )
        row = conn.execute("SELECT * FROM feedback WHERE id=?", (cur.lastrowid,)).fetchone()
    return Feedback(**dict(row))


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
