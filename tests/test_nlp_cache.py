"""Kept parses (memory/nlp.py) are indistinguishable from fresh ones: the same Doc bytes cold,
warm and with keeping off, from `parse` and from `parse_many`; a caller that changes its Doc
changes no one else's; readings (the action reader, the preference reader, a whole
consolidation) are the same with keeping off and on, whichever ran first; erasure drops them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from importlib import resources

import pytest

import companion.actions  # noqa: F401  (registers the autonomy gate with memory's verification)
from companion import actions
from consent import records
from memory import claims, extract, nlp, preferences
from memory.messages import append
from memory.store import Store
from tests.test_derived_extract import FIXTURE

WEEK = [t["text"] for t in json.loads(resources.files("eval").joinpath("data", "benchchat-week-v1.json")
                                      .read_text("utf-8"))["turns"]]
# near-duplicates that must never share a parse: case, trailing space, punctuation, quotes
EDGES = ["I live in Porto.", "I live in Porto. ", "i live in porto.", "I live in Porto!", "I live in 'Porto'.",
         "", "   ", "Ana\n\nlives in Porto", "Remind me to call Jonas on Saturday at 6pm",
         "remind me to call jonas on saturday at 6pm"]
TEXTS = WEEK + [t for _, t, _ in FIXTURE] + EDGES
NOW = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def sig(doc) -> bytes:
    return doc.to_bytes(exclude=["user_data"])


def test_kept_parses_equal_fresh_ones_cold_warm_single_and_batch():
    with nlp.keeping(False):
        fresh = [sig(nlp.parse(t)) for t in TEXTS]
        fresh_batch = [sig(d) for d in nlp.parse_many(TEXTS)]
    assert fresh_batch == fresh  # nlp.pipe and nlp(text) agree text by text on these
    with nlp.keeping(True):
        cold = [sig(nlp.parse(t)) for t in TEXTS]
        warm = [sig(nlp.parse(t)) for t in reversed(TEXTS)][::-1]
        batch_cold = [sig(d) for d in nlp.parse_many(TEXTS[::2])]
        batch_warm = [sig(d) for d in nlp.parse_many(TEXTS + TEXTS[:3])]
        assert set(TEXTS) <= nlp.kept_texts()
    assert cold == fresh and warm == fresh
    assert batch_cold == fresh[::2] and batch_warm == fresh + fresh[:3]
    for t, d in zip(TEXTS, nlp.parse_many(TEXTS)):
        assert d.text == t  # never the parse of a near-duplicate


def test_a_caller_that_changes_its_doc_changes_no_other():
    text = "My sister Ana lives in Porto and works for Siemens."
    with nlp.keeping(True):
        first = nlp.parse(text)
        assert first.ents
        first.ents = []
        first[0].lemma_ = "CHANGED"
        again = nlp.parse(text)
        assert again.ents and again[0].lemma_ != "CHANGED" and again is not first
        a, b = nlp.parse_many([text, text])
        assert a is not b
        a.ents = []
        assert nlp.parse_many([text])[0].ents and b.ents
        assert [e.text for e in again.ents] == [e.text for e in nlp.parse_many([text])[0].ents]


def _readings() -> list:
    out = []
    for t in TEXTS:
        out.append([i.public() for i in actions.read(t, NOW)])
        out.append(repr(preferences.find(t, "personal")))
    return out


def _consolidated(home) -> tuple:
    store = Store(home)
    try:
        records.accept(store, "ana", tz="Europe/Berlin")
        t0 = datetime(2026, 3, 2, 6, tzinfo=timezone.utc)
        for i, (s, t, c) in enumerate(FIXTURE):
            append(store, "ana", s, t, c, ts=t0 + timedelta(minutes=10 * i))
        report = extract.consolidate(store, "ana")
        return (report.messages, report.proposals, dict(report.verdicts),
                sorted((c.text, c.status, tuple(c.source_dayids)) for c in claims.all_(store, "ana")))
    finally:
        store.close()


@pytest.mark.parametrize("order", ["readers_first", "consolidation_first"])
def test_readings_are_the_same_with_keeping_off_and_on_in_either_order(tmp_path, order):
    with nlp.keeping(False):
        want_readings = _readings()
        want_consolidated = _consolidated(tmp_path / "off")
    with nlp.keeping(True):
        if order == "readers_first":
            got_readings = _readings()
            got_consolidated = _consolidated(tmp_path / "on")
        else:
            got_consolidated = _consolidated(tmp_path / "on")
            got_readings = _readings()
        warm_consolidated = _consolidated(tmp_path / "warm")  # everything kept by now
    assert got_readings == want_readings
    assert got_consolidated == want_consolidated == warm_consolidated
    assert want_consolidated[1] > 10  # a real consolidation, not an empty one


def test_erasure_drops_the_kept_parses(store, settings):
    from companion.turn import turn

    records.accept(store, "zoe", tz="UTC")
    with nlp.keeping(True):
        turn(store, "zoe", "my canary-word diary is green", settings=settings)
        store.settle()
        assert any("canary-word" in t for t in nlp.kept_texts())  # the turn kept its parses
        records.withdraw(store, "zoe")
        assert not any("canary-word" in t for t in nlp.kept_texts())


def _names(known) -> tuple:
    return sorted(known.items()), sorted(known.display.items())


def test_kept_names_are_the_ones_a_fresh_parse_gives_in_any_order_and_grouping():
    """known_names keeps each text's reading (nlp.read_many): the merged names, their relations
    (a later text's relation wins, as before) and how each was first written are the same cold,
    warm, in another grouping and with keeping off."""
    from memory import answers

    texts = WEEK + [t for _, t, _ in FIXTURE] + [
        "My sister Lena lives in Hamburg.", "My cousin Lena called today.", "lena called today",
        "My dog Biscuit is a beagle.", "Biscuit and Miso met at the park.", "I met Ana in Porto."]
    groups = [texts, texts[::-1], texts[:7], texts[7:], texts + texts[:5]]
    with nlp.keeping(False):
        want = [_names(answers.known_names(g)) for g in groups]
    with nlp.keeping(True):
        cold = [_names(answers.known_names(g)) for g in groups]
        assert "My sister Lena lives in Hamburg." in nlp.kept_texts()
        warm = [_names(answers.known_names(g)) for g in reversed(groups)][::-1]
    assert cold == want and warm == want
    assert dict(want[0][0])["lena"] == "cousin" and dict(want[1][0])["lena"] == "sister"  # order matters
    assert dict(want[0][0]).get("biscuit") == "dog"
