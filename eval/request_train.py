"""Train the learned request detector (wrapper/request_model.py) and choose its threshold.

    python -m eval.request_train [--locomo /work/data/locomo10.json] [--out wrapper/data/request_model-v1.npz]
    python -m eval.request_train --report-locomo [--n 1000]   # false proposals per 100 on conversations 7-10

Training rows (label: the first asked kind of a genuine request, else "none"):
- the TRAIN families of the project's generators: eval.everyday (`generate("train")`, the round-3
  classes `generate_classes("train")`, round 4 `generate_round4("train")`, the autonomy
  statements `autonomy("train")`, all non-requests), and tests/data/requests_tuning.jsonl;
- natural non-requests: LoCoMo turns of conversations 1-4 (messages between two people, none of
  them addressed to the companion), 2,500 single sentences of those turns (short messages: whole
  turns alone taught the model that any short chatty line is a request), and 1,500 persona
  statements of MSC's train part ("I have a dog."). A turn the rule reader reads as a request to the companion
  ("remind me to ...", said to a friend) is left out of both training and the threshold choice:
  it would teach the model that a request's very form is "none".
eval.actiongen has no family split: it is kept out of training altogether, a held-out generator.

The threshold is chosen on the DEV families (everyday `generate("dev")`, `generate_classes("dev")`,
their non-requests) and LoCoMo conversations 5-6 (never on round 4's test families, actiongen,
tests/data/actions_dev.jsonl or conversations 7-10): the lowest threshold on a grid whose false
fires on the LoCoMo dev turns (and 600 of their sentences) are at most 1 per 100 and on the dev non-requests (adversarial
framings with the same action words) at most 20 %; every proposal is held for confirmation, so a
false fire costs one question, never an action. The choice and the dev numbers are written into
the weights' meta. Vectors are remembered in eval.embedcache's folder (hashes, no text).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from wrapper import request_model as rm

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
ROOT = Path(__file__).resolve().parent.parent
LOCOMO = Path("/work/data/locomo10.json")
MSC = Path("/work/data/msc_personas_all.json")
GRID = [round(x, 2) for x in np.arange(0.30, 0.96, 0.05)]
LOCOMO_BUDGET = 0.01
NATURAL_WEIGHT = 4.0
ADVERSARIAL_BUDGET = 0.20


def _label(row: dict) -> str:
    kinds = row.get("kinds") or []
    return kinds[0] if (row.get("genuine", bool(kinds)) and kinds) else rm.NONE


def generator_rows(split: str) -> list[dict]:
    from eval import everyday

    rows = everyday.generate(split) + everyday.generate_classes(split)
    if split == "train":
        rows += everyday.generate_round4("train")
        rows += [{"text": r["text"], "genuine": False, "kinds": [], "source": "autonomy"}
                 for r in everyday.autonomy("train")]
        for line in (ROOT / "tests/data/requests_tuning.jsonl").read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows.append({**r, "genuine": bool(r.get("kinds")), "source": "requests_tuning"})
    return [{"text": r["text"], "label": _label(r), "source": r.get("source", f"everyday-{split}")} for r in rows]


AUTHORS = ROOT / "eval" / "data" / "requests-authors-v1"
TRAIN_AUTHORS = ("A", "B", "C", "F", "G", "H")
DEV_AUTHORS = ("D",)
AUTHOR_WEIGHT = 1.0  # the authors' rows weigh this many times the generator rows, in total


def author_rows(letters) -> list[dict]:
    """Requests, non-requests and autonomy statements written by other authors (helper sessions
    that never saw the code, each in assigned voices: eval/data/requests-authors-v1/README.md).
    An autonomy statement asks for no action now: "none"."""
    rows = []
    for letter in letters:
        for line in (AUTHORS / f"{letter}.requests.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                rows.append({"text": r["text"], "label": _label(r), "source": f"author-{letter}"})
        for line in (AUTHORS / f"{letter}.autonomy.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append({"text": json.loads(line)["text"], "label": rm.NONE, "source": f"author-{letter}"})
    return rows


def locomo_turns(path: Path, conversations: range) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for i in conversations:
        conv = data[i]["conversation"]
        for k in sorted((k for k in conv if k.startswith("session_") and not k.endswith("date_time")),
                        key=lambda k: int(k.split("_")[1])):
            out += [t["text"] for t in conv[k] if isinstance(t, dict) and (t.get("text") or "").strip()]
    return out


_ACTION_WORDS = re.compile(r"(?i)\b(?:remind|text|message|email|e-mail|note|calendar|check in|check-in|send|tell|"
                           r"draft|write|ping|schedule|jot|book|let \w+ know)")


def rules_request(texts: list[str]) -> list[bool]:
    """Whether the rule reader reads each text as a request to the companion (only texts with an
    action word are parsed: the others cannot be)."""
    from companion import actions

    return [bool(_ACTION_WORDS.search(t)) and bool(actions.requested(t, NOW)) for t in texts]


def rules_named(texts: list[str]) -> list[bool]:
    """Whether the rule reader names an action in each text (a request or not): the turn asks the
    detector only where it names none."""
    from companion import actions

    return [bool(_ACTION_WORDS.search(t)) and bool(actions.read(t, NOW)) for t in texts]


def sentences(turns: list[str], n: int, seed: int) -> list[str]:
    """Single sentences of the turns (three words or more), `n` drawn under `seed`: short natural
    messages ("My sister is coming over tomorrow.") next to the whole turns."""
    out = [s.strip() for t in turns for s in re.split(r"(?<=[.!?])\s+", t) if len(s.split()) >= 3]
    out = sorted(set(out) - set(turns))
    return random.Random(seed).sample(out, min(n, len(out)))


def msc_statements(path: Path, n: int, seed: int) -> list[str]:
    """Persona statements of MSC's train part ("I have a dog."), `n` drawn under `seed`."""
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    out = sorted({s for d in data.get("train", []) for k in ("Speaker 1", "Speaker 2") for s in d.get(k, [])})
    return random.Random(seed).sample(out, min(n, len(out)))


def embedder():
    from eval.embedcache import CachedEmbedder, default_folder
    from memory import embeddings

    return CachedEmbedder(embeddings.default(), default_folder(), embeddings.MODEL_NAME)


def _fit(X: np.ndarray, y: list[str], weights: np.ndarray, C: float):
    from sklearn.linear_model import LogisticRegression

    mean, scale = X.mean(axis=0), X.std(axis=0) + 1e-6
    clf = LogisticRegression(C=C, max_iter=3000)
    clf.fit((X - mean) / scale, y, sample_weight=weights)
    classes = list(clf.classes_)
    return rm.Model(classes=classes, W=clf.coef_.T.astype(np.float32), b=clf.intercept_.astype(np.float32),
                    mean=mean.astype(np.float32), scale=scale.astype(np.float32), threshold=0.5)


def _fires(model: rm.Model, X: np.ndarray, threshold: float) -> tuple[np.ndarray, list[str]]:
    probs = model.probabilities(X)
    none = model.classes.index(rm.NONE)
    p_req = 1 - probs[:, none]
    masked = probs.copy()
    masked[:, none] = -1
    kinds = [model.classes[i] for i in masked.argmax(axis=1)]
    return p_req >= threshold, kinds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.request_train", description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", default=str(LOCOMO))
    ap.add_argument("--out", default=str(ROOT / "wrapper" / rm.MODEL_FILE))
    ap.add_argument("--C", type=float, default=0.5)
    ap.add_argument("--surface-off", default="", help="surface features left out, by name (separated by |)")
    ap.add_argument("--report-locomo", action="store_true",
                    help="false proposals per 100 of the shipped detector on --n turns of conversations 7-10")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=10)
    args = ap.parse_args(argv)
    emb = embedder()
    if args.report_locomo:
        return report_locomo(Path(args.locomo), args.n, args.seed, emb)

    train = generator_rows("train")
    authors = author_rows(TRAIN_AUTHORS)
    dev = generator_rows("dev")
    dev_authors = author_rows(DEV_AUTHORS)
    lt = locomo_turns(Path(args.locomo), range(0, 4))
    ld = locomo_turns(Path(args.locomo), range(4, 6))
    lt += sentences(lt, 2500, 1) + msc_statements(MSC, 1500, 2)
    ld += sentences(ld, 600, 3)
    lt_req, ld_req = rules_request(lt), rules_request(ld)
    lt_kept = [t for t, r in zip(lt, lt_req) if not r]
    ld_kept = [t for t, r in zip(ld, ld_req) if not r]
    print(f"LoCoMo conversations 1-4 (turns, sentences) and MSC statements: {len(lt)} texts, {len(lt) - len(lt_kept)} read as requests by the rules "
          f"(left out); 5-6 (dev): {len(ld)}, {len(ld) - len(ld_kept)} left out", file=sys.stderr)
    texts = [r["text"] for r in train] + [r["text"] for r in authors] + lt_kept
    y = [r["label"] for r in train] + [r["label"] for r in authors] + [rm.NONE] * len(lt_kept)
    # the natural texts weigh NATURAL_WEIGHT times the generator rows in total: at 1x, short chatty
    # lines with no action in them ("what a lovely morning") were read as messages to send; the
    # authors' rows AUTHOR_WEIGHT times (other voices than the generators' templates)
    w = np.array([1.0] * len(train) + [AUTHOR_WEIGHT * len(train) / max(len(authors), 1)] * len(authors)
                 + [NATURAL_WEIGHT * len(train) / max(len(lt_kept), 1)] * len(lt_kept))
    off = [x.strip() for x in args.surface_off.split("|") if x.strip()]
    X = rm.without(rm.features(emb.encode(texts), texts), off)
    model = _fit(X, y, w, args.C)
    model.meta = {"surface_off": off}

    dev_texts = [r["text"] for r in dev]
    Xd = rm.features(emb.encode(dev_texts), dev_texts)
    Xl = rm.features(emb.encode(ld_kept), ld_kept)
    da_texts = [r["text"] for r in dev_authors]
    Xa = rm.features(emb.encode(da_texts), da_texts)
    emb.save()
    gen_mask = np.array([r["label"] != rm.NONE for r in dev])
    labels = [r["label"] for r in dev]
    a_labels = [r["label"] for r in dev_authors]
    a_mask = np.array([lab != rm.NONE for lab in a_labels])
    table = []
    for t in GRID:
        fd, kd = _fires(model, Xd, t)
        fl, _ = _fires(model, Xl, t)
        fa, ka = _fires(model, Xa, t)
        recall = float(np.mean([f and k == lab for f, k, lab in zip(fd, kd, labels) if lab != rm.NONE]))
        adversarial = float(fd[~gen_mask].mean())
        a_recall = float(np.mean([f and k == lab for f, k, lab in zip(fa, ka, a_labels) if lab != rm.NONE]))
        table.append({"threshold": t, "dev_recall_kind_right": round(recall, 4),
                      "dev_nonrequests_fired": round(adversarial, 4), "locomo_dev_fired": round(float(fl.mean()), 4),
                      "dev_author_recall_kind_right": round(a_recall, 4),
                      "dev_author_nonrequests_fired": round(float(fa[~a_mask].mean()), 4)})
    ok = [r for r in table if r["locomo_dev_fired"] <= LOCOMO_BUDGET and r["dev_nonrequests_fired"] <= ADVERSARIAL_BUDGET
          and r["dev_author_nonrequests_fired"] <= ADVERSARIAL_BUDGET]
    chosen = min(ok, key=lambda r: r["threshold"]) if ok else table[-1]
    for r in table:
        print(("* " if r is chosen else "  ") + json.dumps(r), file=sys.stderr)
    model.threshold = chosen["threshold"]
    model.meta = {"version": "request-model-v3", "surface_off": off, "embedder": "all-MiniLM-L6-v2", "C": args.C, "natural_weight": NATURAL_WEIGHT,
                  "trained_on": {"generator_train_rows": len(train), "author_rows": len(authors),
                                 "authors": "".join(TRAIN_AUTHORS), "author_weight": AUTHOR_WEIGHT, "locomo_conversations": "1-4", "with": "2500 LoCoMo sentences, 1500 MSC train persona statements",
                                 "locomo_turns": len(lt_kept), "locomo_left_out_as_requests": len(lt) - len(lt_kept)},
                  "threshold_chosen_on": {"dev_rows": len(dev), "dev_genuine": int(gen_mask.sum()),
                                          "dev_authors": "".join(DEV_AUTHORS), "dev_author_rows": len(dev_authors),
                                          "locomo_conversations": "5-6", "locomo_turns": len(ld_kept),
                                          "rule": f"lowest on the grid with LoCoMo dev fires <= {LOCOMO_BUDGET} and "
                                                  f"dev non-requests (generated and the dev author's) fired <= {ADVERSARIAL_BUDGET}"},
                  "dev": chosen, "grid": table}
    model.save(args.out)
    print(f"wrote {args.out}: threshold {model.threshold}", file=sys.stderr)
    return 0


def report_locomo(path: Path, n: int, seed: int, emb) -> int:
    """Detector alone, and detector where the rules named no action (the turn's condition), on n
    turns drawn under `seed` from conversations 7-10."""
    model = rm.load_from(ROOT / "wrapper" / rm.MODEL_FILE)
    turns = locomo_turns(path, range(6, 10))
    pick = random.Random(seed).sample(turns, min(n, len(turns)))
    fired, _ = _fires(model, rm.features(emb.encode(pick), pick), model.threshold)
    rules = rules_named(pick)
    alone = int(fired.sum())
    from companion import actions

    # the turn's own condition (companion.actions.detect: the rules read no request, the message is
    # worded as one, a message needs a recipient named), for the turns the detector alone fires on
    in_turn = int(sum(bool(f) and not actions.requested(t, NOW) and actions.detect(t, NOW)[0] is not None
                      for t, f in zip(pick, fired)))
    from eval.metrics import wilson

    lo, hi = wilson(in_turn, len(pick))
    print(json.dumps({"turns": len(pick), "conversations": "7-10", "seed": seed,
                      "detector_alone_fired": alone, "rules_named_an_action": int(sum(rules)),
                      "detector_proposals_in_the_turn": in_turn,
                      "per_100": round(100 * in_turn / len(pick), 2), "wilson95_per_100": [round(100 * lo, 2), round(100 * hi, 2)]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
