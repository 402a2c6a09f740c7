"""A litellm custom provider built from one method: `generate(messages, params)` yielding text.

The base supplies litellm's four entry points (completion, streaming and their async
twins) and the usage counts, so a backend is only the part that makes text.
"""

from __future__ import annotations

import asyncio
from typing import Iterator

import litellm
from litellm.types.utils import GenericStreamingChunk


def _chunk(text: str, finished: bool = False, usage: dict | None = None) -> GenericStreamingChunk:
    return GenericStreamingChunk(
        text=text, is_finished=finished, finish_reason="stop" if finished else "",
        usage=usage, index=0, tool_use=None,
    )


def rough_tokens(text: str) -> int:
    return len(text.split())


class TextBackend(litellm.CustomLLM):
    def generate(self, model: str, messages: list[dict], params: dict) -> Iterator[str]:
        raise NotImplementedError

    def count_prompt(self, messages: list[dict]) -> int:
        return sum(rough_tokens(str(m.get("content") or "")) for m in messages)

    def _usage(self, messages, text) -> dict:
        p, c = self.count_prompt(messages), rough_tokens(text)
        return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}

    def streaming(self, model, messages, *args, optional_params=None, **kwargs):
        out = []
        for piece in self.generate(model, messages, dict(optional_params or {})):
            out.append(piece)
            yield _chunk(piece)
        yield _chunk("", finished=True, usage=self._usage(messages, "".join(out)))

    def completion(self, model, messages, *args, optional_params=None, model_response=None, **kwargs):
        text = "".join(self.generate(model, messages, dict(optional_params or {})))
        usage = self._usage(messages, text)
        resp = litellm.ModelResponse(model=model)
        resp.choices[0].message.content = text
        resp.choices[0].finish_reason = "stop"
        resp.usage = litellm.Usage(**usage)
        return resp

    async def acompletion(self, model, messages, *args, **kwargs):
        return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)

    async def astreaming(self, model, messages, *args, **kwargs):
        for chunk in await asyncio.to_thread(lambda: list(self.streaming(model, messages, *args, **kwargs))):
            yield chunk
