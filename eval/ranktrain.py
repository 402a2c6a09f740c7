"""Train the learned ranker (memory/ranker.py) on the development folds, and reproduce the shipped one.

    python -m eval.ranktrain --locomo locomo10.json [--cache .cache] [--out memory/data/ranker-v1.json]

Each query of the folds (eval/devfolds.py) gives its candidates' feature rows (the retriever's own
`ranker.candidate_features`, as of the query) and labels (gold or not). Trained on LoCoMo categories
1-4 (category 5 is adversarial: its question is not answered in the conversation) and the project's
probes, the two families weighted to count the same whatever their sizes. The model is a pairwise
logistic regression (each gold candidate against up to `NEGATIVES` other candidates of the same query,
drawn seeded; no intercept) on features standardized over every training candidate: a ranking model,
so only differences within a query matter. Deterministic in its seed.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory import ranker

NEGATIVES = 20
C = 1.0


@dataclass
class Table:
    """One query's candidates: ordinals, feature rows (columns ranker.FEATURES), gold flags."""

    ordinals: np.ndarray
    X: np.ndarray
    y: np.ndarray


def tables(folds, queries=None, depth: int = ranker.DEPTH) -> list[Table]:
    from memory import messages

    out = []
    queries = folds.queries if queries is None else queries
    folds.embedder.encode([q.text for q in queries])  # one batched pass; the cache answers the rest
    by_pid: dict[str, dict[str, int]] = {}
    for q in queries:
        if q.participant not in by_pid:
            by_pid[q.participant] = {m.dayid: m.ordinal for m in messages.read(folds.store, q.participant, 10 ** 9)}
        gold = {by_pid[q.participant][d] for d in q.gold if d in by_pid[q.participant]}
        cord, X, _ = ranker.candidate_features(folds.context(q), q.text, depth)
        out.append(Table(cord, X, np.isin(cord, list(gold))))
    return out


def fit(ts: list[Table], names: list[str] = ranker.FEATURES, seed: int = 0, c: float = C,
        negatives: int = NEGATIVES, method: str = "pairwise", weights: list[float] | None = None) -> dict:
    """A ranker model (the dict memory/ranker.py loads) fitted on these queries' candidates;
    `weights`: one per query (default 1), how much its pairs count."""
    from sklearn.linear_model import LogisticRegression

    col = [ranker.FEATURES.index(n) for n in names]
    allX = np.concatenate([t.X[:, col] for t in ts if len(t.X)])
    mean, scale = allX.mean(0), allX.std(0)
    scale[scale == 0] = 1.0
    rng = random.Random(f"ranktrain:{seed}")
    if method == "pointwise":
        Z = (allX - mean) / scale
        y = np.concatenate([t.y for t in ts if len(t.X)])
        m = LogisticRegression(C=c, max_iter=3000, class_weight="balanced", random_state=seed).fit(Z, y)
        coef, intercept = m.coef_[0], float(m.intercept_[0])
    else:
        diffs, w = [], []
        for t, wt in zip(ts, weights or [1.0] * len(ts)):
            pos, neg = np.flatnonzero(t.y), np.flatnonzero(~t.y)
            if not len(pos) or not len(neg):
                continue
            Z = (t.X[:, col] - mean) / scale
            for p in pos.tolist():
                for n in rng.sample(neg.tolist(), min(negatives, len(neg))):
                    diffs.append(Z[p] - Z[n])
                    w.append(wt)
        D = np.asarray(diffs)
        Xp = np.concatenate([D, -D])
        yp = np.concatenate([np.ones(len(D)), np.zeros(len(D))])
        m = LogisticRegression(C=c, max_iter=3000, fit_intercept=False, random_state=seed).fit(
            Xp, yp, sample_weight=np.concatenate([w, w]))
        coef, intercept = m.coef_[0], 0.0
    return {"features": list(names), "mean": mean.tolist(), "scale": scale.tolist(),
            "coef": [float(x) for x in coef], "intercept": intercept, "method": method, "C": c,
            "negatives": negatives, "seed": seed, "depth": ranker.DEPTH, "rewrite": True,
            "queries": len(ts), "positives": int(sum(t.y.sum() for t in ts))}


def trainable(q) -> bool:
    """What the ranker is trained and defaults are chosen on: LoCoMo categories 1-4 and the project's probes."""
    return q.category != "5"


def family_weights(queries) -> list[float]:
    """LoCoMo and the project's probes weigh the same in training, whatever their sizes."""
    n_own = sum(q.category == "own" for q in queries)
    n_loc = len(queries) - n_own
    w_own = n_loc / n_own if n_own and n_loc else 1.0
    return [w_own if q.category == "own" else 1.0 for q in queries]


def fit_queries(ts: list[Table], queries, idx=None, seed: int = 0) -> dict:
    """fit() on the trainable queries among `idx` (default all), families weighted equally."""
    keep = [i for i in (range(len(queries)) if idx is None else idx) if trainable(queries[i])]
    if not keep:
        raise ValueError("no queries to train the ranker on (LoCoMo categories 1-4 or project probes)")
    return fit([ts[i] for i in keep], seed=seed, weights=family_weights([queries[i] for i in keep]))


def ranked(model: dict, t: Table, k: int = 10) -> list[int]:
    """The ordinals the model puts first among a query's candidates (ties newer first), as rank() does."""
    if not len(t.ordinals):
        return []
    s = ranker.scores(model, t.X)
    return t.ordinals[np.lexsort((-t.ordinals, -s))][:k].tolist()


def train(locomo: str, out: Path, cache: str | None = None, seed: int = 0, progress=None) -> dict:
    from eval import devfolds

    folds = devfolds.load(locomo, cache=cache, progress=progress)
    try:
        ts = tables(folds)
    finally:
        folds.close()
    model = fit_queries(ts, folds.queries, seed=seed)
    model.update({"version": 1, "trained_on": "eval.devfolds: LoCoMo (every conversation, categories 1-4 with "
                  "evidence) + the project's folds O1-O3, the two families weighted equally", "folds": folds.names})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(model, indent=1) + "\n")
    return model


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eval.ranktrain")
    ap.add_argument("--locomo", required=True, help="path of locomo10.json")
    ap.add_argument("--cache", default=None, help="embedding cache folder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ranker.SHIPPED))
    a = ap.parse_args(argv)
    m = train(a.locomo, Path(a.out), a.cache, a.seed)
    print(json.dumps({k: m[k] for k in ("queries", "positives", "features", "coef")}))


if __name__ == "__main__":
    main()
