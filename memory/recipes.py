"""Hybrid search recipes are data: which retrievers, how they are fused, with what weights.

`fusion: rrf` (reciprocal-rank fusion): score = sum over retrievers of weight / (rrf_k + rank),
rank counted from 1 in each retriever's top `depth`.
`fusion: scores`: score = sum of weight x normalized score over every message before the bound
(BM25 relative to the query's reference score, dense cosine clipped at 0); `rewrite` drops recall
cues from the query BM25 sees; `companion_factor` scales companion messages so the participant's
own statements outrank the companion's paraphrases of them.
`fusion: learned`: a linear ranker over features of each candidate (memory/ranker.py), its weights
the data file `model` (in memory/data/) that `python -m eval.ranktrain` writes.

DEFAULT is chosen by conversation-level cross-validation (`companion bench locomo PATH`, issue 24):
the system with the best out-of-fold hit@5 over LoCoMo's conversations and the project's corpora,
which must not fall below its best input (BM25 alone, dense alone) on any held-out fold. Numbers in
the README ("The default gate and retriever, and how they were chosen").
"""

from __future__ import annotations

from pathlib import Path

RECIPES: dict[str, dict] = {
    "balanced": {"weights": {"bm25": 1.0, "dense": 1.0}, "rrf_k": 60, "depth": 50},
    "lexical_heavy": {"weights": {"bm25": 2.0, "dense": 1.0}, "rrf_k": 60, "depth": 50},
    "dense_heavy": {"weights": {"bm25": 1.0, "dense": 2.0}, "rrf_k": 60, "depth": 50},
    "sharp": {"weights": {"bm25": 1.0, "dense": 1.0}, "rrf_k": 10, "depth": 20},
    # Score-normalized fusion (issue #15): BM25 weights 0.0-1.0 tie on the training split; 0.2 is the
    # one of them that also ties dense on the validation fixture (0.35 loses one probe there).
    "normalized": {"fusion": "scores", "weights": {"bm25": 0.2, "dense": 1.0}, "rewrite": True,
                   "companion_factor": 0.85},
    # Learned fusion (issue 24): a linear ranker over candidate features (memory/ranker.py), its
    # weights trained by `python -m eval.ranktrain` on the development folds.
    "learned": {"fusion": "learned", "model": "ranker-v1.json", "depth": 50},
}
DEFAULT = "learned"
DATA = Path(__file__).parent / "data"


def model_path(name: str | None) -> str:
    """A learned recipe's weights: a file name in memory/data/, or a path."""
    if not name:
        raise ValueError("a learned hybrid recipe needs `model` (a ranker weights file)")
    p = Path(name)
    return str(p if p.is_absolute() or p.exists() else DATA / name)


def get(name: str) -> dict:
    if name not in RECIPES:
        raise KeyError(f"no hybrid recipe named {name!r}; recipes: {', '.join(sorted(RECIPES))}")
    return RECIPES[name]
