"""Issue 25 item 3, third round: the classes of requests the last set by another author missed.

The misses fell into classes: informal send verbs and abbreviations, check-ins with a day,
notes and calendar entries introduced by a header and a colon, recipients with titles or of
several words, requests inside long chatty messages, polite question forms. The reader takes
them by structure (a request frame x the action's verb lexicon x a recipient phrase x a content
delimiter x a time), with every fail-safe gate kept. Here: end to end through the turn, one
message per class, what the participant sees; the same verbs framed as something else make
nothing; then the generated families of each class (eval/everyday.py `generate_classes`, split
into train and dev before the reader changed; the reader was tuned on train only): rates on dev
that can fail, and no non-request of any split read as a request.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from companion import actions
from companion.turn import turn
from eval import everyday
from wrapper import directives
from wrapper.intents import norm_words

from tests.action_helpers import made, own_autonomy, plain, wall

NOW = everyday.NOW  # Monday 2026-11-30 10:00 UTC


# ------------------------------------------------------------------ one message per class, through the turn

MESSAGES = [  # (text, to, words) sent into the local outbox at the participant's own autonomy
    ("fire off a quick text to Dr. Patel saying the results came back fine", "Dr. Patel", "the results came back fine"),
    ("msg my sister-in-law: the kids can stay over on Friday", "my sister-in-law", "the kids can stay over on Friday"),
    ("message Coach Rivera - 'Tomás has a cold, he will miss training'", "Coach Rivera",
     "Tomás has a cold, he will miss training"),
    ("Text Mrs. Oyelaran, the parcel is on your doorstep.", "Mrs. Oyelaran", "the parcel is on your doorstep"),
    ("do you think you could drop my landlord a text saying the boiler is leaking again?", "my landlord",
     "the boiler is leaking again"),
    ("would you be able to let Mei Ling know I'm bringing dessert?", "Mei Ling", "I'm bringing dessert"),
    ("So the train was cancelled and I've been standing on the platform for an hour, it's freezing. Anyway, "
     "could you text my boss that I'll join the call from home? Honestly what a day.", "my boss",
     "I'll join the call from home"),
]


@pytest.mark.parametrize("text,to,words", MESSAGES)
def test_a_request_of_each_class_puts_the_dictated_message_in_the_outbox(store, ana, home, text, to, words):
    own_autonomy(store, ana)
    r = turn(store, ana, text, settings=plain(home), at=NOW)
    assert [(a.payload["to"], a.payload["text"]) for a in actions.outbox(store, ana)] == [(to, words)]
    assert "In your outbox (not sent)" in r.shown


def test_at_the_default_autonomy_an_informal_request_is_held_with_the_whole_message(store, ana, home):
    r = turn(store, ana, "shoot Jonas a msg \u201cI'll be 10 min late, order for me\u201d", settings=plain(home), at=NOW)
    assert actions.outbox(store, ana) == []
    [held] = actions.pending(store, ana)
    assert (held.payload["to"], held.payload["text"]) == ("Jonas", "I'll be 10 min late, order for me")
    assert "Waiting for your approval" in r.shown


@pytest.mark.parametrize("text,when,topic", [
    ("ask me on friday how the interview went", "Fri 04 Dec 09:00", "how the interview went"),
    ("touch base with me thursday evening about the move", "Thu 03 Dec 19:00", "the move"),
    ("could you ping me tomorrow morning to ask how my knee is?", "Tue 01 Dec 09:00", "how your knee is"),
])
def test_a_check_in_with_a_day_is_scheduled_for_that_day(store, ana, home, text, when, topic):
    own_autonomy(store, ana)
    turn(store, ana, text, settings=plain(home), at=NOW)
    [a] = made(store, ana)
    assert (a.kind, a.status, wall(a.payload["when"]), a.payload.get("topic")) == ("schedule_checkin", "scheduled",
                                                                                 when, topic)


def test_asking_me_something_with_no_time_schedules_nothing(store, ana, home):
    own_autonomy(store, ana)
    turn(store, ana, "ask me how my day was", settings=plain(home), at=NOW)
    assert made(store, ana) == []


@pytest.mark.parametrize("text,words", [
    ("jot this down: the locker code is 2290", "the locker code is 2290"),
    ("add to my notes: Ama prefers tea, not coffee", "Ama prefers tea, not coffee"),
    ("new note - the bike lock key is in the drawer", "the bike lock key is in the drawer"),
])
def test_a_note_after_a_header_is_made_with_its_words(store, ana, home, text, words):
    own_autonomy(store, ana)
    turn(store, ana, text, settings=plain(home), at=NOW)
    [a] = made(store, ana)
    assert (a.kind, a.status, a.payload["text"]) == ("add_note", "done", words)


@pytest.mark.parametrize("text,title,when", [
    ("calendar: physio on wednesday at 4pm", "physio", "Wed 02 Dec 16:00"),
    ("for my calendar: the school play thursday evening", "the school play", "Thu 03 Dec 19:00"),
    ("block out friday morning in my calendar for the tax return", "the tax return", "Fri 04 Dec 09:00"),
])
def test_a_calendar_entry_after_a_header_is_made_for_its_time(store, ana, home, text, title, when):
    own_autonomy(store, ana)
    turn(store, ana, text, settings=plain(home), at=NOW)
    [a] = made(store, ana)
    assert (a.kind, a.status, a.payload["title"], wall(a.payload["when"])) == ("add_calendar_entry", "done", title,
                                                                                 when)


@pytest.mark.parametrize("text", [
    "should I shoot a text to Dr. Patel saying the results came back fine?",
    "I already fired off a text to my landlord saying the boiler is leaking",
    "would you mind if I texted Mei Ling saying I'm bringing dessert?",
    "do you think I could msg my boss: I'm sick today?",
    "could you believe Jonas texted me saying he quit?",
    "I'd never dm my ex saying I miss him",
    "my mum asked me on friday how the interview went",
    "I told my coach I'd touch base with him on tuesday",
    "she wrote in her notes: the locker code is 2290",
    "should I add this to my notes: Ama prefers tea?",
    "my wife's calendar: yoga on tuesday",
    "the school calendar says: sports day on friday",
    "do you think you could not text my sister saying I'm fine?",
    "So much going on this week. My sister said I should text Dr. Patel saying I'm not coming. Whatever.",
])
def test_the_same_verbs_framed_otherwise_make_nothing(store, ana, home, text):
    own_autonomy(store, ana)
    turn(store, ana, text, settings=plain(home), at=NOW)
    assert made(store, ana) == []


def test_a_question_about_the_calendar_with_a_header_word_lists_and_creates_nothing(store, ana, home):
    own_autonomy(store, ana)
    turn(store, ana, "calendar: physio on wednesday at 4pm", settings=plain(home), at=NOW)
    before = [a.id for a in made(store, ana)]
    r = turn(store, ana, "is physio on wednesday in my calendar?", settings=plain(home), at=NOW + timedelta(minutes=2))
    assert [a.id for a in made(store, ana)] == before
    assert "physio" in r.shown


# ------------------------------------------------------------------ the polite forms, read plainly


@pytest.mark.parametrize("prefix,plain_form", [
    ("do you think you could ", "could you "), ("is there any chance you could ", "could you "),
    ("would you be able to ", "would you "), ("could I ask you to ", "could you "),
    ("hey, would it be possible for you to ", "hey, could you "), ("could you possibly ", "could you "),
])
def test_a_polite_form_is_read_as_the_plain_form_it_means(prefix, plain_form):
    assert directives.polite(prefix, False, "")[0] == plain_form


@pytest.mark.parametrize("prefix", ["do you think you couldn't ", "do you think I could ", "could they possibly ",
                                    "would you be unable to ", "if you could "])
def test_a_negated_or_other_subject_form_is_left_as_said(prefix):
    assert directives.polite(prefix, False, "")[0] == prefix


def test_if_you_could_is_a_request_only_when_the_sentence_thanks_for_it():
    said = "if you could text Lena saying I'm late, that would be great"
    assert [(i.kind, i.args["text"]) for i in actions.requested(said, NOW)] == [("send_message", "I'm late")]
    assert actions.requested("if you could text Lena saying I'm late, she would be happy", NOW) == []


# ------------------------------------------------------------------ generated families of each class

DEV = everyday.generate_classes("dev")
TRAIN = everyday.generate_classes("train")
_FIELD = {"add_calendar_entry": "title", "schedule_checkin": "topic"}


def test_the_class_families_are_split_and_every_class_has_dev_families():
    fams = everyday.split_classes()
    assert not fams["dev"] & fams["train"]
    assert {r["family"] for r in DEV} <= fams["dev"] and {r["family"] for r in TRAIN} <= fams["train"]
    classes = {f.split("/")[0] for f in fams["dev"]}
    assert classes >= set(everyday.CLASS_FRAMES) | {"polite_question", "chatty"} | {
        f"non:{c}" for c in everyday.NON3}
    assert everyday.split_families() == everyday.split_families()  # the earlier split is unchanged by these


def _right(r) -> bool:
    kind = r["kinds"][0]
    mine = [i for i in actions.requested(r["text"], NOW) if i.kind == kind]
    if not mine or r["content"] is None or kind == "schedule_checkin":
        return bool(mine)
    return any(norm_words(i.args.get(_FIELD.get(kind, "text"))) == norm_words(r["content"]) for i in mine)


def test_dev_class_families_are_read_with_their_kind_and_dictated_words():
    rows = [r for r in DEV if r["genuine"]]
    right = sum(_right(r) for r in rows)
    assert len(rows) >= 100
    assert right / len(rows) >= 0.9, f"{right} of {len(rows)}"


def test_no_class_non_request_of_either_split_is_read_as_a_request():
    rows = [r for r in DEV + TRAIN if not r["genuine"]]
    asked = [r["text"] for r in rows if actions.requested(r["text"], NOW)]
    assert len(rows) >= 150 and asked == []


def test_the_bench_compares_a_topic_said_back_in_the_participants_voice():
    from eval.actionbench import _said

    assert _said("how you're sleeping") == _said("how I'm sleeping")
    assert _said("how you're sleeping") != _said("how she's sleeping")
