"""Issue 26, seventh round: each of a participant's messages parsed once and the parse kept in the
database (memory.parses). A stored parse is the Doc a fresh parse gives; after a restart a turn
reads old statements' parses instead of parsing them; a parse goes with its message and with its
participant. Counts of parses and rows, never times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from companion.turn import turn
from consent import access, records
from memory import facts, messages, nlp, parses
from memory.store import Store

ATTRS = ("text", "whitespace_", "lemma_", "pos_", "tag_", "dep_", "ent_type_", "ent_iob_", "is_sent_start",
         "is_stop", "like_num", "shape_")


def _authored() -> list[str]:
    base = Path(__file__).resolve().parents[1] / "eval" / "data" / "recall-authors-v1"
    return [t["text"] for f in sorted(base.glob("*.json")) for t in json.loads(f.read_text())["turns"]]


def _tokens(doc) -> list:
    return [tuple(getattr(t, a) for a in ATTRS) + (t.head.i, str(t.morph)) for t in doc] + \
        [("ents", tuple((e.start, e.end, e.label_) for e in doc.ents)), ("sents", tuple(s.start for s in doc.sents))]


def test_a_stored_parse_is_the_doc_a_fresh_parse_gives():
    from spacy.tokens import Doc

    texts = _authored()
    pipe = nlp.nlp()
    for text, doc in zip(texts, pipe.pipe(texts)):
        back = Doc(pipe.vocab).from_bytes(doc.to_bytes(exclude=["tensor", "user_data"]))
        assert _tokens(back) == _tokens(doc), text


def _made(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = nlp._made

    def counting(pipe, made):
        seen.extend(made)
        return real(pipe, made)

    monkeypatch.setattr(nlp, "_made", counting)
    return seen


TOLD = ["My sister Lena lives in Hamburg, she moved there for work.", "We got a beagle called Biscuit last spring.",
        "I work as a nurse at the Royal Infirmary, mostly nights.", "My brother Tomasz is getting married in June."]


@pytest.mark.both_backends
def test_a_turn_after_a_restart_reads_the_stored_parses_of_old_statements(store, settings, home, monkeypatch):
    records.accept(store, "ana", tz="UTC")
    with nlp.keeping(True):
        for t in TOLD:
            turn(store, "ana", t, settings=settings)
        store.settle()
        n = store.conn.execute(f"SELECT count(*) FROM {parses.TABLE} WHERE participant='ana'").fetchone()[0]
        assert n == len(TOLD)  # each message of theirs, parsed in its own turn, stored once
        want = turn(store, "ana", "where does my sister live?", settings=settings).reply.text
    assert "Hamburg" in want
    store.close()
    again = Store(home)  # a restart: nothing kept in memory
    try:
        with nlp.keeping(True):
            made = _made(monkeypatch)
            got = turn(again, "ana", "where does my sister live?", settings=settings).reply.text
        assert got == want
        assert not set(made) & {facts.blank_quotes(t) for t in TOLD} and not set(made) & set(TOLD)
    finally:
        again.close()


@pytest.mark.both_backends
def test_a_parse_goes_with_its_message_and_with_its_participant(store, settings):
    records.accept(store, "ines", tz="UTC")
    records.accept(store, "bo", tz="UTC")
    with nlp.keeping(True):
        for who in ("ines", "bo"):
            for t in TOLD:
                turn(store, who, f"{who.title()} here. {t}", settings=settings)
        store.settle()

    def count(who):
        return store.conn.execute(f"SELECT count(*) FROM {parses.TABLE} WHERE participant=?", (who,)).fetchone()[0]

    assert count("ines") == count("bo") == len(TOLD)
    first = store.conn.execute("SELECT dayid FROM messages WHERE participant='ines' AND sender='user' "
                               "ORDER BY ordinal LIMIT 1").fetchone()[0]
    messages.delete(store, "ines", first)
    assert count("ines") == len(TOLD) - 1
    assert access.download(store, "ines")[parses.TABLE]["count"] == len(TOLD) - 1  # their download says so
    records.withdraw(store, "ines")
    assert count("ines") == 0 and count("bo") == len(TOLD)


def test_a_text_that_is_not_one_of_their_messages_is_not_stored(store):
    records.accept(store, "cy", tz="UTC")
    messages.append_many(store, "cy", [dict(sender="user", text=TOLD[0], context="personal"),
                                       dict(sender="companion", text=TOLD[1], context="personal")])
    pipe = nlp.nlp()
    docs = dict(zip(TOLD, pipe.pipe(TOLD)))
    assert parses.save(store, "cy", pipe, docs) == 1  # the companion's message and texts never stored: no
    assert parses.save(store, "cy", pipe, docs) == 0  # stored once
