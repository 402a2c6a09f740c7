"""The answer-statement selector: which of the participant's own sentences answers a recall
question the parse-rule readers (memory.answers) could not read or found no value for.

Rules grow by wording, and other people's wording defeats them: on weeks written by other
authors retrieval found the answering statement 9 of 12 times while the readers named the fact
3 of 12. Here a small learned model scores every candidate sentence of the participant's (never a
question, nor a negated, supposed or reported clause: memory.answers' `_sentences`, which uses
memory.facts' stated-clause check) against the question, from features that do not depend on the
wording of either:

- `cos`, `cos_margin`, `cos_rank`: all-MiniLM-L6-v2 cosine of question and sentence, its distance
  to the best candidate's, and its rank among the candidates;
- `overlap`, `idf_overlap`: the question's content lemmas (wh, frame, self and stop words removed)
  found in the sentence, plain and weighted by rarity among the participant's sentences;
- `type_known`, `type_match`: whether the wh-word asks for a type (who: PERSON; where: GPE/LOC/FAC;
  when: DATE/TIME; how many/old/long: CARDINAL/DATE/QUANTITY) and whether the sentence holds an
  entity of that type that the question does not already hold;
- `names`, `has_names`: the share of the question's names (people, places, things) in the sentence;
- `recency`: rank of the message, newest first; `length`: log of the sentence's words.

A logistic regression over them (weights and the standardisation are data:
memory/data/answer_select.json, fitted by eval/answerselect.py on LoCoMo conversations 1-6 and
recallgen-v3 train weeks, the threshold chosen on conversation-level folds) gives each sentence
a probability of being the answering statement. The best one above the threshold is quoted back
as the participant said it, with when it was told; below it, the companion says it was not told.
A sentence is eligible only with lexical support (`supports`: one of the question's content words
other than its names, or a word of its concept), a gate added after the first measurement (see the
README's numbers).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources

import numpy as np

VERSION = "answer-select-v1"
FEATURES = ("cos", "cos_margin", "cos_rank", "overlap", "idf_overlap", "type_known", "type_match",
            "names", "has_names", "recency", "length")

_WH_WORDS = {"what", "where", "when", "which", "who", "whom", "whose", "how", "why"}
_FRAME = set("""asked asking ask asks wants want wanted know knows knew tell told telling remind remember remembered
recall forget forgot forgotten mention mentioned mentions say said says again exactly think thought did do does
doing done is are was were be been am have has had will would could should can get got go going
you u ya your yours i me my mine we us our ours myself thing things something anything
hey hi so ok okay oh um hmm well anyway quick question random testing please sorry""".split())
_TYPES = {"PERSON": {"PERSON"}, "PLACE": {"GPE", "LOC", "FAC"}, "TIME": {"DATE", "TIME"},
          "NUMBER": {"CARDINAL", "DATE", "QUANTITY"}}
_NAME_ENTS = {"PERSON", "GPE", "LOC", "FAC", "ORG", "NORP", "PRODUCT", "EVENT", "WORK_OF_ART"}


def wanted_type(q_doc) -> str | None:
    """The entity type the wh-word asks for, or None (what, which, why: any type)."""
    low = [t.lower_ for t in q_doc]
    text = " ".join(low)
    if re.search(r"\bhow (?:many|much|old|long)\b", text):
        return "NUMBER"
    if re.search(r"\b(?:when|what time|what day|what date|which day|what month|which month|what year)\b", text):
        return "TIME"
    if re.search(r"\bwhere\b|\bwhich (?:city|town|country|place)\b|\bwhat (?:city|town|country|place)\b", text):
        return "PLACE"
    if re.search(r"\bwho(?:m|se)?\b|\bwho's\b", text):
        return "PERSON"
    return None


def _content(doc) -> set[str]:
    return {t.lemma_.lower() for t in doc if t.is_alpha and not t.is_stop and t.lower_ not in _FRAME
            and t.lemma_.lower() not in _FRAME and t.lower_ not in _WH_WORDS and len(t) > 1}


def _names(doc) -> set[str]:
    out = {e.text.lower() for e in doc.ents if e.label_ in _NAME_ENTS}
    out |= {t.lower_ for t in doc if t.pos_ == "PROPN" and t.i > 0 and t.lower_ not in _FRAME}
    return {n for n in out if n not in _FRAME and n not in ("i",)}


@dataclass(frozen=True)
class Read:
    """What the selector needs of one parsed sentence, immutable so that it can be kept by text
    between turns (memory.nlp.read_many) instead of parsed again: its text, its lemmas and
    lowercased words, its entities (lowercased text, label), how many alphabetic words it has, and
    whether it carries an instruction (memory.answers._instruction: never quoted)."""
    text: str
    words: frozenset
    ents: tuple
    alpha: int
    instruction: bool = False


def read_sentence(span, instruction: bool = False) -> Read:
    return Read(span.text.strip(), frozenset({t.lemma_.lower() for t in span} | {t.lower_ for t in span}),
                tuple((e.text.lower(), e.label_) for e in span.ents), sum(1 for t in span if t.is_alpha),
                instruction)


@dataclass
class Sentence:
    """One candidate: the sentence as they wrote it, its message's ordinal and when it was said."""
    text: str
    read: Read
    ordinal: int
    ts: str | None = None
    dayid: str | None = None
    sid: str = ""  # "<dayid or ordinal>#<sentence index>"


def feature_matrix(q_doc, q_vec: np.ndarray, sents: list[Sentence], vecs: np.ndarray) -> np.ndarray:
    """One row of FEATURES per candidate sentence (vecs: their L2-normalised embeddings)."""
    n = len(sents)
    if n == 0:
        return np.zeros((0, len(FEATURES)), dtype=np.float64)
    cos = vecs @ q_vec
    order = np.argsort(-cos, kind="stable")
    cos_rank = np.empty(n)
    cos_rank[order] = np.arange(n)
    ords = np.array([s.ordinal for s in sents], dtype=np.float64)
    # newest message first; sentences of one message share a rank
    uniq = sorted(set(ords.tolist()), reverse=True)
    rec_of = {o: i for i, o in enumerate(uniq)}
    q_terms = _content(q_doc)
    q_names = _names(q_doc)
    want = wanted_type(q_doc)
    q_text = q_doc.text.lower()
    lemma_sets = [s.read.words for s in sents]
    df: dict[str, int] = {}
    for ls in lemma_sets:
        for w in q_terms & ls:
            df[w] = df.get(w, 0) + 1
    idf = {w: math.log((n + 1) / (df.get(w, 0) + 1)) + 1.0 for w in q_terms}
    idf_total = sum(idf.values()) or 1.0
    rows = []
    for i, s in enumerate(sents):
        ls = lemma_sets[i]
        hit = q_terms & ls
        low = s.text.lower()
        type_match = 0.0
        if want:
            for e_text, e_label in s.read.ents:
                if e_label in _TYPES[want] and e_text not in q_text:
                    type_match = 1.0
                    break
            if not type_match and want == "NUMBER" and re.search(r"\b\d+\b", low):
                type_match = 1.0
        names = (sum(1 for nm in q_names if re.search(rf"\b{re.escape(nm)}\b", low)) / len(q_names)) if q_names else 0.0
        rows.append([float(cos[i]), float(cos[i] - cos[order[0]]), 1.0 / (1.0 + cos_rank[i]),
                     len(hit) / len(q_terms) if q_terms else 0.0,
                     sum(idf[w] for w in hit) / idf_total if q_terms else 0.0,
                     1.0 if want else 0.0, type_match, names, 1.0 if q_names else 0.0,
                     1.0 / (1.0 + rec_of[s.ordinal]), math.log(1 + s.read.alpha)])
    return np.array(rows, dtype=np.float64)


@lru_cache(maxsize=1)
def model() -> dict:
    return json.loads(resources.files("memory").joinpath("data/answer_select.json").read_text(encoding="utf-8"))


def scores(x: np.ndarray, m: dict | None = None) -> np.ndarray:
    """P(answering statement) per row, from the stored weights."""
    m = m or model()
    if len(x) == 0:
        return np.zeros(0)
    z = (x - np.array(m["mean"])) / np.array(m["scale"])
    logit = z @ np.array(m["coef"]) + float(m["intercept"])
    return 1.0 / (1.0 + np.exp(-logit))


@dataclass
class Selection:
    score: float
    threshold: float
    sentence: Sentence | None  # the best candidate (quoted only when score >= threshold)
    n: int

    @property
    def quoted(self) -> bool:
        return self.sentence is not None and self.score >= self.threshold

    def public(self) -> dict:
        return {"version": VERSION, "model": model().get("version"), "score": round(self.score, 4),
                "threshold": self.threshold, "quoted": self.quoted, "candidates": self.n,
                "sentence_id": self.sentence.sid if self.sentence is not None else None,
                "sentence": self.sentence.text if self.sentence is not None else None}


def candidate_sentences(stated) -> list[Sentence]:
    """Sentences to score from `stated`: (candidate, sentence span or its `Read`) of the
    participant's stated sentences (memory.answers._sentences: no question, no negated, supposed
    or reported clause; or a third item, the message text, which is not used)."""
    out, idx = [], {}
    for c, sent, *_ in stated:
        key = c.dayid or str(c.ordinal)
        k = idx.get(key, 0)
        idx[key] = k + 1
        r = sent if isinstance(sent, Read) else read_sentence(sent)
        if r.alpha < 3:
            continue
        out.append(Sentence(r.text, r, c.ordinal, c.ts, c.dayid, f"{key}#{k}"))
    return out


def embed(texts: list[str], known: dict | None = None) -> np.ndarray:
    """all-MiniLM-L6-v2 vectors of `texts` (the shared embedder, which remembers recent texts);
    `known`: text -> a vector the same embedder already made of that text (a stored message's)."""
    from memory import embeddings

    known = known or {}
    todo = [t for t in texts if t not in known]
    made = dict(zip(todo, embeddings.default().encode(todo))) if todo else {}
    return np.array([known[t] if t in known else made[t] for t in texts], dtype=np.float32).reshape(len(texts), -1)


def select(question: str, sents: list[Sentence], threshold: float | None = None, unread: bool = False,
           expand=None, known: dict | None = None) -> Selection:
    """The best of the participant's candidate sentences for `question`, with its score and the
    threshold it must pass (`unread`: no reader read the question; its own threshold). `expand`:
    words -> words of the same concept, for the support gate. `known`: vectors already made of
    some sentences (`embed`)."""
    from memory import nlp

    m = model()
    if threshold is None:
        threshold = float(m["threshold_unread"] if unread else m["threshold"])
    if not sents:
        return Selection(0.0, threshold, None, 0)
    q_doc = nlp.parse(question)
    vecs = embed([question] + [s.text for s in sents], known)
    x = feature_matrix(q_doc, vecs[0], sents, vecs[1:])
    p = scores(x, m)
    p = np.where(support_mask(q_doc, sents, expand), p, 0.0)
    best = int(np.argmax(p))
    return Selection(float(p[best]), threshold, sents[best], len(sents))


def support_mask(q_doc, sents: list[Sentence], expand=None) -> np.ndarray:
    """Lexical support, per candidate: the sentence holds one of the question's content words other
    than its names (or a word of the same concept: memory/data/answers.json), when the question has
    any. A sentence that only names the person asked about ("my friend Sofia's wedding" for "where
    does Sofia live?") is about them, not an answer to what is asked of them."""
    words = _content(q_doc) - _names(q_doc) - {t.lemma_.lower() for t in q_doc if t.pos_ == "PROPN"}
    if not words:
        return np.ones(len(sents), dtype=bool)
    wanted = words | (expand(words) if expand else set())
    return np.array([not s.read.words.isdisjoint(wanted) for s in sents], dtype=bool)


def supports(q_doc, s: Sentence, expand=None) -> bool:
    """`support_mask` of one sentence."""
    return bool(support_mask(q_doc, [s], expand)[0])
