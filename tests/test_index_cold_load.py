"""A restart loads a participant's indexes from the database in bulk (memory.indexes): what the
cold load holds must be what the warm index held, message for message. (A side-by-side load of the
two indexes on a loader thread once made LoCoMo's replayed feature rows read every message at
dense similarity 1.0; tests/test_realtalk.py::test_the_committed_feature_rows_are_the_corpus_own
caught it, with LoCoMo present; this test did not reproduce it and guards the plain cold load.)"""

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from consent import records
from memory import indexes, messages
from memory.store import Store

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
TOPICS = ["sourdough", "marathon", "violin", "tax forms", "tomato plants", "a broken bike", "the dentist",
          "a trip to Porto", "chess club", "the new puppy", "night shifts", "a wedding speech"]


def _fill(store, who, n):
    rows = [dict(sender="user" if i % 2 == 0 else "companion",
                 text=f"message {i}: something about {TOPICS[i % len(TOPICS)]} and day {i // 7}",
                 context="personal", ts=T0 + timedelta(minutes=3 * i)) for i in range(n)]
    messages.append_many(store, who, rows)


def test_a_cold_load_holds_the_vectors_and_postings_the_warm_index_held(home):
    n = indexes.BULK + 40  # more than one bulk load
    warm = Store(home)
    records.accept(warm, "ana", tz="Europe/Berlin")
    _fill(warm, "ana", n)
    warm.settle()
    probes = [TOPICS[3], "message 17", TOPICS[9] + " and day 30"]
    qv = [warm.vectors.embedder.encode([q])[0] for q in probes]
    before = [warm.vectors.similarities("ana", v, as_of=n + 1) for v in qv]
    lex_before = [warm.bm25.scores("ana", q, as_of=n + 1) for q in probes]
    warm.close()

    cold = Store(home)  # a restart: nothing in memory
    after = [cold.vectors.similarities("ana", v, as_of=n + 1) for v in qv]
    lex_after = [cold.bm25.scores("ana", q, as_of=n + 1) for q in probes]
    for b, a in zip(before, after):
        assert np.array_equal(b[1], a[1])  # the same ordinals
        assert np.allclose(b[0], a[0], atol=1e-5)  # each with its own message's similarity
    for b, a in zip(lex_before, lex_after):
        assert np.array_equal(b[1], a[1]) and np.allclose(b[0], a[0])
    # a message is most similar to itself, as of just after it, not to everything at 1.0
    own = cold.vectors.similarities("ana", cold.vectors.embedder.encode(["message 5: something about "
                                                                          f"{TOPICS[5]} and day 0"])[0], as_of=n + 1)
    assert int(own[1][int(np.argmax(own[0]))]) == 6 and float(np.sort(own[0])[-2]) < 0.999
    cold.close()


@pytest.mark.both_backends
def test_a_cold_load_embeds_and_stores_the_vectors_a_crash_left_missing(home):
    """The dense index reads ids and ordinals only; a message without a vector (a reply whose
    vector a crash cut off) is read by id, embedded from its own text and stored, so the cold
    load holds the same rows as a load with every vector present."""
    n = indexes.BULK + 10
    warm = Store(home)
    records.accept(warm, "ana", tz="Europe/Berlin")
    _fill(warm, "ana", n)
    warm.settle()
    full = warm.vectors.synced("ana").vectors.view.copy()
    gone = [3, 100, n]  # ordinals whose vectors are lost
    with warm.transaction() as conn:
        for o in gone:
            conn.execute("DELETE FROM message_vectors WHERE participant=? AND ordinal=?", ("ana", o))
    warm.close()

    cold = Store(home)
    held = cold.vectors.synced("ana").vectors.view
    assert held.shape == full.shape and np.allclose(held, full, atol=1e-5)
    ords, _ = cold.read_vectors("ana", 0)
    assert ords.tolist() == list(range(1, n + 1))  # the missing ones are stored again
    cold.close()


ODD = ["ΟΔΟΣ", "ΟΔΟΣ\x1f", "tab\x1fseparated\x1fwords", "!!!", "the and of", "İstanbul İzmir", "naïve CAFÉ café",
       "don't won't", "x\x1f\x1fy", "Straße STRASSE", "数字 123 ４５６", "  spaced\tout\nlines  ", "a"]


def _odd_rows(start, n):
    return [dict(sender="user" if i % 2 == 0 else "companion",
                 text=(ODD[i % len(ODD)] + f" {TOPICS[i % len(TOPICS)]} {i}" if i % 3 else ODD[i % len(ODD)]),
                 context="personal", ts=T0 + timedelta(minutes=3 * i)) for i in range(start, start + n)]


def _same_index(warm, cold, who):
    w, c = warm.bm25.synced(who), cold.bm25.synced(who)
    assert np.array_equal(w.ordinals.view, c.ordinals.view)
    assert np.array_equal(w.doc_len.view, c.doc_len.view) and np.array_equal(w.cum_len.view, c.cum_len.view)
    assert list(w.postings) and set(w.postings) == set(c.postings)
    for t in w.postings:
        assert np.array_equal(w.arrays(t)[0], c.arrays(t)[0]) and np.array_equal(w.arrays(t)[1], c.arrays(t)[1]), t
    wd, cd = warm.vectors.synced(who), cold.vectors.synced(who)
    assert np.array_equal(wd.ordinals.view, cd.ordinals.view)
    assert np.array_equal(wd.vectors.view, cd.vectors.view)  # the same float32s, bit for bit


@pytest.mark.both_backends
def test_a_cold_load_gives_exactly_what_the_incremental_index_gives(home):
    """The bulk load (texts and ordinals read as aggregates, the texts joined by indexes.SEP and
    tokenized in one pass; the vectors read as one array) holds exactly what an index synced a few
    messages at a time holds: the same postings, lengths and vectors bit for bit, so the same
    scores and the same top-k, as of any bound; also after a deletion (a reload) and with texts
    holding the separator, final sigmas, no words at all or only stopwords."""
    from eval import benchrecall
    from memory.embeddings import HashEmbedder

    warm = Store(home)
    warm.vectors.embedder = HashEmbedder()
    records.accept(warm, "ana", tz="Europe/Berlin")
    n = 3 * indexes.BULK + 17
    for i in range(0, n, 50):  # every sync under BULK rows: the incremental path
        messages.append_many(warm, "ana", _odd_rows(i, min(50, n - i)))
        warm.bm25.synced("ana")
        warm.vectors.synced("ana")
    warm.settle()
    probes = ["ΟΔΟΣ", "tab separated", "sourdough 40", "istanbul", "café naïve", "straße", "x y", "数字",
              "what did I say about the dentist?"]
    hv = warm.vectors.embedder

    def results(s, as_of):
        out = []
        for q in probes:
            sc, o, ref = s.bm25.scores("ana", q, as_of=as_of)
            sims, do = s.vectors.similarities("ana", hv.encode_one(q), as_of=as_of)
            out.append((sc.tolist(), o.tolist(), ref, sims.tolist(), do.tolist()))
        return out

    bounds = [1, 2, 40, indexes.BULK + 3, n + 1]
    before = {b: results(warm, b) for b in bounds}
    paths = {q: benchrecall.decision_path(warm, "ana", q)[1] for q in probes[-2:]}
    cold = Store(home)
    cold.vectors.embedder = hv
    _same_index(warm, cold, "ana")
    assert {b: results(cold, b) for b in bounds} == before
    for q, hits in paths.items():
        assert [(h.ordinal, h.score) for h in benchrecall.decision_path(cold, "ana", q)[1]] == \
            [(h.ordinal, h.score) for h in hits]
    cold.close()

    # a deletion bumps the epoch: every store reloads in bulk, and the ordinals left are the same
    gone = messages.by_ordinals(warm, "ana", [100], n + 1)[100]
    messages.delete(warm, "ana", gone.dayid)
    cold = Store(home)
    cold.vectors.embedder = hv
    assert results(cold, n + 1) == results(warm, n + 1)
    assert 100 not in cold.bm25.synced("ana").ordinals.view.tolist()
    _same_index(warm, cold, "ana")
    for s in (warm, cold):
        s.close()


def test_a_reload_keeps_the_lock_it_is_done_under(home):
    """`reset` runs under the participant index's lock: it must not swap in a new lock, or a second
    thread would take the new one and load the same rows into the index beside the first."""
    for ix in (indexes._Lexical(), indexes._Dense(fetch=lambda *a: None)):
        lock = ix.lock
        with ix.lock:
            ix.reset(3)
        assert ix.lock is lock and ix.epoch == 3 and ix.next_ordinal == 1


@pytest.mark.both_backends
def test_threads_loading_one_participant_at_once_load_it_once(home):
    import threading

    from memory.embeddings import HashEmbedder

    warm = Store(home)
    warm.vectors.embedder = HashEmbedder()
    records.accept(warm, "ana", tz="Europe/Berlin")
    messages.append_many(warm, "ana", _odd_rows(0, 2 * indexes.BULK))
    warm.close()
    for _ in range(3):
        cold = Store(home)
        barrier = threading.Barrier(4)

        def load(ix):
            barrier.wait()
            ix.synced("ana")

        ts = [threading.Thread(target=load, args=(ix,)) for ix in (cold.bm25, cold.vectors) * 2]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for ix in (cold.bm25, cold.vectors):
            assert ix.synced("ana").ordinals.view.tolist() == list(range(1, 2 * indexes.BULK + 1))
        assert cold.vectors.synced("ana").vectors.n == 2 * indexes.BULK
        assert len(cold.bm25.synced("ana").doc_len.view) == 2 * indexes.BULK
        cold.close()


@pytest.mark.both_backends
def test_the_loader_beside_a_cold_query_never_embeds_and_never_runs_inside_a_transaction(home):
    """A cold load starts the other index's load on the store's loader thread. That load gives up
    on a missing vector (the caller's own sync embeds it: the embedder is used from one thread),
    and none starts inside a transaction (the loader's connection would not see its rows)."""
    import threading

    from memory.embeddings import HashEmbedder

    class Recording(HashEmbedder):
        threads: set = set()

        def encode(self, texts, batch_size: int = 64):
            Recording.threads.add(threading.current_thread().name)
            return super().encode(texts, batch_size)

    warm = Store(home)
    warm.vectors.embedder = HashEmbedder()
    records.accept(warm, "ana", tz="Europe/Berlin")
    messages.append_many(warm, "ana", _odd_rows(0, 2 * indexes.BULK))
    full = warm.vectors.synced("ana").vectors.view.copy()
    with warm.transaction() as conn:
        conn.execute("DELETE FROM message_vectors WHERE participant=? AND ordinal IN (2, 300)", ("ana",))
    warm.close()

    cold = Store(home)
    cold.vectors.embedder = Recording()
    cold.bm25.synced("ana")  # starts the vector load on the loader, which stops at the missing vectors
    held = cold.vectors.synced("ana")
    assert np.array_equal(held.vectors.view, full) and held.ordinals.view.tolist() == list(range(1, 2 * indexes.BULK + 1))
    assert Recording.threads == {threading.current_thread().name}
    cold.close()

    cold = Store(home)
    with cold.transaction():
        cold.bm25.synced("ana")
        assert cold._loader is None  # nothing started beside a transaction
    assert np.array_equal(cold.vectors.synced("ana").vectors.view, full)
    cold.close()
    assert cold._loader is None


@pytest.mark.parametrize("chunk", [1, 7, 64, 10**9])
def test_the_bulk_tokenizer_cut_in_pieces_gives_the_postings_of_add(monkeypatch, chunk):
    """The bulk build tokenizes the joined texts in pieces cut at a separator (indexes.CHUNK): any
    piece size gives exactly the postings and lengths the one-message-at-a-time `add` gives."""
    monkeypatch.setattr(indexes, "CHUNK", chunk)
    texts = [r["text"] for r in _odd_rows(0, 300)] + ["ΣΟΦΟΣ", "ΟΔΟΣ\x1f", "\x1f", "end"]
    one, bulk = indexes._Lexical(), indexes._Lexical()
    for i, t in enumerate(texts):
        one.add("ana", [(i, i + 1, t)], np.array([i + 1]))
        one.ordinals.extend([i + 1])
    bulk._add_bulk(texts)
    assert np.array_equal(one.doc_len.view, bulk.doc_len.view) and np.array_equal(one.cum_len.view, bulk.cum_len.view)
    assert list(one.postings) == list(bulk.postings)
    for t in one.postings:
        assert np.array_equal(one.arrays(t)[0], bulk.arrays(t)[0]) and np.array_equal(one.arrays(t)[1], bulk.arrays(t)[1])
