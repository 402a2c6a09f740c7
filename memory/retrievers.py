"""Retrievers: given a query and an as_of bound, rank earlier messages.

Each is a small class registered by name (entry point group `companion.retrievers`) with
`search(ctx, query, k) -> list[Hit]`. No retriever may return a message at or after as_of.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from memory import messages
from memory.context import TurnContext


@dataclass(frozen=True)
class Hit:
    ordinal: int
    dayid: str
    sender: str
    text: str
    score: float

    def public(self, snippet: int = 160) -> dict:
        d = asdict(self)
        d["text"] = self.text if len(self.text) <= snippet else self.text[: snippet - 1] + "…"
        return d


def hit(m: messages.Message, score: float) -> Hit:
    return Hit(m.ordinal, m.dayid, m.sender, m.text, float(score))


class Retriever:
    name = "retriever"
    version = "1"

    def __init__(self, **params):
        self.params = params

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version, "params": self.params}

    def search(self, ctx: TurnContext, query: str, k: int) -> list[Hit]:  # pragma: no cover
        raise NotImplementedError


class Recency(Retriever):
    """Newest first, skipping the recent window (it is in the prompt anyway)."""

    name = "recency"

    def search(self, ctx, query, k):
        skip = {m.ordinal for m in ctx.recent}
        older = messages.read(ctx.store, ctx.participant, ctx.as_of, limit=k + len(skip))
        ranked = [m for m in reversed(older) if m.ordinal not in skip][:k]
        return [hit(m, 1.0 / (1 + ctx.as_of - m.ordinal)) for m in ranked]
