"""Issue 25 items 3 and 5, fifth round: a learned request detector behind the rules, fail safe.

A request the rule reader does not parse used to be dropped silently. Now, when the rules make
nothing of a message (and the model called no action tool), the learned detector
(wrapper/request_model.py, weights as data) may read it as a request of one kind: the companion
proposes that action with the participant's own words, HELD for confirmation whatever their
autonomy, and says so; nothing it proposes runs before a "yes". The trace says which path acted.
Cases here are computed by hand (a stub detector with known probabilities) except the last two,
which use the shipped weights on a message chosen by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from companion import actions
from companion.turn import turn
from wrapper import actions as rules
from wrapper import request_model as rm

from tests.action_helpers import NOW, made, own_autonomy, plain


def _stub(kind: str | None, p_request: float = 0.9):
    """A detector that reads every message as `kind` (None: no request) with P(request) = p_request."""
    def detect(text, embed, model=None):
        return rm.Detection(kind if kind and p_request >= 0.5 else None, p_request, p_request, 0.5, "stub")
    return detect


# ------------------------------------------------------------------ execution control, by hand


@pytest.mark.parametrize("autonomy", ["reactive", "suggest", "self_directed", "autonomous"])
@pytest.mark.parametrize("kind,payload", [("send_message", {"to": "Lena", "text": "I'm outside"}),
                                          ("set_reminder", {"text": "take your pills", "when": "2026-11-30T21:00:00+00:00"}),
                                          ("add_note", {"text": "gate code 4821"})])
def test_a_detected_request_is_held_at_every_autonomy_never_run(kind, payload, autonomy):
    status, reason = rules.decide(kind, payload, False, {"autonomy": autonomy, "elicitation": "infer"},
                                  ceiling=autonomy, origin="detector")
    assert (status, reason) == ("held", rules.DETECTOR_HELD)


def test_a_detected_reminder_without_a_time_asks_for_it_even_when_elicitation_is_infer():
    status, _ = rules.decide("set_reminder", {"text": "call mum"}, False,
                             {"autonomy": "autonomous", "elicitation": "infer"}, origin="detector")
    assert status == "awaiting_facts"


def test_a_detected_message_with_no_recipient_named_is_not_proposed(monkeypatch):
    monkeypatch.setattr(rm, "detect", _stub("send_message", 0.99))
    assert actions.detect("what a lovely morning, pass it on please", NOW) == (None, {
        "fired": False, "kind": "send_message", "p_request": 0.99, "p_kind": 0.99, "threshold": 0.5,
        "version": "stub", "reason": "a message, but no recipient is named"})


@pytest.mark.parametrize("text", ["My exam is on friday", "how are you", "tomorrow at 8am I fly to Rome",
                                  "what a lovely morning", "We adopted a beagle last spring.",
                                  "turn 25 try 0 from zq1x", "go team, run faster and win it"])
def test_a_plain_statement_is_never_read_by_the_detector(monkeypatch, text):
    monkeypatch.setattr(rm, "detect", _stub("add_calendar_entry", 0.99))  # a detector that fires on anything
    proposal, seen = actions.detect(text, NOW)
    assert proposal is None and seen["reason"].startswith("no request words"), seen


def test_the_detector_is_proposed_only_when_nothing_else_acts():
    settings = {"autonomy": "autonomous"}
    det = {"kind": "add_note", "args": {"text": "x"}, "detection": {}}
    alone = rules.propose("x", "selector", [], [], settings, NOW, detected=det)
    assert [(p["origin"], p["status"]) for p in alone] == [("detector", "held")]
    assert rules.acted_by(alone) == "detector"
    # the model called a tool: its call is what is proposed (held, not asked for), never the detector's
    called = rules.propose("x", "model", [("add_note", {"text": "y"})], [], settings, NOW, detected=det)
    assert [p["origin"] for p in called] == ["model"]


def test_the_threshold_is_the_stored_one_and_decides_as_stored():
    model = rm.load()
    assert model is not None and model.threshold == model.meta["threshold"] == model.meta["dev"]["threshold"]
    classes = model.classes
    none = classes.index(rm.NONE)
    note = classes.index("add_note")
    t = model.threshold
    at = np.full(len(classes), 0.0)
    at[none], at[note] = 1 - t, t  # P(request) exactly at the threshold: fires
    below = np.full(len(classes), 0.0)
    below[none], below[note] = 1 - t + 0.01, t - 0.01
    assert model.decide(at).kind == "add_note"
    assert model.decide(below).kind is None


# ------------------------------------------------------------------ the proposal's words


def test_the_proposal_carries_the_participants_own_words_second_person_for_a_reminder():
    args = rm.slots("set_reminder", "can you make sure I take my pills tonight please", NOW)
    assert args["text"] == "make sure you take your pills"
    assert args["when"].startswith("2026-11-30T20:00")


def test_a_message_proposal_takes_the_recipient_and_the_dictated_words_when_readable():
    assert rm.slots("send_message", "could you give Lena a heads up saying I'm outside", NOW) == {
        "to": "Lena", "text": "I'm outside"}


@pytest.mark.parametrize("said,asked", [
    ("if I can swap my sat shift for sunday", "Can I swap my Saturday shift for Sunday?"),
    ("ask Sam if I can swap my sat shift for sunday", "Can I swap my Saturday shift for Sunday?"),
    ("whether she is free on friday", "Are you free on Friday?"),
    ("when he will be home", "When will you be home?"),
    ("if she wants the blue one", "if she wants the blue one"),  # no auxiliary to invert: as dictated
    ("the keys are under the mat", "the keys are under the mat"),  # not a question: as dictated
])
def test_a_passed_on_question_is_asked_directly(said, asked):
    assert rm.direct_question(said) == asked


# ------------------------------------------------------------------ through the turn (stub detector)


def test_a_request_the_rules_miss_is_held_not_run_even_with_autonomy_granted(store, ana, home, monkeypatch):
    monkeypatch.setattr(rm, "detect", _stub("add_note"))
    own_autonomy(store, ana, "autonomous")
    r = turn(store, ana, "the wifi thing is on the router, keep that somewhere", settings=plain(home), at=NOW)
    [a] = made(store, ana)
    assert (a.kind, a.status, a.origin) == ("add_note", "held", "detector")
    assert r.trace.actions_run == [] and r.trace.interaction["acted_by"] == "detector"
    assert r.trace.interaction["detector"]["fired"] is True
    assert "Waiting for your approval: note: the wifi thing is on the router, keep that somewhere" in r.shown


def test_a_non_request_the_detector_reads_as_none_makes_nothing(store, ana, home, monkeypatch):
    monkeypatch.setattr(rm, "detect", _stub(None, 0.2))
    own_autonomy(store, ana, "autonomous")
    r = turn(store, ana, "I'm not going to text my ex saying I miss him.", settings=plain(home), at=NOW)
    assert made(store, ana) == [] and r.trace.interaction["acted_by"] is None


def test_a_non_request_that_looks_like_one_runs_nothing_even_if_the_detector_fires(store, ana, home, monkeypatch):
    monkeypatch.setattr(rm, "detect", _stub("send_message", 0.99))
    own_autonomy(store, ana, "autonomous")
    r = turn(store, ana, "honestly Lena deserves to hear that I quit, update Lena lol", settings=plain(home), at=NOW)
    assert [(a.kind, a.status) for a in made(store, ana)] == [("send_message", "held")]
    assert r.trace.actions_run == [] and actions.outbox(store, ana) == []


@pytest.mark.parametrize("text", [
    "Part of me is tempted to text my boss saying I quit.",
    "I'd never message my brother saying sorry, not after that",
    "I already told Ines that the keys are under the mat",
    'my neighbour wrote "remind me to water the plants" on a post-it',
])
def test_where_the_rules_read_a_named_action_reliably_as_not_a_request_the_detector_is_not_asked(
        store, ana, home, monkeypatch, text):
    # a wish, a negation, a report, a quote: the rules' reading stands, whatever the detector would say
    monkeypatch.setattr(rm, "detect", _stub("send_message", 0.99))
    own_autonomy(store, ana, "autonomous")
    r = turn(store, ana, text, settings=plain(home), at=NOW)
    assert made(store, ana) == [] and r.trace.interaction["detector"]["fired"] is False


def test_a_polite_tag_question_the_rules_read_as_a_question_is_proposed_and_held(store, ana, home, monkeypatch):
    # "..., would you?" is a request in a question's clothes: the rules read a question, a reading
    # the detector may overrule; what it proposes is held, never run, even under autonomy
    monkeypatch.setattr(rm, "detect", _stub("add_calendar_entry", 0.99))
    own_autonomy(store, ana, "autonomous")
    text = "The allotment society meets on Thursday at 7. Stick that in my calendar, would you?"
    assert [i.reason for i in actions.read(text, NOW)] == ["not a request: a question"]
    r = turn(store, ana, text, settings=plain(home), at=NOW)
    assert [(a.kind, a.status) for a in made(store, ana)] == [("add_calendar_entry", "held")]
    assert r.trace.interaction["acted_by"] == "detector" and "approval" in r.shown


def test_when_the_rules_make_the_action_the_detector_is_not_consulted(store, ana, home, monkeypatch):
    monkeypatch.setattr(rm, "detect", _stub("add_note", 0.99))
    own_autonomy(store, ana, "autonomous")
    r = turn(store, ana, "text my sister saying happy birthday", settings=plain(home), at=NOW)
    assert [(a.kind, a.status) for a in made(store, ana)] == [("send_message", "done")]
    assert r.trace.interaction["acted_by"] == "rules" and "detector" not in r.trace.interaction


def test_a_question_about_existing_reminders_lists_them_and_creates_nothing(store, ana, home, monkeypatch):
    monkeypatch.setattr(rm, "detect", _stub("set_reminder", 0.99))
    r = turn(store, ana, "is there anything I asked you to remind me about?", settings=plain(home), at=NOW)
    assert made(store, ana) == [] and "no reminders" in r.shown


# ------------------------------------------------------------------ the shipped weights, end to end


def test_the_shipped_detector_reads_a_calendar_request_the_rules_miss(store, ana, home):
    text = "the dentist on friday at 3pm needs to go in my calendar"
    assert actions.requested(text, NOW) == []  # the rules make nothing of it
    proposal, seen = actions.detect(text, NOW)
    assert proposal["kind"] == "add_calendar_entry" and seen["p_request"] >= seen["threshold"]
    assert proposal["args"]["when"].startswith("2026-12-04T15:00")


def test_end_to_end_the_held_proposal_and_its_approval_running_it(store, ana, home):
    own_autonomy(store, ana, "autonomous")
    r = turn(store, ana, "the dentist on friday at 3pm needs to go in my calendar", settings=plain(home), at=NOW)
    [a] = made(store, ana)
    assert (a.kind, a.status, a.origin) == ("add_calendar_entry", "held", "detector")
    assert "Waiting for your approval: calendar:" in r.shown and "yes" in r.shown
    for _ in range(2):  # a "yes" approves only when the approval question was the only one asked
        if made(store, ana)[0].status == "done":
            break
        turn(store, ana, "yes", settings=plain(home), at=NOW)
    [done] = made(store, ana)
    assert done.status == "done" and "approved" in [e["event"] for e in actions.events(store, ana, done.id)]


def test_tools_on_and_the_model_calls_nothing_the_detector_still_proposes_held(store, ana, home, monkeypatch):
    """Issue 25 item 5: a tool-taking model that makes no call drops nothing the detector reads."""
    from companion.settings import Settings

    monkeypatch.setattr(rm, "detect", _stub("add_note"))
    own_autonomy(store, ana, "autonomous")
    # the obedient red-team model calls a tool only for what reads like an action in its own patterns
    settings = Settings(home=home, model="redteam/v1", tools="on", gate="never", file_memory=False)
    r = turn(store, ana, "the wifi thing is on the router, keep that somewhere", settings=settings, at=NOW)
    assert [(a.kind, a.status, a.origin) for a in made(store, ana)] == [("add_note", "held", "detector")]
    assert r.trace.interaction["acted_by"] == "detector" and r.trace.actions_run == []
    assert r.trace.interaction["path"] == "model"


@pytest.mark.parametrize("text,asked", [
    ("Put the recital in my calendar for Friday, yeah?", None),
    ("Add the boiler code to my notes, could you?", None),
    ("Jot that in my notes, would you?", None),
    ("what's in my calendar on friday?", "calendar"),
    ("anything in my notes about the boiler?", "notes"),
    ("check my calendar for saturday?", "calendar"),
    ("is there anything I asked you to remind me about?", "reminders"),
])
def test_an_instruction_with_a_question_tag_is_not_a_question_about_what_is_stored(text, asked):
    # a base-form verb opening the sentence is an instruction, "?" or not; a question or a listing
    # verb ("check", "show") asks to see the list and makes nothing
    from memory import nlp
    from wrapper import intents

    assert intents.asks_about_existing(text, nlp.parse, actions.read(text, NOW)) == asked


def test_a_surface_feature_left_out_in_training_is_not_read_at_run_time():
    # eval.request_train --surface-off: the model reads the named feature as absent, so two texts that
    # differ only in it score alike; with it kept they do not
    X = rm.features(np.zeros((2, 384), dtype=np.float32), ["remind me at 7", "remind me at 7?"])
    W = np.zeros((X.shape[1], 2), dtype=np.float32)
    W[384 + rm.SURFACE.index("question mark"), 0] = 3.0
    kept = rm.Model(["set_reminder", rm.NONE], W, np.zeros(2, np.float32), np.zeros(X.shape[1], np.float32),
                    np.ones(X.shape[1], np.float32), 0.5)
    off = rm.Model(kept.classes, W, kept.b, kept.mean, kept.scale, 0.5, meta={"surface_off": ["question mark"]})
    p_kept, p_off = kept.probabilities(X), off.probabilities(X)
    assert p_kept[0, 0] == 0.5 and p_kept[1, 0] > 0.95
    assert p_off[0, 0] == p_off[1, 0] == 0.5


@pytest.mark.parametrize("text,asked", [
    ("remind me when the school concert is now, it moved", None),
    ("Remind me, which platform did I say the train leaves from?", None),
    ("when am I seeing the physio again, remind me?", None),
    ("remind me what I asked you to remind me of", "reminders"),
    ("did i ask u to remind me of anything this week", "reminders"),
    ("what did I ask you to remind me about?", "reminders"),
])
def test_remind_me_around_a_question_about_the_past_is_not_a_question_about_the_reminders(text, asked):
    # "remind me" as the frame of a recall question (opening it, or tagged on after it) names no
    # reminders: the question is answered from memory, not with "You have no reminders set"
    from memory import nlp
    from wrapper import intents

    assert intents.asks_about_existing(text, nlp.parse, actions.read(text, NOW)) == asked
