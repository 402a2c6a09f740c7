"""Gate and retriever material for issue #15: build, train on, and measure the decision on words.

    python -m eval.gatesets train [--seed 0] [--out memory/data/gate-learned-v1.json]
    python -m eval.gatesets measure [--split validation|heldout] [--gates lexical,dense,learned]
                                    [--retrievers bm25,dense,hybrid:balanced,...]

Three kinds of material, kept apart:
- training: participants assembled from eval/data/gate-mix-v1.json (the even-numbered facts, their
  everyday questions, LoCoMo-style third-person questions as positives, small talk said again, new
  topics as negatives) and the fixture's participants U01 and U02 (eval/fixtures.py);
- validation (chooses the default gate and recipe): the odd-numbered facts, other names, other
  seeds, and the fixture's U03, never trained on;
- heldout: eval/data/gate-heldout-v1.json, written by hand before any gate code in another style,
  measured once at the end, never tuned on; heldout2: eval/data/gate-heldout-v2.json, written
  afterwards by another author.

A probe is scored as the next message after the history it sees; needs = memory-bearing (its gold
lies before the recent window).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from eval.metrics import auroc
from memory import messages, registry
from memory.context import TurnContext

DATA = Path(__file__).parent / "data"
MIX = DATA / "gate-mix-v1.json"
HELDOUT = DATA / "gate-heldout-v1.json"
HELDOUT2 = DATA / "gate-heldout-v2.json"  # written afterwards by another author
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
WINDOW = 3
NAMES = {"training": ["Alex", "Brigitte", "Chen", "Dario"], "validation": ["Elif", "Farid", "Greta"]}
FIXTURE_SPLIT = {"training": ("U01", "U02"), "validation": ("U03",)}


@dataclass
class Probe:
    text: str
    needs: bool
    as_of: int  # sees ordinals < as_of
    gold: list[int] = field(default_factory=list)  # ordinals of the messages that answer it
    kind: str = ""


@dataclass
class Case:
    pid: str
    rows: list[tuple[str, str]]  # (sender, text) in order; ordinal = position + 1
    probes: list[Probe]
    source: str
    window: int = WINDOW  # the release's recent window; held-out cases use the live default (6)


def _mix_case(pid: str, name: str, facts: list[dict], mix: dict, rng: random.Random) -> Case:
    rows: list[tuple[str, str]] = []
    stated: list[tuple[int, dict]] = []
    said_smalltalk: list[str] = []
    chatter = list(mix["chatter"])
    rng.shuffle(chatter)

    def user(text):
        rows.append(("user", text))
        rows.append(("companion", rng.choice(mix["companion"])))
        return len(rows) - 1  # ordinal of the user line (1-based) is len-1

    g = rng.choice(mix["phatic"][:3])
    user(g)
    said_smalltalk.append(g)
    for f in facts:
        o = user(f["say"])
        stated.append((o, f))
        r = rng.random()
        if r < 0.35 and chatter:
            said_smalltalk.append(chatter.pop())
            user(said_smalltalk[-1])
        elif r < 0.55:
            said_smalltalk.append(rng.choice(mix["phatic"]))
            user(said_smalltalk[-1])
    for _ in range(3):
        said_smalltalk.append(chatter.pop() if chatter else rng.choice(mix["phatic"]))
        user(said_smalltalk[-1])
    end = len(rows) + 1
    probes = []
    for o, f in stated:
        probes.append(Probe(rng.choice(f["ask"]), True, end, [o], "everyday"))
        probes.append(Probe(f["locomo"].format(name=name), True, end, [o], "locomo-style"))
    for t in rng.sample(mix["cold"], 6):
        probes.append(Probe(t, False, end, kind="new topic"))
    for t in rng.sample(said_smalltalk, min(4, len(said_smalltalk))):
        probes.append(Probe(t, False, end, kind="repeated small talk"))
    for t in rng.sample(mix["phatic"], 3):
        probes.append(Probe(t, False, end, kind="small talk"))
    return Case(pid, rows, probes, "mix")


def mix_cases(split: str, seed: int = 0) -> list[Case]:
    mix = json.loads(MIX.read_text())
    pool = mix["facts"][0::2] if split == "training" else mix["facts"][1::2]
    out = []
    for i, name in enumerate(NAMES[split]):
        rng = random.Random(f"{split}:{seed}:{i}")
        out.append(_mix_case(f"{split[:3]}-{name.lower()}", name, rng.sample(pool, 8), mix, rng))
    return out


def fixture_cases(split: str, seed: int = 7) -> list[Case]:
    from eval.fixtures import build

    release = build(seed)
    w = release.recent_window
    out = []
    for pid in FIXTURE_SPLIT[split]:
        part = release.participants[pid]
        rows = [(r.sender, r.text) for r in part.conversation]
        probes = []
        for p in part.chat_gold:
            if not p.scoreable:
                continue
            at = part.index[p.probe_dayid]
            needs = p.memory_bearing(part.index, w)
            gold = [part.index[d] for d in p.grounding_dayids if part.index[d] < at - w]
            probes.append(Probe(part.row(p.probe_dayid).text, needs, at, gold, p.tier))
        out.append(Case(f"fx-{pid}", rows, probes, "fixture", window=w))
    return out


def heldout_cases(path: Path = HELDOUT, prefix: str = "ho") -> list[Case]:
    data = json.loads(path.read_text())
    out = []
    for pid, p in data["participants"].items():
        rows = [(m["sender"], m["text"]) for m in p["messages"]]
        end = len(rows) + 1
        probes = [Probe(q["text"], q["needs"], end, [q["fact"] + 1] if q.get("fact") is not None else [],
                        "recall" if q["needs"] else "needs nothing") for q in p["probes"]]
        out.append(Case(f"{prefix}-{pid}", rows, probes, "heldout", window=6))
    return out


def cases(split: str, seed: int = 0) -> list[Case]:
    if split == "heldout":
        return heldout_cases()
    if split == "heldout2":
        return heldout_cases(HELDOUT2, "ho2")
    return mix_cases(split, seed) + fixture_cases(split)


def load(store, cs: list[Case]) -> None:
    from consent import records as consent

    for c in cs:
        if not consent_exists(store, c.pid):
            consent.accept(store, c.pid, tz="UTC")
            messages.append_many(store, c.pid, [
                dict(sender=s, text=t, context="personal", ts=T0 + timedelta(minutes=i)) for i, (s, t) in enumerate(c.rows)])


def consent_exists(store, pid: str) -> bool:
    from memory import participants

    return participants.exists(store, pid)


def contexts(store, cs: list[Case]):
    for c in cs:
        for p in c.probes:
            yield c, p, TurnContext(store=store, participant=c.pid, text=p.text, context="personal", as_of=p.as_of,
                                    recent=messages.read(store, c.pid, p.as_of, limit=c.window))


def measure(store, cs: list[Case], gates: list[str], retrievers: list[str], k: int = 5) -> dict:
    """Per gate: AUROC, retrieve rate on positives and on negatives; per retriever: hit@k on positives."""
    scores = {g: [] for g in gates}
    decided = {g: [] for g in gates}
    hits = {r: [] for r in retrievers}
    labels, kinds = [], []
    made = {g: registry.create("gate", g) for g in gates}
    rets = {}
    for r in retrievers:
        name, _, recipe = r.partition(":")
        rets[r] = registry.create("retriever", name, **({"recipe": recipe} if recipe else {}))
    for c, p, ctx in contexts(store, cs):
        labels.append(int(p.needs))
        kinds.append(p.kind)
        for g, gate in made.items():
            d = gate.decide(ctx)
            scores[g].append(d.score)
            decided[g].append(d.retrieve)
        if p.needs and p.gold:
            for r, ret in rets.items():
                found = {h.ordinal for h in ret.search(ctx, ctx.text, k)}
                hits[r].append(bool(found & set(p.gold)))
    y = np.array(labels)
    out = {"n": len(y), "positives": int(y.sum()), "gates": {}, "retrievers": {}}
    for g in gates:
        s, d = np.array(scores[g]), np.array(decided[g])
        out["gates"][g] = {"auroc": auroc(s, y), "retrieved_on_needs": float(d[y == 1].mean()) if y.any() else None,
                           "abstained_on_others": float((~d[y == 0]).mean()) if (y == 0).any() else None}
    for r in retrievers:
        out["retrievers"][r] = {f"hit@{k}": float(np.mean(hits[r])) if hits[r] else None, "n": len(hits[r])}
    return out


def feature_matrix(store, cs: list[Case], names: list[str]):
    from memory import features

    X, y = [], []
    for _, p, ctx in contexts(store, cs):
        f = features.compute(ctx, names)
        X.append([f[n] for n in names])
        y.append(int(p.needs))
    return np.array(X, dtype=float), np.array(y)


def fit(X: np.ndarray, y: np.ndarray, names: list[str], seed: int = 0, c: float = 0.5, folds: int = 5) -> dict:
    """Logistic regression on standardized features, Platt-calibrated on out-of-fold scores, with
    the threshold that maximizes balanced accuracy out of fold. Deterministic in `seed`."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    mean, scale = X.mean(0), X.std(0)
    scale[scale == 0] = 1.0
    Z = (X - mean) / scale

    def lr():
        return LogisticRegression(C=c, class_weight="balanced", max_iter=2000, random_state=seed)

    folds = min(folds, int(np.bincount(y, minlength=2).min()))
    if folds < 2:  # too few of one class to hold any back: no calibration, the plain threshold
        model = lr().fit(Z, y)
        return {"features": names, "coef": model.coef_[0].tolist(), "intercept": float(model.intercept_[0]),
                "mean": mean.tolist(), "scale": scale.tolist(), "calibration": None, "threshold": 0.5,
                "seed": seed, "C": c, "n": int(len(y)), "positives": int(y.sum()), "auroc_out_of_fold": None}
    oof = np.zeros(len(y))
    for tr, te in StratifiedKFold(folds, shuffle=True, random_state=seed).split(Z, y):
        m = lr().fit(Z[tr], y[tr])
        oof[te] = m.decision_function(Z[te])
    platt = LogisticRegression(C=1e6, max_iter=2000).fit(oof.reshape(-1, 1), y)
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    p = 1 / (1 + np.exp(-(a * oof + b)))
    best_t, best_ba = 0.5, -1.0
    for t in np.unique(np.round(p, 3)):
        d = p >= t
        ba = (d[y == 1].mean() + (~d[y == 0]).mean()) / 2
        if ba > best_ba + 1e-9:
            best_t, best_ba = float(t), float(ba)
    model = lr().fit(Z, y)
    return {
        "features": names, "coef": model.coef_[0].tolist(), "intercept": float(model.intercept_[0]),
        "mean": mean.tolist(), "scale": scale.tolist(), "calibration": {"a": a, "b": b},
        "threshold": round(best_t, 3), "seed": seed, "C": c, "n": int(len(y)), "positives": int(y.sum()),
        "auroc_out_of_fold": auroc(oof, y),
    }


TRAIN_FEATURES = [n for n in (
    "log_length", "question", "wh_start", "bm25_outside", "dense_outside",
    "backref_cues", "time_cues", "own_life_question", "personal_nouns", "entity_novelty", "smalltalk",
    "phatic_repeat", "general_request", "bm25_outside_user", "dense_outside_user", "best_match_companion",
)]
# Left out on purpose: log_days_since_start, log_earlier_messages and past_retrieval_rate describe the
# corpus (its length, its earlier gate), not the message, and would learn the training mixture's shape.


def train(out: Path, seed: int = 0) -> dict:
    from memory.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp, synchronous="NORMAL")
        cs = cases("training", seed)
        load(store, cs)
        X, y = feature_matrix(store, cs, TRAIN_FEATURES)
        store.close()
    model = fit(X, y, TRAIN_FEATURES, seed)
    model.update({"version": 1, "trained_on": "eval.gatesets training split (gate-mix-v1 even facts + fixture U01,U02)",
                  "cues_version": json.loads((Path(__file__).parents[1] / "memory" / "data" / "gate-cues-v1.json")
                                             .read_text())["version"]})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(model, indent=1) + "\n")
    return model


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eval.gatesets")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", default=str(Path(__file__).parents[1] / "memory" / "data" / "gate-learned-v1.json"))
    m = sub.add_parser("measure")
    m.add_argument("--split", default="validation", choices=["training", "validation", "heldout", "heldout2"])
    m.add_argument("--gates", default="lexical,dense,learned")
    m.add_argument("--retrievers", default="bm25,dense,hybrid")
    m.add_argument("--by-source", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "train":
        r = train(Path(a.out), a.seed)
        print(json.dumps({k: r[k] for k in ("n", "positives", "threshold", "auroc_out_of_fold")}))
        return
    from memory.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp, synchronous="NORMAL")
        cs = cases(a.split)
        load(store, cs)
        groups = {"all": cs}
        if a.by_source:
            for c in cs:
                groups.setdefault(c.source, []).append(c)
        for g, group in groups.items():
            r = measure(store, group, [x for x in a.gates.split(",") if x], [x for x in a.retrievers.split(",") if x])
            print(json.dumps({"split": a.split, "group": g, **r}, indent=1))
        store.close()


if __name__ == "__main__":
    main()
