"""Train the preference classifier from the bank, reproducibly (same bank + seed -> same weights).

    python -m memory.pref_train [--seed 7] [--out memory/data/prefs/classifier-v1.npz] [--compare-knn]
    python -m memory.pref_train --set-threshold 0.5 --chosen-on "..."   # a threshold chosen on dev sets
                                [--variants 2] [--none-corpus locomo10.json --none-count 1500]
                                [--generated memory/data/prefs/bank-generated-v1.json]

Held-out folds of the bank's own examples (`--folds`, 5 by default, stratified by setting and
seeded; a generated variant stays in its original's fold) are the validation data: each example
is scored once by a model fitted on the other folds, and a temperature for calibration and the
abstention threshold are chosen on those pooled held-out scores (never on a test set; `--folds
1` is the single stratified 80/20 split used before), then the weights are fitted again on everything, scaled by that temperature, and shipped
with the threshold, the training examples' embeddings and their negation polarity (see
memory.preferences). Prints the validation numbers it chose by.

Other voices: each example gets `--variants` generated variants (`variants`: typos, lowercase
chat register, hedges and discourse words, carrier words around it), made after the split so a
variant never crosses it. `--none-corpus` adds messages of a public corpus (LoCoMo's turns) that
state no preference about how to be helped, as "none" examples: people talking about their
lives in their own words. They are drawn seeded, skipping any the rule phrases read, and only
their weights' effect is shipped (their embeddings are not kept: the polarity check needs the
settings' examples only); the corpus is not shipped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np

from memory import preferences


def _examples(bank: dict, generated: dict | None = None) -> tuple[list[str], list[str], list[bool]]:
    """(texts, labels, generated?): the bank's settings and none, then the generated bank's
    (memory/data/prefs/bank-generated-v1.json: eval.prefgen's train families), which get no
    further variants of their own (they are variation already)."""
    texts, labels = [], []
    for s in bank["settings"]:
        label = f"{s['attribute']}={s['setting']}"
        for t in [s["description"], *s["examples"]]:
            texts.append(t)
            labels.append(label)
    for t in bank["none"]:
        texts.append(t)
        labels.append(preferences.NONE)
    n = len(texts)
    for label, examples in (generated or {}).get("settings", {}).items():
        texts += examples
        labels += [label] * len(examples)
    texts += (generated or {}).get("none", [])
    labels += [preferences.NONE] * (len(texts) - len(labels))
    return texts, labels, [i >= n for i in range(len(texts))]


_CARRIERS = (("ugh ", ""), ("ok so ", ""), ("honestly ", ""), ("hey, ", ""), ("", " pls"), ("", " thanks"),
             ("", " lol"), ("", ", I'm on my phone"), ("", ", long day"), ("tbh ", ""), ("also ", ""),
             ("", " if that's ok"), ("maybe ", ""), ("I think ", ""), ("", " from now on"), ("", " please"))


def _typo(word: str, rng) -> str:
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


def variants(text: str, n: int, rng) -> list[str]:
    """`n` generated variants of an example, in other registers: a typo or two, lowercase without
    end punctuation, a hedge or discourse word or a carrier phrase around it. Seeded by `rng`."""
    out = []
    for _ in range(n):
        t = text
        if rng.random() < 0.7:
            t = t.rstrip(".!").lower() if rng.random() < 0.8 else t.rstrip(".!")
        words = t.split()
        for _ in range(rng.choice((0, 1, 1, 2))):
            if words:
                k = rng.randrange(len(words))
                words[k] = _typo(words[k], rng)
        t = " ".join(words)
        pre, post = rng.choice(_CARRIERS)
        if rng.random() < 0.6:
            t = pre + t + post
        if t != text and t not in out:
            out.append(t)
    return out


def _corpus_turns(path: str, seed: int) -> list[str]:
    import random
    import re as _re

    data = json.loads(open(path, encoding="utf-8").read())
    texts = [t["text"] for conv in data for k, v in conv["conversation"].items() if _re.fullmatch(r"session_\d+", k)
             for t in v if 3 <= len(t["text"].split()) <= 40]
    random.Random(seed).shuffle(texts)
    return texts


def corpus_none(path: str, count: int, seed: int, held_out: int = 0) -> list[str]:
    """Turns of a LoCoMo file that the rule phrases read no preference in, drawn seeded. With
    `held_out`, instead the next `held_out` turns after the drawn ones (all of them, read by the
    rules or not), which training never sees: the false-reading rate on other people's chat."""
    from memory.extract import preference_phrases

    texts = _corpus_turns(path, seed)
    out, i = [], 0
    for i, t in enumerate(texts):
        if len(out) >= count:
            break
        if not preference_phrases(t, "personal")[1]:
            out.append(t)
    if held_out:
        seen = set(out)
        return [t for t in texts[i:] if t not in seen][:held_out]
    return out


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


def set_threshold(path: str, threshold: float, chosen_on: str, validation: dict | None = None) -> dict:
    """Ship another abstention threshold in a trained file without refitting (the weights, the
    examples and their hashes stay): one chosen on dev sets by reading them whole, through the
    gates (`python -m eval.prefheldout --thresholds ...` on eval.prefgen's dev families and the
    LoCoMo tuning slice). `validation`: the folds' row at that threshold, as the training run printed it."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"a threshold is between 0 and 1, got {threshold}")
    z = dict(np.load(path, allow_pickle=False))
    meta = json.loads(str(z["meta"]))
    meta.update({"threshold": threshold, "threshold_chosen_on": chosen_on, "folds_threshold": meta.get("folds_threshold", meta["threshold"])})
    if validation:
        meta["validation"] = validation
    z["threshold"], z["meta"] = np.float32(threshold), json.dumps(meta)
    np.savez_compressed(path, **z)
    return meta


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memory.pref_train", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--C", type=float, default=8.0, help="inverse regularization of the logistic regression")
    ap.add_argument("--min-precision", type=float, default=0.8,
                    help="the threshold is the lowest whose validation precision reaches this")
    ap.add_argument("--out", default=str(preferences.MODEL))
    ap.add_argument("--compare-knn", action="store_true", help="also report a kNN classifier on the same split")
    ap.add_argument("--variants", type=int, default=2, help="generated variants per example (0: none)")
    ap.add_argument("--none-corpus", default=None, help="a LoCoMo file: its turns stating no preference join 'none'")
    ap.add_argument("--none-count", type=int, default=1500)
    ap.add_argument("--generated", default=str(preferences.GENERATED),
                    help="generated train-family examples (eval.prefgen --bank); '' for none")
    ap.add_argument("--folds", type=int, default=5,
                    help="temperature and threshold chosen on this many held-out folds of the bank (1: one 80/20 split)")
    ap.add_argument("--set-threshold", type=float, default=None,
                    help="only ship this threshold (chosen on dev sets) in --out, without refitting")
    ap.add_argument("--chosen-on", default="", help="with --set-threshold: the dev sets it was chosen on")
    ap.add_argument("--validation", default=None, help="with --set-threshold: the folds' row at it, as JSON")
    a = ap.parse_args(argv)
    if a.set_threshold is not None:
        try:
            meta = set_threshold(a.out, a.set_threshold, a.chosen_on, json.loads(a.validation) if a.validation else None)
        except (ValueError, OSError, KeyError) as e:
            print(f"cannot set the threshold of {a.out}: {e}", file=sys.stderr)
            return 2
        print(f"{a.out}: threshold {meta['threshold']:.2f} (folds had chosen {meta['folds_threshold']:.2f}; chosen on {a.chosen_on})")
        return 0

    from sklearn.model_selection import train_test_split

    from memory import embeddings, nlp

    raw = preferences.BANK.read_bytes()
    bank = json.loads(raw)
    graw = open(a.generated, "rb").read() if a.generated else b""
    base_texts, base_labels, is_generated = _examples(bank, json.loads(graw) if graw else None)
    classes = sorted(set(base_labels))
    base_y = np.array([classes.index(lab) for lab in base_labels])
    base_idx = np.arange(len(base_texts))
    tr0, va0 = train_test_split(base_idx, test_size=0.2, random_state=a.seed, stratify=base_y)
    import random

    rng = random.Random(a.seed)
    texts, labels, part, origin = [], [], [], []
    for i in base_idx:  # originals, then their variants: each on the side of the split its original is on
        side = "va" if i in set(va0.tolist()) else "tr"
        for t in [base_texts[i], *([] if is_generated[i] else variants(base_texts[i], a.variants, rng))]:
            texts.append(t)
            labels.append(base_labels[i])
            part.append(side)
            origin.append(i)
    external = corpus_none(a.none_corpus, a.none_count, a.seed) if a.none_corpus else []
    n_kept = len(texts)  # the examples whose embeddings ship (the polarity check's neighbours)
    for t in external:
        texts.append(t)
        labels.append(preferences.NONE)
        part.append("tr" if rng.random() < 0.8 else "va")
    X = embeddings.default().encode(texts)
    neg = np.array([preferences.negated(d) for d in nlp.parse_many(texts)])
    y = np.array([classes.index(lab) for lab in labels])
    if a.folds > 1:  # held-out folds: every example is scored once by a model that never saw it
        from sklearn.model_selection import StratifiedKFold

        fold_of_base = np.zeros(len(base_texts), int)
        for f, (_, held) in enumerate(StratifiedKFold(a.folds, shuffle=True, random_state=a.seed)
                                      .split(base_idx, base_y)):
            fold_of_base[held] = f
        fold_rng = random.Random(a.seed + 1)  # a variant is in its original's fold; external none drawn
        fold = np.array([fold_of_base[i] for i in origin] + [fold_rng.randrange(a.folds) for _ in external])
        splits = [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(a.folds)]
    else:
        splits = [(np.array([i for i, p in enumerate(part) if p == "tr"]),
                   np.array([i for i, p in enumerate(part) if p == "va"]))]
    logits_by, kept_by = [], []
    for tr, va in splits:
        clf = _fit(X[tr], y[tr], a.seed, a.C)
        logits_by.append(X[va] @ clf.coef_.T + clf.intercept_)
        kept_by.append(np.array([i for i in tr if i < n_kept]))
    va_all = np.concatenate([va for _, va in splits])
    logits = np.concatenate(logits_by)
    T = _temperature(logits, y[va_all])
    p = _softmax(logits / T)
    print(f"validation ({len(splits)} held-out fold{'s' if len(splits) > 1 else ''}): {len(va_all)} examples "
          f"({sum(labels[i] == preferences.NONE for i in va_all)} none); "
          f"temperature {T:.2f}; ECE raw {_ece(_softmax(logits), y[va_all]):.3f} -> calibrated {_ece(p, y[va_all]):.3f}")

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

    gold = [labels[i] for i in va_all]
    bounds = np.cumsum([0] + [len(va) for _, va in splits])
    chosen, rows = None, []
    for th in np.arange(0.05, 0.96, 0.05):
        pred = []
        for f, ((_, va), kept) in enumerate(zip(splits, kept_by)):
            pred += predict(p[bounds[f]: bounds[f + 1]], X[va], neg[va], X[kept], y[kept], neg[kept], th)
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
            "temperature": T, "threshold": chosen[0], "validation": chosen[1], "examples": n_kept,
            "variants": a.variants, "folds": a.folds, "generated": sum(is_generated),
            "generated_sha256": hashlib.sha256(graw).hexdigest()[:16] if graw else None, "external_none": len(external),
            "external_sha256": hashlib.sha256(open(a.none_corpus, "rb").read()).hexdigest()[:16] if external else None,
            "embedding": embeddings.MODEL_NAME, "classes": len(classes)}
    np.savez_compressed(a.out, W=(final.coef_ / T).astype(np.float32), b=(final.intercept_ / T).astype(np.float32),
                        labels=np.array(classes), threshold=np.float32(chosen[0]), ex_vecs=X[:n_kept].astype(np.float16),
                        ex_label=y[:n_kept].astype(np.int16), ex_negated=neg[:n_kept], meta=json.dumps(meta))
    print(f"wrote {a.out}: {len(classes)} classes, threshold {chosen[0]:.2f}, bank sha256 {meta['bank_sha256'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
