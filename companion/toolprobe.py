"""Does the configured model really call tools? One tiny request with one tool, once per process.

litellm cannot know whether a local `openai/<name>` server takes tools, and a server that takes
them may serve a model that never calls one: then every request the participant makes through
the tool path is silently dropped (issue 25). So before the tool path is used, the model is asked
once to call `set_reminder`; the answer decides the path:

- it called the tool: the tool path (the model proposes actions and declares IX settings);
- it answered in words, the server refused the tools, or the call failed: the rule-based path
  (the selector, whose rules propose the actions the participant's message asks for).

The result is kept per (model, base URL) for the process (a failure is asked again after
RETRY_SECONDS: the server may have been starting), recorded in every turn's trace
(`interaction.tools`) and printed by `companion serve` with the base URL.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass

from companion import gateway

VERSION = "tool-probe-v1"
TOOL = "set_reminder"
PROMPT = [
    {"role": "system", "content": "You can call tools. When the user asks you to call one, call it."},
    {"role": "user", "content": f'Call {TOOL} now with text "probe" and when "tomorrow at 9am".'},
]
RETRY_SECONDS = 300.0
TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class Probe:
    model: str
    base_url: str | None
    calls_tools: bool
    detail: str  # what happened, in words
    seconds: float
    version: str = VERSION
    at: float = 0.0  # time.monotonic() of the probe

    def public(self) -> dict:
        d = asdict(self)
        d.pop("at")
        return d


_cache: dict[tuple[str, str | None], Probe] = {}
_lock = threading.Lock()


def base_url(model: str) -> str | None:
    """Where requests for `model` go: the in-process backend, the server's base URL from the
    environment litellm reads, or None (the provider's own endpoint)."""
    from memory import registry

    model = gateway.resolve(model)
    provider = model.split("/", 1)[0]
    if provider in registry.names("model"):
        return "in-process"
    env = {"openai": ("OPENAI_API_BASE", "OPENAI_BASE_URL"), "ollama": ("OLLAMA_API_BASE",),
           "ollama_chat": ("OLLAMA_API_BASE",), "hosted_vllm": ("HOSTED_VLLM_API_BASE",)}.get(provider, ())
    for name in env:
        if os.environ.get(name):
            return os.environ[name]
    if provider in ("ollama", "ollama_chat"):
        return "http://localhost:11434"
    return None


def _tool() -> dict:
    from wrapper import tools

    return next(t for t in tools.action_tools() if t["function"]["name"] == TOOL)


def probe(model: str, timeout: float = TIMEOUT_SECONDS, fresh: bool = False) -> Probe:
    """Ask the model once to call a tool (cached per model and base URL; see the module doc)."""
    model = gateway.resolve(model)
    key = (model, base_url(model))
    with _lock:
        done = _cache.get(key)
        if done is not None and not fresh and (done.calls_tools or time.monotonic() - done.at < RETRY_SECONDS):
            return done
    t0 = time.monotonic()
    try:
        out = gateway.complete(model, PROMPT, tools=[_tool()], max_tokens=64, timeout=timeout, retries=0)
        names = [c.get("name") for c in out.tool_calls]
        if TOOL in names:
            ok, detail = True, f"called {TOOL}"
        elif names:
            ok, detail = True, f"called {', '.join(n or '?' for n in names)} (asked for {TOOL})"
        else:
            ok, detail = False, "answered in words, with no tool call"
    except gateway.ModelError as e:
        ok, detail = False, f"the request with a tool failed: {str(e)[:300]}"
    result = Probe(model=model, base_url=key[1], calls_tools=ok, detail=detail,
                   seconds=round(time.monotonic() - t0, 3), at=time.monotonic())
    with _lock:
        _cache[key] = result
    return result


@dataclass(frozen=True)
class Choice:
    path: str  # "model" (tool path) or "selector" (rule-based path)
    requested: str  # the tools setting: auto | on | off
    why: str
    probe: Probe | None = None

    def public(self) -> dict:
        return {"requested": self.requested, "path": self.path, "why": self.why,
                "probe": self.probe.public() if self.probe else None}


def choose(model: str, tools: str, timeout: float = TIMEOUT_SECONDS) -> Choice:
    """Which path acts on this model: tools off, not taken, or not working -> the rule-based path."""
    if tools == "off":
        return Choice("selector", tools, "tools are off (COMPANION_TOOLS=off): the rule-based path proposes actions")
    if tools == "auto" and not gateway.supports_tools(model):
        return Choice("selector", tools, "the model is not known to take tools (COMPANION_TOOLS=auto; set on to "
                                         "probe it): the rule-based path proposes actions")
    p = probe(model, timeout=timeout)
    if p.calls_tools:
        return Choice("model", tools, f"the model called a tool in the probe ({p.detail}): it proposes actions", p)
    return Choice("selector", tools, f"tools were asked for but the model made no tool call in the probe "
                                     f"({p.detail}): the rule-based path proposes actions", p)


def clear() -> None:
    with _lock:
        _cache.clear()
