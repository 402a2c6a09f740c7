"""Take-backs, scope and opposites (issue 27, round 5): a statement that takes back a preference it
names returns the cell to the context's default, never to the setting it names; a statement scoped
to work said in personal context sets work only; a "too long" complaint never sets a longer
setting. Real classifier and stance model; one conversation end to end through the turn."""

from datetime import datetime, timedelta, timezone

import pytest

from companion.turn import turn
from eval import prefgen
from memory import cells, extract, ix_attributes, preferences

T0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def _read(text, said_in="work"):
    return {(c, f.attribute, f.setting) for f in preferences.find(text, said_in, rules=extract.preference_phrases)
            for c in f.contexts}


def test_the_way_back_is_the_default_or_the_other_of_two():
    # hand-computed from the inventory: work's verbosity default is brief, reasoning's is hide
    assert preferences.reverted("verbosity", "detailed", "work") == "brief"
    assert preferences.reverted("reasoning_visibility", "hide", "work") == "show"  # two settings: the other
    assert preferences.reverted("process_visibility", "bookend", "work") is None  # three, default named: unsaid
    assert prefgen.reverted("formality", "casual", "work") == preferences.reverted("formality", "casual", "work")


TAKE_BACKS = [  # (said in, message, the setting it names, where the cell returns)
    ("work", "You can stop trying to give me the long, thorough version now.", ("verbosity", "detailed"), "brief"),
    ("personal", "Never mind me asking you to give me a bunch of options.", ("solution_breadth", "high"), "low"),
]


@pytest.mark.parametrize("said_in, text, named, back", TAKE_BACKS)
def test_a_take_back_never_stores_the_setting_it_names(said_in, text, named, back):
    got = _read(text, said_in)
    assert (said_in, *named) not in got
    assert got <= {(said_in, named[0], back)}


def test_a_setting_returned_to_is_not_stepped_further(monkeypatch):
    # brief already in force: a request for short steps to terse, a take-back returned to brief stays
    monkeypatch.setattr(preferences, "takes_back", lambda clause: clause.startswith("never mind"))
    assert cells.stepped("verbosity", "brief", "brief", "never mind the long answers") == "brief"
    assert cells.stepped("verbosity", "brief", "brief", "keep your answers shorter") == "terse"


def test_a_work_scoped_statement_said_in_personal_context_sets_only_work():
    assert _read("at work just keep your answers shorter", "personal") == {("work", "verbosity", "brief")}


@pytest.mark.parametrize("text, said_in", [
    ("You can book stuff into my calendar without asking.", "work"),  # the topic model read personal too
    ("Honestly, for the tax stuff just give me the short version.", "personal"),
])
def test_a_statement_with_no_scope_word_applies_where_it_was_said(text, said_in):
    # the topic-scope model ships off (SCOPE_BY_TOPIC): no context word, so the said-in context
    read = _read(text, said_in)
    assert read and {c for c, _, _ in read} == {said_in}, read


@pytest.mark.parametrize("text", [
    "your replies are way too long for me to read",
    "These answers are too long.",
    "ugh, that was way too long",
    "Stop writing such long answers.",
    "I'm tired of the walls of text.",
])
def test_a_too_long_complaint_never_sets_a_longer_setting(text):
    for said_in in ("work", "personal"):
        assert not {s for _, a, s in _read(text, said_in) if a == "verbosity"} & {"detailed"}, text


def test_set_use_take_back_through_the_turn(store, ana, settings):
    """Three turns with the echo model: a wish sets the cell and is acknowledged, an ordinary
    request changes nothing, going back returns the cell to its previous setting and says so."""
    assert cells.in_force(store, ana, "work", "verbosity") == "brief"
    r1 = turn(store, ana, "Please give me the long, thorough version from now on.", "work", settings, at=T0)
    assert cells.in_force(store, ana, "work", "verbosity") == "detailed"
    assert r1.shown.splitlines()[0] == cells.scales()["acknowledgements"]["verbosity"]["detailed"]
    r2 = turn(store, ana, "What should I pack for the offsite?", "work", settings, at=T0 + timedelta(minutes=1))
    assert cells.in_force(store, ana, "work", "verbosity") == "detailed"
    assert "acknowledged" not in r2.trace.interaction
    r3 = turn(store, ana, "Actually, go back to the shorter answers.", "work", settings, at=T0 + timedelta(minutes=2))
    assert cells.in_force(store, ana, "work", "verbosity") == "brief"
    line = cells.scales()["acknowledgements"]["verbosity"]["brief"]
    assert r3.shown.splitlines()[0] == line and r3.trace.interaction["acknowledged"] == line
    assert cells.in_force(store, ana, "personal", "verbosity") == ix_attributes.ATTRIBUTES["verbosity"]["default"]["personal"]
