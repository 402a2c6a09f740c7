"""Hybrid search recipes are data: which retrievers, how they are fused, with what weights.

`fusion: rrf` (reciprocal-rank fusion): score = sum over retrievers of weight / (rrf_k + rank),
rank counted from 1 in each retriever's top `depth`.
`fusion: scores`: score = sum of weight x normalized score over every message before the bound
(BM25 relative to the query's reference score, dense cosine clipped at 0); `rewrite` drops recall
cues from the query BM25 sees; `companion_factor` scales companion messages so the participant's
own statements outrank the companion's paraphrases of them.

DEFAULT is chosen by measurement (`python -m eval.gatesets measure --split validation`): the recipe
with the best hit@5 on validation corpora it was not tuned on that is at least its best input
(BM25 alone, dense alone) on each of them. Numbers in the README ("Retrievers").
"""

from __future__ import annotations

RECIPES: dict[str, dict] = {
    "balanced": {"weights": {"bm25": 1.0, "dense": 1.0}, "rrf_k": 60, "depth": 50},
    "lexical_heavy": {"weights": {"bm25": 2.0, "dense": 1.0}, "rrf_k": 60, "depth": 50},
    "dense_heavy": {"weights": {"bm25": 1.0, "dense": 2.0}, "rrf_k": 60, "depth": 50},
    "sharp": {"weights": {"bm25": 1.0, "dense": 1.0}, "rrf_k": 10, "depth": 20},
    # Score-normalized fusion (issue #15): BM25 weights 0.0-1.0 tie on the training split; 0.2 is the
    # one of them that also ties dense on the validation fixture (0.35 loses one probe there).
    "normalized": {"fusion": "scores", "weights": {"bm25": 0.2, "dense": 1.0}, "rewrite": True,
                   "companion_factor": 0.85},
}
DEFAULT = "normalized"


def get(name: str) -> dict:
    if name not in RECIPES:
        raise KeyError(f"no hybrid recipe named {name!r}; recipes: {', '.join(sorted(RECIPES))}")
    return RECIPES[name]
