"""Weeks written by other authors become bench chat scripts and selector cases (eval.authorweeks)."""

from __future__ import annotations

import json

import pytest

from eval import authorweeks, benchchat

WEEK = {
    "persona": "a test person",
    "turns": [
        {"id": "t01", "day": 1, "text": "Morning! Biscuit the beagle ate my sock again."},
        {"id": "t02", "day": 1, "text": "My sister Ines moved to Porto last spring."},
        {"id": "t03", "day": 3, "text": "Actually Ines is in Braga now, she moved again."},
    ],
    "questions": [
        {"id": "q01", "after": "t01", "text": "whats my dog called again?", "told": True, "answer": "Biscuit",
         "alternatives": [], "answer_turns": ["t01"]},
        {"id": "q02", "after": "t03", "text": "where does Ines live now?", "told": True, "answer": "Braga",
         "alternatives": ["in Braga"], "answer_turns": ["t03"]},
        {"id": "q03", "after": "t03", "text": "what's my brother's job?", "told": False, "answer": None,
         "alternatives": [], "answer_turns": []},
    ],
}


def test_a_week_becomes_a_script_with_each_question_after_its_turn(tmp_path):
    p = tmp_path / "X-1.json"
    p.write_text(json.dumps(WEEK))
    s = authorweeks.script(authorweeks.load(p), "X-1")
    texts = [t["text"] for t in s["turns"]]
    assert texts == [WEEK["turns"][0]["text"], "whats my dog called again?", WEEK["turns"][1]["text"],
                     WEEK["turns"][2]["text"], "where does Ines live now?", "what's my brother's job?"]
    assert s["turns"][1]["recall"] == ["Biscuit"] and s["turns"][4]["recall"] == ["Braga", "in Braga"]
    assert s["turns"][5]["unknown"] == "never told" and "recall" not in s["turns"][5]
    # day 3's turn is two days after day 1's, and every question follows the turn before it
    assert s["turns"][3]["at"].startswith("2026-03-04") and s["turns"][1]["at"] > s["turns"][0]["at"]
    benchchat.validate_script(s, "X-1")  # the bench reads it as written


@pytest.mark.parametrize("change,named", [
    (lambda w: w["questions"][0].update(after="t09"), "t09"),
    (lambda w: w["questions"][0].update(answer_turns=["t03"]), "said after it"),
    (lambda w: w["turns"][1].update(day=9), "day 9"),
    (lambda w: w["questions"][1].update(answer=None), "no answer"),
])
def test_a_week_that_cannot_be_replayed_is_refused_by_what_is_wrong(tmp_path, change, named):
    w = json.loads(json.dumps(WEEK))
    change(w)
    p = tmp_path / "X-1.json"
    p.write_text(json.dumps(w))
    with pytest.raises(authorweeks.WeekError, match=named):
        authorweeks.load(p)


def test_selector_cases_take_the_latest_value_and_only_what_was_said_before(tmp_path):
    from eval import answerselect

    p = tmp_path / "X-1.json"
    p.write_text(json.dumps(WEEK))
    first, where, never = answerselect.author_cases([p])
    assert [s.text for s, pos in zip(first.sents, first.positive) if pos] == ["Biscuit the beagle ate my sock again."]
    assert all(s.dayid == "t01" for s in first.sents)  # nothing said after the question is a candidate
    assert [s.dayid for s, pos in zip(where.sents, where.positive) if pos] == ["t03"]  # the correction, not Porto
    assert not never.told and not never.positive.any()
