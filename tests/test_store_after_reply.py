"""Work after the reply: a turn's reply vector is stored after the reply is shown (off the reply
path), and the participant's next turn reads nothing before it is committed (as-of unchanged)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from companion.turn import turn
from memory import embeddings, traces


@pytest.mark.both_backends
def test_the_reply_vector_comes_after_the_reply_and_before_the_next_turn_reads(store, ana, settings, backend):
    store.vectors.embedder = embeddings.HashEmbedder()
    gate = threading.Event()
    real_later, real_settle = store.later, store.settle
    store.later = lambda p, fn: real_later(p, lambda: (gate.wait(120), fn()))
    settling = threading.Event()

    def settle(participant=None):
        settling.set()
        real_settle(participant)

    store.settle = settle

    first = turn(store, ana, "my sister Mira plays the cello on Sundays", settings=settings)
    reply = first.reply
    # acknowledged: the reply and its trace are committed, its vector is not yet
    assert store.conn.execute("SELECT text FROM messages WHERE id=?", (reply.id,)).fetchone()[0] == first.shown
    assert [t.reply_dayid for t in traces.list_(store, participant=ana)] == [reply.dayid]
    assert store.conn.execute("SELECT count(*) FROM message_vectors WHERE rowid=?", (reply.id,)).fetchone()[0] == 0

    seen = {}
    real_sims = store.vectors.similarities

    def sims(participant, vec, as_of, exclude=()):
        s, ords = real_sims(participant, vec, as_of, exclude)
        seen.setdefault("ordinals", ords.tolist())
        seen.setdefault("row", store.vectors.synced(participant).vectors.view[list(ords).index(reply.ordinal)].copy())
        return s, ords

    store.vectors.similarities = sims
    settling.clear()
    out = {}
    second = threading.Thread(target=lambda: out.setdefault("r", turn(store, ana, "who plays the cello?",
                                                                       settings=settings)))
    second.start()
    settling.wait(120)  # the second turn waits before it reads or stores anything
    assert store.conn.execute("SELECT count(*) FROM messages WHERE participant=?", (ana,)).fetchone()[0] == 2
    gate.set()
    second.join(120)
    assert not second.is_alive()
    assert out["r"].reply is not None
    # the second turn's dense index held the reply, with the vector stored after the first reply
    assert reply.ordinal in seen["ordinals"]
    expect = embeddings.HashEmbedder().encode([first.shown])[0]
    assert np.allclose(seen["row"], expect)
    stored = store.read_vectors(ana, reply.ordinal)[1][0]
    assert np.allclose(stored, expect)
