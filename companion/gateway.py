"""Step 6: the model gateway. Every model, the embedded default included, goes through litellm.

Backends registered under the entry point group `companion.models` become litellm custom
providers (`echo/...`, `local/...`); any other litellm model string (a local server, a hosted
API) passes straight through. A call is bounded in time, retried a bounded number of times
before any text was shown, and an empty reply counts as a fault.
"""

from __future__ import annotations

import queue
import threading
import time
import types
from dataclasses import dataclass, field
from typing import Callable

import companion  # noqa: F401  (sets the no-telemetry environment before litellm loads)
from companion.backends import shaping
from memory import registry

ALIASES = {"echo": "echo/echo", "local": "local/smollm2-135m", "default": "local/smollm2-135m"}

_registered: set[str] = set()
_handlers: dict[str, object] = {}  # provider -> its handler (the in-process backends)
_lock = threading.Lock()


class ModelError(RuntimeError):
    pass


class ModelTimeout(ModelError):
    pass


@dataclass
class Completion:
    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    attempts: int
    tool_calls: list[dict] = field(default_factory=list)  # {"name", "arguments"} as the model sent them


def resolve(model: str) -> str:
    model = (model or "").strip()
    if not model:
        raise ModelError("no model configured")
    return ALIASES.get(model, model)


def _litellm():
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def ensure_backends() -> None:
    """Make every registered backend a litellm custom provider (idempotent). A backend counts as
    registered only while litellm's map still holds it: other code may reassign
    `litellm.custom_provider_map` (companion.backends.local.register, a test restoring what it
    saved), and a provider remembered here but gone from the map would fail every call to it."""
    litellm = _litellm()
    with _lock:
        names = registry.names("model")
        present = {e.get("provider") for e in (litellm.custom_provider_map or [])}
        missing = [n for n in names if n not in _registered or n not in present]
        if not missing:
            return
        current = [e for e in (litellm.custom_provider_map or []) if e["provider"] not in missing]
        for name in missing:
            handler = _handlers[name] = registry.get("model", name)()
            current.append({"provider": name, "custom_handler": handler})
            _registered.add(name)
        litellm.custom_provider_map = current
        from litellm.utils import custom_llm_setup

        custom_llm_setup()


def supports_tools(model: str) -> bool:
    """Whether the model takes tools: a registered backend says so itself, litellm knows the rest."""
    model = resolve(model)
    provider = model.split("/", 1)[0]
    if provider in registry.names("model"):
        return bool(getattr(registry.get("model", provider), "supports_tools", False))
    try:
        return bool(_litellm().supports_function_calling(model=model))
    except Exception:  # unknown to litellm's map: assume not
        return False


def prefetches(model: str) -> bool:
    """Whether `prefetch` would hand anything to this model's backend (so a caller builds the
    prompt only then)."""
    return getattr(_handlers.get(resolve(model).split("/", 1)[0]), "prefetch", None) is not None


def prefetch(model: str, messages: list[dict]) -> bool:
    """Hand the next turn's opening (system prompt and history, no new message) to an in-process
    backend that keeps a prompt cache (the embedded model: companion.backends.local), to evaluate
    while the participant reads; any other model: nothing. Returns whether one started."""
    model = resolve(model)
    handler = _handlers.get(model.split("/", 1)[0])
    fn = getattr(handler, "prefetch", None)
    if fn is None:
        return False
    try:
        return bool(fn(model.split("/", 1)[1], messages))
    except Exception:  # an optimisation: never a fault of the turn
        return False


def _stream_in_process(handler, model, messages, max_tokens, out: queue.Queue, cancel: threading.Event,
                       tools=None) -> None:
    """A registered backend runs in this process: its chunks are read directly, without
    litellm's streaming wrapper around them (measured: 150-430 ms a turn around a generator that
    yields a dozen words). Same events as `_stream`."""
    try:
        usage = None
        calls: dict[int, dict] = {}
        params = {"max_tokens": max_tokens, **({"tools": tools} if tools else {})}
        for chunk in handler.streaming(model.split("/", 1)[1], messages, optional_params=params):
            if cancel.is_set():
                return
            if chunk.get("text"):
                out.put(("text", chunk["text"]))
            tool = chunk.get("tool_use")
            if tool:
                c = calls.setdefault(tool.get("index") or 0, {"name": "", "arguments": ""})
                fn = tool.get("function") or {}
                c["name"] += fn.get("name") or ""
                c["arguments"] += fn.get("arguments") or ""
            if chunk.get("is_finished"):
                usage = chunk.get("usage")
                out.put(("finish", chunk.get("finish_reason") or "stop"))
        out.put(("calls", [calls[i] for i in sorted(calls)]))
        out.put(("done", types.SimpleNamespace(**usage) if usage else None))
    except BaseException as e:  # handed to the caller's thread
        out.put(("error", e))


def _stream(model, messages, max_tokens, out: queue.Queue, cancel: threading.Event, tools=None):
    handler = _handlers.get(model.split("/", 1)[0])
    if handler is not None and hasattr(handler, "streaming"):
        return _stream_in_process(handler, model, messages, max_tokens, out, cancel, tools)
    litellm = _litellm()
    try:
        usage = None
        calls: dict[int, dict] = {}
        extra = {"tools": tools} if tools else {}
        for chunk in litellm.completion(model=model, messages=messages, max_tokens=max_tokens, stream=True,
                                        stream_options={"include_usage": True}, **extra):
            if cancel.is_set():
                return
            if getattr(chunk, "usage", None):
                usage = chunk.usage
            if chunk.choices:
                if getattr(chunk.choices[0], "finish_reason", None):
                    out.put(("finish", chunk.choices[0].finish_reason))
                delta = chunk.choices[0].delta
                piece = delta.content
                if piece:
                    out.put(("text", piece))
                for tc in getattr(delta, "tool_calls", None) or []:
                    c = calls.setdefault(tc.index or 0, {"name": "", "arguments": ""})
                    fn = tc.function
                    if fn is not None:
                        c["name"] += fn.name or ""
                        c["arguments"] += fn.arguments or ""
        out.put(("calls", [calls[i] for i in sorted(calls)]))
        out.put(("done", usage))
    except BaseException as e:  # handed to the caller's thread
        out.put(("error", e))


def _attempt(model, messages, max_tokens, timeout, on_token, tools=None) -> tuple[str, object, list[dict]]:
    out: queue.Queue = queue.Queue()
    cancel = threading.Event()
    threading.Thread(target=_stream, args=(model, messages, max_tokens, out, cancel, tools), daemon=True).start()
    deadline = time.monotonic() + timeout
    pieces: list[str] = []
    calls: list[dict] = []
    finish = None
    while True:
        remaining = deadline - time.monotonic()
        try:
            kind, value = out.get(timeout=max(remaining, 0.001))
        except queue.Empty:
            cancel.set()
            raise ModelTimeout(f"model {model} gave no complete reply within {timeout:g} s") from None
        if kind == "text":
            pieces.append(value)
            if on_token:
                on_token(value)
        elif kind == "calls":
            calls = value
        elif kind == "finish":
            finish = value
        elif kind == "done":
            text = "".join(pieces)
            if finish == "length":
                # Cut by the token budget (the Verbosity budgets make this common): what is stored and
                # shown ends at the last whole sentence, whatever model made it.
                text = shaping.trim_cut_tail(text)
            return text, value, calls
        else:
            raise ModelError(f"model {model} failed: {type(value).__name__}: {value}") from value


def complete(
    model: str,
    messages: list[dict],
    *,
    on_token: Callable[[str], None] | None = None,
    timeout: float = 120.0,
    max_tokens: int = 200,
    retries: int = 1,
    tools: list[dict] | None = None,
) -> Completion:
    model = resolve(model)
    ensure_backends()
    attempts = 0
    while True:
        attempts += 1
        streamed = [False]

        def relay(piece: str) -> None:
            streamed[0] = True
            if on_token:
                on_token(piece)

        try:
            text, usage, calls = _attempt(model, messages, max_tokens, timeout, relay, tools)
            if not text.strip() and not calls:
                raise ModelError(f"model {model} returned an empty reply")
        except ModelError:
            # Retry only while nothing was shown: a retry after streamed text would repeat it.
            if attempts > retries or streamed[0]:
                raise
            continue
        return Completion(
            text=text,
            model=model,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            attempts=attempts,
            tool_calls=calls,
        )
