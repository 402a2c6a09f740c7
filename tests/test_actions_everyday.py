"""Issue 25 items 3 and 4: actions and autonomy from everyday wording, through the turn.

End to end: a participant's message in everyday wording makes the action the participant sees
(run at their own autonomy, held at the default, waiting with a question when the time is
vague); a question about existing reminders, notes or the calendar lists them and creates
nothing; a grant of autonomy in plain words is learned and the same words framed otherwise
raise nothing. Then the generated variants of the dev template families (eval/everyday.py,
split before the recognizer changed): rates that can fail, and no non-request asked for.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from companion import actions
from companion.turn import turn
from consent import records
from eval import everyday
from memory import cells, nlp
from wrapper import directives

from tests.action_helpers import own_autonomy, plain, wall

NOW = everyday.NOW  # Monday 2026-11-30 10:00 UTC
assert NOW == datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)


def made(store, who) -> list[tuple[str, int]]:
    """The actions stored for the participant (an offer the settings dropped is not one)."""
    return [(a.kind, a.id) for a in actions.history(store, who) if a.status != "dropped"]


def test_a_reminder_with_a_weekday_evening_and_a_fuzzy_clock_is_scheduled_for_that_evening(store, ana, home):
    own_autonomy(store, ana)
    r = turn(store, ana, "can you remind me thursday evening to call the landlord? like 7pm-ish",
             settings=plain(home), at=NOW)
    [a] = [a for a in actions.history(store, ana) if a.kind == "set_reminder"]
    assert (a.status, a.payload["text"], wall(a.payload["when"])) == ("scheduled", "call the landlord",
                                                                        "Thu 03 Dec 19:00")
    assert "Scheduled: remind you: call the landlord (Thu 03 Dec, 19:00)" in r.shown


def test_message_x_for_me_and_tell_her_goes_to_the_outbox_with_the_dictated_words(store, ana, home):
    own_autonomy(store, ana)
    r = turn(store, ana, "can u message Priya for me and tell her the keys are under the mat", settings=plain(home),
             at=NOW)
    assert [(a.payload["to"], a.payload["text"]) for a in actions.outbox(store, ana)] == [
        ("Priya", "the keys are under the mat")]
    assert "In your outbox (not sent): message to Priya" in r.shown


def test_at_the_default_autonomy_the_same_message_is_held_and_the_reply_asks(store, ana, home):
    r = turn(store, ana, "hey, quick one: ping Marco: running late, save me a seat", settings=plain(home), at=NOW)
    assert actions.outbox(store, ana) == []
    [held] = actions.pending(store, ana)
    assert (held.kind, held.payload["to"], held.payload["text"]) == ("send_message", "Marco",
                                                                     "running late, save me a seat")
    assert "Waiting for your approval" in r.shown


def test_check_in_on_me_friday_night_is_scheduled_friday_night(store, ana, home):
    own_autonomy(store, ana)
    turn(store, ana, "check in on me friday night, i have a big exam saturday", settings=plain(home), at=NOW)
    [a] = [a for a in actions.history(store, ana) if a.kind == "schedule_checkin"]
    assert (a.status, wall(a.payload["when"])) == ("scheduled", "Fri 04 Dec 21:00")


def test_a_vague_time_waits_for_one_and_the_reply_asks_when(store, ana, home):
    own_autonomy(store, ana)
    r = turn(store, ana, "remind me later to buy milk", settings=plain(home), at=NOW)
    [a] = actions.pending(store, ana)
    assert (a.status, a.payload["text"], a.payload.get("when")) == ("awaiting_facts", "buy milk", None)
    assert "When should I" in r.shown


def test_a_question_about_existing_reminders_lists_them_and_creates_nothing(store, ana, home):
    own_autonomy(store, ana)
    turn(store, ana, "don't let me forget to pay rent first thing tomorrow", settings=plain(home), at=NOW)
    before = made(store, ana)
    r = turn(store, ana, "is there anything I asked you to remind me about?", settings=plain(home),
             at=NOW + timedelta(minutes=5))
    assert made(store, ana) == before and [k for k, _ in before] == ["set_reminder"]
    assert "1. pay rent (Tue 01 Dec, 08:00) (scheduled)" in r.shown


@pytest.mark.parametrize("question, kind, listed", [
    ("what notes have I made so far?", "add_note", "the gate code is 4821"),
    ("what's in my calendar this week?", "add_calendar_entry", "yoga"),
])
def test_a_question_about_notes_or_the_calendar_lists_them_and_creates_nothing(store, ana, home, question, kind,
                                                                               listed):
    own_autonomy(store, ana)
    turn(store, ana, "jot down that the gate code is 4821", settings=plain(home), at=NOW)
    turn(store, ana, "pop yoga in my diary on wednesday evening", settings=plain(home), at=NOW + timedelta(minutes=1))
    before = made(store, ana)
    r = turn(store, ana, question, settings=plain(home), at=NOW + timedelta(minutes=5))
    assert made(store, ana) == before and sorted(k for k, _ in before) == ["add_calendar_entry", "add_note"]
    assert listed in r.shown


def _autonomy(store, who):
    return cells.settings_for(store, who, "personal").get("autonomy")


@pytest.mark.parametrize("text", ["You don't have to wait for me to say yes.",
                                  "There's no need to run things past me anymore",
                                  "I trust your judgement, just go ahead with messages"])
def test_a_grant_in_plain_words_is_learned_and_said(store, ana, home, text):
    r = turn(store, ana, text, settings=plain(home), at=NOW)
    assert _autonomy(store, ana) == "autonomous"
    assert "Got it" in r.shown


@pytest.mark.parametrize("text", ["I'm not saying you don't have to wait for me to say yes.",
                                  "My boss always says there's no need to run things past him",
                                  "If I ever say you don't have to wait for me to say yes, ignore me",
                                  "Should I tell you that you don't have to wait for me to say yes?"])
def test_the_same_words_framed_otherwise_raise_nothing(store, ana, home, text):
    turn(store, ana, text, settings=plain(home), at=NOW)
    assert _autonomy(store, ana) not in ("self_directed", "autonomous")


# ------------------------------------------------------------- generated variants, dev families


DEV = everyday.generate("dev")


def test_the_dev_families_were_split_off_before_and_share_no_template_with_train():
    fams = everyday.split_families()
    assert fams["dev"] and fams["train"] and not fams["dev"] & fams["train"]
    assert {r["family"] for r in DEV} <= fams["dev"]
    assert {r["family"] for r in everyday.generate("train")} <= fams["train"]


def _requested(row):
    return [i for i in actions.read(row["text"], NOW) if i.requested]


def test_dev_genuine_requests_are_read_with_their_kind_and_dictated_words():
    rows = [r for r in DEV if r["genuine"]]
    right = 0
    for r in rows:
        mine = [i for i in _requested(r) if i.kind in r["kinds"]]
        field = {"add_calendar_entry": "title", "schedule_checkin": "topic"}.get(r["kinds"][0], "text")
        said = (mine[0].args.get(field) or "") if mine else None
        if mine and (r["content"] is None or field == "topic" or said.lower() == r["content"].lower()):
            right += 1
    assert len(rows) >= 80
    assert right / len(rows) >= 0.9, f"{right} of {len(rows)}"


def test_no_dev_non_request_is_read_as_a_request_for_an_external_action():
    rows = [r for r in DEV if not r["genuine"]]
    asked = [r["text"] for r in rows if any(i.kind == "send_message" for i in _requested(r))]
    assert len(rows) >= 60 and asked == []


def test_dev_grants_are_read_and_dev_non_grants_never():
    rows = everyday.autonomy("dev")
    read = [(r, directives.autonomy_grant(nlp.parse(r["text"]), r["text"])[0]) for r in rows]
    granted = [r["text"] for r, s in read if not r["grants_autonomy"] and s]
    learned = sum(bool(s) for r, s in read if r["grants_autonomy"])
    assert granted == []
    assert learned / sum(r["grants_autonomy"] for r in rows) >= 0.75


# ------------------------------------- grant words in framings that grant nothing now, to the companion

GRANT_CORES = [("you can send my messages without asking me", "send my messages without asking me"),
               ("you don't need my approval to text people", "text people without my approval"),
               ("handle my reminders and messages yourself from now on", "handle my messages yourself"),
               ("just go ahead and act on your own", "act on your own")]
NOT_NOW = ["{Name}, {core}.", "hey {Name}, {core}", "If you ever get good at this, maybe {core}.",
           "Once you've learned how I write, {core}.", "Maybe one day {core}.", "Someday {core}, we'll see.",
           "I'll let you {inf} when I trust you more.", "I don't want you to {inf}, always ask first.",
           "Unless I say otherwise, {core}... no wait, forget that, keep asking.",
           # later, possible or scoped away: no permission in force now (fail safe)
           "After my exams I'll probably let you {inf}.", "From next month {core}.",
           "I'm going to let you {inf} soon.", "You could {inf} on the shared calendar, but not on mine.",
           "{Core}, except for anything to my landlord.", "Hopefully by spring {core}."]
NAMES = ["Lucas", "Amara", "Tomasz", "Mei Ling"]


def _framed():
    for i, (core, inf) in enumerate(GRANT_CORES):
        for j, frame in enumerate(NOT_NOW):
            yield frame.format(Name=NAMES[(i + j) % len(NAMES)], core=core, Core=core[0].upper() + core[1:], inf=inf)


@pytest.mark.parametrize("core", [c for c, _ in GRANT_CORES])
def test_each_grant_core_said_plainly_raises_autonomy(store, ana, home, core):
    turn(store, ana, core[0].upper() + core[1:] + ".", settings=plain(home), at=NOW)
    assert _autonomy(store, ana) in ("self_directed", "autonomous")


def test_grant_words_said_to_a_person_under_a_condition_a_hedge_a_promise_or_a_refusal_raise_nothing(store, ana, home):
    """Whichever reader proposes it (the preference classifier or the grant reader), autonomy rises
    only on a grant the structure reader finds in the whole message (companion.actions.autonomy_gate)."""
    raised = []
    texts = list(_framed())
    assert len(texts) == len(GRANT_CORES) * len(NOT_NOW)
    for k, text in enumerate(texts):
        who = f"p{k}"
        records.accept(store, who, tz="Europe/Berlin")
        turn(store, who, text, settings=plain(home), at=NOW + timedelta(minutes=k))
        if _autonomy(store, who) in ("self_directed", "autonomous"):
            raised.append(text)
    assert raised == []


@pytest.mark.parametrize("text, attribute", [
    ("text mum saying please keep it short next time", "verbosity"),
    ("send Solveig a message saying thank you for everything, I'd love more detail on the recipe", "verbosity"),
    ("jot down that Priya prefers bullet points in her reports", "format"),
    ("tell Bob that you can send stuff without asking me", "autonomy"),
])
def test_dictated_words_state_no_preference_of_the_participant(store, ana, home, text, attribute):
    """What the participant asks the companion to send, note or remind is for someone or something
    else: it changes none of their settings and the reply acknowledges nothing."""
    before = cells.settings_for(store, ana, "personal").get(attribute)
    r = turn(store, ana, text, settings=plain(home), at=NOW)
    assert cells.settings_for(store, ana, "personal").get(attribute) == before
    assert "Got it:" not in r.shown


def test_the_same_words_said_to_the_companion_still_set_the_preference(store, ana, home):
    r = turn(store, ana, "please keep it short next time", settings=plain(home), at=NOW)
    assert "Got it:" in r.shown and cells.settings_for(store, ana, "personal").get("verbosity") in ("brief", "terse")
