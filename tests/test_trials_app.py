"""The app's feedback and Trial results, below the browser: a rated chat message finds its reply."""

import pytest

from companion import app, trialpanel, trials
from companion.prompts import FALLBACK_REPLY
from companion.turn import turn
from memory import feedback
from memory.store import StoreError


def _replies(chat):
    return [i for i, m in enumerate(chat) if trialpanel._is_reply(m)]


def test_a_thumb_on_a_chat_message_rates_that_reply(store, ana, settings):
    for t in ["hello", "hello", "how are you"]:  # echo: two replies with the same text
        turn(store, ana, t, settings=settings)
    chat = app.history(store, ana)
    first, second, third = _replies(chat)
    assert chat[first]["content"] == chat[second]["content"]
    assert trialpanel.reply_dayid(store, ana, chat, first) == "day1-2"
    assert trialpanel.reply_dayid(store, ana, chat, second) == "day1-4"
    assert "day1-6" in trialpanel.rate(store, ana, chat, third, True)
    said = trialpanel.rate(store, ana, chat, first, "you forgot something I told you")
    assert "you forgot something I told you" in said
    trialpanel.rate(store, ana, chat, second, False)
    now = {f.dayid: (f.rating, f.tag, f.via) for f in feedback.current(store, ana)}
    assert now == {"day1-6": (1, None, "app"), "day1-2": (-1, "forgot", "app"), "day1-4": (-1, None, "app")}
    assert "removed" in trialpanel.rate(store, ana, chat, third, None)
    assert "day1-6" not in {f.dayid for f in feedback.current(store, ana)}


def test_what_cannot_be_rated_is_refused_by_name(store, ana, settings):
    turn(store, ana, "hello", settings=settings)
    chat = app.history(store, ana) + [{"role": "user", "content": "x"},
                                      {"role": "assistant", "content": FALLBACK_REPLY}]
    with pytest.raises(StoreError, match="not stored"):
        trialpanel.rate(store, ana, chat, len(chat) - 1, True)
    with pytest.raises(StoreError, match="only the companion's replies"):
        trialpanel.rate(store, ana, chat, 0, True)
    memory_line = [i for i, m in enumerate(chat) if (m.get("metadata") or {}).get("title")][0]
    with pytest.raises(StoreError, match="only the companion's replies"):
        trialpanel.rate(store, ana, chat, memory_line, True)
    with pytest.raises(StoreError, match="sign in first"):
        trialpanel.rate(store, None, chat, 1, True)
    assert feedback.history(store, ana) == []


def test_trial_results_for_the_panel(store, ana, settings, tmp_path):
    trials.randomize(store, ana, ["never", "always"], 3, "bm25", "earlier_turns")
    rs = [turn(store, ana, t, settings=settings) for t in ["my cat is Tom", "hi", "I told you, Tom", "ok"]]
    feedback.record(store, ana, rs[0].reply.dayid, "up")
    md, pngs, js = trialpanel.results(store, [ana], None, bootstrap=20, out=tmp_path / "r")
    assert "never/bm25/earlier_turns" in md and "always/bm25/earlier_turns" in md
    assert "only 1 participant(s)" in md
    assert sorted(p.rsplit("/", 1)[1] for p in pngs) == ["arms.png", "differences.png"]
    assert js.endswith("report.json")
