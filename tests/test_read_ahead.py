"""Issue 26, seventh round: a participant's recall readings read ahead of their first question
(memory.answers.prefetch, companion.warmup.read_ahead), and erasure dropping every kept copy of
their words. Counts of parses and cache contents, never times."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from eval import benchrecall
from companion import warmup
from companion.turn import turn
from consent import records
from memory import answers, embeddings, facts, messages, nlp
from memory.store import Store

QUESTION = "Have I mentioned learning Spanish classes at Ghent before?"  # no reader reads it: the selector


def _with_history(path, who="rae", n=600) -> Store:
    s = Store(path)
    records.accept(s, who, tz="UTC")
    messages.append_many(s, who, [dict(r, context="personal") for r in benchrecall.conversation(n, seed=11)])
    return s


def _turn_parses(monkeypatch, store, settings, who="rae"):
    seen: list[str] = []  # every text the pipeline parsed (what it made is kept: nlp._keep)
    real = nlp._keep

    def counting(pipe, made):
        seen.extend(made)
        return real(pipe, made)

    with monkeypatch.context() as m:
        m.setattr(nlp, "_keep", counting)
        r = turn(store, who, QUESTION, settings=settings)
    store.settle()
    return r, seen


def _latest(store, who="rae") -> set[str]:
    """The texts of the participant's latest messages the selector reads (the question excluded)."""
    return {facts.blank_quotes(c.text) for c in answers.selector_candidates(store, who, 10**9)} - {QUESTION}


def test_a_first_recall_question_after_reading_ahead_parses_none_of_the_latest_messages(tmp_path, monkeypatch, settings):
    emb = embeddings.default()
    cold = _with_history(tmp_path / "cold")
    with nlp.keeping(True):
        emb.clear_cache()
        want, parsed_cold = _turn_parses(monkeypatch, cold, settings)
    assert len(set(parsed_cold) & _latest(cold)) >= 150  # without it the turn parses its latest messages
    warm = _with_history(tmp_path / "warm")
    with nlp.keeping(True):
        emb.clear_cache()
        assert answers.prefetch(warm, "rae") == answers.SELECTOR_LATEST
        pool = answers.selector_candidates(warm, "rae", 10**9)
        sents = answers._selector_sentences(pool)
        stored = answers._stored_vectors(warm, "rae", pool, sents)  # whole-message sentences: the index's vectors
        text_of = {c.ordinal: c.text for c in pool}
        assert set(stored) == {s.text for s in sents if s.text == text_of[s.ordinal].strip()} and len(stored) > 20
        assert sents and all(s.text in emb._cache or s.text in stored for s in sents)  # the others remembered
        some = sorted(stored)[:20]
        fresh = emb.encode(some)
        assert all(float(np.dot(stored[t], v)) > 0.9999 for t, v in zip(some, fresh))  # the same vectors
        got, parsed_warm = _turn_parses(monkeypatch, warm, settings)
    assert not set(parsed_warm) & _latest(warm)
    assert got.reply.text == want.reply.text  # the same answer either way
    cold.close()
    warm.close()


def test_read_ahead_runs_off_the_caller_and_leaves_nothing_of_someone_erased(tmp_path):
    s = _with_history(tmp_path / "h", who="ines", n=80)
    with nlp.keeping(True):
        t = warmup.read_ahead(s, ["ines", "ines"])
        assert isinstance(t, threading.Thread)
        t.join(120)
        assert _latest(s, "ines") <= nlp.kept_texts()
        records.withdraw(s, "ines")
        assert not _latest_texts_kept("ines")
        t = warmup.read_ahead(s, ["ines"])  # someone already erased: reads nothing, keeps nothing
        t.join(120)
        assert not nlp.kept_texts()
    s.close()


def _latest_texts_kept(who) -> bool:
    rows = benchrecall.conversation(80, seed=11)
    return any(facts.blank_quotes(r["text"]) in nlp.kept_texts() for r in rows if r["sender"] == "user")


def test_erasure_drops_the_vectors_the_embedders_remember(store, settings):
    records.accept(store, "zoe", tz="UTC")
    turn(store, "zoe", "my canary-word diary is green", settings=settings)
    store.settle()
    emb = embeddings.default()
    assert "my canary-word diary is green" in emb._cache or "my canary-word diary is green" in store.vectors.embedder._cache
    records.withdraw(store, "zoe")
    assert not any("canary-word" in t for t in emb._cache)
    assert not any("canary-word" in t for t in store.vectors.embedder._cache)


def test_signing_in_reads_ahead_for_the_participant(serve_app, monkeypatch):
    from gradio_client import Client

    from companion import auth

    started: list = []
    real = warmup.read_ahead

    def recording(store, participants):
        t = real(store, participants)
        started.append((list(participants), t))
        return t

    monkeypatch.setattr(warmup, "read_ahead", recording)
    url, store = serve_app()
    records.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    told = "My sister Lena moved to Hamburg in the spring for her new job."
    messages.append_many(store, "ana", [dict(sender="user", text=told, context="personal")])
    with nlp.keeping(True):
        Client(url, verbose=False).predict("ana", "ana-pass", api_name="/sign_in")
        assert [p for p, _ in started] == [["ana"]]
        for _, t in started:
            t.join(120)
        assert told in nlp.kept_texts()  # read before their first question, not inside its turn


def test_an_erasure_by_another_process_drops_the_words_this_process_keeps(home, settings):
    # two processes on one data directory: this one keeps Zoe's words by text (parses, vectors);
    # the CLI, another process, withdraws her; this process's next turn (anyone's) drops them
    import os
    import subprocess
    import sys

    s = Store(home)
    records.accept(s, "zoe", tz="UTC")
    records.accept(s, "bo", tz="UTC")
    emb = embeddings.default()
    with nlp.keeping(True):
        turn(s, "bo", "hello there", settings=settings)  # this process has looked at the erasures
        turn(s, "zoe", "my canary-word diary is green", settings=settings)
        s.settle()
        assert any("canary-word" in t for t in nlp.kept_texts()) and any("canary-word" in t for t in emb._cache)
        env = {**os.environ, "COMPANION_HOME": str(home)}
        r = subprocess.run([str(Path(sys.executable).with_name("companion")), "consent", "withdraw", "--participant", "zoe", "--yes"],
                           env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        assert any("canary-word" in t for t in nlp.kept_texts())  # still here: nothing told this process yet
        turn(s, "bo", "what a day", settings=settings)
        assert not any("canary-word" in t for t in nlp.kept_texts())
        assert not any("canary-word" in t for t in emb._cache)
    s.close()
