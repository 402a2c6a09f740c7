"""Retrievers: given a query and an as_of bound, rank earlier messages.

Each is a small class registered by name (entry point group `companion.retrievers`) with
`search(ctx, query, k) -> list[Hit]`, best first. No retriever returns a message at or after
as_of: every one reads through an as_of-bounded index or `messages.read`. Retrievers do not
skip the recent window; the application policy deduplicates against it, and eval baselines
see the same ranking the live turn sees.
"""

from __future__ import annotations

import random as _random
from dataclasses import dataclass

import numpy as np

from memory import features, messages, ranker, recipes
from memory.context import TurnContext


@dataclass(frozen=True)
class Hit:
    ordinal: int
    dayid: str
    sender: str
    text: str
    score: float

    def public(self, snippet: int = 160) -> dict:
        # Built by hand: dataclasses.asdict deep-copies, which showed up in replay profiles.
        text = self.text if len(self.text) <= snippet else self.text[: snippet - 1] + "…"
        return {"ordinal": self.ordinal, "dayid": self.dayid, "sender": self.sender, "text": text,
                "score": self.score}


def hit(m: messages.Message, score: float) -> Hit:
    return Hit(m.ordinal, m.dayid, m.sender, m.text, float(score))


def _hits(ctx: TurnContext, scored: list[tuple[int, float]]) -> list[Hit]:
    found = messages.by_ordinals(ctx.store, ctx.participant, [o for o, _ in scored], ctx.as_of)
    return [hit(found[o], s) for o, s in scored if o in found]


def _top(scores: np.ndarray, ordinals: np.ndarray, k: int, positive_only: bool) -> list[tuple[int, float]]:
    """The k best (ordinal, score) pairs, best first; ties: newer first."""
    if positive_only:
        cand = np.flatnonzero(scores > 0)
        vals = scores[cand]
    else:
        finite = np.isfinite(scores)
        if finite.all():  # the usual case: no copy of the whole array
            cand, vals = None, scores
        else:
            cand = np.flatnonzero(finite)
            vals = scores[cand]
    if len(vals) > k:
        pick = np.argpartition(-vals, k - 1)[:k]
        cand = pick if cand is None else cand[pick]
    elif cand is None:
        cand = np.arange(len(vals))
    s, o = scores[cand], ordinals[cand]
    order = np.lexsort((-o, -s))  # by score descending, then ordinal descending
    return list(zip(o[order].tolist(), s[order].tolist()))


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

    def scored(self, ctx, query, k) -> list[tuple[int, float]]:
        """The ranking as (ordinal, score) pairs, before the messages are read."""
        scores, ordinals, _ = ctx.bm25(query)
        return _top(scores, ordinals, k, positive_only=True)

    def search(self, ctx, query, k):
        return _hits(ctx, self.scored(ctx, query, k))


class Dense(Retriever):
    """Cosine similarity of all-MiniLM-L6-v2 embeddings."""

    name = "dense"

    def scored(self, ctx, query, k) -> list[tuple[int, float]]:
        sims, ordinals = ctx.dense(query)
        return _top(sims, ordinals, k, positive_only=False)

    def search(self, ctx, query, k):
        return _hits(ctx, self.scored(ctx, query, k))


class Hybrid(Retriever):
    """Fusion of component retrievers, as a named recipe (memory/recipes.py) says: reciprocal-rank
    fusion (`fusion: rrf`), a weighted sum of normalized scores (`fusion: scores`), or a learned
    linear ranker over features of each candidate (`fusion: learned`, memory/ranker.py, its
    weights a data file named by `model`)."""

    name = "hybrid"
    version = "3"
    COMPONENTS = {"bm25": BM25, "dense": Dense}
    FUSIONS = ("rrf", "scores", "learned")

    def __init__(self, recipe: str = recipes.DEFAULT, **overrides):
        spec = {**recipes.get(recipe), **overrides}
        super().__init__(recipe=recipe, **spec)
        self.fusion = spec.get("fusion", "rrf")
        if self.fusion not in self.FUSIONS:
            raise ValueError(f"hybrid recipe {recipe!r}: fusion must be one of {', '.join(self.FUSIONS)}, "
                             f"not {self.fusion!r}")
        self.weights, self.depth = spec.get("weights", {}), spec.get("depth", 50)
        self.rrf_k = spec.get("rrf_k", 60)
        self.companion_factor = float(spec.get("companion_factor", 1.0))
        self.rewrite = bool(spec.get("rewrite", False))
        self.model_path = None
        if self.fusion == "learned":
            self.model_path = recipes.model_path(spec.get("model"))
            self.params["model_version"] = ranker.load(self.model_path).get("version")
        unknown = set(self.weights) - set(self.COMPONENTS)
        if unknown:
            raise ValueError(f"hybrid recipe {recipe!r}: unknown components {sorted(unknown)}")

    def search(self, ctx, query, k):
        if self.fusion == "scores":
            return self._search_scores(ctx, query, k)
        if self.fusion == "learned":
            ranked = ranker.rank(ctx, query, k, ranker.load(self.model_path), self.depth)
            return [Hit(o, row[3], row[0], row[1], s) for o, s, row in ranked]
        return self._search_rrf(ctx, query, k)

    def _search_scores(self, ctx, query, k):
        """Weighted sum over every message before as_of of BM25 relative to the query's reference
        score (1.0 = each query term once, at average length) and dense cosine (clipped at 0): both
        mean the same whatever the query, so one weight holds across queries, and a message one
        component misses still keeps its other score (RRF gives it nothing there)."""
        lexical = features.rewrite_for_lexical(query) if self.rewrite else query
        total, ordinals = None, None
        wb, wd = self.weights.get("bm25", 0.0), self.weights.get("dense", 0.0)
        if wb:
            scores, ordinals, ref = ctx.bm25(lexical)
            total = wb * (scores / ref if ref > 0 else scores)
        if wd:
            sims, dord = ctx.dense(query)
            part = wd * np.clip(sims, 0.0, None)
            if total is None:
                total, ordinals = part, dord
            elif len(dord) == len(ordinals) and np.array_equal(dord, ordinals):
                total = total + part
            else:  # the two indexes disagree on which messages exist (a delete mid-turn): align
                pos = np.searchsorted(ordinals, dord)
                ok = (pos < len(ordinals)) & (ordinals[np.minimum(pos, len(ordinals) - 1)] == dord)
                total = total.copy()
                total[pos[ok]] += part[ok]
        if total is None or len(total) == 0:
            return []
        # Read a few more than k: the participant's own statements outrank the companion's
        # paraphrases of them (companion_factor < 1), which needs each candidate's sender.
        want = k if self.companion_factor == 1.0 else max(3 * k, k + 10)
        top = _top(total, ordinals, want, positive_only=True)
        rows = messages.by_ordinals(ctx.store, ctx.participant, [o for o, _ in top], ctx.as_of)
        scored = [(o, s * (self.companion_factor if rows[o].sender == "companion" else 1.0))
                  for o, s in top if o in rows]
        scored.sort(key=lambda t: (-t[1], -t[0]))
        return [hit(rows[o], s) for o, s in scored[:k]]

    def _search_rrf(self, ctx, query, k):
        # The same result as fusing each component's search(), with less reading: rank
        # first, ask the log which ranked messages it still has (a message missing from the
        # log loses its place in a ranking, as in search()), fuse, then read only the best k.
        rankings: list[tuple[float, list[int]]] = []
        known: dict[int, tuple[str, str, str]] = {}  # from components that return hits
        for name, weight in self.weights.items():
            if weight == 0:
                continue
            component = self.COMPONENTS[name]()
            q = features.rewrite_for_lexical(query) if self.rewrite and name == "bm25" else query
            if hasattr(component, "scored"):
                rankings.append((weight, [o for o, _ in component.scored(ctx, q, self.depth)]))
            else:
                hits = component.search(ctx, query, self.depth)
                known.update((h.ordinal, (h.dayid, h.sender, h.text)) for h in hits)
                rankings.append((weight, [h.ordinal for h in hits]))
        ranked = {o for _, ranking in rankings for o in ranking} - known.keys()
        present = _present(ctx, ranked) | known.keys()
        while True:
            fused: dict[int, float] = {}
            for weight, ranking in rankings:
                rank = 0
                for o in ranking:
                    if o in present:
                        rank += 1
                        fused[o] = fused.get(o, 0.0) + weight / (self.rrf_k + rank)
            best = sorted(fused, key=lambda o: (-fused[o], -o))[:k]
            rows = messages.by_ordinals(ctx.store, ctx.participant, [o for o in best if o not in known], ctx.as_of)
            gone = {o for o in best if o not in known and o not in rows}
            if not gone:
                break
            present = (_present(ctx, ranked) | known.keys()) - gone  # deleted meanwhile: rank again
        about = {**known, **{o: (m.dayid, m.sender, m.text) for o, m in rows.items()}}
        return [Hit(o, *about[o], fused[o]) for o in best]


def _present(ctx: TurnContext, ordinals: set[int]) -> set[int]:
    """Which of these ordinals the log has before as_of (from its index alone, no rows read).

    Usually all of them: a count answers that; only when some are missing are they listed.
    """
    want = sorted(o for o in ordinals if o < ctx.as_of)
    out: set[int] = set()
    conn = ctx.store.conn
    for i in range(0, len(want), 500):
        chunk = want[i : i + 500]
        where = f"WHERE participant=? AND ordinal IN ({','.join('?' * len(chunk))})"
        args = (ctx.participant, *chunk)
        if conn.execute(f"SELECT count(*) FROM messages {where}", args).fetchone()[0] == len(chunk):
            out.update(chunk)
        else:
            out.update(r[0] for r in conn.execute(f"SELECT ordinal FROM messages {where}", args))
    return out


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
