"""Preferences said in other voices, through the turn (issue 27, item 3): a complaint, a hedge, a
sarcastic demand or a context-scoped wish in wordings of eval.prefgen's DEV families (frames and
contents the classifier never trained on) changes the setting the participant sees in "What I
remember" and the reply says so in one line; a quoted, hypothetical, questioned or someone else's
statement of the same content changes nothing and is not acknowledged. Echo model, real classifier."""

from datetime import datetime, timezone

import pytest

from companion import inspector
from companion.turn import turn
from eval import prefgen
from memory import cells, ix_attributes

T0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def _seen(store, participant) -> set[tuple[str, str, str]]:
    """(context, attribute, setting) of the preference rows the participant's memory view shows."""
    out = set()
    for key, kind, what, context, _ in inspector.rows(store, participant):
        if kind == "preference":
            attribute, setting = what.split(" (")[0].split(" = ")
            out.add((context, attribute, setting))
    return out


STATED = [  # (said in, message, context, attribute, setting): dev-family frames, dev cores
    ("work", "The stiff corporate tone is off-putting, again. Every time.", "work", "formality", "casual"),
    ("personal", "Wow, that was far too shallow, I needed the whole picture. Super helpful.", "personal",
     "verbosity", "detailed"),
    ("work", "maybe you could fill in the gaps yourself rather than quizzing me, if that's not too much trouble",
     "work", "elicitation", "infer"),
    ("personal", "When it's about my job, go easier on me when you critique my stuff.", "work",
     "feedback_directness", "gentle"),
]


@pytest.mark.parametrize("said_in, text, context, attribute, setting", STATED)
def test_a_statement_in_another_voice_changes_what_they_see_and_is_acknowledged(
        store, ana, settings, said_in, text, context, attribute, setting):
    assert cells.in_force(store, ana, context, attribute) != setting  # it is a change
    r = turn(store, ana, text, said_in, settings, at=T0)
    assert (context, attribute, setting) in _seen(store, ana)
    assert cells.in_force(store, ana, context, attribute) == setting
    line = cells.scales()["acknowledgements"][attribute][setting]
    if context != said_in:
        line = line.rstrip(".") + f" ({cells.scales()['in_context'][context]})."
    assert r.shown.splitlines()[0] == line
    assert r.trace.interaction["acknowledged"] == line


LOOK_ALIKES = [
    'The sticky note on my monitor just says "give me a single recommendation".',
    "In case I ever need you to give me a single recommendation, I'll let you know.",
    "Should I ask my team to point out the problems bluntly?",
    "Priya wants her assistant to point out the problems bluntly.",
    "It's not that I need you to give me a single recommendation, it's fine as it is.",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_a_look_alike_changes_nothing_and_is_not_acknowledged(store, ana, settings, text):
    r = turn(store, ana, text, "personal", settings, at=T0)
    assert _seen(store, ana) == set()
    assert "Got it" not in r.shown and "acknowledged" not in r.trace.interaction
    assert cells.current(store, ana) == []


def test_the_generator_splits_families_and_cores_and_covers_every_setting():
    dev, train = prefgen.generate(11, "dev"), prefgen.generate(11, "train")
    assert {i["family"] for i in dev}.isdisjoint({i["family"] for i in train})
    settings = {(a, s) for a, d in ix_attributes.ATTRIBUTES.items() for s in d["settings"]}
    assert {(e["attribute"], e["setting"]) for i in dev for e in i["expect"]} == settings
    assert prefgen.generate(11, "dev") == dev  # seeded
    # no dev text is in the generated training bank
    bank = prefgen.bank(11)
    trained = {t for ts in bank["settings"].values() for t in ts} | set(bank["none"])
    assert not trained & {i["text"] for i in dev}
