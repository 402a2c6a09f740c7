"""The turn says only what memory holds (setting `grounded`, issue 25): a question about the
participant's own past is answered from their statement (or they are told it was not said),
without the model; a sentence naming someone they never mentioned is dropped before it is shown;
the small model's prompt is the compact one. All through the real turn, traced."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from companion import prompts
from companion.settings import Settings
from companion.turn import _grounded, turn
from memory import messages

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
WEEK = ["Hi! I'm Priya. I live in Leeds and work as a physiotherapist.",
        "I live with my cat Pickle, she's a tabby.",
        "My brother Arun lives in Cardiff, he's a chef.",
        "Long day at work.", "Any ideas for dinner?", "It rained all day.", "The bus was late again."]


@pytest.fixture
def recorder(install_plugin):
    from tests.plugins.models import Recorder

    install_plugin("recorder-model", {"companion.models": {"recorder": "tests.plugins.models:Recorder",
                                                           "inventor": "tests.plugins.models:Inventor"}})
    Recorder.calls = []
    return Recorder


def _said(store, who, s, lines=WEEK):
    for i, t in enumerate(lines):
        turn(store, who, t, settings=s, at=T0 + timedelta(hours=i))


def test_a_recall_question_is_answered_from_the_statement_without_the_model(store, ana, settings, recorder):
    s = settings.model_copy(update={"model": "recorder/v1", "recent_window": 2})
    _said(store, ana, s)
    calls = len(recorder.calls)
    shown: list[str] = []
    r = turn(store, ana, "what's my cat called again?", settings=s, at=T0 + timedelta(days=2), on_token=shown.append)
    assert r.shown == "Your cat is called Pickle: you told me on Monday."
    assert "".join(shown) == r.shown  # streamed at once: no model call before it
    assert len(recorder.calls) == calls  # the model was not asked
    ra = r.trace.interaction["recall_answer"]
    assert ra["question"] == {"slot": "name", "entity": {"kind": "relation", "rel": "cat"}}
    assert ra["found"]["dayid"] == "day1-3" and ra["found"]["value"] == "Pickle"
    assert messages.read(store, ana, 10**9)[-1].text == r.shown  # stored as the reply


def test_what_was_never_said_is_not_guessed(store, ana, settings, recorder):
    s = settings.model_copy(update={"model": "recorder/v1"})
    _said(store, ana, s)
    r = turn(store, ana, "did I tell you where Marisol lives?", settings=s, at=T0 + timedelta(days=1))
    assert r.shown == "I don't think you've told me where Marisol lives."
    assert r.trace.interaction["recall_answer"]["found"] is None
    r = turn(store, ana, "where does my sister live?", settings=s, at=T0 + timedelta(days=1))
    assert r.shown == "I don't think you've told me where your sister lives."  # a brother is not a sister


def test_other_messages_and_a_capable_model_go_to_the_model(store, ana, settings, recorder):
    s = settings.model_copy(update={"model": "recorder/v1"})
    _said(store, ana, s)
    r = turn(store, ana, "what should I cook tonight?", settings=s)
    assert r.shown == "Noted." and "recall_answer" not in r.trace.interaction
    capable = s.model_copy(update={"model_capable": True})
    assert not _grounded(capable) and _grounded(s)
    r = turn(store, ana, "what's my cat called again?", settings=capable)
    assert r.shown == "Noted." and r.trace.interaction["grounded"] is False
    # selectable for any model
    assert _grounded(capable.model_copy(update={"grounded": "on"}))
    assert not _grounded(s.model_copy(update={"grounded": "off"}))


def test_a_sentence_naming_someone_never_mentioned_is_dropped_before_it_is_shown(store, ana, settings, recorder):
    s = settings.model_copy(update={"model": "inventor/v1"})
    turn(store, ana, "My brother Arun is visiting on Friday.", settings=settings.model_copy(update={"model": "echo"}))
    shown: list[str] = []
    r = turn(store, ana, "He is bringing his guitar.", settings=s, on_token=shown.append)
    # Inventor says: "Arun will love that. Your friend Sarah can join you. Your husband will cook."
    assert r.shown == "Arun will love that."
    assert "Sarah" not in "".join(shown) and "husband" not in "".join(shown)
    dropped = r.trace.interaction["postcheck"]["dropped"]
    assert [d["names"] for d in dropped] == [["your friend", "Sarah"], ["your husband"]]


def test_a_reply_with_nothing_left_is_generated_again_then_refused(store, ana, settings, install_plugin):
    install_plugin("only-inventions", {"companion.models": {"onlyinv": "tests.plugins.models:OnlyInventions"}})
    from tests.plugins.models import OnlyInventions

    OnlyInventions.calls = 0
    r = turn(store, ana, "hello there", settings=settings.model_copy(update={"model": "onlyinv/v1"}))
    assert OnlyInventions.calls == 2  # once more, then given up
    assert r.reply is None and r.shown == prompts.FALLBACK_REPLY
    assert r.trace.interaction["postcheck"]["attempts"] == 2 and "wrap" in {e.step for e in r.trace.errors}


def test_the_compact_prompt_has_facts_as_a_list_and_notes_only_for_the_past(store, ana, settings, recorder):
    from memory import extract

    s = settings.model_copy(update={"model": "recorder/v1", "gate": "always", "retriever": "bm25",
                                    "recent_window": 0})
    _said(store, ana, s)
    extract.consolidate(store, ana)
    r = turn(store, ana, "It was a long day with Arun", settings=s)
    msgs = recorder.calls[-1]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user"]  # no memory for a message about today
    assert "Leeds" not in msgs[0]["content"] and r.trace.interaction["memory_in_prompt"] is False
    opening = msgs[0]["content"]
    turn(store, ana, "do you remember the weekend with Arun?", settings=s)  # no slot: the model answers
    msgs = recorder.calls[-1]["messages"]
    assert msgs[0]["content"] == opening  # the same opening: llama.cpp reuses it
    notes = msgs[-2]
    assert notes["role"] == "system" and "- Lives in Leeds" in notes["content"] and "they said" in notes["content"]
    assert "_(scope" not in notes["content"] and "sources:" not in notes["content"]  # facts as a short list
    full = s.model_copy(update={"grounded": "off"})
    turn(store, ana, "It was a long day", settings=full)
    assert "_(scope" in recorder.calls[-1]["messages"][0]["content"]  # the full prompt keeps provenance


def test_auto_is_every_model_not_marked_capable():
    assert _grounded(Settings(model="local/smollm2-135m"))
    assert _grounded(Settings(model="openai/smollm2"))
    assert not _grounded(Settings(model="openai/gpt-4o-mini", model_capable=True))
