"""Interaction preferences said in people's own words: a calibrated classifier over sentence
embeddings, gated by the parse.

    clauses   spaCy sentences (memory.nlp), split again at a contrast ("..., but at work ...")
              so each clause carries its own context; quoted text is someone else's words and
              is blanked first.
    gate      from the parse: a question states a preference only when it is a request
              ("could you maybe ...?"); someone else's preference ("my boss says ...", "Dan
              wants ...") and a denial ("I never said ...") or counterfactual state nothing.
    classify  multinomial logistic regression over all-MiniLM-L6-v2 embeddings (memory.
              embeddings), trained on the versioned bank (memory/data/prefs/bank-v1.json) by
              memory.pref_train and shipped as weights (classifier-v1.npz): nothing is trained
              at run time. Below the threshold chosen on validation data it abstains.
    polarity  the clause's negation must agree with the nearest training example of the
              setting it was given ("don't sugarcoat it" -> direct, like "Don't sugarcoat it.";
              "don't wait for me to ask" is not "Wait for me to ask."): MiniLM barely hears a
              "not", and a negated statement must never be stored as its opposite.
    scope     work / personal / both from the clause's words (memory/data/prefs/scope-v1.json),
              else the context the message was said in.

The rule phrases of memory.ix_attributes stay a second road (exact phrasings, no model).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "prefs"
BANK = DATA / "bank-v1.json"
GENERATED = DATA / "bank-generated-v1.json"  # eval.prefgen's train families (python -m eval.prefgen --bank)
MODEL = DATA / "classifier-v1.npz"
NAME = "pref-classifier"
NONE = "none"
RULED_CLAUSE_P = 0.9  # the classifier's bar for another attribute in a clause a rule phrase reads
POLARITY_K = 3  # a clause's negation must match one of the 3 nearest examples of its setting

_QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|(?<![\w])'[^']{3,}'(?![\w])|\u2018[^\u2019]*\u2019")
_lock = threading.Lock()


class ModelMissing(RuntimeError):
    pass


@dataclass(frozen=True)
class Found:
    attribute: str
    setting: str
    contexts: list[str]
    evidence: str  # the clause (classifier) or the matched words (rule), verbatim from the message
    probability: float
    road: str = NAME  # pref-classifier | rule


@lru_cache(maxsize=1)
def gates() -> dict:
    return json.loads((DATA / "gates-v1.json").read_text())


@lru_cache(maxsize=1)
def _scope() -> tuple:
    d = json.loads((DATA / "scope-v1.json").read_text())
    return tuple(re.compile("|".join(d[k])) for k in ("both", "work", "personal"))


@lru_cache(maxsize=1)
def _compiled_gates() -> tuple:
    g = gates()
    return (re.compile("|".join(g["request_questions"])), re.compile("|".join(g["denial_phrases"])),
            re.compile("|".join(g["counterfactual"])), set(g["negation_words"]), set(g["denial_verbs"]),
            set(g["reporting_verbs"]), set(g["person_nouns"]), set(g["third_person_pronouns"]),
            re.compile("|".join(g["sayings"])), set(g["concessive_heads"]), re.compile("|".join(g["hypothetical"])))


class Model:
    """The shipped weights: W (classes x 384), b, the labels ("attribute=setting" or "none"), the
    abstention threshold, and the training examples' embeddings, labels and polarity."""

    def __init__(self, path: Path = MODEL):
        if not path.exists():
            raise ModelMissing(f"{path} is missing: run `python -m memory.pref_train` to train it from the bank")
        z = np.load(path, allow_pickle=False)
        self.W, self.b = z["W"].astype(np.float32), z["b"].astype(np.float32)
        self.labels = [str(x) for x in z["labels"]]
        self.threshold = float(z["threshold"])
        self.ex_vecs = z["ex_vecs"].astype(np.float32)
        self.ex_label = z["ex_label"].astype(np.int64)
        self.ex_negated = z["ex_negated"].astype(bool)
        self.meta = json.loads(str(z["meta"]))

    def probabilities(self, vecs: np.ndarray) -> np.ndarray:
        logits = vecs @ self.W.T + self.b
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)

    def polarities(self, vec: np.ndarray, label: int) -> set[bool]:
        """Negation polarity of the POLARITY_K training examples of `label` nearest to `vec`."""
        idx = np.flatnonzero(self.ex_label == label)
        near = idx[np.argsort(-(self.ex_vecs[idx] @ vec))[:POLARITY_K]]
        return set(self.ex_negated[near].tolist())


_model: Model | None = None


def model() -> Model:
    global _model
    with _lock:
        if _model is None:
            _model = Model()
        return _model


def negated(tokens) -> bool:
    """Whether a clause (spaCy tokens) carries a negation. A negated concessive verb is a hedge,
    not a negation of what is asked: "I wouldn't mind if you kept it short" asks for short."""
    g = _compiled_gates()
    words, concessive = g[3], g[9]
    return any((t.dep_ == "neg" or t.lower_ in words or (t.lower_ == "need" and t.i > 0 and t.nbor(-1).lower_ == "no"))
               and not (t.dep_ == "neg" and t.head.lemma_.lower() in concessive)
               for t in tokens)


def _first_or_second(tok) -> bool:
    return tok.lower_ in {"i", "we", "you", "u", "me", "ya", "y'all"}


def gate(span) -> str | None:
    """Why a clause states no preference of the speaker's own (None: it may state one)."""
    request_q, denial_phrase, counterfactual, _, denial_verbs, reporting, persons, third, sayings, _, hypo = _compiled_gates()
    text = span.text.strip()
    low = _norm(text)
    if not low:
        return "empty"
    if text.endswith("?") and not request_q.search(low):
        return "a question, not a request"
    if denial_phrase.search(low) or counterfactual.search(low):
        return "denied or counterfactual"
    if hypo.search(low):
        return "hypothetical: a wish supposed, not stated"
    if sayings.search(low):
        return "a saying recited, not the speaker's own preference"
    for t in span:
        if t.pos_ not in ("VERB", "AUX"):
            continue
        subj = [c for c in t.children if c.dep_ in ("nsubj", "nsubjpass")]
        neg = any(c.dep_ == "neg" or c.lower_ == "never" for c in t.children)
        if neg and t.lemma_.lower() in denial_verbs and any(s.lower_ == "i" for s in subj):
            return "denied: the speaker says they did not say or mean it"
        for s in subj:
            if _first_or_second(s):
                continue
            person = (s.pos_ == "PROPN" or s.ent_type_ == "PERSON" or s.lower_ in persons
                      or (s.lower_ in third and s.lower_ != "it"))
            if person or (t.lemma_.lower() in reporting and s.lower_ in third | persons):
                return "reported: someone else's preference"
    return None


_PUNCT = re.compile(r"[^\w\s']")


def _norm(text: str) -> str:
    return " ".join(_PUNCT.sub(" ", text.replace("\u2019", "'").lower()).split())


def _negated_words(words: str) -> bool:
    """Negation in a rule's matched words (normalized text, no parse needed)."""
    neg = _compiled_gates()[3]
    return any(w in neg or w.endswith("n't") for w in _norm(words).split())


@lru_cache(maxsize=64)
def _doc(blanked: str):
    # propose and verify parse the same message moments apart
    from memory import nlp

    return nlp.parse(blanked)


def scope(clause: str, said_in: str) -> list[str]:
    both, work, personal = _scope()
    n = _norm(clause)
    w, p = bool(work.search(n)), bool(personal.search(n))
    if both.search(n) or (w and p):
        return ["work", "personal"]
    return ["work"] if w else ["personal"] if p else [said_in]


def clauses(doc) -> list:
    """Sentences, split before a contrasting conjunction that joins two clauses, and at ';'."""
    out = []
    for sent in doc.sents:
        cuts = [sent.start]
        for t in sent:
            if t.lower_ == ";" and t.i + 1 < sent.end:
                cuts.append(t.i + 1)
            elif (t.dep_ == "cc" and t.lower_ in ("but", "whereas", "yet") and t.i > sent.start
                  and t.head.pos_ in ("VERB", "AUX", "ADJ")):
                cuts.append(t.i)
        cuts.append(sent.end)
        for a, b in zip(cuts, cuts[1:]):
            if b > a:
                span = doc[a:b]
                if any(not t.is_punct for t in span):
                    out.append(span)
    # A question mark ends the sentence, not each clause: a request clause keeps it.
    return out


def _blank_quotes(text: str) -> str:
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), text)


_own: object | None = None


def _embedder():
    """The shared embedder when it is the sentence model the weights were trained on (its cache
    already holds the message the turn just stored); otherwise (a store told to hash words, in
    machinery tests) one of our own: weights over MiniLM vectors mean nothing over other vectors."""
    from memory import embeddings

    global _own
    shared = embeddings.default()
    if isinstance(shared, embeddings.Embedder):
        return shared
    if _own is None:
        _own = embeddings.Embedder()
    return _own


def _open(s) -> bool:
    """The clause may state the speaker's own preference: the gate passes, and a clause of a
    question (the mark ends the sentence, not each clause) is a request."""
    last = s.sent[-1].text if s.end == s.sent.end else ""
    view = s.text.strip() + ("?" if last == "?" and not s.text.strip().endswith("?") else "")
    return gate(s) is None and (not view.endswith("?") or bool(_compiled_gates()[0].search(_norm(view))))


def _says_enough(span) -> bool:
    """A clause the classifier road may read: it has a verb, or at least three words. Shorter
    verbless fragments are read by the exact-phrase road only ("shorter please" is in its table)."""
    words = [t for t in span if t.is_alpha]
    return any(t.pos_ in ("VERB", "AUX") for t in span) or len(words) >= 3


def find(text: str, said_in: str, m: Model | None = None, rules=None) -> list[Found]:
    """The preferences a participant message states in its own words, one per attribute and
    context (the latest clause wins within the message). `rules(clause, said_in) -> (contexts, [(attribute,
    setting, words)])` is the exact-phrase road (memory.extract.preference_phrases): a rule hit
    in an open clause wins over the classifier for its attribute, unless a negation outside the
    matched words turns it around ("don't wait for me to ask" is not "wait for me to ask")."""
    m = m or model()
    blanked = _blank_quotes(text)
    if not blanked.strip():
        return []
    doc = _doc(blanked)
    candidates = [s for s in clauses(doc) if _open(s)]
    if not candidates:
        return []
    ruled: dict[tuple[str, str], Found] = {}
    for s in candidates if rules else []:
        contexts, hits = rules(s.text, said_in)
        for attribute, setting, words in hits:
            if negated(s) and not _negated_words(words):
                continue  # the negation is outside the matched words: they may be turned around
            f = Found(attribute, setting, scope(s.text, said_in) if contexts == [said_in] else contexts, words, 1.0, "rule")
            ruled.update({(attribute, c): f for c in f.contexts})
    texts = [s.text.strip() for s in candidates]
    vecs = _embedder().encode(texts)
    probs = m.probabilities(vecs)
    # A clause is also read by its content: a request put as a question without its frame
    # ("could you maybe keep it short?" -> "keep it short"), and the verb phrases a frame embeds
    # ("I wouldn't mind if you'd keep it short", "when it's about my job, ...", "is it too much to
    # ask that you ..."): a frame dilutes the clause's embedding. The view whose best setting is
    # likeliest speaks for the clause; the gates and the polarity stay the whole clause's.
    views = [(i, v) for i, (s, t) in enumerate(zip(candidates, texts)) for v in [_core(t), *inner(s)] if v]
    if views:
        vvecs = _embedder().encode([v for _, v in views])
        vprobs = m.probabilities(vvecs)
        for (i, _), v, p in zip(views, vvecs, vprobs):
            if _setting_p(p, m) > _setting_p(probs[i], m):
                vecs[i], probs[i] = v, p
    found: dict[tuple[str, str], Found] = {}
    for s, v, p in zip(candidates, vecs, probs):
        k = int(np.argmax(p))
        label = m.labels[k]
        if label == NONE or p[k] < m.threshold:
            continue
        if not _says_enough(s):
            continue  # a fragment ("first line") is too little for the classifier to read a wish from
        if negated(s) not in m.polarities(v, k):
            continue  # polarity disagrees with what the bank says this setting sounds like
        attribute, setting = label.split("=")
        f = Found(attribute, setting, scope(s.text, said_in), s.text.strip(), float(p[k]))
        found.update({(attribute, c): f for c in f.contexts})
    # A clause an exact phrase reads is read for another attribute by the classifier only when it
    # is sure ("stick to the task" is the task, not "only what I asked"): fail safe.
    ruled_clauses = {(f.evidence, a) for (a, _), f in ruled.items()}
    ruled_text = {s.text.strip() for s in candidates for (a, _), f in ruled.items() if f.evidence in _norm(s.text)}
    found = {k: f for k, f in found.items()
             if not (f.evidence in ruled_text and f.probability < RULED_CLAUSE_P and (f.evidence, f.attribute) not in ruled_clauses)}
    found.update(ruled)
    # One Found per (attribute, setting, clause), speaking for the contexts it still holds.
    out: dict[tuple, Found] = {}
    for (attribute, c), f in found.items():
        key = (attribute, f.setting, f.evidence, f.road)
        prev = out.get(key)
        out[key] = Found(f.attribute, f.setting, (prev.contexts if prev else []) + [c], f.evidence, f.probability, f.road)
    return list(out.values())


_LEAD = {"mark", "nsubj", "aux", "punct", "cc", "advmod", "intj"}


def inner(span) -> list[str]:
    """The verb phrases a clause embeds (complements and adverbial clauses of its verbs), without
    their leading subject, auxiliaries and markers: what a frame around a wish asks for."""
    out = []
    for t in span:
        if t.dep_ not in ("xcomp", "ccomp", "advcl", "conj") or t.pos_ not in ("VERB", "AUX"):
            continue
        sub = [w for w in t.subtree if span.start <= w.i < span.end]
        while sub and sub[0].dep_ in _LEAD and sub[0].i < t.i:
            sub = sub[1:]
        while sub and sub[-1].is_punct:
            sub = sub[:-1]
        text = span.doc[sub[0].i: sub[-1].i + 1].text if sub else ""
        if len(sub) >= 3 and text != span.text.strip() and text not in out:
            out.append(text)
    return out


def _setting_p(p: np.ndarray, m: Model) -> float:
    """The probability of the likeliest setting when a setting is the likeliest class, else 0."""
    k = int(np.argmax(p))
    return 0.0 if m.labels[k] == NONE else float(p[k])


def _core(clause: str) -> str | None:
    """A request question without its frame: "Could you maybe keep it short?" -> "keep it short"."""
    n = _norm(clause)
    if not clause.rstrip().endswith("?"):
        return None
    hit = _compiled_gates()[0].search(n)
    if hit is None or hit.start() != 0:
        return None
    core = n[hit.end():].strip()
    core = re.sub(r"^(?:please|maybe|just|kindly)\s+", "", core)
    return core if len(core.split()) >= 2 else None


def still_stated(evidence: str, text: str) -> bool:
    """Verification: the cited message still states the evidence clause as the speaker's own
    (not quoted, reported, denied, or merely asked)."""
    ev = _norm(evidence)
    if not ev:
        return False
    doc = _doc(_blank_quotes(text))
    return any(ev in _norm(s.text) and _open(s) for s in clauses(doc))


def warm() -> None:
    """Load now what the first preference read of a process needs: the spaCy pipeline, the
    classifier weights and the sentence model (~5 s cold). The app calls it at start, so the
    first participant's first reply does not pay for it; the crash harness before it forks."""
    from memory import nlp

    nlp.nlp()
    model()
    _embedder()._load()
