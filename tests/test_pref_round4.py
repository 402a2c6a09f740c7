"""Issue 27 round 4 (preferences): questions about a third party's wish, wishes of the past,
clauses taken back, and the later clause of a message winning an attribute. The generator's TEST
families (eval.prefgen, split "test": constructions and cores never trained on, nor used to choose
a threshold) are read here as a user would meet them; the turn runs on the echo model."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from eval import prefgen
from memory import cells, extract, preferences

T0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def _read(text, said_in="work"):
    return {(c, f.attribute, f.setting) for f in preferences.find(text, said_in, rules=extract.preference_phrases)
            for c in f.contexts}


def _test_items(kind=None, family=None):
    items = prefgen.generate(11, "test") + prefgen.chat(11, "test")
    return [it for it in items if (kind is None or it["kind"] == kind) and (family is None or it["family"] == family)]


def test_the_test_families_are_new_constructions():
    train = {f.frame for f in prefgen.FAMILIES if f.split == "train"}
    test = [f for f in prefgen.FAMILIES if f.split == "test"]
    assert len(test) >= 14 and not any(f.frame in train for f in test)
    assert {"thirdparty", "reversal", "context", "register", "quoted", "negated"} <= {f.kind for f in test}


def test_questions_about_a_third_partys_wish_store_nothing():
    items = _test_items("thirdparty") + _test_items(family="thirdparty_question")
    # two frames x 34 cores (one test core each); ten chat templates, seven of them x five names
    assert len(items) == 2 * 34 + 7 * 5 + 3
    stored = [(it["text"], got) for it in items if (got := _read(it["text"], it["said_in"]))]
    assert stored == []


@pytest.mark.parametrize("text", [
    "my boss wants shorter reports, how do I write one?",
    "Hannah prefers bullet points, can you help me format this?",
])
def test_a_third_party_wish_in_a_question_draws_no_acknowledgement(store, ana, settings, text):
    from companion.turn import turn

    before = cells.current(store, ana)
    r = turn(store, ana, text, "work", settings, at=T0)
    assert "Got it" not in r.shown
    assert "acknowledged" not in r.trace.interaction and not r.trace.interaction.get("learned")
    assert cells.current(store, ana) == before


def test_the_later_clause_wins_an_attribute_whichever_road_reads_it():
    got = _read("Keep it short. Actually, scratch that, give me more detail.")
    assert ("work", "verbosity", "detailed") in got and ("work", "verbosity", "brief") not in got


def test_a_wish_had_before_states_nothing_now():
    assert _read("I used to want you to keep your answers shorter.") == set()
    got = _read("I used to want you to keep your answers shorter, but now go into much more depth.")
    assert ("work", "verbosity", "brief") not in got


def test_a_withdrawn_clause_is_not_stored():
    # the first clause alone is read as brief; taken back in the same message, it is not
    assert ("work", "verbosity", "brief") in _read("Keep your answers shorter.")
    assert ("work", "verbosity", "brief") not in _read("Keep your answers shorter. Hmm, forget that, it's fine.")


def test_the_shipped_generated_bank_is_what_the_generator_writes_and_what_the_weights_learned():
    """The bank was once left stale against the generator: the weights must have learned the
    bank as shipped, and the shipped bank must be the generator's train families today."""
    import hashlib
    import json

    raw = preferences.GENERATED.read_bytes()
    assert json.loads(raw) == json.loads(json.dumps(prefgen.bank(11), ensure_ascii=False))
    assert preferences.model().meta["generated_sha256"] == hashlib.sha256(raw).hexdigest()[:16]


def test_no_dev_or_test_text_is_in_the_generated_bank():
    bank = json.loads(preferences.GENERATED.read_text())
    taught = {t for v in bank["settings"].values() for t in v} | set(bank["none"])
    held = {it["text"] for sp in ("dev", "test") for it in prefgen.generate(11, sp) + prefgen.chat(11, sp)}
    assert not taught & held
