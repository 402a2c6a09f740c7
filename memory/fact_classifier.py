"""The learned road of the fact reader: does a stated clause (memory.facts.Candidate) say a
fact about the participant or someone of theirs worth keeping, or is it talk ("Is so glad",
"Had a great time")?

A logistic regression over the all-MiniLM-L6-v2 embedding of the clause in the third person,
trained by `python -m eval.fact_train` on clauses of public corpora (LoCoMo, MSC, Synthetic-
Persona-Chat: their train splits) labelled by the meaning matcher of eval.factsources, plus the
project's development set (tests/data/facts/dev.jsonl); never a test split. Shipped as weights
(memory/data/facts/classifier-v1.npz: W, b, the threshold chosen on the dev splits, and how
they were made); nothing is trained at run time. Only clauses that passed the parse's gates
(no question, negation, supposition, report or quote: memory.facts.not_stated) reach it, and
its claims go through the same verify -> merge as the rule road's, with `origin` fact-classifier.
Without the weights file the road is off (the rule road still reads).
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np


MODEL = Path(__file__).resolve().parent / "data" / "facts" / "classifier-v1.npz"
NAME = "fact-classifier"
_lock = threading.Lock()


class Model:
    def __init__(self, path: Path = MODEL):
        z = np.load(path, allow_pickle=False)
        self.w = z["w"].astype(np.float32)
        self.b = float(z["b"])
        self.threshold = float(z["threshold"])
        self.meta = json.loads(str(z["meta"]))

    def probability(self, vecs: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(vecs @ self.w + self.b)))


@lru_cache(maxsize=1)
def model() -> Model | None:
    with _lock:
        return Model() if MODEL.exists() else None


def _embedder():
    from memory import embeddings

    shared = embeddings.default()
    return shared if isinstance(shared, embeddings.Embedder) else embeddings.Embedder()


def probabilities(cands: list) -> np.ndarray:
    m = model()
    if m is None or not cands:
        return np.zeros(len(cands), np.float32)
    return m.probability(_embedder().encode([c.text for c in cands]))


def decide_many(batches: list[list]) -> list[list]:
    """The candidates (memory.facts.Candidate) of each message the classifier keeps; memory.facts
    makes them Facts (slot None: a learned claim deduplicates by its text; the rule road's slots
    are what supersede). This module imports nothing of memory.facts: no cycle."""
    m = model()
    flat = [c for b in batches for c in b]
    if m is None or not flat:
        return [[] for _ in batches]
    p = probabilities(flat)
    out, k = [], 0
    for b in batches:
        keep = []
        for c in b:
            if p[k] >= m.threshold:
                keep.append(c)
            k += 1
        out.append(keep)
    return out


def decide(cands: list) -> list:
    return decide_many([cands])[0]
