"""Explicit feedback: stored with the reply's trace and arm, as-of readable, refused when wrong."""

import pytest

from companion import trials
from companion.turn import turn
from consent import access
from memory import feedback, messages
from memory.store import StoreError


def test_feedback_carries_the_turns_trace_and_arm(store, ana, settings):
    trials.set_arm(store, ana, "never", "bm25", "earlier_turns")
    r = turn(store, ana, "my sister Mia lives in Porto", settings=settings)
    f = feedback.record(store, ana, r.reply.dayid, "down", tag="forgot")
    assert f.trace_id == r.trace.id and f.arm == "never/bm25/earlier_turns" and f.gate == "never"
    assert f.means == "miss" and f.public()["tag_label"] == "you forgot something I told you"
    # a tag may be given by its label, as the app shows it
    g = feedback.record(store, ana, r.reply.dayid, "down", tag="brought up something that didn't fit", via="app")
    assert g.tag == "misfit"


def test_a_later_rating_replaces_the_earlier_one_only_from_then_on(store, ana, settings):
    r1 = turn(store, ana, "hello there", settings=settings)
    feedback.record(store, ana, r1.reply.dayid, "up")
    r2 = turn(store, ana, "and again", settings=settings)
    feedback.record(store, ana, r1.reply.dayid, "down", tag="wrong")
    now = feedback.current(store, ana)
    assert [(f.dayid, f.rating, f.tag) for f in now] == [(r1.reply.dayid, -1, "wrong")]
    # as of the second turn's message only the first rating had been given
    before = feedback.current(store, ana, as_of=r2.message.ordinal)
    assert [(f.dayid, f.rating) for f in before] == [(r1.reply.dayid, 1)]
    # retracting leaves nothing standing, history keeps all three
    feedback.record(store, ana, r1.reply.dayid, "none")
    assert feedback.current(store, ana) == []
    assert [f.rating for f in feedback.history(store, ana)] == [1, -1, 0]


@pytest.mark.parametrize("dayid, rating, tag, says", [
    ("day1-1", "up", None, "participant's own message"),
    ("day9-9", "up", None, "no message 'day9-9'"),
    ("day1-2", "meh", None, "rating must be one of"),
    ("day1-2", "down", "rude", "unknown feedback tag 'rude'"),
    ("day1-2", "none", "forgot", "takes no tag"),
])
def test_bad_feedback_is_refused_by_name_and_loses_nothing(store, ana, settings, dayid, rating, tag, says):
    r = turn(store, ana, "hello there", settings=settings)
    assert r.reply.dayid == "day1-2"
    feedback.record(store, ana, "day1-2", "up")
    with pytest.raises(StoreError, match=says):
        feedback.record(store, ana, dayid, rating, tag=tag)
    assert [f.rating for f in feedback.history(store, ana)] == [1]
    assert len(messages.read(store, ana, 100)) == 2


def test_unknown_participant_is_refused(store):
    with pytest.raises(StoreError, match="unknown participant 'nobody'"):
        feedback.record(store, "nobody", "day1-2", "up")


def test_download_my_data_lists_feedback(store, ana, settings):
    r = turn(store, ana, "hello there", settings=settings)
    feedback.record(store, ana, r.reply.dayid, "down", tag="misfit")
    data = access.download(store, ana)
    [row] = data["feedback"]
    assert row["dayid"] == r.reply.dayid and row["rating"] == "down"
    assert row["tag_label"] == "brought up something that didn't fit"
    assert "feedback" not in data["other"]
