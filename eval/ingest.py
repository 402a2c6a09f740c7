"""Load a corpus participant into a fresh store, keeping the corpus's own dayids and times."""

from __future__ import annotations

from datetime import datetime

from consent import records as consent
from memory import messages, participants
from memory.store import Store

BATCH = 512  # messages per transaction: embedding is batched inside append_many


def ingest(store: Store, name: str, rows, tz: str = "UTC", context: str = "personal") -> int:
    """Store `rows` (objects with dayid, sender, text, ts) for participant `name`.

    Corpus participants are recorded as consented for all scopes: a released corpus was
    consented at collection. Returns the number of messages stored.
    """
    if not participants.exists(store, name):
        consent.accept(store, name, tz=tz)
    batch = []
    for r in rows:
        batch.append(dict(sender=r.sender, text=r.text, context=context, ts=datetime.fromisoformat(r.ts),
                          dayid=r.dayid))
        if len(batch) >= BATCH:
            messages.append_many(store, name, batch)
            batch = []
    if batch:
        messages.append_many(store, name, batch)
    return messages.next_ordinal(store, name) - 1
