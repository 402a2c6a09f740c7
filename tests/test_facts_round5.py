"""Issue 27, round 5: the clause fallback and verb-less fact lists.

Where no parse rule reads a stated clause and the learned gate says it states a fact about the
participant (or someone of theirs), the clause itself is the claim (its kind from the kind
classifier, memory.fact_classifier.kind_of); a verb-less list ("38, nurse, two kids") is read item
by item. Hand-computed cases, then one turn end to end with the echo model: said, listed in
"What I remember", deleted. The wordings are written for these tests (not from a corpus or a
test set)."""

from datetime import datetime, timedelta, timezone

import pytest

from companion import inspector
from companion.turn import turn
from memory import claims, extract, fact_classifier, facts
from memory.messages import append

T0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
COACH = "I coach my daughter's under-12 football team."
COACH_CLAIM = "Coaches their daughter's under-12 football team"


def _remembered(store, ana) -> dict[str, str]:
    """What the participant sees in "What I remember" (profile rows): text -> key."""
    return {row[2]: row[0] for row in inspector.rows(store, ana) if row[1] == "profile"}


def _consolidate(store, ana, texts):
    for i, t in enumerate(texts):
        append(store, ana, "user", t, "personal", ts=T0 + timedelta(minutes=i))
    extract.consolidate(store, ana)


@pytest.mark.parametrize("message, expected", [
    ("38, nurse, two kids.", [("Is 38 years old", "age"), ("Works as a nurse", "occupation"),
                              ("Has two kids", "has:kid")]),
    ("hi! 24, student, vegan", [("Is 24 years old", "age"), ("Is a student", "occupation"), ("Is vegan", "diet")]),
    ("Software engineer. 31. Based in Austin.", [("Works as a software engineer", "occupation"),
                                                ("Is 31 years old", "age"), ("Lives in Austin", "residence")]),
])
def test_a_verb_less_fact_list_is_read_item_by_item(message, expected):
    got = [(f.text, f.slot) for f in facts.extract(message, learned=False)]
    assert got == expected


def test_a_list_about_someone_of_theirs_is_said_of_them():
    got = [(f.text, f.slot) for f in facts.extract("my sister: 34, nurse in Leeds", learned=False)]
    assert ("Sister is 34 years old", "sister:age") in got and ("Sister is a nurse in Leeds", "sister:occupation") in got
    assert not any(s in ("age", "occupation") for _, s in got)  # not the participant's


@pytest.mark.parametrize("message", ["Not a nurse.", "no kids, 38", "Maybe a nurse someday, 38?", "lol ok", "thanks!!"])
def test_a_negated_asked_or_empty_fragment_states_nothing(message):
    assert facts.extract(message) == []


def test_a_clause_no_rule_reads_is_stored_as_itself_from_a_statement_only():
    assert fact_classifier.model() is not None
    kept = facts.extract(COACH)
    assert [(f.text, f.origin) for f in kept if f.origin != "rule"] == [(COACH_CLAIM, fact_classifier.NAME)]
    for not_said in ("Do I coach my daughter's under-12 football team?",
                     "I don't coach my daughter's under-12 football team.",
                     "If I coached my daughter's under-12 football team, I'd be busier.",
                     "My wife says I coach my daughter's under-12 football team."):
        assert not [f for f in facts.extract(not_said) if "coach" in f.text.lower()], not_said


def test_the_kind_classifier_names_a_kept_clause_or_says_other():
    assert fact_classifier.kinds() is not None
    k = fact_classifier.kind_of(["Works night shifts at the pharmacy", "Goes to the gym every morning"])
    assert k == ["work", "hobbies"]
    assert fact_classifier.kind_of([]) == []


def test_a_correction_supersedes_a_fallback_claim_and_deletion_removes_it(store, ana):
    _consolidate(store, ana, [COACH])
    seen = _remembered(store, ana)
    assert COACH_CLAIM in seen
    key = seen[COACH_CLAIM]
    inspector.edit(store, ana, key, "Coaches their daughter's under-14 football team")
    status = {c.text: c.status for c in claims.all_(store, ana)}
    assert status[COACH_CLAIM] == "superseded"
    assert status["Coaches their daughter's under-14 football team"] == "current"
    new_key = _remembered(store, ana)["Coaches their daughter's under-14 football team"]
    inspector.delete(store, ana, new_key)
    assert not any("coach" in c.text.lower() for c in claims.current(store, ana))
    extract.consolidate(store, ana)  # the same message never yields it again
    assert not any("coach" in c.text.lower() for c in claims.current(store, ana))


def test_the_fallback_end_to_end_said_listed_deleted(store, ana, settings):
    turn(store, ana, "Busy week! " + COACH, settings=settings, at=T0)
    turn(store, ana, "Do you think I could coach a second team?", settings=settings, at=T0 + timedelta(minutes=2))
    extract.consolidate(store, ana)
    seen = _remembered(store, ana)
    assert COACH_CLAIM in seen and "Has a daughter" in seen
    assert [t for t in seen if "coach" in t.lower()] == [COACH_CLAIM]  # the question stored nothing
    row = next(r for r in inspector.rows(store, ana) if r[2] == COACH_CLAIM)
    assert row[4] == "day1-1"  # its source is the message that said it
    inspector.delete(store, ana, seen[COACH_CLAIM])
    assert COACH_CLAIM not in _remembered(store, ana)
    assert "Has a daughter" in _remembered(store, ana)
