"""An answer about the participant's past names what they said, or quotes it (memory.grounding)."""

from __future__ import annotations

from companion.turn import turn
from memory import grounding, messages
from memory.retrievers import Hit

LENA = "My sister Lena is coming to visit me next weekend and I'm really excited."


def hit(text: str, sender: str = "user", dayid: str = "day1-2", score: float = 1.0) -> Hit:
    return Hit(ordinal=2, dayid=dayid, sender=sender, text=text, score=score)


def test_only_questions_about_the_past_are_checked():
    assert grounding.asks_about_the_past("Remind me, who is coming to visit me next weekend?")
    assert grounding.asks_about_the_past("what was my sister's name again?")
    assert not grounding.asks_about_the_past("What's a good recipe for pasta?")
    assert not grounding.asks_about_the_past("good morning!")


def test_a_reply_that_names_the_fact_is_left_alone_and_one_that_does_not_gets_the_quote():
    q = "Remind me, who is coming to visit me next weekend?"
    line, info = grounding.ground(q, "Lena is coming, how lovely!", [hit(LENA)])
    assert line is None and info["named"] == ["lena"]
    line, info = grounding.ground(q, "Someone special is coming to see you!", [hit(LENA)])
    # the answering clause of their statement, in their words
    assert line == "You told me: \u201cMy sister Lena is coming to visit me next weekend.\u201d"
    assert info["quoted"] and info["dayid"] == "day1-2"


def test_only_the_participants_own_statement_that_answers_is_quoted():
    q = "Remind me, who is coming to visit me next weekend?"
    line, info = grounding.ground(q, "No idea!", [hit("Lena is coming, you said.", sender="companion")])
    assert line is None and info == {}
    # a question about their life that the applied statement does not answer gets no quote
    line, info = grounding.ground("where does my sister live?", "Try reading.", [hit(LENA)])
    assert line is None and "quoted" not in info
    # issue 22, item 15: a statement about someone else is not an answer
    line, info = grounding.ground("did I tell you where Marisol lives?", "Hmm.",
                                  [hit("my brother Tomás lives in Lyon")])
    assert line is None and info["reason"] == "no applied statement of theirs answers it"
    # their own earlier question is never quoted as a fact
    line, _ = grounding.ground("what city is my sister from?", "Hmm.", [hit("what city is my sister from?")])
    assert line is None
    # the statement that answers is quoted, not the newest
    line, _ = grounding.ground(q, "No idea!", [hit(LENA, dayid="day1-2"), hit("I bought a red bike", dayid="day1-9")])
    assert "Lena" in line and "bike" not in line


def _chat(store, ana, settings):
    for t in ["Hi! I moved to Lisbon last month.", LENA, "What could we do on a rainy day?",
              "Work was stressful today.", "Any tips for sleeping better?"]:
        turn(store, ana, t, settings=settings)


def test_through_the_turn_the_quote_is_shown_stored_and_traced(store, ana, settings):
    # `auto` checks the embedded demo model only; `on` makes the echo model stand in for it
    s = settings.model_copy(update={"model": "echo", "recent_window": 2, "gate": "always", "cite_notes": "on",
                                    "grounded": "off"})
    _chat(store, ana, s)
    r = turn(store, ana, "Remind me, who is coming to visit me next weekend?", settings=s)
    # the echo model repeats the question and names no fact: the participant's words are quoted
    assert r.shown.endswith("You told me: \u201cMy sister Lena is coming to visit me next weekend.\u201d")
    assert messages.read(store, ana, 10**9)[-1].text == r.shown
    assert r.trace.interaction["grounding"]["quoted"] and r.trace.interaction["grounding"]["value"] == "your sister Lena"
    r = turn(store, ana, "What's a good recipe for pasta?", settings=s)
    assert "You told me" not in r.shown and "grounding" not in r.trace.interaction


def test_switched_off_or_for_another_model_nothing_is_added(store, ana, settings):
    s = settings.model_copy(update={"model": "echo", "recent_window": 2, "gate": "always", "grounded": "off"})
    _chat(store, ana, s)
    for off in ({"cite_notes": "off"}, {"cite_notes": "auto"}):
        r = turn(store, ana, "Remind me, who is coming to visit me next weekend?", settings=s.model_copy(update=off))
        assert "You told me" not in r.shown


def test_auto_means_the_embedded_demo_model_on_the_selector_path():
    from companion.settings import Settings
    from companion.turn import _grounds

    assert _grounds(Settings(model="local/smollm2-135m"), "selector")
    assert not _grounds(Settings(model="local/smollm2-135m", model_capable=True), "selector")
    assert not _grounds(Settings(model="echo"), "selector")
    assert not _grounds(Settings(model="openai/gpt-4o-mini"), "model")


def test_a_statement_still_in_the_recent_window_counts_too():
    from memory.messages import Message

    q = "Remind me, who is visiting me next weekend?"
    recent = [Message(id=1, participant="ana", ordinal=1, dayid="day1-1", sender="user",
                      text="Hi! My sister Lena is visiting next weekend.", ts="2026-01-01T10:00:00+00:00",
                      context="personal"),
              Message(id=2, participant="ana", ordinal=2, dayid="day1-2", sender="companion",
                      text="How lovely!", ts="2026-01-01T10:00:05+00:00", context="personal")]
    line, info = grounding.ground(q, "Your family is coming over.", [], recent)
    assert line == "You told me: \u201cMy sister Lena is visiting next weekend.\u201d" and info["dayid"] == "day1-1"
    assert grounding.ground("what should we cook?", "Pasta!", [], recent) == (None, {})


def test_the_name_check_cuts_a_first_clause_as_the_stream_does():
    heard = lambda w: w in {"arun", "cardiff"}
    reply = "Arun will love the visit to Cardiff, and your husband Tom can cook for everyone. Enjoy it."
    shown: list[str] = []
    check = grounding.NameCheck(heard, shown.append)
    pieces = _words_of(reply)
    for n, piece in enumerate(pieces):
        check.feed(piece)
        if piece == "and ":
            # checked and shown before its sentence ends (the backend releases it as early)
            assert "".join(shown) == "Arun will love the visit to Cardiff, "
    final = check.finish()
    # the rest of that sentence names someone never mentioned: dropped, the clause marked as cut
    assert final == "Arun will love the visit to Cardiff\u2026 Enjoy it."
    assert "Tom" not in "".join(shown) and check.dropped[0]["names"] == ["your husband", "Tom"]
    # a whole text is cut at the same places
    check = grounding.NameCheck(heard)
    assert check.text(reply) == final
    check = grounding.NameCheck(heard)
    assert check.text("Arun will love the visit to Cardiff, and so will you.") == \
        "Arun will love the visit to Cardiff, and so will you."


def _words_of(text):
    return [w + " " for w in text.split(" ")]
