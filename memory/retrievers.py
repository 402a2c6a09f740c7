"""Retrievers: given a query and an as_of bound, rank earlier messages.

Each is a small class registered by name (entry point group `companion.retrievers`) with
`search(ctx, query, k) -> list[Hit]`, best first. No retriever returns a message at or after
as_of: every one reads through an as_of-bounded index or `messages.read`. Retrievers do not
skip the recent window; the application policy deduplicates against it, and eval baselines
see the same ranking the live turn sees.
"""

from __future__ import annotations

import random as _random
from dataclasses import asdict, dataclass

import numpy as np

from memory import messages, recipes
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


def _hits(ctx: TurnContext, scored: list[tuple[int, float]]) -> list[Hit]:
    found = messages.by_ordinals(ctx.store, ctx.participant, [o for o, _ in scored], ctx.as_of)
    return [hit(found[o], s) for o, s in scored if o in found]


def _top(scores: np.ndarray, ordinals: np.ndarray, k: int, positive_only: bool) -> list[tuple[int, float]]:
    cand = np.flatnonzero(scores > 0) if positive_only else np.flatnonzero(np.isfinite(scores))
    if len(cand) > k:
        cand = cand[np.argpartition(-scores[cand], k - 1)[:k]]
    order = sorted(cand.tolist(), key=lambda i: (-scores[i], -ordinals[i]))  # ties: newer first
    return [(int(ordinals[i]), float(scores[i])) for i in order]


class Retriever:
    name = "retriever"
    version = "1"
    eval_only = False

    def __init__(self, **params):
        self.params = params

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version, "params": self.params}

    def search(self, ctx: TurnContext, query: str, k: int) -> list[Hit]:  # pragma: no cover
        raise NotImplementedError


class Recency(Retriever):
    """Newest first."""

    name = "recency"

    def search(self, ctx, query, k):
        newest = messages.read(ctx.store, ctx.participant, ctx.as_of, limit=k)
        return [hit(m, 1.0 / (1 + ctx.as_of - m.ordinal)) for m in reversed(newest)]


class BM25(Retriever):
    """BM25 over the participant's earlier messages, statistics as of the bound."""

    name = "bm25"

    def search(self, ctx, query, k):
        scores, ordinals, _ = ctx.bm25(query)
        return _hits(ctx, _top(scores, ordinals, k, positive_only=True))


class Dense(Retriever):
    """Cosine similarity of all-MiniLM-L6-v2 embeddings."""

    name = "dense"

    def search(self, ctx, query, k):
        sims, ordinals = ctx.dense(query)
        return _hits(ctx, _top(sims, ordinals, k, positive_only=False))


class Hybrid(Retriever):
    """Reciprocal-rank fusion of component retrievers, as a named recipe says."""

    name = "hybrid"
    COMPONENTS = {"bm25": BM25, "dense": Dense}

    def __init__(self, recipe: str = "balanced", **overrides):
        spec = {**recipes.get(recipe), **overrides}
        super().__init__(recipe=recipe, **spec)
        self.weights, self.rrf_k, self.depth = spec["weights"], spec["rrf_k"], spec["depth"]

    def search(self, ctx, query, k):
        fused: dict[int, float] = {}
        found: dict[int, Hit] = {}
        for name, weight in self.weights.items():
            if weight == 0:
                continue
            for rank, h in enumerate(self.COMPONENTS[name]().search(ctx, query, self.depth), start=1):
                fused[h.ordinal] = fused.get(h.ordinal, 0.0) + weight / (self.rrf_k + rank)
                found[h.ordinal] = h
        best = sorted(fused, key=lambda o: (-fused[o], -o))[:k]
        return [Hit(o, found[o].dayid, found[o].sender, found[o].text, fused[o]) for o in best]


class Oracle(Retriever):
    """Eval only: the probe's gold dayids, as given to the replay."""

    name = "oracle"
    eval_only = True
    key = "gold"

    def search(self, ctx, query, k):
        if self.key not in ctx.extra:
            raise RuntimeError(f"the {self.name} retriever is eval-only: it needs the probe's gold")
        gold = list(ctx.extra[self.key])
        found = {m.dayid: m for m in messages.by_dayids(ctx.store, ctx.participant, gold, ctx.as_of)}
        return [hit(found[d], 1.0) for d in gold if d in found][:k]


class BrokenOracle(Oracle):
    """Eval only: the gold of a different probe of the same participant (must score about 0)."""

    name = "broken_oracle"
    key = "broken_gold"


class Random(Retriever):
    """Eval only: a seeded shuffle of earlier messages (seed, participant and bound fix it)."""

    name = "random"
    eval_only = True

    def __init__(self, seed: int = 0, **params):
        super().__init__(seed=seed, **params)
        self.seed = seed

    def search(self, ctx, query, k):
        earlier = messages.read(ctx.store, ctx.participant, ctx.as_of)
        rng = _random.Random(f"{self.seed}:{ctx.participant}:{ctx.as_of}")
        picked = rng.sample(earlier, min(k, len(earlier)))
        return [hit(m, 1.0 / (i + 1)) for i, m in enumerate(picked)]
