"""The learned road of the fact reader: does a stated clause (memory.facts.Candidate) say a
fact about the participant or someone of theirs worth keeping, or is it talk ("Is so glad",
"Had a great time")?

A logistic regression over the all-MiniLM-L6-v2 embedding of the clause in the third person,
trained by `python -m eval.fact_train` on clauses of public corpora (LoCoMo, MSC, Synthetic-
Persona-Chat: their train splits) labelled by the meaning matcher of eval.factsources, plus the
project's development set (tests/data/facts/dev.jsonl); never a test split. Shipped as weights
(memory/data/facts/classifier-v2.npz: W, b, the threshold chosen on the dev splits, and how
they were made); nothing is trained at run time. Only clauses that passed the parse's gates
(no question, negation, supposition, report or quote: memory.facts.not_stated) reach it, and
then only from a sentence with no sign of any of those nor of a state that ended (`plain`); its claims go through the same verify -> merge as the rule road's, with `origin` fact-classifier.
Without the weights file the road is off (the rule road still reads).

Round 5 (the clause fallback): the road also sees the items of verb-less sentences no rule reads
("Gluten intolerant, two kids" -> the candidate "Gluten intolerant"; memory.facts._fragments);
its threshold is the one chosen on held-out folds of the dev parts (FALLBACK, `python -m
eval.factsources folds`), and a kept clause about the participant gets its kind from a small
softmax over the same embedding (KINDS, `python -m eval.fact_train kinds`), or "other".
"""

from __future__ import annotations

import json
import re
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np


MODEL = Path(__file__).resolve().parent / "data" / "facts" / "classifier-v2.npz"
NAME = "fact-classifier"
_lock = threading.Lock()


# The clause fallback (issue 27, round 5): the gate threshold chosen on held-out folds of the dev
# parts of the external sources and the project's dev set (`python -m eval.factsources folds`),
# replacing the weights' own; and the kind classifier that names a kept clause's category.
FALLBACK = Path(__file__).resolve().parent / "data" / "facts" / "fallback-v1.json"
KINDS = Path(__file__).resolve().parent / "data" / "facts" / "kinds-v1.npz"


class Model:
    def __init__(self, path: Path = MODEL):
        z = np.load(path, allow_pickle=False)
        self.w = z["w"].astype(np.float32)
        self.b = float(z["b"])
        self.threshold = float(z["threshold"])
        self.meta = json.loads(str(z["meta"]))
        if path == MODEL and FALLBACK.exists():
            self.threshold = float(json.loads(FALLBACK.read_text(encoding="utf-8"))["threshold"])

    def probability(self, vecs: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(vecs @ self.w + self.b)))


@lru_cache(maxsize=1)
def model() -> Model | None:
    with _lock:
        return Model() if MODEL.exists() else None


# The second gate, over the candidate's whole sentence, for the learned road only: the parse's gates
# (memory.facts.not_stated) read the clause's own verb, and a parse that hangs a negation, a
# condition or a report elsewhere lets it through; a classifier over an embedding does not tell
# "lives in Porto" from "doesn't live in Porto". So any sign in the sentence that it is not a
# plain present statement of the speaker's keeps the learned road out (the rule road, which reads
# the structure, still may): negation, supposition or wish, a question, someone else's words, a
# state that ended, a joke marker.
_NOT_PLAIN = re.compile(
    r"n't\b|\b(?:not|no|never|nobody|nothing|none|neither|nor|without|hardly|barely|cannot|"
    r"if|unless|whether|would|could|might|should|may|maybe|perhaps|possibly|probably|wish|imagine|suppose|"
    r"hopefully|hope|dream|someday|wanna|'d|"
    r"said|says|say|told|tells|tell|claims?|claimed|thinks?|thought|reckons?|heard|hears|texted|apparently|"
    r"supposedly|allegedly|according|"
    r"used to|anymore|any more|longer|formerly|ex|"
    r"jk|kidding|joking|lol|lmao|rofl|haha\w*|hehe\w*|basically|literally|pretend|like a)\b|\?|[\"\u201c\u201d]", re.I)


def plain(sentence: str) -> bool:
    """Whether a sentence carries no sign of being other than a plain statement (see _NOT_PLAIN)."""
    return not _NOT_PLAIN.search(sentence.replace("\u2019", "'"))


def admits(cand) -> bool:
    """The second gate for one candidate (memory.facts.Candidate): `plain` over its clause's scope
    (memory.facts.clause_scope: the clause and what governs it), not the whole sentence."""
    return plain(getattr(cand, "scope", "") or getattr(cand, "sentence", "") or cand.evidence)


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
    batches = [[c for c in b if admits(c)] for b in batches]
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


class Kinds:
    """The kind classifier: a softmax over the MiniLM embedding of a kept clause's text, trained
    by `python -m eval.fact_train --kinds` on the categories the rule road gives its own claims
    (train splits only). Below its `threshold` (the top probability) the kind is "other"."""

    def __init__(self, path: Path = KINDS):
        z = np.load(path, allow_pickle=False)
        self.w = z["w"].astype(np.float32)
        self.b = z["b"].astype(np.float32)
        self.labels = [str(x) for x in z["labels"]]
        self.threshold = float(z["threshold"])
        self.meta = json.loads(str(z["meta"]))

    def predict(self, vecs: np.ndarray) -> list[str]:
        z = vecs @ self.w + self.b
        z = np.exp(z - z.max(axis=1, keepdims=True))
        p = z / z.sum(axis=1, keepdims=True)
        return [self.labels[int(k)] if p[i, k] >= self.threshold else "other"
                for i, k in enumerate(p.argmax(axis=1))]


@lru_cache(maxsize=1)
def kinds() -> Kinds | None:
    with _lock:
        return Kinds() if KINDS.exists() else None


def kind_of(texts: list[str]) -> list[str]:
    """The category of each kept clause ("work", "health", "family" ...), or "other" (no kinds
    file, or no kind sure enough)."""
    k = kinds()
    if k is None or not texts:
        return ["other"] * len(texts)
    return k.predict(_embedder().encode(texts))
