"""The two small models beside the preference classifier (issue 27, round 5), trained on eval.prefgen's
train families and thresholded on its dev families (never on eval/data/prefs-heldout-v1.json or a suite):

    python -m eval.prefmodels --stance [PATH]   # against / for what a clause names (memory/data/prefs/stance-v1.npz)
    python -m eval.prefmodels --scope [PATH]    # the context a statement's topic is for (scope-model-v1.npz)

Both read the same all-MiniLM-L6-v2 clause embeddings as the classifier; memory.preferences uses them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np

from memory import preferences


def train_stance(out: str, seed: int = 11, C: float = 4.0) -> dict:
    """The stance model (issue 27, round 5): does a clause speak AGAINST the behaviour its words
    name (a complaint, "too X", sarcasm, a take-back: "you can stop trying to keep it short") or
    FOR it? A logistic regression over the same MiniLM clause embeddings, trained on eval.prefgen's
    train families (stance_examples) and its threshold chosen on the dev families (new frames, new
    cores): of a grid, the one with the highest dev precision of "against" (fail safe: a wrong
    "against" turns a reading around). Shipped with the
    stance of every example the classifier keeps (ex_against), so memory.preferences can check a
    reading's stance against its setting's nearest examples, as it checks negation."""
    from eval import prefgen

    m = preferences.Model()
    emb = preferences._embedder()
    tr_t, tr_y, _ = prefgen.stance_examples(seed, "train")
    dv_t, dv_y, dv_f = prefgen.stance_examples(seed, "dev")
    Xtr, Xdv = emb.encode(tr_t), emb.encode(dv_t)
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(C=C, max_iter=3000, random_state=seed, class_weight="balanced").fit(Xtr, tr_y)
    pdv = fit.predict_proba(Xdv)[:, 1]
    ydv = np.array(dv_y)
    rows = []
    for th in (0.5, 0.6, 0.7, 0.8, 0.9):
        pred = pdv >= th
        tp = int((pred & (ydv == 1)).sum())
        prec = tp / max(1, int(pred.sum()))
        rec = tp / max(1, int((ydv == 1).sum()))
        rows.append((th, round(prec, 3), round(rec, 3)))
    chosen = max(rows, key=lambda r: (r[1], -r[0]))  # the most precise; of equals the lowest

    meta = {"seed": seed, "C": C, "train": len(tr_t), "train_against": int(sum(tr_y)), "dev": len(dv_t),
            "dev_against": int(sum(dv_y)), "dev_rows": rows, "threshold": chosen[0],
            "classifier_examples": int(len(m.ex_vecs)), "classifier_sha": _vec_sha(m.ex_vecs),
            "families": "eval.prefgen stance_examples (train), threshold on its dev families"}
    np.savez_compressed(out, w=fit.coef_[0].astype(np.float32), b=np.float32(fit.intercept_[0]),
                        threshold=np.float32(chosen[0]), meta=json.dumps(meta))
    return meta


def train_scope(out: str, seed: int = 11, C: float = 4.0) -> dict:
    """The scope model (issue 27, round 5): which context a statement is for when no marker word
    says it, read from its topic ("when you help with the client deck, ..." -> work). A 3-class
    logistic regression (none / personal / work) over the clause embeddings, trained on
    eval.prefgen's scope_examples (train topics, frames and cores); the threshold is the lowest of
    a grid whose dev precision (dev topics, frames and cores) of a topic read reaches 0.9, else the
    most precise. "none" leaves the statement in the context it was said in."""
    from sklearn.linear_model import LogisticRegression

    from eval import prefgen

    emb = preferences._embedder()
    classes = ["none", "personal", "work"]
    tr, dv = prefgen.scope_examples(seed, "train"), prefgen.scope_examples(seed, "dev")
    Xtr, Xdv = emb.encode([x["text"] for x in tr]), emb.encode([x["text"] for x in dv])
    ytr = [classes.index(x["context"] or "none") for x in tr]
    ydv = np.array([classes.index(x["context"] or "none") for x in dv])
    fit = LogisticRegression(C=C, max_iter=3000, random_state=seed).fit(Xtr, ytr)
    pdv = fit.predict_proba(Xdv)
    rows = []
    for th in (0.5, 0.6, 0.7, 0.8, 0.9):
        k = pdv.argmax(axis=1)
        read = (k != 0) & (pdv.max(axis=1) >= th)
        prec = float((k[read] == ydv[read]).mean()) if read.any() else 0.0
        rec = float(((k == ydv) & read).sum() / max(1, (ydv != 0).sum()))
        rows.append((th, round(prec, 3), round(rec, 3)))
    chosen = next((r for r in rows if r[1] >= 0.9), max(rows, key=lambda r: (r[1], -r[0])))
    meta = {"seed": seed, "C": C, "classes": classes, "train": len(tr), "dev": len(dv), "dev_rows": rows,
            "threshold": chosen[0], "families": "eval.prefgen scope_examples (train), threshold on its dev topics"}
    np.savez_compressed(out, W=fit.coef_.astype(np.float32), b=fit.intercept_.astype(np.float32),
                        labels=np.array(classes), threshold=np.float32(chosen[0]), meta=json.dumps(meta))
    return meta


def _vec_sha(vecs) -> str:
    return hashlib.sha256(np.ascontiguousarray(vecs).tobytes()).hexdigest()[:16]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.prefmodels", description=__doc__.splitlines()[0])
    ap.add_argument("--scope", nargs="?", const=str(preferences.SCOPE_MODEL), default=None,
                    help="train only the scope model (the context a statement's topic is for) and write it here")
    ap.add_argument("--stance", nargs="?", const=str(preferences.STANCE), default=None,
                    help="train only the stance model (against / for what a clause names) and write it here")
    a = ap.parse_args(argv)
    if not (a.scope or a.stance):
        ap.error("say --stance or --scope")
    if a.scope:
        meta = train_scope(a.scope)
        for th, pr, rc in meta["dev_rows"]:
            print(f"  dev threshold {th:.2f}: topic-scope precision {pr:.3f} recall {rc:.3f}"
                  + ("   <- chosen" if th == meta["threshold"] else ""))
        print(f"wrote {a.scope}: {meta['train']} train examples")
        return 0
    if a.stance:
        meta = train_stance(a.stance)
        for th, pr, rc in meta["dev_rows"]:
            print(f"  dev threshold {th:.2f}: against precision {pr:.3f} recall {rc:.3f}"
                  + ("   <- chosen" if th == meta["threshold"] else ""))
        print(f"wrote {a.stance}: {meta['train']} train examples ({meta['train_against']} against), "
              f"{int(meta['classifier_examples'])} classifier examples flagged")
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
