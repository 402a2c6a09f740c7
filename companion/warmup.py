"""Everything the first turn needs, loaded before the app says "ready".

A process's first turn used to pay for lazy loads: litellm's imports and its first completion,
the sentence model, spaCy and the preference classifier, the plugins, and the participant's
indexes. `warm` runs one whole turn on a throwaway SQLite store (a temporary directory, removed
after: the study's database is not touched, no participant is made in it), with the configured
gate, retriever and policy; the model is asked only when it runs in this process (`echo`,
`local/...`; a remote model is never called at start, its own latency is its own). Then it loads
the indexes of the participants who wrote most recently (one bulk read each, see
memory/indexes.py), so their next turn does not either.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time

from companion import gateway
from companion.settings import Settings

log = logging.getLogger(__name__)
IN_PROCESS = ("echo/", "local/")


def warm(settings: Settings, store=None, participants: int = 20, days: int = 14) -> dict:
    """Returns what was warmed and how long it took (seconds)."""
    from consent import records as consent
    from memory import preferences
    from memory.store import Store

    from companion.turn import turn

    took: dict = {}
    t = time.perf_counter()
    preferences.warm()  # spaCy, the classifier, the sentence model
    took["models_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="companion-warm-")
    try:
        scratch = Store(tmp, synchronous="NORMAL")  # always a local throwaway file
        if store is not None:
            scratch.vectors.embedder = store.vectors.embedder
        model = settings.model if gateway.resolve(settings.model).startswith(IN_PROCESS) else "echo"
        consent.accept(scratch, "warm-up", tz="UTC")
        turn(scratch, "warm-up", "warming up: what did I say about the garden?",
             settings=settings.model_copy(update={"model": model}))
        scratch.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    took["turn_s"] = round(time.perf_counter() - t, 2)
    if store is not None and participants:
        t = time.perf_counter()
        took["participants"] = warm_indexes(store, participants, days)
        took["indexes_s"] = round(time.perf_counter() - t, 2)
    return took


def warm_indexes(store, limit: int = 20, days: int = 14) -> int:
    """Load the BM25 and vector indexes of the `limit` participants with the latest messages
    (within `days`); returns how many."""
    from datetime import datetime, timedelta, timezone

    since = (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()
    rows = store.conn.execute(
        "SELECT participant, MAX(ts) AS last FROM messages WHERE ts >= ? GROUP BY participant "
        "ORDER BY last DESC LIMIT ?", (since, limit)).fetchall()
    for r in rows:
        store.bm25.synced(r["participant"])
        store.vectors.synced(r["participant"])
    return len(rows)
