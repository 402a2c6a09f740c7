"""Fitting and measuring the answer-statement selector (memory/answer_select.py).

Data, split honestly:

- **LoCoMo** (/work/data/locomo10.json, CC BY-NC: nothing derived from it is committed but the
  fitted weights and counts). Conversations in file order; 1-6 fit the weights (conversation-level
  folds choose the threshold), 7-10 are held out and measured once (`measure`). A question of
  categories 1-4 is asked by the speaker whose turn is its evidence (the speaker of most evidence
  turns), rewritten into their first person: the speaker's name as a subject becomes "I" (with
  the verb agreeing: "does Caroline" -> "do I", "Caroline is" -> "I am", "Caroline likes" -> "I
  like"), as a possessor "my", elsewhere "me"; her/his -> my, she/he -> I, her/him -> me when the
  speaker is the only person the question names ("When did Caroline go to the support group?" ->
  "When did I go to the support group?"). A question that does not name its evidence speaker is
  left out. Candidates: the speaker's own turns, all sessions, split into stated sentences (the
  runtime's filter: memory.answers._sentences); positives: the sentences of the evidence turns.
  Category 5 (adversarial: about the other speaker's life) is a never-told case, asked by the
  speaker it names.
- **recallgen v3** (eval/recallgen.py `script3`): train weeks fit (each week its own fold), test
  weeks are measured end to end by `python -m eval.recallgen offline v3:test:N` (the selector
  runs inside memory.answers.answer). Positives: the participant's earlier sentences holding an
  expected fact (eval/chatcheck's `contains`); never-told questions have none.

The threshold maximises, over out-of-fold scores, right quotes minus twice the wrong quotes (a
quoted non-answer on an answerable question, any quote on a never-told one: a wrong quote misleads,
"not told" only loses the answer), each source weighted alike.

    python -m eval.answerselect fit --locomo /work/data/locomo10.json --train-weeks 1-8
    python -m eval.answerselect measure --locomo /work/data/locomo10.json   # held out: conversations 7-10
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

from memory import answer_select as sel

FIT_CONVS = range(0, 6)
AUTHORS = Path(__file__).resolve().parent / "data" / "recall-authors-v1"
FIT_AUTHORS = ("I", "J")  # K is the dev author (thresholds and choices), never fitted on
HELD_CONVS = range(6, 10)
_CACHE = Path.home() / ".cache" / "companion" / "answerselect"


# ---------------------------------------------------------------- the rewrite into the speaker's first person

_AGREE_BEFORE = {"does": "do", "is": "am", "has": "have", "was": "was", "doesn't": "don't", "isn't": "am not",
                 "hasn't": "haven't", "wasn't": "wasn't"}
_AUX = {"did", "does", "do", "is", "was", "has", "had", "will", "would", "can", "could", "might", "should"}
_AGREE_AFTER = {"is": "am", "'s": "am", "has": "have", "does": "do", "doesn't": "don't", "isn't": "am not",
                "hasn't": "haven't"}


def first_person(question: str, name: str) -> str | None:
    """The question as `name` would ask it about themself, or None when it does not name them."""
    from memory import nlp

    if not re.search(rf"\b{re.escape(name)}\b", question):
        return None
    doc = nlp.parse(question)
    others = {e.text for e in doc.ents if e.label_ == "PERSON" and name not in e.text}
    toks = [t.text_with_ws for t in doc]
    skip = set()
    for t in doc:
        if t.text != name:
            continue
        nxt = doc[t.i + 1] if t.i + 1 < len(doc) else None
        if nxt is not None and nxt.text in ("'s", "'") and nxt.dep_ == "case":
            toks[t.i] = "my" + nxt.whitespace_
            skip.add(nxt.i)
        elif t.dep_ in ("nsubj", "nsubjpass") or (t.dep_ == "conj" and t.head.dep_ in ("nsubj", "nsubjpass")) \
                or (t.i > 0 and doc[t.i - 1].lower_ in _AUX):
            toks[t.i] = "I" + t.whitespace_
            prev = doc[t.i - 1] if t.i > 0 else None
            if prev is not None and prev.lower_ in _AGREE_BEFORE:
                w = _AGREE_BEFORE[prev.lower_]
                toks[prev.i] = (w.capitalize() if prev.text[:1].isupper() else w) + prev.whitespace_
            elif nxt is not None and nxt.lower_ in _AGREE_AFTER:
                toks[nxt.i] = _AGREE_AFTER[nxt.lower_] + nxt.whitespace_
            elif t.head.tag_ == "VBZ" and t.head.i > t.i:
                toks[t.head.i] = t.head.lemma_ + t.head.whitespace_
        else:
            toks[t.i] = "me" + t.whitespace_
    if not others:
        for t in doc:
            low = t.lower_
            if low in ("her", "his") and t.dep_ == "poss":
                toks[t.i] = "my" + t.whitespace_
            elif low in ("she", "he"):
                toks[t.i] = "I" + t.whitespace_
                h = t.head
                if h.tag_ == "VBZ" and h.i > t.i:
                    toks[h.i] = h.lemma_ + h.whitespace_
                prev = doc[t.i - 1] if t.i > 0 else None
                if prev is not None and prev.lower_ in _AGREE_BEFORE:
                    toks[prev.i] = _AGREE_BEFORE[prev.lower_] + prev.whitespace_
            elif low in ("her", "him"):
                toks[t.i] = "me" + t.whitespace_
            elif low in ("herself", "himself"):
                toks[t.i] = "myself" + t.whitespace_
    out = "".join(x for i, x in enumerate(toks) if i not in skip).strip()
    return out[:1].upper() + out[1:]


# ---------------------------------------------------------------- cases


class Case:
    """One question: its text, candidate sentences, which are positive, its source and fold."""

    def __init__(self, question, sents, positive, source, fold, told=True):
        self.question, self.sents, self.positive = question, sents, positive
        self.source, self.fold, self.told = source, fold, told
        self.x = None


def _embed_cached(texts: list[str]) -> np.ndarray:
    from eval.embedcache import CachedEmbedder
    from memory import embeddings

    global _EMB
    try:
        _EMB
    except NameError:
        _EMB = CachedEmbedder(embeddings.default(), _CACHE, "minilm")
    return _EMB.encode(texts)


def _flush():
    try:
        _EMB.save()
    except NameError:
        pass


def _turns(conv: dict) -> list[dict]:
    c = conv["conversation"]
    out, k = [], 1
    while f"session_{k}" in c or f"session_{k}_date_time" in c:
        for t in c.get(f"session_{k}") or []:
            out.append(t)
        k += 1
    return out


def locomo_cases(path: str, convs) -> list[Case]:
    from memory import answers, nlp

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    cases = []
    for ci in convs:
        conv = data[ci]
        turns = _turns(conv)
        speaker_of = {t["dia_id"]: t["speaker"] for t in turns}
        by_speaker: dict[str, list] = {}
        for i, t in enumerate(turns):
            by_speaker.setdefault(t["speaker"], []).append(
                answers.Candidate(t["text"], t["dia_id"], i + 1, None, "message"))
        sents_of = {s: sel.candidate_sentences(answers._sentences(cs)) for s, cs in by_speaker.items()}
        vec_of = {s: _embed_cached([x.text for x in ss]) for s, ss in sents_of.items()}
        speakers = list(by_speaker)
        for qa in conv["qa"]:
            ev = [e for x in qa.get("evidence", []) for e in re.findall(r"D\d+:\d+", x)]
            if qa["category"] == 5:
                named = [s for s in speakers if re.search(rf"\b{re.escape(s)}\b", qa["question"])]
                if len(named) != 1:
                    continue
                who, told = named[0], False
            else:
                spk = [speaker_of[e] for e in ev if e in speaker_of]
                if not spk:
                    continue
                who = max(set(spk), key=spk.count)
                told = True
            q = first_person(qa["question"], who)
            if q is None:
                continue
            ss = sents_of[who]
            pos = np.array([told and s.dayid in ev for s in ss], dtype=bool)
            c = Case(q, ss, pos, "locomo", ci, told)
            c.vecs = vec_of[who]
            cases.append(c)
    return cases


def recallgen_cases(seeds, split: str) -> list[Case]:
    from eval import chatcheck, recallgen
    from memory import answers

    cases = []
    for seed in seeds:
        spec = recallgen.script3(seed, split)
        prior: list = []
        for i, step in enumerate(spec["turns"], 1):
            if step.get("recall") or step.get("unknown"):
                vocab = {w for c in prior for w in re.findall(r"[a-z]{4,}", c.text.lower())}
                core = answers.unframe(answers.normalise(step["text"], vocab))
                ss = sel.candidate_sentences(answers._sentences(prior))
                exp = step.get("recall") or []
                pos = np.array([any(chatcheck.contains(s.text, e) for e in exp) for s in ss], dtype=bool)
                c = Case(core, ss, pos, "recallgen", 100 + seed, bool(exp))
                c.vecs = _embed_cached([s.text for s in ss]) if ss else np.zeros((0, 384), np.float32)
                cases.append(c)
            prior.append(answers.Candidate(step["text"], f"t{i}", i, step.get("at"), "message"))
    return cases


def _author_files(letters) -> list[Path]:
    return [p for x in letters for p in sorted(AUTHORS.glob(f"{x}-*.json"))]


def author_cases(paths, fold_base: int = 200) -> list[Case]:
    """Cases from weeks written by other authors (eval.authorweeks): each question against the
    person's stated sentences up to the turn it follows; positives, the sentences of its answer
    turns that hold the answer (all of their sentences when none holds it word for word). One
    fold per week."""
    from eval import authorweeks, chatcheck
    from memory import answers

    cases = []
    for k, path in enumerate(paths):
        week = authorweeks.load(path)
        order = {t["id"]: n for n, t in enumerate(week["turns"])}
        for q in week["questions"]:
            upto = week["turns"][: order[q["after"]] + 1]
            prior = [answers.Candidate(t["text"], t["id"], n + 1, None, "message") for n, t in enumerate(upto)]
            vocab = {w for c in prior for w in re.findall(r"[a-z]{4,}", c.text.lower())}
            core = answers.unframe(answers.normalise(q["text"], vocab))
            ss = sel.candidate_sentences(answers._sentences(prior))
            told = bool(q.get("told"))
            exp = [q["answer"], *q.get("alternatives", [])] if told else []
            at = set(q.get("answer_turns", []))
            pos = np.array([s.dayid in at and any(chatcheck.contains(s.text, e) for e in exp) for s in ss], dtype=bool)
            if told and not pos.any():
                pos = np.array([s.dayid in at for s in ss], dtype=bool)
            c = Case(core, ss, pos, "authors", fold_base + k, told)
            c.vecs = _embed_cached([s.text for s in ss]) if ss else np.zeros((0, 384), np.float32)
            cases.append(c)
    return cases


def featurise(cases: list[Case]) -> None:
    from memory import answers, nlp

    qdocs = nlp.parse_many([c.question for c in cases])
    qvecs = _embed_cached([c.question for c in cases])
    for c, d, v in zip(cases, qdocs, qvecs):
        c.x = sel.feature_matrix(d, v, c.sents, c.vecs)
        c.mask = sel.support_mask(d, c.sents, answers._expand)  # the runtime's eligibility gate


# ---------------------------------------------------------------- fit, folds, threshold


def _fit(cases: list[Case]) -> dict:
    from sklearn.linear_model import LogisticRegression

    xs = [c.x for c in cases if len(c.sents) and c.positive.any()]
    ys = [c.positive for c in cases if len(c.sents) and c.positive.any()]
    # each source weighs alike: LoCoMo has many more sentences per question
    ws = []
    srcs = [c.source for c in cases if len(c.sents) and c.positive.any()]
    per = {s: sum(len(x) for x, t in zip(xs, srcs) if t == s) for s in set(srcs)}
    for x, s in zip(xs, srcs):
        ws.append(np.full(len(x), 1.0 / per[s]))
    X, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    mean, scale = X.mean(0), X.std(0)
    scale[scale == 0] = 1.0
    lr = LogisticRegression(C=1.0, max_iter=3000)
    lr.fit((X - mean) / scale, y, sample_weight=w * len(y))
    return {"mean": mean.tolist(), "scale": scale.tolist(), "coef": lr.coef_[0].tolist(),
            "intercept": float(lr.intercept_[0])}


def _best(c: Case, m: dict, gate: bool = True):
    if not len(c.sents):
        return 0.0, False
    p = sel.scores(c.x, m)
    if gate and getattr(c, "mask", None) is not None:
        p = np.where(c.mask, p, 0.0)
    b = int(np.argmax(p))
    return float(p[b]), bool(c.positive[b])


def outcomes(cases: list[Case], m: dict, t: float, gate: bool = True) -> dict:
    out = {}
    for c in cases:
        d = out.setdefault(c.source, {"told": 0, "right": 0, "wrong": 0, "never": 0, "false": 0,
                                      "top1": 0, "reachable": 0})
        s, ok = _best(c, m, gate)
        if c.told:
            d["told"] += 1
            d["reachable"] += int(bool(c.positive.any()))
            d["top1"] += int(ok)
            if s >= t:
                d["right" if ok else "wrong"] += 1
        else:
            d["never"] += 1
            d["false"] += int(s >= t)
    return out


WRONG_COST = 2.0  # a quote presented as the answer and not it misleads; "not told" only loses the answer


def _utility(o: dict) -> float:
    return sum((d["right"] - WRONG_COST * (d["wrong"] + d["false"])) / max(1, d["told"] + d["never"])
               for d in o.values())


def fit(cases: list[Case]) -> dict:
    folds = sorted({c.fold for c in cases})
    oof: list[tuple[Case, dict]] = []
    for f in folds:
        m = _fit([c for c in cases if c.fold != f])
        oof += [(c, m) for c in cases if c.fold == f]
    grid = [round(x, 3) for x in np.arange(0.05, 0.995, 0.005)]
    table = []
    for t in grid:
        o: dict = {}
        for c, m in oof:
            for k, v in outcomes([c], m, t)[c.source].items():
                o.setdefault(c.source, {}).setdefault(k, 0)
                o[c.source][k] += v
        table.append((t, _utility(o), o))
    t, u, o = max(table, key=lambda r: (r[1], -r[0]))
    final = _fit(cases)
    return {"version": sel.VERSION + ":" + "fit1", "features": list(sel.FEATURES), **final,
            "threshold": t, "threshold_unread": t, "folds": len(folds), "oof_at_threshold": o,
            "oof_utility": round(u, 4),
            "fitted_on": "LoCoMo conversations 1-6 (first person of the evidence speaker), recallgen v3 train "
                         f"weeks, {len({c.fold for c in cases if c.source == 'authors'})} weeks written by other "
                         "authors (eval/data/recall-authors-v1); threshold: out-of-fold, conversation/week folds"}


def _parse_range(s: str) -> list[int]:
    a, _, b = s.partition("-")
    return list(range(int(a), int(b or a) + 1))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="eval.answerselect")
    ap.add_argument("cmd", choices=["fit", "measure", "measure-authors"])
    ap.add_argument("--authors", default=",".join(FIT_AUTHORS),
                    help="letters of the authored weeks (eval/data/recall-authors-v1): fitted on (fit) or measured "
                         "(measure-authors); '' for none")
    ap.add_argument("--locomo", default="/work/data/locomo10.json")
    ap.add_argument("--train-weeks", default="1-8")
    ap.add_argument("--again", action="store_true", help="recompute the cached fitting features")
    ap.add_argument("--out", default=str(Path(sel.__file__).parent / "data" / "answer_select.json"))
    a = ap.parse_args(argv)
    if a.cmd == "fit":
        import pickle

        letters = [x for x in a.authors.split(",") if x]
        kept = _CACHE / f"fit-cases-{sel.VERSION}-{a.train_weeks}-{''.join(letters)}.pkl"  # features (and the question, outside the repo)
        if kept.exists() and not a.again:
            cases = pickle.loads(kept.read_bytes())
        else:
            cases = locomo_cases(a.locomo, FIT_CONVS) + recallgen_cases(_parse_range(a.train_weeks), "train") + \
                author_cases(_author_files(letters))
            featurise(cases)
            _flush()
            for c in cases:
                c.sents = [None] * len(c.sents)
                c.vecs = None
            kept.write_bytes(pickle.dumps(cases))
        m = fit(cases)
        Path(a.out).write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")
        print(json.dumps({k: m[k] for k in ("threshold", "oof_utility", "oof_at_threshold")}, indent=1))
        print(dict(zip(sel.FEATURES, [round(x, 3) for x in m["coef"]])))
        return 0
    if a.cmd == "measure-authors":
        from eval.recallgen import wilson

        letters = [x for x in a.authors.split(",") if x]
        cases = author_cases(_author_files(letters))
        featurise(cases)
        _flush()
        m = sel.model()
        o = outcomes(cases, m, float(m["threshold"])).get("authors", {})
        print(f"authored weeks {','.join(letters)} ({len(cases)} questions; threshold {m['threshold']}): "
              f"answerable {o.get('told', 0)}: answering sentence quoted {o.get('right', 0)} "
              f"{wilson(o.get('right', 0), o.get('told', 0))}, wrong quoted {o.get('wrong', 0)}, top-1 right regardless "
              f"{o.get('top1', 0)}, reachable {o.get('reachable', 0)}; never told {o.get('never', 0)}: false quotes "
              f"{o.get('false', 0)}")
        print(json.dumps(o))
        return 0
    cases = locomo_cases(a.locomo, HELD_CONVS)
    featurise(cases)
    _flush()
    m = sel.model()
    o = outcomes(cases, m, float(m["threshold"]))["locomo"]
    o0 = outcomes(cases, m, float(m["threshold"]), gate=False)["locomo"]
    print("without the support gate:", json.dumps(o0))
    from eval.recallgen import wilson

    print(f"LoCoMo conversations 7-10, held out ({len(cases)} questions; threshold {m['threshold']}):")
    print(f"  answerable {o['told']}: answering sentence quoted at top-1 {o['right']}/{o['told']} "
          f"{wilson(o['right'], o['told'])}; wrong sentence quoted {o['wrong']}; top-1 right regardless of "
          f"threshold {o['top1']}/{o['told']}; an evidence sentence among the candidates {o['reachable']}")
    print(f"  category 5 (never told) {o['never']}: false quotes {o['false']}/{o['never']} "
          f"{wilson(o['false'], o['never'])}")
    print(json.dumps(o))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
