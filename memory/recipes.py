"""Hybrid search recipes are data: which retrievers, their weights, the RRF constant, the depth.

Score of a message = sum over retrievers of weight / (rrf_k + rank), rank counted from 1 in
each retriever's top `depth`. Add a recipe here (or pass one as the `hybrid` retriever's
params) to compare fusions by name.
"""

from __future__ import annotations

RECIPES: dict[str, dict] = {
    "balanced": {"weights": {"bm25": 1.0, "dense": 1.0}, "rrf_k": 60, "depth": 50},
    "lexical_heavy": {"weights": {"bm25": 2.0, "dense": 1.0}, "rrf_k": 60, "depth": 50},
    "dense_heavy": {"weights": {"bm25": 1.0, "dense": 2.0}, "rrf_k": 60, "depth": 50},
    "sharp": {"weights": {"bm25": 1.0, "dense": 1.0}, "rrf_k": 10, "depth": 20},
}


def get(name: str) -> dict:
    if name not in RECIPES:
        raise KeyError(f"no hybrid recipe named {name!r}; recipes: {', '.join(sorted(RECIPES))}")
    return RECIPES[name]
