"""Issue 25 item 3, fourth round: the constructions the last set by another author missed.

The misses fell into classes of construction: the time or the dictated words in a sentence after
the action's verb ("remind me to call the dentist. tomorrow at 9 would be good", "can you text
Lena? just say ..."); a question to pass on ("message X asking if ...", "ask X whether ...");
app and idiom send verbs ("let X know on whatsapp", "give X a shout and say"); words dictated
after "this:", in quotes, or between "quote" and "unquote"; polite leads ("kindly", "be a star
and", "I'd be grateful if you could"); chit-chat and emoji around the request. The reader takes
them by construction (a communication verb x a recipient x the words, in either order, across
the sentences of one message), with every fail-safe gate kept. Here: end to end through the
turn, one message per construction, what the participant sees; the same words framed as
something else make nothing, under the participant's own autonomy; a question about the
reminders lists them and creates nothing; then the generated families (eval/everyday.py
`generate_round4`, split into train and test by construction, written before the reader
changed): rates on the test families that can fail, and no non-request of either split read
as a request.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from companion import actions
from companion.turn import turn
from eval import everyday
from wrapper.intents import norm_words

from tests.action_helpers import made, own_autonomy, plain, wall

NOW = everyday.NOW  # Monday 2026-11-30 10:00 UTC


# ------------------------------------------------------------------ one message per construction, through the turn

MESSAGES = [  # (text, to, words): into the local outbox at the participant's own autonomy
    ("can you text Lena? just say I'll be there by 8", "Lena", "I'll be there by 8"),
    ("message my sister for me. the message is: the keys are under the mat", "my sister", "the keys are under the mat"),
    ("Text my mom. Tell her I'm fine.", "my mom", "I'm fine"),
    ("email Dr. Patel to ask whether the results are in", "Dr. Patel", "whether the results are in"),
    ("ask Jonas if he can bring the cake", "Jonas", "if he can bring the cake"),
    ("let Mei know on whatsapp that I'm outside", "Mei", "I'm outside"),
    ("give Jonas a shout and say the match is on", "Jonas", "the match is on"),
    ("send this message to my landlord: the boiler is leaking", "my landlord", "the boiler is leaking"),
    ("send Lena this: I'm on my way", "Lena", "I'm on my way"),
    ("message Lena, quote, I'll be late, end quote", "Lena", "I'll be late"),
    ("tell Kwame quote I got the flat! unquote", "Kwame", "I got the flat!"),
    ("here's a message for Kwame: the meeting moved to 3", "Kwame", "the meeting moved to 3"),
    ("be a star and text mum saying I landed", "mum", "I landed"),
    ("I'd be grateful if you could text my boss saying I'm sick today", "my boss", "I'm sick today"),
    ("hey \U0001f642 Text Jonas: I'll be there by 8. you're the best \U0001f64f", "Jonas", "I'll be there by 8"),
]


@pytest.mark.parametrize("text,to,words", MESSAGES)
def test_a_request_of_each_construction_puts_the_dictated_message_in_the_outbox(store, ana, home, text, to, words):
    own_autonomy(store, ana)
    r = turn(store, ana, text, settings=plain(home), at=NOW)
    assert [(a.payload["to"], a.payload["text"]) for a in actions.outbox(store, ana)] == [(to, words)]
    assert "In your outbox (not sent)" in r.shown


@pytest.mark.parametrize("text", ["remind me to call the dentist. tomorrow at 9 would be good",
                                  "remind me to call the dentist. Tomorrow at 9 works best for me",
                                  "can you remind me to call the dentist? ideally tomorrow at 9"])
def test_a_time_in_the_sentence_after_a_reminder_is_its_time(store, ana, home, text):
    own_autonomy(store, ana)
    turn(store, ana, text, settings=plain(home), at=NOW)
    [a] = made(store, ana)
    assert (a.kind, a.status, a.payload["text"], wall(a.payload["when"])) == ("set_reminder", "scheduled",
                                                                                "call the dentist", "Tue 01 Dec 09:00")


def test_a_time_in_a_sentence_about_someone_else_is_not_the_reminders(store, ana, home):
    turn(store, ana, "remind me to call the dentist. she opens tomorrow at 9", settings=plain(home), at=NOW)
    [a] = made(store, ana)
    assert (a.status, a.payload.get("when")) == ("awaiting_facts", None)


def test_at_the_default_autonomy_a_question_to_pass_on_is_held_not_sent(store, ana, home):
    r = turn(store, ana, "text my sister asking whether she wants to come on Sunday", settings=plain(home), at=NOW)
    assert actions.outbox(store, ana) == []
    [held] = actions.pending(store, ana)
    assert (held.payload["to"], held.payload["text"]) == ("my sister", "whether she wants to come on Sunday")
    assert "Waiting for your approval" in r.shown


@pytest.mark.parametrize("text", [
    "Lena asked me to text her saying I'm on my way",
    "if I texted Jonas asking if he's free, would that be weird?",
    "no need to message my sister asking when the train gets in",
    "I already let Mei know on whatsapp that I'm outside",
    "I just sent Lena a message asking if she can pick me up",
    "I wish my boss would text me saying I can go home",
    "I hope Jonas tells me the match is on",
    "the sign said \"text Lena: I'm on my way\"",
    "my flatmate said, and I quote: send this message to my landlord: the boiler is leaking",
    "Suppose I wanted to text Lena the words 'I quit', what would you say?",
    "can you actually send messages to people?",
    "do you ever send texts without asking me first?",
    "what happens when I ask you to remind me to call the dentist?",
    "don't bother to ask Jonas if he can bring the cake, I'll see him later",
    "should I text Lena? say I'm sorry?",
])
def test_the_same_constructions_framed_otherwise_make_nothing_under_autonomy(store, ana, home, text):
    own_autonomy(store, ana)
    turn(store, ana, text, settings=plain(home), at=NOW)
    assert made(store, ana) == []


def test_a_question_about_a_reminder_already_set_lists_it_and_creates_nothing(store, ana, home):
    own_autonomy(store, ana)
    turn(store, ana, "remind me to call the dentist. tomorrow at 9 would be good", settings=plain(home), at=NOW)
    before = [a.id for a in made(store, ana)]
    r = turn(store, ana, "have I asked you to remind me about the dentist?", settings=plain(home),
             at=NOW + timedelta(minutes=3))
    assert [a.id for a in made(store, ana)] == before and len(before) == 1
    assert "call the dentist" in r.shown


# ------------------------------------------------------------------ generated families, split by construction

TEST = everyday.generate_round4("test")
TRAIN = everyday.generate_round4("train")
_FIELD = {"add_calendar_entry": "title", "schedule_checkin": "topic"}


def test_the_round4_families_are_split_by_construction_and_every_class_has_both():
    fams = everyday.split_round4()
    assert not fams["train"] & fams["test"]
    assert {r["family"] for r in TEST} <= fams["test"] and {r["family"] for r in TRAIN} <= fams["train"]
    for split in ("train", "test"):
        classes = {f.split("/")[0] for f in fams[split]}
        assert classes >= set(everyday.CLASS_FRAMES4) | {"polite", "chat"} | {f"non:{c}" for c in everyday.NON4}
    frames = {split: {fr for fs in everyday.CLASS_FRAMES4.values() for _, sp, _, fr in fs if sp == split}
              for split in ("train", "test")}
    assert not frames["train"] & frames["test"]  # a test family is a frame no train family has


def _right(r) -> bool:
    kind = r["kinds"][0]
    mine = [i for i in actions.requested(r["text"], NOW) if i.kind == kind]
    return any(norm_words(i.args.get(_FIELD.get(kind, "text"))) == norm_words(r["content"]) for i in mine)


def test_test_families_are_read_with_their_kind_and_dictated_words():
    rows = [r for r in TEST if r["genuine"]]
    right = sum(_right(r) for r in rows)
    assert len(rows) >= 150
    assert right / len(rows) >= 0.9, f"{right} of {len(rows)}"


def test_no_round4_non_request_of_either_split_is_read_as_a_request():
    rows = [r for r in TEST + TRAIN if not r["genuine"]]
    asked = [r["text"] for r in rows if actions.requested(r["text"], NOW)]
    assert len(rows) >= 140 and asked == []


def test_test_non_requests_run_nothing_through_the_turn_under_autonomy(store, home):
    from consent import records as consent

    rows = [r for r in TEST if not r["genuine"]]
    ran = []
    for n, r in enumerate(rows):
        who = f"nr{n:04d}"
        consent.accept(store, who, tz="UTC")
        own_autonomy(store, who)
        turn(store, who, r["text"], settings=plain(home), at=NOW)
        ran += [(r["text"], a.kind) for a in actions.history(store, who) if a.status in ("done", "scheduled")]
    assert len(rows) >= 90 and ran == []
