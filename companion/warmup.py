"""Everything the first turn needs, loaded before the app says "ready".

A process's first turn used to pay for lazy loads: litellm's imports and its first completion,
the sentence model, spaCy and the preference classifier, the plugins, and the participant's
indexes. `warm` runs one whole turn on a throwaway SQLite store (a temporary directory, removed
after: the study's database is not touched, no participant is made in it), with the configured
gate, retriever and policy; the model is asked only when it runs in this process (`echo`,
`local/...`; a remote model is never called at start, its own latency is its own). Then it loads
the indexes of the participants who wrote most recently (one bulk read each, see
memory/indexes.py), so their next turn does not either.

`read_ahead` reads, on a background thread, what a participant's next recall question reads of
their latest messages (memory.answers.prefetch): `serve` starts it after "ready" for the same
recent participants, and signing in starts it for the one who signed in, so that the first recall
question after a restart does not parse and embed 200 messages inside its turn.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time

from companion import gateway
from companion.settings import Settings
from consent import erasure

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
    names = recent_participants(store, limit, days)
    for p in names:
        store.bm25.synced(p)
        store.vectors.synced(p)
    return len(names)


_reading: set[str] = set()
_reading_lock = threading.Lock()


def read_ahead(store, participants) -> threading.Thread | None:
    """Prefetch each participant's recall readings in turn on one daemon thread (one at a time per
    participant: one already being read is skipped); returns the thread, or None when there is
    nothing to read. A participant erased meanwhile leaves nothing kept: what was read is dropped
    when they are gone at the end (their erasure drops what was kept before)."""
    with _reading_lock:
        todo = [p for p in dict.fromkeys(participants) if p not in _reading]
        _reading.update(todo)
    if not todo:
        return None
    erasure.forget_erased_elsewhere(store)  # an erasure after this is seen by the next turn

    def run():
        from memory import answers

        for p in todo:
            try:
                answers.prefetch(store, p)
                if store.conn.execute("SELECT 1 FROM participants WHERE participant=?", (p,)).fetchone() is None:
                    erasure.drop_kept_words(store)  # erased while it was read: drop what the read kept
            except Exception:  # a cache fill: the turn reads the same itself
                log.exception("reading ahead for a participant failed; their next turn reads it itself")
            finally:
                with _reading_lock:
                    _reading.discard(p)

    t = threading.Thread(target=run, name="read-ahead", daemon=True)
    t.start()
    return t


def recent_participants(store, limit: int = 20, days: int = 14) -> list[str]:
    """The `limit` participants with the latest messages within `days`, latest first."""
    from datetime import datetime, timedelta, timezone

    since = (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()
    return [r["participant"] for r in store.conn.execute(
        "SELECT participant, MAX(ts) AS last FROM messages WHERE ts >= ? GROUP BY participant "
        "ORDER BY last DESC LIMIT ?", (since, limit)).fetchall()]
