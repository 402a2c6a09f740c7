"""What a gate, a retriever and a policy see of a turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from memory.messages import Message
from memory.store import Store


@dataclass
class TurnContext:
    store: Store
    participant: str
    text: str
    context: str
    as_of: int  # sees ordinals < as_of: the turn's own message and everything later are hidden
    recent: list[Message] = field(default_factory=list)  # the recent window, oldest first
    ask_model: Callable[[list[dict]], str] | None = None  # for model-judged gates
    extra: dict = field(default_factory=dict)  # eval-only facts (gold for oracle gates)
    cache: dict = field(default_factory=dict)  # per-turn memo: a gate and a retriever share scores

    @property
    def recent_ordinals(self) -> set[int]:
        return {m.ordinal for m in self.recent}

    def bm25(self, query: str):
        """BM25 scores of every message before as_of (computed once per turn and query)."""
        key = ("bm25", query, self.as_of)
        if key not in self.cache:
            self.cache[key] = self.store.bm25.scores(self.participant, query, self.as_of)
        return self.cache[key]

    def dense(self, query: str):
        """Cosine similarities of every message before as_of to the query."""
        key = ("dense", query, self.as_of)
        if key not in self.cache:
            vec = self.store.vectors.embedder.encode_one(query)
            self.cache[key] = self.store.vectors.similarities(self.participant, vec, self.as_of)
        return self.cache[key]
