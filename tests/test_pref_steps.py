"""A stated preference that is already in force moves one step on an ordered scale ("keep it short"
while replies are brief -> terse), the reply says in one line what was learned, and background
consolidation of the same message does not undo it (issue 25, item 4). Echo model, through the turn."""

from datetime import datetime, timedelta, timezone

import pytest

from companion.turn import turn
from memory import cells, extract

T0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def _say(store, ana, settings, texts, context="personal"):
    return [turn(store, ana, t, context, settings, at=T0 + timedelta(minutes=3 * i)) for i, t in enumerate(texts)]


def _verbosity(store, ana, context="personal"):
    return cells.in_force(store, ana, context, "verbosity")


def test_keep_it_short_while_already_brief_moves_to_terse_and_says_so(store, ana, settings):
    assert _verbosity(store, ana) == "brief"  # the personal default
    [r] = _say(store, ana, settings, ["please keep it short from now on"])
    assert _verbosity(store, ana) == "terse"
    assert r.shown.splitlines()[0] == "Got it: very short replies from now on."
    assert r.trace.interaction["acknowledged"] == "Got it: very short replies from now on."
    assert r.trace.interaction["learned"][0] | {"cells": None} == {
        "context": "personal", "attribute": "verbosity", "setting": "terse", "asked": "brief", "cells": None}


def test_the_background_pass_over_the_same_message_does_not_undo_the_step(store, ana, settings):
    _say(store, ana, settings, ["please keep it short from now on"])
    extract.consolidate(store, ana)
    assert _verbosity(store, ana) == "terse"
    assert [c.setting for c in cells.history(store, ana, "personal", "verbosity")] == ["terse"]


def test_saying_it_again_changes_nothing_and_is_not_acknowledged(store, ana, settings):
    first, again, liked = _say(store, ana, settings, ["keep it short please", "keep it short", "I like short answers"])
    assert _verbosity(store, ana) == "terse"
    assert "Got it" in first.shown and "Got it" not in again.shown and "Got it" not in liked.shown


def test_a_change_away_from_the_setting_is_acknowledged(store, ana, settings):
    _, r = _say(store, ana, settings, ["keep it short please", "actually I'd like more detail in your answers"])
    assert _verbosity(store, ana) == "detailed"
    assert r.shown.startswith("Got it: more detail from now on.")


def test_a_preference_for_the_other_context_names_it(store, ana, settings):
    [r] = _say(store, ana, settings, ["at work, give me more detail please"], context="personal")
    assert _verbosity(store, ana, "work") == "detailed" and _verbosity(store, ana, "personal") == "brief"
    assert r.shown.startswith("Got it: more detail from now on (at work).")


@pytest.mark.parametrize("attribute, asked, in_force, clause, expected", [
    ("verbosity", "brief", "brief", "keep it short", "terse"),
    ("verbosity", "brief", "terse", "keep it short", "terse"),       # never longer for "short"
    ("verbosity", "detailed", "terse", "more detail", "detailed"),
    ("verbosity", "terse", "terse", "one line answers", "terse"),    # the end of the scale
    ("verbosity", "brief", "brief", "I like short answers", "brief"),  # restates
    ("autonomy", "suggest", "suggest", "ask me first", "suggest"),   # a place on the scale, no lean
    ("formality", "formal", "formal", "keep it formal", "formal"),   # not ordered
])
def test_stepped(attribute, asked, in_force, clause, expected):
    assert cells.stepped(attribute, asked, in_force, clause) == expected
