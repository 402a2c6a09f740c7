"""The development folds for choosing recall defaults: LoCoMo's conversations plus the project's corpora.

    folds = load(locomo_path, cache=".cache")     # one store, every corpus ingested once
    for q in folds.queries: ctx = folds.context(q)

LoCoMo's ten conversations go into `LOCOMO_FOLDS` folds of consecutive pairs in file order (fold L1
= conversations 1-2, ...); each question is asked after its whole conversation, with LoCoMo's recent
window (3). The project's own material adds three folds, each probe asked as of its position:
O1 the gate-set training split (eval/gatesets.py: gate-mix-v1 even facts, fixture U01-U02),
O2 its validation split (odd facts, fixture U03), O3 the two hand-written held-out sets
(gate-heldout-v1 and -v2). A query's cluster (for bootstrap intervals) is its conversation or
participant. Embeddings come through a disk cache (eval/embedcache.py), so repeated runs embed
nothing twice.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eval import gatesets
from eval.embedcache import CachedEmbedder, default_folder
from eval.ingest import ingest
from eval.locomo import RECENT_WINDOW, read_locomo
from memory import embeddings, messages
from memory.context import TurnContext, TurnTime
from memory.store import Store

LOCOMO_FOLDS = 5
OWN_FOLDS = {"O1": ["training"], "O2": ["validation"], "O3": ["heldout", "heldout2"]}
CATEGORY_GROUPS = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}


@dataclass
class Query:
    fold: str
    cluster: str  # conversation (LoCoMo) or participant (own): the unit a bootstrap resamples
    participant: str
    item: str
    category: str  # "1".."5" for LoCoMo, "own" for the project's probes
    text: str
    as_of: int
    window: int
    gold: list[str]  # dayids

    @property
    def locomo(self) -> bool:
        return self.category != "own"


@dataclass
class Folds:
    store: Store
    queries: list[Query]
    names: list[str]
    warnings: list[str] = field(default_factory=list)
    embedder: CachedEmbedder | None = None
    # Another embedder's vectors, when the dense side is measured with it: participant -> (ordinals,
    # matrix); its query vectors come from `dense_embedder` (cached like the default's).
    dense: dict[str, tuple] | None = None
    dense_embedder: CachedEmbedder | None = None
    _tmp: tempfile.TemporaryDirectory | None = None

    def context(self, q: Query) -> TurnContext:
        ctx = TurnContext(store=self.store, participant=q.participant, text=q.text, context="personal",
                          as_of=q.as_of, recent=messages.read(self.store, q.participant, q.as_of, limit=q.window),
                          time=TurnTime.at(self.store, q.participant, q.as_of))
        if self.dense is not None:  # the turn's memo answers ctx.dense(text) with the other model's similarities
            ords, mat = self.dense[q.participant]
            n = int(np.searchsorted(ords, q.as_of))
            ctx.cache[("dense", q.text, q.as_of)] = (mat[:n] @ self.dense_embedder.encode_one(q.text), ords[:n].copy())
        return ctx

    def close(self) -> None:
        for e in (self.embedder, self.dense_embedder):
            if e is not None:
                e.save()
        self.store.close()
        if self._tmp is not None:
            self._tmp.cleanup()


def locomo_fold(i: int, n_conversations: int, folds: int = LOCOMO_FOLDS) -> str:
    per = max(1, -(-n_conversations // folds))
    return f"L{i // per + 1}"


def load(locomo: str | Path | None, cache: str | Path | None = None, own: bool = True, dense_embedder=None,
         dense_model: str | None = None, progress=None) -> Folds:
    """One store with every corpus; queries with their folds. `cache` is the embedding cache folder
    (default: the user's cache). The store's vectors are the default embedder's (all-MiniLM-L6-v2);
    with `dense_embedder` (named `dense_model`), every dense similarity the folds' contexts give is
    that embedder's instead, so any retriever or gate can be measured with it unchanged."""
    tmp = tempfile.TemporaryDirectory(prefix="companion-folds-")
    store = Store(Path(tmp.name), synchronous="NORMAL")
    cached = CachedEmbedder(store.vectors.embedder, cache or default_folder(), embeddings.MODEL_NAME)
    store.vectors.embedder = cached
    queries: list[Query] = []
    names: list[str] = []
    warnings: list[str] = []
    if locomo is not None:
        release = read_locomo(locomo)
        warnings += release.warnings
        pids = list(release.participants)
        for i, pid in enumerate(pids):
            part = release.participants[pid]
            if progress:
                progress(f"ingest {pid} ({len(part.conversation)} messages)")
            ingest(store, pid, part.conversation)
            fold = locomo_fold(i, len(pids))
            if fold not in names:
                names.append(fold)
            end = len(part.conversation) + 1
            for q in part.qa:
                if q.evidence_dayids:
                    queries.append(Query(fold, pid, pid, q.id, str(q.category), q.question, end, RECENT_WINDOW,
                                         list(q.evidence_dayids)))
        cached.save()
    if own:
        for fold, splits in OWN_FOLDS.items():
            names.append(fold)
            for split in splits:
                cs = gatesets.cases(split)
                gatesets.load(store, cs)
                for c in cs:
                    dayids = {m.ordinal: m.dayid for m in messages.read(store, c.pid, len(c.rows) + 1)}
                    for j, p in enumerate(c.probes):
                        if p.needs and p.gold:
                            queries.append(Query(fold, c.pid, c.pid, f"{c.pid}#{j}", "own", p.text, p.as_of,
                                                 c.window, [dayids[o] for o in p.gold]))
        cached.save()
    folds = Folds(store, queries, names, warnings, cached, _tmp=tmp)
    if dense_embedder is not None:
        other = CachedEmbedder(dense_embedder, cache or default_folder(), dense_model or type(dense_embedder).__name__)
        folds.dense, folds.dense_embedder = {}, other
        for pid in dict.fromkeys(q.participant for q in queries):
            rows = messages.read(store, pid, 10 ** 9)
            if progress:
                progress(f"embed {pid} with {other.model} ({len(rows)} messages)")
            folds.dense[pid] = (np.array([m.ordinal for m in rows], dtype=np.int64), other.encode([m.text for m in rows]))
            other.save()
        other.encode([q.text for q in queries])
        other.save()
    return folds
