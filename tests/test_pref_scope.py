"""The scope reader of memory.preferences (issue 27, round 3): a negated, hypothetical,
conditional, questioned, quoted or reported statement, someone else's preference, what the speaker
tells a third person and the content of a requested action ("text my sister and ask her to ...")
store nothing; a classifier that reads a clause the same with or without its "not" stores nothing
it cannot back; ordinary chat that shares words with preferences ("the meeting was short") is not
read as one, and through the turn it is never acknowledged.

The frames come from eval.prefgen's look-alike families, train AND dev (every frame, seeded sample
of cores, one per attribute-spread slice), so a frame the reader was not tuned on is covered too."""

from datetime import datetime, timezone

import pytest

from companion.turn import turn
from eval import prefgen
from eval.prefheldout import score, wilson
from memory import cells, extract, nlp, preferences

T0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
REFUSED_KINDS = ("quoted", "questioned", "others", "reported", "hypothetical", "conditional", "negated", "motto",
                 "action")


def read(text, said_in="work"):
    return {(c, f.attribute, f.setting) for f in preferences.find(text, said_in, rules=extract.preference_phrases)
            for c in f.contexts}


def _sample(kinds, per_family: int, seed: int = 5):
    import random

    rng = random.Random(seed)
    items = prefgen.generate(11, "all")
    out = []
    for fam in sorted({i["family"] for i in items if i["kind"] in kinds}):
        these = [i for i in items if i["family"] == fam]
        out += rng.sample(these, min(per_family, len(these)))
    return out


@pytest.mark.parametrize("family_items", [pytest.param([i for i in _sample(REFUSED_KINDS, 4) if i["family"] == f],
                                                       id=f)
                                          for f in sorted({i["family"] for i in _sample(REFUSED_KINDS, 4)})])
def test_every_refusal_frame_around_a_preference_core_stores_nothing(family_items):
    for it in family_items:
        assert read(it["text"], it["said_in"]) == set(), it["text"]


@pytest.mark.parametrize("text", [
    "Text my sister and ask her to keep it short.",
    "Can you email Dr Patel saying I'd like more detail next time?",
    "Remind me to tell Jonas to stop sending so many updates.",
    "Send the team a note: no more walls of text please.",
    "I told my brother to give it to me straight.",
    "If my manager asks, I'll tell her you can act without checking.",
    "I'd only want you to check in on me if I asked for it.",
])
def test_a_requested_action_or_what_the_speaker_tells_others_states_no_preference(text):
    assert read(text) == set()


def test_the_same_words_said_to_the_companion_are_read():
    assert ("work", "verbosity", "brief") in read("Keep it short with me, please.")
    assert ("work", "process_visibility", "silent") in read("Stop sending me so many progress updates.")


@pytest.mark.parametrize("text, forbidden", [
    ("Don't skip the reasoning.", ("reasoning_visibility", "hide")),
    ("Don't keep it short.", ("verbosity", "brief")),
    ("Don't wait for my approval.", ("autonomy", "suggest")),
    ("Please don't narrate every step.", ("process_visibility", "full_narration")),
    ("I didn't want you to lay out the why along with the what at all.", ("reasoning_visibility", "show")),
])
def test_a_negation_the_classifier_does_not_hear_never_stores_what_it_negates(text, forbidden):
    assert not {(a, s) for _, a, s in read(text)} & {forbidden}


def test_a_negation_that_changes_the_reading_is_kept():
    assert ("work", "proactive_outreach", "low") in read("Don't check in on me unprompted.")
    assert ("work", "feedback_directness", "direct") in read("Don't sugarcoat it.")


def test_denegated_takes_out_only_the_negation():
    def d(t):
        return preferences.denegated(nlp.parse(t)[:])
    assert d("Don't keep it short.") == "keep it short."
    assert d("Stop sending me updates.") == "sending me updates."
    assert d("No need to explain your reasoning.") == "explain your reasoning."
    assert d("Keep it short.") is None


@pytest.mark.parametrize("text, addressed", [
    ("The meeting with Sam was short for once.", False),
    ("Had a quick coffee with Lena before work.", False),
    ("My brother told me every story of his trip.", False),
    ("Keep it short.", True),
    ("your replies are way too long", True),
    ("I'd prefer the gist first.", True),
    ("these walls of text are exhausting", True),
])
def test_a_clause_is_about_the_companion_only_with_an_addressee_cue(text, addressed):
    assert bool(preferences.addressed(nlp.parse(text)[:])) is addressed


def test_ordinary_chat_families_are_mostly_not_read_as_preferences():
    # dev chat families (never trained on): stories, questions, small talk sharing "short", "detail",
    # "quick", "options", "update" with the preference cores; measured by hand-checkable counts
    items = prefgen.chat(11, "dev")
    r = score(items)
    assert r["none_messages"] == len(items) == 68
    assert r["false_readings"] <= 2, [e["text"] for e in r["errors"]]


@pytest.mark.parametrize("text", [
    "The meeting with Sam was short for once, we were done by ten.",
    pytest.param("Thanks for the detailed answer yesterday, it worked.", marks=pytest.mark.xfail(
        strict=True, reason="known miss: thanks for a past answer reads as verbosity=detailed (its cue 'answer' "
                            "is strong); counted in the dev chat families' false readings")),
    "Quick question, is it going to rain tomorrow?",
    "Send Mia a message asking her to keep it short.",
])
def test_ordinary_chat_is_not_acknowledged_as_a_preference(store, ana, settings, text):
    r = turn(store, ana, text, "personal", settings, at=T0)
    assert "Got it" not in r.shown and "acknowledged" not in r.trace.interaction
    assert cells.current(store, ana) == []


def test_false_readings_per_100_on_a_hand_computed_case(monkeypatch):
    items = [{"kind": "chat", "text": t, "said_in": "work", "expect": [], "forbid": []} for t in ("a", "b", "c", "d")]
    got = {"a": {("work", "verbosity", "brief")}, "b": set(), "c": set(), "d": set()}
    monkeypatch.setattr("eval.prefheldout._both", lambda text, said_in: got[text])
    r = score(items)
    assert (r["none_messages"], r["false_readings"], r["false_per_100"]) == (4, 1, 25.0)
    assert r["false_per_100_ci"] == [round(100 * x, 1) for x in wilson(1, 4)]
    lo, hi = wilson(1, 4)
    assert lo < 0.25 < hi and 0 < lo
