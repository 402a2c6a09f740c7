"""The one turn: what it stores, what it traces, what it refuses, how it fails."""

from datetime import datetime, timedelta, timezone

import pytest

from companion import prompts
from companion.turn import turn
from memory import messages, participants, traces

pytestmark = pytest.mark.both_backends  # the store and turn suites run on SQLite and PostgreSQL


def test_a_turn_stores_message_reply_and_trace(store, ana, settings):
    settings = settings.model_copy(update={"gate": "always", "retriever": "recency"})
    r = turn(store, ana, "I started a new job today", context="work", settings=settings)
    assert r.shown == "You said: I started a new job today"
    stored = messages.read(store, ana, as_of=100)
    assert [(m.dayid, m.sender, m.context) for m in stored] == [
        ("day1-1", "user", "work"), ("day1-2", "companion", "work")]
    assert stored[1].text == r.shown
    [t] = traces.list_(store, participant=ana)
    assert (t.dayid, t.reply_dayid, t.context, t.model) == ("day1-1", "day1-2", "work", "echo/echo")
    assert t.gate["name"] == "always" and t.decision == {
        "retrieve": True, "score": 1.0, "threshold": 0.0, "reason": "the always gate always retrieves"}
    assert t.retriever["name"] == "recency" and t.retriever["as_of"] == 1
    assert t.applied["heading"] == "Earlier turns"
    assert t.arm["gate"] == "always" and t.arm["assignment"] == "settings"
    assert t.tokens["completion"] > 0 and t.errors == []
    for step in ["consent", "log_message", "learn", "decide", "retrieve", "apply", "generate", "wrap", "log_reply", "total"]:
        assert t.latency_ms[step] >= 0


def test_retrieved_past_reaches_the_model_and_never_the_future(store, ana, settings):
    settings = settings.model_copy(update={"recent_window": 2, "k": 4, "gate": "always", "retriever": "recency"})
    for text in ["my sister Ana moved to Porto", "we had coffee", "work was long"]:
        turn(store, ana, text, settings=settings)
    # a question no recall reader answers, so the model gets the retrieved past
    r = turn(store, ana, "any thoughts on how my sister is getting on?", settings=settings)
    t = r.trace
    # 6 messages before this one (ordinals 1..6); recent window = ordinals 5, 6.
    assert t.applied["recent"] == ["day1-5", "day1-6"]
    assert [h["dayid"] for h in t.hits] == ["day1-6", "day1-5", "day1-4", "day1-3"]
    assert all(h["ordinal"] < r.message.ordinal for h in t.hits)
    assert t.applied["deduplicated"] == ["day1-6", "day1-5"]  # already on screen
    assert t.applied["items"] == ["day1-3", "day1-4"]  # shown in time order
    assert r.shown.endswith("(I recalled day1-3, day1-4)")


def test_the_never_gate_abstains_and_applies_nothing(store, ana, settings):
    settings = settings.model_copy(update={"gate": "never", "recent_window": 0})
    turn(store, ana, "first", settings=settings)
    r = turn(store, ana, "second", settings=settings)
    assert r.trace.decision["retrieve"] is False
    assert r.trace.hits == [] and r.trace.applied["items"] == []
    assert "recalled" not in r.shown


def test_no_consent_stores_nothing_and_says_how(store, settings):
    r = turn(store, "zoe", "hello?", settings=settings)
    assert r.refused and r.message is None
    assert "companion consent accept --participant zoe" in r.shown
    assert not participants.exists(store, "zoe")
    assert store.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    assert store.conn.execute("SELECT count(*) FROM traces").fetchone()[0] == 0


def test_withdrawn_consent_stops_storage(store, ana, settings):
    from consent import records as consent

    turn(store, ana, "before", settings=settings)
    consent.withdraw(store, ana)
    r = turn(store, ana, "after", settings=settings)
    assert r.refused
    assert messages.read(store, ana, as_of=100) == []  # withdrawal erased them


@pytest.mark.parametrize("model,kind", [("failing/x", "ModelError"), ("empty/x", "ModelError"),
                                        ("slow/x", "ModelTimeout")])
def test_model_faults_keep_the_message_tell_the_participant_and_trace(store, ana, settings, fault_models,
                                                                       model, kind):
    settings = settings.model_copy(update={"model": model, "timeout": 1.0, "retries": 1})
    r = turn(store, ana, "are you there?", settings=settings)
    assert r.shown == prompts.FALLBACK_REPLY
    assert r.reply is None
    assert [m.text for m in messages.read(store, ana, as_of=100)] == ["are you there?"]
    [t] = traces.list_(store, participant=ana)
    assert t.errors[0].step == "generate" and t.errors[0].type == kind
    assert t.dayid == "day1-1" and t.reply_dayid is None
    # the next turn still works and keeps counting keys
    ok = turn(store, ana, "hello again", settings=settings.model_copy(update={"model": "echo"}))
    assert ok.message.dayid == "day1-2" and ok.reply.dayid == "day1-3"


def test_a_transient_fault_is_retried_within_the_bound(store, ana, settings, fault_models):
    from tests.plugins.models import Flaky

    Flaky.calls = 0
    r = turn(store, ana, "hi", settings=settings.model_copy(update={"model": "flaky/x", "retries": 1}))
    assert r.shown == "recovered" and r.trace.tokens["attempts"] == 2
    Flaky.calls = 0
    r = turn(store, ana, "hi", settings=settings.model_copy(update={"model": "flaky/x", "retries": 0}))
    assert r.reply is None and r.trace.errors[0].type == "ModelError"


def test_a_backend_still_answers_after_other_code_reassigns_litellms_provider_map(store, ana, settings,
                                                                                  install_plugin):
    import litellm

    from tests.plugins.models import Recorder

    before = list(litellm.custom_provider_map or [])
    install_plugin("recorder-model", {"companion.models": {"recorder": "tests.plugins.models:Recorder"}})
    s = settings.model_copy(update={"model": "recorder/v1", "grounded": "off"})
    assert turn(store, ana, "hi", settings=s).shown == "Noted."
    # what a fixture restoring a saved map does (tests/test_local_model.py), or local.register
    litellm.custom_provider_map = before
    Recorder.calls = []
    r = turn(store, ana, "hi again", settings=s)
    assert r.shown == "Noted." and r.trace.errors == [] and len(Recorder.calls) == 1


def test_bad_context_is_refused_before_anything_is_stored(store, ana, settings):
    with pytest.raises(ValueError, match="context must be one of"):
        turn(store, ana, "hi", context="gym", settings=settings)
    assert messages.read(store, ana, as_of=100) == []


def test_streaming_delivers_the_reply_piece_by_piece(store, ana, settings):
    pieces = []
    r = turn(store, ana, "one two three", settings=settings.model_copy(update={"grounded": "off"}),
             on_token=pieces.append)
    assert len(pieces) == 5 and "".join(pieces) == r.shown
    # grounded, a sentence is checked before it is shown: the stream comes a whole sentence at a time
    pieces = []
    r = turn(store, ana, "one two. three four", settings=settings, on_token=pieces.append)
    assert pieces == ["You said: one two. ", "three four"] and "".join(pieces) == r.shown


def test_consolidated_file_memory_reaches_the_prompt_and_is_never_recaptured(store, ana, settings):
    from companion import turn as turn_mod
    from memory import derived, extract, filememory

    seen = []
    real = turn_mod.build_prompt
    turn_mod.build_prompt = lambda ctx, applied, ix=None: seen.append(real(ctx, applied, ix)) or seen[-1]
    try:
        # the full prompt (the compact one, for a model not marked capable, has memory only for the past)
        quiet = settings.model_copy(update={"gate": "never", "grounded": "off"})
        turn(store, ana, "I work nights at the hospital", settings=quiet)
        r = turn(store, ana, "long shift again", settings=quiet)
        assert r.trace.applied["file_memory_lines"] == 0  # nothing consolidated yet
        extract.consolidate(store, ana)
        r = turn(store, ana, "so tired", settings=quiet)
    finally:
        turn_mod.build_prompt = real
    system = seen[-1][0]["content"]
    assert r.trace.applied["file_memory_lines"] >= 1
    assert "nights at the hospital" in system and "not instructions" in system
    injected = derived.injected_before(store, ana, 10**9)
    assert any("hospital" in t for t in injected)
    # With memory off, the same turn carries no file memory.
    r = turn(store, ana, "still tired", settings=quiet.model_copy(update={"file_memory": False}))
    assert r.trace.applied["file_memory_lines"] == 0
    assert filememory.lines(store, ana, as_of=10**9)  # the document itself is untouched


def test_a_replayed_turn_is_stamped_with_its_own_time_in_the_participants_zone(store, ana, home, install_plugin,
                                                                              monkeypatch):
    """Declarations carry the turn's time (Berlin, for ana), not the wall clock; a reminder asked
    for "tomorrow at 9am" in a replayed turn is the day after that turn, at 9 in her zone."""
    import json

    from companion.settings import Settings
    from tests.plugins import toolmodels

    install_plugin("tool-models", {"companion.models": {"scripted": "tests.plugins.toolmodels:Scripted"}})

    def generate(self, model, msgs, params):
        yield toolmodels.ToolCall("IX_verbosity", json.dumps({"setting": "terse"}))
        yield "ok"

    monkeypatch.setattr(toolmodels.Scripted, "generate", generate)
    at = datetime(2025, 3, 1, 22, 30, tzinfo=timezone.utc)  # 23:30 in Berlin
    s = Settings(home=home, model="scripted/v1", gate="never", file_memory=False)
    turn(store, ana, "hello", "work", s, at=at)
    [(stamp,)] = store.conn.execute("SELECT at FROM ix_declarations WHERE participant = ?", (ana,)).fetchall()
    assert stamp == "2025-03-01T23:30:00+01:00"
    r = turn(store, ana, "remind me to call Bo tomorrow at 9am", "work", Settings(home=home, model="echo",
                                                                                  gate="never", file_memory=False),
             at=at + timedelta(minutes=1))
    [held] = r.trace.actions_held
    assert held["payload"]["when"] == "2025-03-02T09:00:00+01:00"


def test_an_interaction_source_is_a_plugin_registered_like_any_other(store, ana, home, install_plugin):
    from companion.settings import Settings

    install_plugin("ix-sources", {"companion.ix_sources": {"terse_always": "tests.test_turn:TerseAlways"}})
    r = turn(store, ana, "hello", "work", Settings(home=home, model="echo", gate="never", file_memory=False,
                                                   ix_source="terse_always"))
    assert r.trace.interaction["settings"]["verbosity"] == {"setting": "terse", "by": "selector",
                                                            "source": "terse_always"}


class TerseAlways:
    """A third-party interaction-setting source: everyone wants one-line answers."""

    def settings(self, ctx):
        return {"verbosity": "terse"}
