"""A litellm custom provider built from one method: `generate(messages, params)` yielding text.

The base supplies litellm's four entry points (completion, streaming and their async
twins) and the usage counts, so a backend is only the part that makes text.
"""

from __future__ import annotations

import asyncio
from typing import Iterator

import litellm
from litellm.types.utils import GenericStreamingChunk


def _chunk(text: str, finished: bool = False, usage: dict | None = None, tool_use: dict | None = None,
           finish_reason: str = "stop") -> GenericStreamingChunk:
    return GenericStreamingChunk(
        text=text, is_finished=finished, finish_reason=finish_reason if finished else "",
        usage=usage, index=0, tool_use=tool_use,
    )


class ToolCall(dict):
    """Yielded by `generate` (instead of text) by a backend that calls a tool."""

    def __init__(self, name: str, arguments: str):
        super().__init__(name=name, arguments=arguments)


def rough_tokens(text: str) -> int:
    return len(text.split())


class TextBackend(litellm.CustomLLM):
    supports_tools = False  # a backend whose `generate` may yield ToolCall sets this

    def generate(self, model: str, messages: list[dict], params: dict) -> Iterator[str | ToolCall]:
        raise NotImplementedError

    def count_prompt(self, messages: list[dict]) -> int:
        return sum(rough_tokens(str(m.get("content") or "")) for m in messages)

    def _usage(self, messages, text) -> dict:
        p, c = self.count_prompt(messages), rough_tokens(text)
        return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}

    def streaming(self, model, messages, *args, optional_params=None, **kwargs):
        out, n_calls = [], 0
        for piece in self.generate(model, messages, dict(optional_params or {})):
            if isinstance(piece, ToolCall):
                yield _chunk("", tool_use={"id": f"call_{n_calls}", "type": "function", "index": n_calls,
                                           "function": {"name": piece["name"], "arguments": piece["arguments"]}})
                n_calls += 1
                continue
            out.append(piece)
            yield _chunk(piece)
        yield _chunk("", finished=True, usage=self._usage(messages, "".join(out)),
                     finish_reason="tool_calls" if n_calls else "stop")

    def completion(self, model, messages, *args, optional_params=None, model_response=None, **kwargs):
        pieces = list(self.generate(model, messages, dict(optional_params or {})))
        calls = [p for p in pieces if isinstance(p, ToolCall)]
        text = "".join(p for p in pieces if not isinstance(p, ToolCall))
        usage = self._usage(messages, text)
        resp = litellm.ModelResponse(model=model)
        resp.choices[0].message.content = text
        if calls:
            resp.choices[0].message.tool_calls = [
                {"id": f"call_{i}", "type": "function", "function": dict(c)} for i, c in enumerate(calls)]
        resp.choices[0].finish_reason = "tool_calls" if calls else "stop"
        resp.usage = litellm.Usage(**usage)
        return resp

    async def acompletion(self, model, messages, *args, **kwargs):
        return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)

    async def astreaming(self, model, messages, *args, **kwargs):
        for chunk in await asyncio.to_thread(lambda: list(self.streaming(model, messages, *args, **kwargs))):
            yield chunk
