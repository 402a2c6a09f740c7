"""A seeded generator of callbacks to the companion's own past, and of look-alikes that need nothing.

    python -m eval.gatecallbacks measure [--split dev] [--seed 0] [--gates learned,lexical,dense]

Each case is one participant's chat (eval/data/gate-callbacks-v1.json): in it the companion asks,
suggests or plans something (a family's *prompt*); the participant replies at once (a *reply*: the
prompt is on screen, nothing from before the window is needed); many turns later, often after a
day's silence, the participant answers it, reports back or asks about it (a *callback*: needs the
prompt, which is its gold). Between them: everyday chatter, and probes that need nothing (small talk,
new topics, requests such as "can you remind me to buy milk tomorrow?"). Every probe is a message of
the conversation, decided as of its own position with the live recent window (6).

Families are split whole, never item by item: the families at even positions of the file (and the
even-positioned small talk and new topics) are `train`, the odd ones `dev`. Only `train` is ever
fitted on or used to choose anything; `dev` is reported.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from eval.gatecases import Case, Probe

DATA = Path(__file__).parent / "data" / "gate-callbacks-v1.json"
T0 = datetime(2026, 5, 4, 9, 0, tzinfo=timezone.utc)
WINDOW = 6
SPLITS = ("train", "dev")
FAMILIES_PER_CASE = 3
GAP = 8  # chatter pairs between a prompt and the first callback (16 messages: well outside the window)


def material(split: str) -> dict:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    d = json.loads(DATA.read_text())
    k = SPLITS.index(split)
    return {"families": d["families"][k::2], "smalltalk": d["smalltalk"][k::2], "new_topics": d["new_topics"][k::2],
            "chatter": d["chatter"], "companion": d["companion"]}


def _case(pid: str, m: dict, rng: random.Random) -> tuple[Case, list[timedelta]]:
    rows: list[tuple[str, str]] = []
    gaps: list[timedelta] = []  # the time before each row
    probes: list[Probe] = []

    def add(sender, text, gap=None):
        rows.append((sender, text))
        gaps.append(gap or timedelta(minutes=rng.randint(1, 4)))
        return len(rows)  # its ordinal

    def chatter(n):
        for u, c in rng.sample(m["chatter"], n):
            add("user", u)
            add("companion", c)

    def probe(text, needs, kind, gold=(), gap=None):
        o = add("user", text, gap)
        probes.append(Probe(text, needs, o, list(gold), kind))
        add("companion", rng.choice(m["companion"]))

    fams = rng.sample(m["families"], FAMILIES_PER_CASE)
    add("user", rng.choice(m["smalltalk"]))
    add("companion", "Hi! How are you today?")
    prompts = {}
    for f in fams:
        chatter(rng.randint(1, 2))
        add("user", rng.choice(m["chatter"])[0])
        prompts[f["topic"]] = add("companion", rng.choice(f["prompt"]))
        probe(rng.choice(f["reply"]), False, "reply to the prompt on screen")
    chatter(GAP)
    negatives = ([(t, "small talk") for t in rng.sample(m["smalltalk"], 2)]
                 + [(t, "new topic") for t in rng.sample(m["new_topics"], 3)])
    rng.shuffle(negatives)
    def silence():  # half of every later probe opens a session, callback or not: the gap alone tells nothing
        return timedelta(hours=rng.choice([14, 26, 50])) if rng.random() < 0.5 else None

    for f in fams:
        if negatives and rng.random() < 0.5:
            t, kind = negatives.pop()
            probe(t, False, kind, gap=silence())
        probe(rng.choice(f["callback"]), True, "callback to the companion's " + f["topic"], [prompts[f["topic"]]],
              gap=silence())
        chatter(rng.randint(1, 3))
    for t, kind in negatives:
        probe(t, False, kind, gap=silence())
    return Case(pid, rows, probes, "callbacks", window=WINDOW), gaps


def cases(split: str, seed: int = 0, n: int = 12) -> list[tuple[Case, list[timedelta]]]:
    """`n` seeded cases of the split's families (with each row's gap before it)."""
    m = material(split)
    return [_case(f"cb-{split}-{i}", m, random.Random(f"callbacks:{split}:{seed}:{i}")) for i in range(n)]


def load(store, made) -> None:
    from consent import records as consent
    from memory import messages, participants

    for c, gaps in made:
        if participants.exists(store, c.pid):
            continue
        consent.accept(store, c.pid, tz="UTC")
        ts, rows = T0, []
        for (s, t), g in zip(c.rows, gaps):
            ts += g
            rows.append(dict(sender=s, text=t, context="personal", ts=ts))
        messages.append_many(store, c.pid, rows)


def contexts(store, made):
    from memory import messages
    from memory.context import TurnContext, TurnTime

    for c, _ in made:
        for p in c.probes:
            yield c, p, TurnContext(store=store, participant=c.pid, text=p.text, context="personal", as_of=p.as_of,
                                    recent=messages.read(store, c.pid, p.as_of, limit=c.window),
                                    time=TurnTime.at(store, c.pid, p.as_of))


def feature_rows(split: str, seed: int = 0, names=None, n: int = 12):
    """(X, y, groups, kinds) of a split's probes, columns `names` (default every feature)."""
    from memory import features
    from memory.store import Store

    names = list(names or features.NAMES)
    made = cases(split, seed, n)
    X, y, g, k = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp, synchronous="NORMAL")
        load(store, made)
        for c, p, ctx in contexts(store, made):
            f = features.compute(ctx, names)
            X.append([f[x] for x in names])
            y.append(int(p.needs))
            g.append(c.pid)
            k.append(p.kind.split(" to the companion's")[0])
        store.close()
    return np.array(X, dtype=float), np.array(y), g, k


def measure(split: str = "dev", seed: int = 0, gates=("learned", "lexical", "dense"), n: int = 12,
            weights: str | None = None) -> dict:
    """Per gate: AUROC, retrieved on callbacks, abstained on the rest (by kind), on the split's probes.
    `weights`: a learned-gate weights file to measure instead of the shipped one."""
    from eval import metrics as M
    from memory import registry
    from memory.store import Store

    made = cases(split, seed, n)
    out = {"split": split, "seed": seed, "cases": n, "gates": {}}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp, synchronous="NORMAL")
        load(store, made)
        for gname in gates:
            gate = registry.create("gate", gname, **({"weights": weights} if weights and gname == "learned" else {}))
            rows = [(p, c.pid, gate.decide(ctx)) for c, p, ctx in contexts(store, made)]
            y = np.array([p.needs for p, _, _ in rows])
            s = np.array([d.score for _, _, d in rows])
            r = np.array([d.retrieve for _, _, d in rows])
            au = M.auroc_metric(s, y, [pid for _, pid, _ in rows], seed=seed)
            kinds = {}
            for p, _, d in rows:
                kind = p.kind.split(" to the companion's")[0]
                k = kinds.setdefault(kind, [0, 0])
                k[0] += int(d.retrieve)
                k[1] += 1
            out["gates"][gname] = {
                "threshold": rows[0][2].threshold, "auroc": au.value, "auroc_interval": au.interval,
                "retrieved_on_need": {"k": int(r[y].sum()), "n": int(y.sum()), "interval": M.wilson(int(r[y].sum()), int(y.sum()))},
                "abstained_on_no_need": {"k": int((~r[~y]).sum()), "n": int((~y).sum()),
                                         "interval": M.wilson(int((~r[~y]).sum()), int((~y).sum()))},
                "retrieved_by_kind": {k: f"{a}/{b}" for k, (a, b) in kinds.items()}}
        store.close()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eval.gatecallbacks")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--split", default="dev", choices=SPLITS)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--cases", type=int, default=12)
    m.add_argument("--gates", default="learned,lexical,dense")
    m.add_argument("--weights", default=None, help="a learned-gate weights file (default: the shipped one)")
    a = ap.parse_args(argv)
    print(json.dumps(measure(a.split, a.seed, [g for g in a.gates.split(",") if g], a.cases, a.weights), indent=1))


if __name__ == "__main__":
    main()
