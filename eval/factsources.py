"""Facts in other people's words: public corpora as (message, speaker-attributed fact) rows, a
meaning matcher, and the fact reader's recall and precision on them, per source, never pooled.

Sources (none is shipped: every command takes the file's path; text from them is never
committed, only ids and numbers):

    locomo   LoCoMo (`locomo10.json`, CC BY-NC 4.0): each session's `observation` lists, per
             speaker, facts with the dia_id they come from. A row is one message of a speaker
             with the observations citing it (often none). Split by conversation: conv-26 ...
             conv-47 train, conv-48 dev, conv-49 and conv-50 test.
    msc      MSC persona lines (`msc_personas_all.json`, same repository): each first-person
             persona sentence is a message stating itself. Splits as shipped (train/valid/test).
    spc      Synthetic-Persona-Chat (google-research-datasets/Synthetic-Persona-Chat, CC BY 4.0;
             the `Synthetic-Persona-Chat_valid.csv` / `_test.csv` files): conversations between
             two users with their persona lines. A persona line is assigned to the utterance of
             its user that states it best, when the matcher accepts the pair; utterances get the
             lines assigned to them. valid = train/dev (by conversation, 80/20), test = test.

The matcher (`similar`): all-MiniLM-L6-v2 cosine between the claim said of the speaker ("Works
as a nurse" -> "Caroline works as a nurse"; "Sister Lena lives in Porto" -> "Caroline's sister
Lena lives in Porto") and the fact in the third person, accepted at or above THRESHOLD, chosen
on a hand-labelled sample of 100 LoCoMo (claim, observation) pairs (eval/data/fact-matcher-
handcheck-v1.json: ids and verdicts only; `python -m eval.factsources handcheck` rebuilds it).

Metrics per source and split (each with a Wilson 95% interval: over facts for recall, over
claims for precision; facts of one conversation are not independent, so read them as a floor on
the uncertainty):
    recall     facts of the scored rows matched by a claim read from their own message / facts
    precision  claims read from messages that state at least one fact, matching some fact of the
               same speaker in the same session (conversation for spc, the line for msc) / those
               claims. Claims from messages the corpus gives no fact for are counted apart
               (`unlabelled`): the corpora do not say whether those are facts.

    python -m eval.factsources measure --locomo PATH [--msc PATH] [--spc DIR] [--split test]
                                       [--road rules|learned|both] [--limit N] [--json]
    python -m eval.factsources sweep --locomo PATH --msc PATH    # dev only: the learned road's threshold
    python -m eval.factsources folds --locomo PATH --msc PATH [--k 3] [--write]
        # the clause fallback's threshold on held-out folds of LoCoMo conversations 1-6, MSC valid
        # and tests/data/facts/dev.jsonl (memory/data/facts/fallback-v1.json); never a test split
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

THRESHOLD = 0.6  # replaced by the hand check's choice (see HANDCHECK)
HANDCHECK = Path(__file__).resolve().parent / "data" / "fact-matcher-handcheck-v1.json"
CACHE = Path(os.environ.get("COMPANION_EXTERNAL_CACHE", Path(__file__).resolve().parents[1] / ".cache" / "external"))
LOCOMO_SPLITS = {"train": ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47"),
                 "dev": ("conv-48",), "test": ("conv-49", "conv-50")}
DIA = re.compile(r"D\s*(\d+)\s*:\s*(\d+)")


@dataclass
class Row:
    source: str
    id: str  # locomo: conv-26/D1:3; msc: test/12/Speaker 1/3; spc: test/7/User 1/4
    group: str  # what precision compares within: a speaker's session (locomo), conversation (spc), line (msc)
    speaker: str
    text: str
    facts: list[str] = field(default_factory=list)  # third person, of the speaker
    split: str = "test"
    pool: list[str] = field(default_factory=list)  # facts of the group (precision)


# ---------------------------------------------------------------- readers


def _dias(value) -> list[str]:
    vals = value if isinstance(value, list) else [value]
    return [f"D{a}:{b}" for v in vals for a, b in DIA.findall(str(v))]


def locomo_rows(path, splits=("train", "dev", "test")) -> list[Row]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read LoCoMo from {path}: {e}") from e
    split_of = {c: s for s, cs in LOCOMO_SPLITS.items() for c in cs}
    rows = []
    for conv in data:
        sid = conv["sample_id"]
        split = split_of.get(sid, "test")
        if split not in splits:
            continue
        obs: dict[str, list[str]] = {}
        pool: dict[tuple, list[str]] = {}
        for skey, by in conv.get("observation", {}).items():
            n = re.search(r"\d+", skey).group(0)
            for spk, items in by.items():
                for item in items:
                    text, dia = item[0], item[1] if len(item) > 1 else ""
                    pool.setdefault((n, spk), []).append(text)
                    for d in _dias(dia):
                        obs.setdefault(f"{spk}|{d}", []).append(text)
        c = conv["conversation"]
        for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            n = key.split("_")[1]
            for turn in c[key]:
                spk, dia = turn["speaker"], turn["dia_id"]
                rows.append(Row("locomo", f"{sid}/{dia}", f"{sid}/{n}/{spk}", spk, turn["text"],
                                obs.get(f"{spk}|{dia}", []), split, pool.get((n, spk), [])))
    return rows


_FIRST = [(re.compile(r"\bI'm\b|\bI am\b", re.I), "{n} is"), (re.compile(r"\bI've\b", re.I), "{n} has"),
          (re.compile(r"\bI'd\b", re.I), "{n} would"), (re.compile(r"\bI'll\b", re.I), "{n} will"),
          (re.compile(r"\bI was\b", re.I), "{n} was"), (re.compile(r"\bmy\b", re.I), "{n}'s"),
          (re.compile(r"\bmyself\b", re.I), "themselves"), (re.compile(r"\bme\b", re.I), "{n}")]
_KEEP = {"was", "had", "did", "will", "can", "could", "would", "should", "may", "might", "must", "used", "went",
         "got", "made", "grew", "met", "saw", "took", "came", "became", "left", "lost", "won", "bought", "began"}


def third(text: str, name: str) -> str:
    """A first-person line said of `name` ("I have a dog" -> "Alex has a dog"), roughly: the
    matcher compares meanings, not grammar."""
    from memory.persona_rules import conjugate

    out = text.strip()
    for pat, rep in _FIRST:
        out = pat.sub(rep.format(n=name), out)

    def verb(m):
        w = m.group(1)
        low = w.lower()
        keep = low in _KEEP or low.endswith("ed")
        return f"{name} {w if keep else conjugate(low)}"
    return re.sub(r"\bI (\w+)", verb, out)


def msc_rows(path, splits=("test",)) -> list[Row]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read MSC personas from {path}: {e}") from e
    rows, seen = [], set()
    for split in splits:
        for i, d in enumerate(data.get(split, [])):
            for spk in ("Speaker 1", "Speaker 2"):
                for j, line in enumerate(d.get(spk, [])):
                    if line.lower() in seen:  # MSC repeats personas across dialogues
                        continue
                    seen.add(line.lower())
                    fact = third(line, "Alex")
                    rows.append(Row("msc", f"{split}/{i}/{spk}/{j}", f"{split}/{i}/{spk}/{j}", "Alex", line,
                                    [fact], "dev" if split == "valid" else split, [fact]))
    return rows


def _spc_file(path, split: str) -> Path:
    p = Path(path)
    if p.is_dir():
        name = {"test": "Synthetic-Persona-Chat_test.csv", "valid": "Synthetic-Persona-Chat_valid.csv"}[split]
        p = next((q for q in (p / name, p / "data" / name) if q.exists()), p / name)
    return p


def spc_rows(path, splits=("test",), threshold: float | None = None, limit: int | None = None) -> list[Row]:
    """Utterances with the persona lines the matcher assigns them (see the module doc); `limit`:
    at most that many conversations of each file, drawn seeded (the split is drawn first)."""
    threshold = THRESHOLD if threshold is None else threshold
    rows = []
    for split in ("valid", "test"):
        wanted = [s for s in splits if (s == "test") == (split == "test")]
        if not wanted:
            continue
        f = _spc_file(path, split)
        try:
            with open(f, newline="", encoding="utf-8") as fh:
                table = list(csv.reader(fh))
        except OSError as e:
            raise ValueError(f"cannot read Synthetic-Persona-Chat from {f}: {e}") from e
        convs = []
        for i, r in enumerate(table[1:]):
            if len(r) < 3:
                continue
            personas = {"User 1": [x for x in r[0].splitlines() if x.strip()],
                        "User 2": [x for x in r[1].splitlines() if x.strip()]}
            turns = [m.groups() for m in (re.match(r"\s*(User [12]):\s*(.*)", x) for x in r[2].splitlines()) if m]
            convs.append((i, personas, turns))
        rng = random.Random(7)
        sides = {i: "test" if split == "test" else ("dev" if rng.random() < 0.2 else "train") for i, _, _ in convs}
        convs = [c for c in convs if sides[c[0]] in wanted]
        if limit is not None and len(convs) > limit:
            convs = sorted(random.Random(11).sample(convs, limit))
        lines = [x for _, p, _ in convs for ls in p.values() for x in ls]
        utts = [t for _, _, ts in convs for _, t in ts]
        vec = dict(zip(lines + utts, embed(lines + utts)))
        for i, personas, turns in convs:
            s = sides[i]
            assigned: dict[int, list[str]] = {}
            pool = {u: [third(x, "Alex") for x in ls] for u, ls in personas.items()}
            for u, ls in personas.items():
                mine = [k for k, (who, _) in enumerate(turns) if who == u]
                if not mine:
                    continue
                for x in ls:
                    sims = [float(vec[x] @ vec[turns[k][1]]) for k in mine]
                    best = int(np.argmax(sims))
                    if sims[best] >= threshold:
                        assigned.setdefault(mine[best], []).append(third(x, "Alex"))
            for k, (who, text) in enumerate(turns):
                rows.append(Row("spc", f"{split}/{i}/{k}", f"{split}/{i}/{who}", "Alex", text, assigned.get(k, []), s,
                                pool[who]))
    return rows


# ---------------------------------------------------------------- the matcher


_VECS: dict[str, np.ndarray] | None = None
_NEW = 0


def _flush() -> None:
    global _NEW
    if _VECS is not None and _NEW:
        CACHE.mkdir(parents=True, exist_ok=True)
        np.savez(CACHE / "minilm.npz", keys=np.array(list(_VECS)), vecs=np.stack(list(_VECS.values())))
        _NEW = 0


def embed(texts: list[str]) -> np.ndarray:
    """MiniLM vectors, cached on disk under CACHE (gitignored) by text hash."""
    global _VECS, _NEW
    from memory import embeddings

    if _VECS is None:
        import atexit

        _VECS = {}
        path = CACHE / "minilm.npz"
        if path.exists():
            z = np.load(path)
            _VECS = dict(zip((str(k) for k in z["keys"]), z["vecs"].astype(np.float32)))
        atexit.register(_flush)
    keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
    todo = sorted({k: t for k, t in zip(keys, texts) if k not in _VECS}.items())
    if todo:
        embeddings.prefer_throughput()
        vecs = embeddings.default().encode([t for _, t in todo], batch_size=128)
        _VECS.update({k: v.astype(np.float32) for (k, _), v in zip(todo, vecs)})
        _NEW += len(todo)
        if _NEW > 5000:
            _flush()
    return np.stack([_VECS[k] for k in keys]) if keys else np.zeros((0, 384), np.float32)


_DOCS: dict | None = None
_NEW_DOCS: dict = {}


def _parse_dir() -> Path:
    from memory import nlp

    meta = nlp.nlp().meta
    return CACHE / f"parses-{meta.get('name', 'spacy')}-{meta.get('version', '0')}"


def _flush_docs() -> None:
    from spacy.tokens import DocBin

    if not _NEW_DOCS:
        return
    d = _parse_dir()
    d.mkdir(parents=True, exist_ok=True)
    keys = list(_NEW_DOCS)
    name = hashlib.sha1("".join(keys).encode()).hexdigest()[:16]
    DocBin(docs=[_NEW_DOCS[k] for k in keys]).to_disk(d / f"{name}.spacy")
    (d / f"{name}.keys").write_text("\n".join(keys))
    _NEW_DOCS.clear()


def parse(texts: list[str]) -> list:
    """spaCy Docs of the texts (quotes blanked, as the product reads them), cached on disk
    under CACHE by text hash and model version: parsing is the slow part of every run here
    (~50 ms a message on an idle core), the rules that read a Doc change far more often."""
    global _DOCS
    from spacy.tokens import DocBin

    from memory import facts, nlp

    if _DOCS is None:
        import atexit

        _DOCS = {}
        d = _parse_dir()
        for kf in sorted(d.glob("*.keys")) if d.exists() else []:
            keys = kf.read_text().split("\n")
            docs = DocBin().from_disk(kf.with_suffix(".spacy")).get_docs(nlp.nlp().vocab)
            _DOCS.update(zip(keys, docs))
        atexit.register(_flush_docs)
    blanked = [facts.prepare(t) for t in texts]
    keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in blanked]
    todo = list({k: t for k, t in zip(keys, blanked) if k not in _DOCS}.items())
    for start in range(0, len(todo), 2000):  # flushed as it goes: a long run that stops keeps its work
        chunk = todo[start: start + 2000]
        for (k, _), doc in zip(chunk, nlp.parse_many([t for _, t in chunk])):
            _DOCS[k] = _NEW_DOCS[k] = doc
        _flush_docs()
    return [_DOCS[k] for k in keys]


def prime(rows: list[Row], claims: list[list[str]]) -> None:
    """Embed everything a score will compare in one batch (fast), instead of row by row."""
    texts = [said_of(c, r.speaker) for r, cs in zip(rows, claims) for c in cs]
    texts += [f for r in rows for f in r.facts + r.pool]
    embed(list(dict.fromkeys(texts)))


def said_of(claim: str, speaker: str) -> str:
    """The claim said of the speaker: "Works as a nurse" -> "Caroline works as a nurse"; a claim
    about someone of theirs ("Sister Lena lives in Porto") -> "Caroline's sister Lena ..."."""
    from memory import facts

    first = claim.split()[0].lower() if claim.split() else ""
    rel = facts.lexicon()["relations"]
    body = claim[:1].lower() + claim[1:]
    if first in rel or first.rstrip("s") in rel:
        return f"{speaker}'s {body}"
    return f"{speaker} {body}"


def similarities(claims: list[str], speaker: str, facts_: list[str]) -> np.ndarray:
    if not claims or not facts_:
        return np.zeros((len(claims), len(facts_)), np.float32)
    a = embed([said_of(c, speaker) for c in claims])
    b = embed(facts_)
    return a @ b.T


def threshold() -> float:
    """The matcher's threshold: the hand check's choice when it is there."""
    if HANDCHECK.exists():
        return float(json.loads(HANDCHECK.read_text())["threshold"])
    return THRESHOLD


# ---------------------------------------------------------------- reading and scoring


def read_claims(texts: list[str], road: str = "both") -> list[list[str]]:
    """What the product's fact reader proposes for each message alone (memory.facts)."""
    from memory import facts

    out = []
    read = [facts.read_doc(d) for d in parse(texts)]
    if road == "candidates":  # every stated clause: what the learned road chooses from
        return [[f.text for f in rule] + [c.text for c in cands] for rule, cands in read]
    if road in ("both", "learned"):
        from memory import fact_classifier

        learned = fact_classifier.decide_many([c for _, c in read])
    else:
        learned = [[] for _ in read]
    for (rule, _), lf in zip(read, learned):
        got = ([f.text for f in rule] if road in ("both", "rules") else []) + [f.text for f in lf]
        out.append(got)
    return out


def score(rows: list[Row], claims: list[list[str]], tau: float) -> dict:
    prime(rows, claims)
    facts_n = facts_hit = pred_n = pred_hit = unlabelled = 0
    for row, cs in zip(rows, claims):
        if row.facts:
            sim = similarities(cs, row.speaker, row.facts)
            facts_n += len(row.facts)
            facts_hit += int((sim >= tau).any(axis=0).sum()) if cs else 0
            simp = similarities(cs, row.speaker, row.pool or row.facts)
            pred_n += len(cs)
            pred_hit += int((simp >= tau).any(axis=1).sum()) if cs else 0
        else:
            unlabelled += len(cs)
    from eval.metrics import wilson

    def ci(k, n):
        iv = wilson(k, n) if n else None
        return [round(iv[0], 3), round(iv[1], 3)] if iv else None

    return {"messages": len(rows), "facts": facts_n, "claims_scored": pred_n, "unlabelled_claims": unlabelled,
            "recall": round(facts_hit / facts_n, 3) if facts_n else None, "recall_ci95": ci(facts_hit, facts_n),
            "precision": round(pred_hit / pred_n, 3) if pred_n else None, "precision_ci95": ci(pred_hit, pred_n)}


def load(source: str, path, splits, limit: int | None = None) -> list[Row]:
    """A source's rows; `limit` draws that many conversations of SPC, lines of MSC (seeded)."""
    if source == "locomo":
        return locomo_rows(path, splits)
    if source == "msc":
        rows = msc_rows(path, tuple("valid" if s == "dev" else s for s in splits))
        return sorted(random.Random(11).sample(rows, limit), key=lambda r: r.id) if limit and len(rows) > limit else rows
    if source == "spc":
        return spc_rows(path, splits, threshold(), limit)
    raise ValueError(f"unknown source {source!r}")


def measure(paths: dict[str, str], split: str = "test", road: str = "both", limit: int | None = None) -> dict:
    tau = threshold()
    out = {}
    for source, path in paths.items():
        rows = load(source, path, (split,), limit)
        out[source] = {"split": split, "road": road, "threshold": tau,
                       **score(rows, read_claims([r.text for r in rows], road), tau)}
    return out


# ---------------------------------------------------------------- the hand check of the matcher


def handcheck_pairs(path, n: int = 100, seed: int = 3) -> list[dict]:
    """(claim, observation) pairs from LoCoMo's train conversations, stratified by similarity:
    claims the reader (both roads) gives for a message, against the observations citing it."""
    rows = [r for r in locomo_rows(path, ("train",)) if r.facts]
    claims = read_claims([r.text for r in rows], "candidates")
    prime(rows, claims)
    pairs = []
    for r, cs in zip(rows, claims):
        if not cs:
            continue
        sim = similarities(cs, r.speaker, r.facts)
        for i, c in enumerate(cs):
            for j, f in enumerate(r.facts):
                pairs.append({"id": f"{r.id}#o{j}", "claim_sha1": hashlib.sha1(c.encode()).hexdigest()[:12],
                              "similarity": round(float(sim[i, j]), 3), "_claim": said_of(c, r.speaker), "_fact": f})
    rng = random.Random(seed)
    bins: dict[int, list] = {}
    for p in pairs:
        bins.setdefault(min(9, int(p["similarity"] * 10)), []).append(p)
    chosen = []
    for b in sorted(bins):
        rng.shuffle(bins[b])
    while len(chosen) < n and any(bins.values()):
        for b in sorted(bins):
            if bins[b] and len(chosen) < n:
                chosen.append(bins[b].pop())
    return sorted(chosen, key=lambda p: p["similarity"])


def choose_threshold(verdicts: list[tuple[float, bool]], min_precision: float = 0.9) -> dict:
    """The lowest similarity at which accepted pairs are right at least `min_precision` of the
    time (on the labelled sample), with the agreement it gives."""
    best = None
    rows = []
    for t in np.arange(0.30, 0.91, 0.05):
        acc = [ok for s, ok in verdicts if s >= t]
        prec = sum(acc) / len(acc) if acc else 1.0
        rec = sum(acc) / max(1, sum(ok for _, ok in verdicts))
        agree = sum((s >= t) == ok for s, ok in verdicts) / len(verdicts)
        rows.append({"threshold": round(float(t), 2), "precision": round(prec, 3), "recall": round(rec, 3),
                     "agreement": round(float(agree), 3)})
        if best is None and prec >= min_precision:
            best = rows[-1]
    return {"chosen": best or max(rows, key=lambda r: r["agreement"]), "table": rows}


def sweep(locomo: str, msc: str, thresholds=(0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)) -> list[dict]:
    """The whole reader (rules + learned) at each learned-road threshold on the dev sources only
    (LoCoMo dev, MSC valid, the project's dev set, the generator's dev families n=4 seed 8), each
    scored on its own: what the shipped threshold is chosen from (memory.fact_classifier)."""
    from eval import facts_eval, factgen

    read = _read_scored
    def at(rd, t):
        return [r + [c for c, p in cs if t is not None and p >= t] for r, cs in rd]

    tau = threshold()
    out = []
    for src, path in (("locomo", locomo), ("msc", msc)):
        rows = load(src, path, ("dev",))
        rd = read([r.text for r in rows])
        for t in (None, *thresholds):
            out.append({"source": src, "threshold": t, **score(rows, at(rd, t), tau)})
    from pathlib import Path as _P

    sets = {"own-dev": facts_eval.load(_P(__file__).resolve().parents[1] / "tests" / "data" / "facts" / "dev.jsonl"),
            "generator-dev": factgen.generate("dev", 4, 8)}
    for src, rows in sets.items():
        rd = read([r["text"] for r in rows])
        for t in (None, *thresholds):
            s = facts_eval.score(rows, at(rd, t), per_persona=False)
            out.append({"source": src, "threshold": t, **{k: s[k] for k in ("gold", "extracted", "recall", "precision",
                                                                             "opposite")}})
    return out


FOLD_SOURCES = ("locomo-1-6", "msc-dev", "own-dev")
GRID = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


def _fold(key: str, k: int) -> int:
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % k


def fold_rows(locomo: str, msc: str, msc_limit: int | None = 1500) -> dict[str, list]:
    """The dev material the clause fallback's threshold is chosen on: LoCoMo conversations 1-6 (in
    the file's order) with their observations, MSC's valid persona lines (seeded sample), and the
    project's dev set. Never a test split, never tests/data/facts/test.jsonl."""
    from eval import facts_eval

    data = json.loads(Path(locomo).read_text(encoding="utf-8"))
    first = {c["sample_id"] for c in data[:6]}
    lo = [r for r in locomo_rows(locomo, ("train", "dev", "test")) if r.id.split("/")[0] in first]
    ms = load("msc", msc, ("dev",), msc_limit)
    own = facts_eval.load(Path(__file__).resolve().parents[1] / "tests" / "data" / "facts" / "dev.jsonl")
    return {"locomo-1-6": lo, "msc-dev": ms, "own-dev": own}


def _read_scored(texts: list[str]):
    """Per text: the rule road's claims and the fallback's candidates with the gate's probability."""
    from memory import fact_classifier, facts

    out = []
    for d in parse(texts):
        rule, cands = facts.read_doc(d)
        cands = [c for c in cands if fact_classifier.admits(c)]
        p = fact_classifier.probabilities(cands) if cands else np.zeros(0)
        out.append(([f.text for f in rule], [(c.text, float(x)) for c, x in zip(cands, p)]))
    return out


def folds(locomo: str, msc: str, k: int = 3, min_precision: float = 0.85, max_loss: float = 0.02,
          grid=GRID, msc_limit: int | None = 1500) -> dict:
    """The clause fallback's gate threshold, chosen on held-out folds (memory.fact_classifier
    FALLBACK). Each source is cut into k folds (by LoCoMo session, MSC line, dev row). For each
    fold: the lowest threshold at which, on the other folds, every source keeps precision >=
    min_precision (where the reader before, at the weights' own threshold, is already under it
    there, as on LoCoMo, whose observations are summaries: no more than max_loss below that
    reader's); then scored on the held-out fold. The shipped threshold is the highest of the k
    choices (fail-safe: the strictest fold wins)."""
    from eval import facts_eval
    from memory import fact_classifier

    incumbent = float(np.load(fact_classifier.MODEL)["threshold"])

    tau = threshold()
    sources = fold_rows(locomo, msc, msc_limit)
    read = {}
    for name, rows in sources.items():
        texts = [r["text"] if isinstance(r, dict) else r.text for r in rows]
        read[name] = _read_scored(texts)

    def key(name, r):
        return r["id"] if isinstance(r, dict) else (r.group if name == "locomo-1-6" else r.id)

    def metrics(name, idx, t):
        rows = [sources[name][i] for i in idx]
        claims = [read[name][i][0] + ([c for c, p in read[name][i][1] if p >= t] if t is not None else [])
                  for i in idx]
        if name == "own-dev":
            s = facts_eval.score(rows, claims, per_persona=False)
            return {"recall": s["recall"], "precision": s["precision"], "gold": s["gold"], "extracted": s["extracted"],
                    "opposite": s["opposite"]}
        s = score(rows, claims, tau)
        return {"recall": s["recall"], "precision": s["precision"], "gold": s["facts"], "extracted": s["claims_scored"]}

    fold_of = {n: [_fold(key(n, r), k) for r in rows] for n, rows in sources.items()}
    choices = []
    for f in range(k):
        inside = {n: [i for i, x in enumerate(fold_of[n]) if x != f] for n in sources}
        held = {n: [i for i, x in enumerate(fold_of[n]) if x == f] for n in sources}
        base = {n: metrics(n, inside[n], incumbent) for n in sources}
        chosen, curve = None, []
        for t in grid:
            m = {n: metrics(n, inside[n], t) for n in sources}
            ok = all((m[n]["precision"] or 0) >= min(min_precision, (base[n]["precision"] or 1) - max_loss) for n in sources)
            curve.append({"threshold": t, "ok": ok, **{n: m[n] for n in sources}})
            if ok and chosen is None:
                chosen = t
        chosen = chosen if chosen is not None else max(grid)
        choices.append({"fold": f, "threshold": chosen, "before_inside": base, "curve_inside": curve,
                        "held_out_before": {n: metrics(n, held[n], incumbent) for n in sources},
                        "held_out": {n: metrics(n, held[n], chosen) for n in sources}})
    final = max(c["threshold"] for c in choices)
    return {"threshold": final, "k": k, "min_precision": min_precision, "max_loss": max_loss, "before": incumbent,
            "sources": {n: len(r) for n, r in sources.items()}, "msc_limit": msc_limit, "matcher": tau,
            "folds": choices,
            "all_at_threshold": {n: metrics(n, list(range(len(sources[n]))), final) for n in sources},
            "all_before": {n: metrics(n, list(range(len(sources[n]))), incumbent) for n in sources},
            "all_rules": {n: metrics(n, list(range(len(sources[n]))), None) for n in sources}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.factsources", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="recall and precision of the fact reader per source")
    m.add_argument("--locomo")
    m.add_argument("--msc")
    m.add_argument("--spc", help="the Synthetic-Persona-Chat folder (or its data/ folder)")
    m.add_argument("--split", default="test", choices=("train", "dev", "test"))
    m.add_argument("--road", default="both", choices=("both", "rules", "learned"))
    m.add_argument("--limit", type=int, default=None,
                   help="at most this many SPC conversations and MSC lines, drawn seeded (LoCoMo is read whole)")
    m.add_argument("--json", action="store_true")
    w = sub.add_parser("sweep", help="the whole reader at each learned-road threshold on the dev sources")
    w.add_argument("--locomo", required=True)
    w.add_argument("--msc", required=True)
    fo = sub.add_parser("folds", help="choose the clause fallback's threshold on held-out folds of the dev parts")
    fo.add_argument("--locomo", required=True)
    fo.add_argument("--msc", required=True)
    fo.add_argument("--k", type=int, default=3)
    fo.add_argument("--write", action="store_true", help="write memory/data/facts/fallback-v1.json")
    h = sub.add_parser("handcheck", help="show the matcher's labelled sample (LoCoMo text, never committed)")
    h.add_argument("--locomo", required=True)
    h.add_argument("--draw", action="store_true", help="draw a new sample and print it for labelling")
    a = ap.parse_args(argv)
    if a.cmd == "handcheck":
        if a.draw or not HANDCHECK.exists():
            for k, p in enumerate(handcheck_pairs(a.locomo)):
                print(json.dumps({"n": k, "id": p["id"], "claim_sha1": p["claim_sha1"], "similarity": p["similarity"],
                                  "claim": p["_claim"], "fact": p["_fact"]}, ensure_ascii=False))
            return 0
        doc = json.loads(HANDCHECK.read_text())
        print(json.dumps({k: v for k, v in doc.items() if k != "pairs"}, indent=1))
        return 0
    if a.cmd == "folds":
        res = folds(a.locomo, a.msc, a.k)
        for f in res["folds"]:
            print(json.dumps({"fold": f["fold"], "threshold": f["threshold"], "held_out": f["held_out"],
                              "held_out_before": f["held_out_before"]}))
        print(json.dumps({"threshold": res["threshold"], "all_at_threshold": res["all_at_threshold"],
                          "all_before": res["all_before"], "all_rules": res["all_rules"]}))
        if a.write:
            from memory import fact_classifier

            fact_classifier.FALLBACK.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
        return 0
    if a.cmd == "sweep":
        for row in sweep(a.locomo, a.msc):
            print(json.dumps(row))
        return 0
    paths = {k: getattr(a, k) for k in ("locomo", "msc", "spc") if getattr(a, k)}
    if not paths:
        print("give at least one source: --locomo PATH, --msc PATH, --spc DIR", file=sys.stderr)
        return 2
    try:
        res = measure(paths, a.split, a.road, a.limit)
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        for src, r in res.items():
            print(f"{src} ({r['split']}, road {r['road']}, matcher >= {r['threshold']}): {r['messages']} messages, "
                  f"{r['facts']} facts; recall {r['recall']} {r['recall_ci95']} precision {r['precision']} "
                  f"{r['precision_ci95']} "
                  f"({r['claims_scored']} claims scored, {r['unlabelled_claims']} from messages with no fact)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
