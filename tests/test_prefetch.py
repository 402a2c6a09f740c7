"""The next turn's opening is evaluated while the participant reads (companion.turn.prefetch_next,
gateway.prefetch, companion.backends.local._Engine.prefetch): what is handed over is exactly the
start of the prompt the next turn sends, whatever the turn in between did (a model reply, a recall
answer without the model); on the embedded model the next turn then evaluates only its message,
counted in llama.cpp's own prompt tokens (not timed); a real request always comes first."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")

import pytest  # noqa: E402

from companion import gateway  # noqa: E402
from companion.turn import turn  # noqa: E402

SCRIPT = [
    "Hi, I'm Priya and I live in Leeds with my cat Pickle.",
    "Work was long today, three patients in a row.",
    "what's my cat called again?",  # answered from memory, no model call
    "I think I'll cook pasta tonight, any tips?",
    "please keep your answers short",  # a learned preference changes the opening: a miss is fine
    "The weekend is finally here.",
]


def test_what_is_prefetched_is_the_start_of_the_next_prompt(store, ana, settings, monkeypatch):
    sent, fetched = [], []
    real = gateway.complete

    def complete(model, messages, **kw):
        if kw.get("max_tokens", 0) > 8:  # the reply, not a gate's yes/no
            sent.append((len(fetched), [dict(m) for m in messages]))
        return real(model, messages, **kw)

    monkeypatch.setattr(gateway, "complete", complete)
    monkeypatch.setattr(gateway, "prefetches", lambda model: True)  # stands in for a backend with a prompt cache
    monkeypatch.setattr(gateway, "prefetch", lambda model, messages: fetched.append([dict(m) for m in messages]))
    for text in SCRIPT:
        turn(store, ana, text, settings=settings)
    assert len(fetched) == len(SCRIPT)  # after every turn that stored a reply
    checked = set()
    for before, prompt in sent:
        if before == 0:
            continue
        opening = fetched[before - 1]
        assert prompt[-1] == {"role": "user", "content": SCRIPT[before]}
        if prompt[0] == opening[0]:  # same system prompt: the whole history must match too
            assert prompt[:len(opening)] == opening
            assert len(opening) == len(prompt) - 1 or prompt[len(opening)]["role"] == "system"  # notes may follow
            checked.add(before)
        else:  # only a preference learned from this very message changes the system prompt
            assert SCRIPT[before] == "please keep your answers short"
    assert {1, 3} <= checked  # 3: the turn after the answer the model did not write
    assert any("Pickle" in m["content"] for m in fetched[2] if m["role"] == "assistant")  # the recall answer


@pytest.mark.model
def test_the_next_turn_evaluates_only_its_message_after_a_prefetch():
    from companion.backends import local

    engine = local._get_engine(local.DEFAULT_MODEL)
    history = [{"role": "system", "content": "You are a friendly companion. Answer briefly."},
               {"role": "user", "content": "Hello, I am Priya and I live in Leeds with my tabby cat."},
               {"role": "assistant", "content": "Hello Priya! Leeds sounds lovely, and a tabby cat is great company."}]
    question = {"role": "user", "content": "What should I cook tonight?"}
    other = [{"role": "system", "content": "Something else entirely, to empty the cache of this prefix."},
             {"role": "user", "content": "Count to three."}]
    engine.generate(other, max_tokens=4)
    engine.generate(history + [question], max_tokens=4)
    cold = dict(engine.last_timings)
    engine.generate(other, max_tokens=4)
    anchor, last = engine._anchor, dict(engine.last_timings)
    assert engine.prefetch(history)
    engine.wait_prefetch()
    assert engine.prefetch_timings.get("prompt_n", 0) > 20
    assert (engine._anchor, engine.last_timings) == (anchor, last)  # a prefetch leaves the request state alone
    engine.generate(history + [question], max_tokens=4)
    warm = dict(engine.last_timings)
    assert warm["prompt_n"] < cold["prompt_n"] - 20  # the history came from the cache
    assert warm["prompt_n"] <= 20  # about the question and the template around it


@pytest.mark.model
def test_a_prefetch_never_starts_while_a_request_runs():
    from companion.backends import local

    engine = local._get_engine(local.DEFAULT_MODEL)
    with engine._lock:
        assert not engine.prefetch([{"role": "user", "content": "hello"}])
    old = local.PREFETCH
    local.PREFETCH = False
    try:
        assert not engine.prefetch([{"role": "user", "content": "hello"}])
    finally:
        local.PREFETCH = old
