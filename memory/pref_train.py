"""Train the preference classifier from the bank, reproducibly (same bank + seed -> same weights).

    python -m memory.pref_train [--seed 7] [--out memory/data/prefs/classifier-v1.npz] [--compare-knn]

A stratified 80/20 split of the bank (by seed) is the validation data: a temperature for
calibration and the abstention threshold are chosen there (never on a test set), then the
weights are fitted again on the whole bank, scaled by that temperature, and shipped with the
threshold, the training examples' embeddings and their negation polarity (see
memory.preferences). Prints the validation numbers it chose by.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np

from memory import preferences


def _examples(bank: dict) -> tuple[list[str], list[str]]:
    texts, labels = [], []
    for s in bank["settings"]:
        label = f"{s['attribute']}={s['setting']}"
        for t in [s["description"], *s["examples"]]:
            texts.append(t)
            labels.append(label)
    for t in bank["none"]:
        texts.append(t)
        labels.append(preferences.NONE)
    return texts, labels


def _fit(X, y, seed: int, C: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, max_iter=3000, random_state=seed).fit(X, y)


def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _temperature(logits, y_idx) -> float:
    best, best_nll = 1.0, float("inf")
    for T in np.arange(0.3, 5.01, 0.05):
        p = _softmax(logits / T)
        nll = -np.mean(np.log(p[np.arange(len(y_idx)), y_idx] + 1e-12))
        if nll < best_nll:
            best, best_nll = float(T), nll
    return best


def _ece(p, y_idx, bins: int = 10) -> float:
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    ece = 0.0
    for lo in np.linspace(0, 1, bins, endpoint=False):
        m = (conf > lo) & (conf <= lo + 1 / bins)
        if m.any():
            ece += m.mean() * abs((pred[m] == y_idx[m]).mean() - conf[m].mean())
    return float(ece)


def _prf(pred: list[str], gold: list[str]) -> dict:
    tp = sum(1 for p, g in zip(pred, gold) if p != preferences.NONE and p == g)
    stored = sum(1 for p in pred if p != preferences.NONE)
    wanted = sum(1 for g in gold if g != preferences.NONE)
    prec = tp / stored if stored else 1.0
    rec = tp / wanted if wanted else 1.0
    return {"precision": round(prec, 3), "recall": round(rec, 3),
            "f1": round(2 * prec * rec / (prec + rec), 3) if prec + rec else 0.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memory.pref_train", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--C", type=float, default=8.0, help="inverse regularization of the logistic regression")
    ap.add_argument("--min-precision", type=float, default=0.8,
                    help="the threshold is the lowest whose validation precision reaches this")
    ap.add_argument("--out", default=str(preferences.MODEL))
    ap.add_argument("--compare-knn", action="store_true", help="also report a kNN classifier on the same split")
    a = ap.parse_args(argv)

    from sklearn.model_selection import train_test_split

    from memory import embeddings, nlp

    raw = preferences.BANK.read_bytes()
    bank = json.loads(raw)
    texts, labels = _examples(bank)
    X = embeddings.default().encode(texts)
    neg = np.array([preferences.negated(d) for d in nlp.parse_many(texts)])
    classes = sorted(set(labels))
    y = np.array([classes.index(lab) for lab in labels])
    idx = np.arange(len(texts))
    tr, va = train_test_split(idx, test_size=0.2, random_state=a.seed, stratify=y)

    clf = _fit(X[tr], y[tr], a.seed, a.C)
    logits = X[va] @ clf.coef_.T + clf.intercept_
    T = _temperature(logits, y[va])
    p = _softmax(logits / T)
    print(f"validation: {len(va)} examples ({sum(labels[i] == preferences.NONE for i in va)} none); "
          f"temperature {T:.2f}; ECE raw {_ece(_softmax(logits), y[va]):.3f} -> calibrated {_ece(p, y[va]):.3f}")

    # The polarity check needs the nearest training example of the predicted class.
    def predict(pv, vecs, negs, ex_vecs, ex_y, ex_neg, threshold):
        out = []
        for row, v, n in zip(pv, vecs, negs):
            k = int(np.argmax(row))
            if classes[k] == preferences.NONE or row[k] < threshold:
                out.append(preferences.NONE)
                continue
            ids = np.flatnonzero(ex_y == k)
            near = ids[np.argsort(-(ex_vecs[ids] @ v))[: preferences.POLARITY_K]]
            out.append(classes[k] if bool(n) in set(ex_neg[near].tolist()) else preferences.NONE)
        return out

    gold = [labels[i] for i in va]
    chosen, rows = None, []
    for th in np.arange(0.05, 0.96, 0.05):
        pred = predict(p, X[va], neg[va], X[tr], y[tr], neg[tr], th)
        m = _prf(pred, gold)
        rows.append((round(float(th), 2), m))
        if chosen is None and m["precision"] >= a.min_precision:
            chosen = (round(float(th), 2), m)
    if chosen is None:
        chosen = max(rows, key=lambda r: r[1]["f1"])
    for th, m in rows:
        print(f"  threshold {th:.2f}: precision {m['precision']:.3f} recall {m['recall']:.3f} f1 {m['f1']:.3f}"
              + ("   <- chosen" if th == chosen[0] else ""))
    nopol = _prf([classes[int(np.argmax(r))] if r.max() >= chosen[0] else preferences.NONE for r in p], gold)
    print(f"  without the polarity check at {chosen[0]:.2f}: {nopol}")
    if a.compare_knn:
        from sklearn.neighbors import KNeighborsClassifier

        for k in (1, 5, 15):
            knn = KNeighborsClassifier(n_neighbors=k, metric="cosine", weights="distance").fit(X[tr], y[tr])
            pk = knn.predict_proba(X[va])
            best = max(((_prf([classes[int(np.argmax(r))] if r.max() >= th else preferences.NONE for r in pk], gold),
                         round(float(th), 2)) for th in np.arange(0.1, 0.96, 0.05)), key=lambda b: b[0]["f1"])
            print(f"  kNN k={k}: best f1 on validation {best[0]} at threshold {best[1]:.2f}")

    final = _fit(X, y, a.seed, a.C)
    meta = {"bank": "bank-v1.json", "bank_sha256": hashlib.sha256(raw).hexdigest(), "seed": a.seed, "C": a.C,
            "temperature": T, "threshold": chosen[0], "validation": chosen[1], "examples": len(texts),
            "embedding": embeddings.MODEL_NAME, "classes": len(classes)}
    np.savez_compressed(a.out, W=(final.coef_ / T).astype(np.float32), b=(final.intercept_ / T).astype(np.float32),
                        labels=np.array(classes), threshold=np.float32(chosen[0]), ex_vecs=X.astype(np.float16),
                        ex_label=y.astype(np.int16), ex_negated=neg, meta=json.dumps(meta))
    print(f"wrote {a.out}: {len(classes)} classes, threshold {chosen[0]:.2f}, bank sha256 {meta['bank_sha256'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
