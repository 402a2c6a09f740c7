"""Answers to a participant's questions about their own past, taken from what they said.

A small model asked "what's my cat called?" with the right note in its prompt still answers
"Biscuzzle". Here the answer is read, not generated: the question is parsed for the *slot* it
asks for (a name, where someone lives or is from, a job, a workplace, a kind or breed, an age,
a time, a person) and the *entity* it is about (the participant, one of their people or pets by
relation or by name, or an event of theirs: "my dentist appointment", "flying to Lisbon");
every candidate statement of the participant's (never a question, never a negated, supposed or
reported clause: memory.facts decides what is stated) is parsed for a clause about that entity
that asserts a value of that slot. The newest such statement answers; the answer is built from
it ("Your cat is called Pickle: you told me on Monday."). When no statement answers, the
companion says it was not told ("I don't think you've told me where Sofia lives."), and guesses
nothing. A question it cannot read (no slot, no entity, advice rather than recall: "where should
I go?") is left to the model.

Which noun names which slot, and which predicates assert it, is data
(memory/data/answers.json); who a clause is about comes from the parse and the fact reader's
relation nouns. Pure functions over texts, plus `candidates`, which reads the participant's
statements that may hold the answer (as of the turn's bound).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from importlib import resources

from memory import facts, nlp

VERSION = "answers-v4"
_WH = {"WP", "WDT", "WRB", "WP$"}
_SELF = {"i", "me", "my", "we", "our", "us", "myself", "mine"}
_PRONOUNS = {"he", "she", "they", "it", "him", "her", "them"}
_MODALS = {"should", "could", "would", "can", "might", "shall", "may", "ca", "'d", "must"}
_TIME_ENTS = {"DATE", "TIME"}
_PLACE_ENTS = {"GPE", "LOC", "FAC"}
_RELATIVE_ONLY = re.compile(r"^(?:today|tonight|now|tomorrow|yesterday|this (?:morning|evening|afternoon|week)|"
                            r"the other day|recently|lately|again)$", re.I)
_DISCOURSE = re.compile(r"^(?:(?:hi|hey|hello|so|ok|okay|well|honestly|anyway|btw|oh|big news|guess what|"
                        r"fun fact|by the way)[!,.:;\s-]+)+", re.I)
_FIRST_TO_SECOND = [(r"\bI'm\b", "you're"), (r"\bI am\b", "you are"), (r"\bI was\b", "you were"),
                    (r"\bI've\b", "you've"), (r"\bI'll\b", "you'll"), (r"\bI'd\b", "you'd"),
                    (r"\bI\b", "you"), (r"\bmy\b", "your"), (r"\bMy\b", "Your"), (r"\bme\b", "you"),
                    (r"\bmine\b", "yours"), (r"\bmyself\b", "yourself"), (r"\bwe're\b", "you're"),
                    (r"\bour\b", "your"), (r"\bOur\b", "Your"), (r"\bwe\b", "you"), (r"\bWe\b", "You"),
                    (r"\bus\b", "you")]


@lru_cache(maxsize=1)
def lexicon() -> dict:
    data = json.loads(resources.files("memory").joinpath("data/answers.json").read_text(encoding="utf-8"))
    nouns = {w: slot for slot, ws in data["slot_nouns"].items() for w in ws}
    return {**{k: frozenset(v) for k, v in data.items() if isinstance(v, list)}, "slot_noun": nouns,
            "version": data["version"]}


def _rel(tok) -> str | None:
    """The relation noun at `tok` ("sister", "cat"), from the fact reader's lexicon."""
    rels = facts.lexicon()["relations"]
    for w in (tok.lower_, tok.lemma_.lower()):
        if w in rels:
            return w
    return None


@dataclass
class Mention:
    """One of the participant's people or pets named in a sentence."""
    rel: str
    names: list  # tokens
    tokens: set
    start: int


def mentions(doc) -> list[Mention]:
    """The fact reader's mentions (a relation noun owned by "my"/"our" and the names attached to
    it), plus what it leaves to capitals: a lowercase name the relation noun is a compound or an
    apposition of ("my cousin omar moved"). A relation noun owned by someone else ("my friend's
    dog") is theirs, not the participant's."""
    out = []
    for m in facts.mentions(doc):
        head = doc[min(i for i in m.tokens if _rel(doc[i]) is not None)] if any(
            _rel(doc[i]) is not None for i in m.tokens) else doc[min(m.tokens)]
        if any(c.dep_ == "poss" and c.lower_ not in ("my", "our") for c in head.children):
            continue
        names = list(m.names)
        nxt = doc[head.i + 1] if head.i + 1 < len(doc) else None
        if not names and nxt is not None and nxt.pos_ == "PROPN" and nxt.text[:1].isupper() and _rel(nxt) is None:
            names = [nxt]  # "our cat Pickle knocked ...", parsed as two subjects
        out.append(Mention(m.rel, names, set(m.tokens) | {n.i for n in names}, m.span[0]))
    seen = {i for m in out for i in m.tokens}
    for t in doc:
        r = _rel(t)
        if r is None or t.i in seen:
            continue
        h = t.head
        owned = any(c.dep_ == "poss" and c.lower_ in ("my", "our") for c in (*t.children, *h.children))
        if t.dep_ in ("compound", "appos") and owned and h.is_alpha and _rel(h) is None and h.lower_ not in _SELF \
                and h.pos_ in ("NOUN", "PROPN") and not h.is_stop:
            out.append(Mention(r, [h], {t.i, h.i}, min(t.i, h.i)))
    return out


# ---------------------------------------------------------------- the question


@dataclass(frozen=True)
class Entity:
    kind: str  # self | relation | name | event
    rel: str | None = None
    name: str | None = None
    words: tuple = ()  # an event's content lemmas ("dentist", "appointment")

    def public(self) -> dict:
        return {k: v for k, v in (("kind", self.kind), ("rel", self.rel), ("name", self.name),
                                  ("words", list(self.words) or None)) if v}


@dataclass(frozen=True)
class Question:
    slot: str  # name residence origin workplace occupation kind age time person place
    entity: Entity
    text: str
    prefer_time: bool = False  # "what time": a clock time over a day
    kind_of: str | None = None  # "what kind of cat": the noun

    def public(self) -> dict:
        return {"slot": self.slot, "entity": self.entity.public()}


def _clause_verb(tok):
    t = tok
    while t.pos_ not in ("VERB", "AUX") and t.head.i != t.i:
        t = t.head
    # "what's my cat called": the participle is the clause's verb, the copula its auxiliary
    if t.pos_ == "AUX" and t.dep_ in ("aux", "auxpass") and t.head.i != t.i:
        t = t.head
    return t


def _names_in(doc, known: dict[str, str | None]) -> list:
    """Tokens naming someone: a proper noun, or a word the participant used as a name."""
    return [t for t in doc if t.is_alpha and t.lower_ not in _SELF | _PRONOUNS and _rel(t) is None and (
        t.lower_ in known or (t.pos_ == "PROPN" and t.text[:1].isupper()))]


def _question_sentence(doc):
    for s in doc.sents:
        if s.text.rstrip().endswith("?") or any(t.tag_ in _WH for t in s[:3]) or s[0].lemma_ in ("do", "be", "have"):
            return s
    return None


def read_question(text: str, known: dict[str, str | None] | None = None) -> Question | None:
    """The slot and entity a question about the participant's own life asks for; None when it is
    not such a question or asks for something this reader does not know how to find.
    `known`: names the participant used (lowercase -> their relation noun, or None)."""
    known = known or {}
    lex = lexicon()
    doc = nlp.parse(text)
    sent = _question_sentence(doc)
    if sent is None:
        return None
    toks = list(sent)
    wh = next((t for t in toks if t.tag_ in _WH), None)
    slot, kind_of, prefer_time, slot_tok = None, None, False, None
    if wh is not None:
        verb = _clause_verb(wh)
        if any(c.dep_ == "aux" and c.lower_ in _MODALS for c in verb.children):
            return None  # "where should I go?": advice, not recall
        w = wh.lower_
        noun = wh.head if wh.dep_ in ("det", "poss") else None
        if w == "where":
            slot = _where_slot(verb, lex)
        elif w == "when":
            slot = "time"
        elif w in ("who", "whose"):
            slot = "person"  # "whose wedding": the wedding is the event, its owner the answer
        elif w == "how":
            nxt = doc[wh.i + 1] if wh.i + 1 < len(doc) else None
            slot = "age" if nxt is not None and nxt.lower_ == "old" else None
        elif w in ("what", "which"):
            if noun is not None and noun.lemma_.lower() in lex["slot_noun"]:
                slot_tok = noun
                slot = lex["slot_noun"][noun.lemma_.lower()]
                prefer_time = noun.lemma_.lower() in ("time", "hour")
                if slot == "kind":
                    kind_of = next((p.lower_ for c in noun.children if c.dep_ == "prep"
                                    for p in c.children if p.dep_ == "pobj"), None)
                if slot == "place":
                    slot = _where_slot(verb, lex) or "place"
            elif verb.lemma_ in lex["name_verbs"]:
                slot = "name"
            elif verb.lemma_ in lex["occupation_verbs"]:
                slot = "occupation"
            else:  # "what's my job?", "what is my sister's name?": the noun the wh-word equals
                for c in verb.children:
                    if c.dep_ in ("nsubj", "nsubjpass", "attr") and c.i != wh.i and c.lemma_.lower() in lex["slot_noun"]:
                        slot_tok = c
                        slot = lex["slot_noun"][c.lemma_.lower()]
                        prefer_time = c.lemma_.lower() in ("time", "hour")
                        break
                else:
                    if noun is not None and _rel(noun):  # "which cat is mine": not a slot
                        return None
    else:  # "do you remember my dog's name?", "did I tell you my brother's job?"
        verb = next((t for t in toks if t.lemma_ in lex["recall_frames"] and t.pos_ == "VERB"), None)
        if verb is None:
            return None
        obj = next((c for c in verb.children if c.dep_ in ("dobj", "attr") and c.lemma_.lower() in lex["slot_noun"]), None)
        if obj is None:
            return None
        slot_tok, slot = obj, lex["slot_noun"][obj.lemma_.lower()]
        if slot == "place":
            return None
    if slot is None:
        return None
    entity = _entity(sent, wh, slot_tok, known, slot)
    if entity is None:
        return None
    if slot in ("time", "person", "place") and entity.kind == "self" and not entity.words:
        return None  # "when is it?": no event to look for
    if slot == "name" and entity.kind == "self" and any(
            t.pos_ in ("NOUN", "PROPN") and t.lemma_.lower() not in lex["slot_noun"] and _rel(t) is None
            and t.lower_ not in _SELF for t in toks):
        return None  # "what's the name of the company I work for?", "what's our quiz team called?": not their name
    return Question(slot=slot, entity=entity, text=text, prefer_time=prefer_time, kind_of=kind_of)


def _where_slot(verb, lex) -> str | None:
    if any(t.lower_ == "from" for t in verb.subtree) or verb.lemma_ in lex["origin_verbs"]:
        return "origin"
    if verb.lemma_ in lex["residence_verbs"]:
        return "residence"
    if verb.lemma_ in lex["work_verbs"]:
        return "workplace"
    return "place"


def _entity(sent, wh, slot_tok, known, slot) -> Entity | None:
    skip = {wh.i} if wh is not None else set()
    if slot_tok is not None:
        skip.add(slot_tok.i)
    lex = lexicon()
    # who: a relation noun of theirs ("my brother", "my sister's name"), a name, or the participant
    for t in sent:
        if t.i in skip:
            continue
        r = _rel(t)
        if r is not None and (any(c.lower_ in ("my", "our") for c in t.children) or t.dep_ in ("nsubj", "attr", "poss")):
            name = next((c.text for c in t.children if c.dep_ in ("appos", "compound") and c.is_alpha
                         and _rel(c) is None), None)
            if slot == "kind" or not (slot in ("time", "person", "place") and t.dep_ not in ("nsubj", "poss")):
                return Entity("relation", rel=r, name=name)
    names = [t for t in _names_in(sent, known) if t.i not in skip and t.ent_type_ not in _TIME_ENTS
             and not (t.text.islower() and t.dep_ in ("compound", "amod"))]  # "our quiz team": no one called Quiz
    if names and slot not in ("time", "person", "place"):
        n = names[0]
        shown = getattr(known, "display", {}).get(n.lower_, n.text if n.text[:1].isupper() else n.text.capitalize())
        return Entity("name", name=shown, rel=known.get(n.lower_))
    mine = any(t.lower_ in _SELF for t in sent)
    if slot in ("time", "person", "place"):
        words = tuple(sorted({t.lemma_.lower() for t in sent if t.i not in skip and t.is_alpha
                              and t.pos_ in ("NOUN", "PROPN", "VERB", "ADJ") and t.lemma_.lower() not in lex["light_verbs"]
                              and t.lemma_.lower() not in lex["recall_frames"] and t.lower_ not in _SELF
                              and t.lemma_.lower() not in ("again", "ever")}))
        if not words:
            return None
        return Entity("event", words=words)
    if mine:
        return Entity("self")
    return None


# ---------------------------------------------------------------- the statements


@dataclass(frozen=True)
class Candidate:
    text: str
    dayid: str | None = None
    ordinal: int = 0
    ts: str | None = None
    source: str = "message"  # message | claim | line
    before: str = ""  # the participant's message just before it (who "she" is in "actually she moved to Leeds")


@dataclass
class Found:
    value: str
    sentence: str
    candidate: Candidate
    how: str  # what asserted it: "lives in", "is a", "called" ...
    entity_text: str | None = None  # who, as the statement names them ("your brother Arun")
    extra: dict = field(default_factory=dict)

    def public(self) -> dict:
        return {"value": self.value, "dayid": self.candidate.dayid, "source": self.candidate.source,
                "sentence": self.sentence, "how": self.how}


class Names(dict):
    """Names the participant used: lowercase -> the relation noun they gave it ("arun" -> "brother",
    "leeds" -> None); `display` keeps each as they wrote it."""

    def __init__(self):
        super().__init__()
        self.display: dict[str, str] = {}

    def merge(self, other: "Names") -> "Names":
        for k, v in other.items():
            if self.get(k) is None:
                self[k] = v
            self.display.setdefault(k, other.display.get(k, k))
        return self


def _names_read(doc) -> tuple:
    """What one text adds to `known_names`, in the order it adds it: (name, relation, as written)
    for each named mention, then (name, None, as written) for each one-token PERSON/ORG/GPE/NORP
    entity (taken only if no earlier name has that spelling)."""
    named = tuple((n.lower_, m.rel, n.text) for m in mentions(doc) for n in m.names)
    ents = tuple((e.root.lower_, None, e.root.text) for e in doc.ents
                 if e.label_ in ("PERSON", "ORG", "GPE", "NORP") and len(e) == 1)
    return named, ents


def known_names(texts: list[str]) -> Names:
    out = Names()
    # each text's reading is kept (nlp.read_many): the same statements come back turn after turn
    for named, ents in nlp.read_many("known_names", [facts.blank_quotes(t) for t in texts], _names_read):
        for low, rel, shown in named:
            out[low] = rel
            out.display.setdefault(low, shown)
        for low, _, shown in ents:
            if low not in out:
                out[low] = None
                out.display.setdefault(low, shown)
    return out


def _refs(sent, q: Question, known: dict) -> set[int]:
    """Token indices of `sent`'s doc that refer to the question's entity (pronouns after a mention
    of it in the same message count)."""
    e = q.entity
    doc = sent.doc
    refs: set[int] = set()
    if e.kind == "self":
        return {t.i for t in sent if t.lower_ in ("i", "we")}
    if e.kind == "event":
        return set()
    ms = mentions(doc)
    names = {e.name.lower()} if e.name else set()
    if e.kind == "relation":
        names |= {n for n, r in known.items() if r == e.rel}
    for m in ms:
        if (e.rel and m.rel.rstrip("s") == e.rel.rstrip("s")) or names & {n.lower_ for n in m.names}:
            refs |= m.tokens
    if names:  # a mention after the sentence cannot refer back into it: the doc up to its end
        refs |= {t.i for t in doc[:sent.end] if t.lower_ in names}
    if refs:  # he/she/they after the mention, in the same message
        first = min(refs)
        refs |= {t.i for t in sent if t.i > first and t.lower_ in ("he", "she", "they", "it")
                 and t.dep_ in ("nsubj", "nsubjpass")}
    return {i for i in refs if sent.start <= i < sent.end}


def _subject_in(verb, refs: set[int]) -> bool:
    t = verb
    for _ in range(4):
        for c in t.children:
            if c.dep_ in ("nsubj", "nsubjpass") and (c.i in refs or any(x.i in refs for x in c.subtree)):
                return True
        if t.dep_ in ("conj", "xcomp", "advcl", "relcl") and t.head.i != t.i:
            if t.dep_ == "relcl" and t.head.i in refs:
                return True
            t = t.head
        else:
            break
    return False


def _phrase(tok, keep_preps=("at", "in", "for", "of")) -> str:
    """A noun with its determiner, modifiers and a prepositional phrase ("a chef at a seafood restaurant")."""
    out = {tok.i}
    for c in tok.children:
        if c.dep_ in ("det", "amod", "compound", "nummod", "poss", "nmod", "quantmod") and c.i < tok.i:
            out |= {x.i for x in c.subtree}
        if c.dep_ == "prep" and c.lower_ in keep_preps and c.i > tok.i:
            out |= {x.i for x in c.subtree}
    lo, hi = min(out), max(out)
    span = tok.doc[lo:hi + 1]
    words = [t.text_with_ws for t in span if t.i in out]
    return re.sub(r"\s+", " ", "".join(words)).strip(" ,.;:!")


def _place_of(verb) -> str | None:
    for c in verb.children:
        if c.dep_ == "prep" and c.lower_ in ("in", "to", "near", "outside", "at"):
            o = next((x for x in c.children if x.dep_ == "pobj"), None)
            if o is not None and (o.pos_ == "PROPN" or o.ent_type_ in _PLACE_ENTS):
                return _phrase(o, keep_preps=())
    return None


def _stated(tok) -> bool:
    return facts.not_stated(tok) is None


def _values(sent, q: Question, refs: set[int], known: dict) -> list[tuple[str, str, object]]:
    """(value, how, verb) of the slot asserted about the entity in this sentence."""
    lex = lexicon()
    occupations = facts.lexicon()["occupations"]
    out = []
    doc = sent.doc
    slot = q.slot
    verbs = [t for t in sent if t.pos_ in ("VERB", "AUX") and t.dep_ not in ("aux", "auxpass")]
    if slot == "name" and q.entity.kind in ("relation", "name"):
        for m in mentions(doc):
            if m.tokens & refs and m.names and sent.start <= m.start < sent.end:
                out.append((m.names[0].text, "called", _clause_verb(m.names[0])))
    if slot == "name" and q.entity.kind == "self":
        for v in verbs:
            if v.lemma_ == "be" and _subject_in(v, refs):
                for c in v.children:
                    if c.dep_ == "attr" and c.pos_ == "PROPN":
                        out.append((c.text, "is", v))
        for f in facts.from_doc(doc):
            if f.slot == "name" and f.text.startswith("Is called "):
                out.append((f.text[len("Is called "):], "called", sent.root))
    for v in verbs:
        if not _subject_in(v, refs):
            continue
        if slot == "residence" and v.lemma_ in lex["residence_verbs"]:
            p = _place_of(v)
            if p:
                out.append((p, "lives in", v))
        if slot == "origin":
            for c in v.children:
                if c.dep_ == "prep" and c.lower_ == "from":
                    o = next((x for x in c.children if x.dep_ == "pobj"), None)
                    if o is not None and o.pos_ == "PROPN":
                        out.append((_phrase(o, ()), "is from", v))
            if v.lemma_ in lex["origin_verbs"] and v.lemma_ != "come":
                p = _place_of(v)
                if p:
                    out.append((p, "grew up in", v))
        if slot == "workplace" and v.lemma_ in lex["work_verbs"]:
            # "I work at a clinic", "I work as a nurse at a clinic": the first at/for/in under the verb
            for c in v.subtree:
                if c.dep_ == "prep" and c.lower_ in ("at", "for", "in") and _clause_verb(c).i == v.i:
                    o = next((x for x in c.children if x.dep_ == "pobj"), None)
                    if o is not None and o.ent_type_ not in _TIME_ENTS:
                        out.append((_phrase(o, ("in",)), f"works {c.lower_}", v))
                        break
        if slot in ("occupation", "kind", "age"):
            for c in v.children:
                if v.lemma_ == "be" and c.dep_ in ("attr", "acomp"):
                    lemma = c.lemma_.lower()
                    if slot == "age" and (c.like_num or any(x.lower_ == "old" for x in c.subtree)):
                        num = next((x.text for x in c.subtree if x.like_num), None)
                        if num:
                            out.append((num, "is", v))
                    if c.pos_ != "NOUN":
                        continue
                    if slot == "occupation" and lemma in occupations:
                        out.append((_phrase(c), "is", v))
                    if slot == "kind" and lemma not in occupations and _rel(c) != q.entity.rel:
                        out.append((_phrase(c, ()), "is", v))
                if slot == "occupation" and v.lemma_ in lex["work_verbs"] and c.dep_ == "prep" and c.lower_ == "as":
                    o = next((x for x in c.children if x.dep_ == "pobj"), None)
                    if o is not None:
                        out.append((_phrase(o), "works as", v))
    if slot == "kind" and q.entity.kind in ("relation", "name"):
        # "my tabby cat Pickle", "a beagle called Biscuit": the kind named with the animal
        for m in mentions(doc):
            if m.tokens & refs:
                head = doc[min(i for i in m.tokens if _rel(doc[i]) is not None)] if any(
                    _rel(doc[i]) is not None for i in m.tokens) else doc[min(m.tokens)]
                for c in head.children:
                    if c.dep_ in ("amod", "compound") and c.pos_ in ("NOUN", "ADJ", "PROPN") and not c.ent_type_:
                        out.append((c.text, "is a", head))
                if q.kind_of and m.rel != q.kind_of and _rel(head) and q.entity.kind == "name":
                    out.append((m.rel, "is a", head))
    if slot in ("time", "person", "place"):
        out += _event_values(sent, q, known)
    return [(v, how, verb) for v, how, verb in out if v and _stated(verb if verb is not None else sent.root)]


def _event_values(sent, q: Question, known: dict) -> list:
    words = set(q.entity.words)
    lemmas = {t.lemma_.lower() for t in sent} | {t.lower_ for t in sent}
    need = max(1, (len(words) + 1) // 2)
    if len(words & lemmas) < need:
        return []
    asked = {w.lower() for w in re.findall(r"\w+", q.text)}
    out = []
    if q.slot == "time":
        ents = [e for e in sent.ents if e.label_ in _TIME_ENTS and not _RELATIVE_ONLY.match(e.text)
                and not {w.lower() for w in re.findall(r"\w+", e.text)} <= asked]
        if q.prefer_time and any(e.label_ == "TIME" for e in ents):
            ents = [e for e in ents if e.label_ == "TIME"]
        if ents:
            parts = []
            for e in ents:
                head = e.root.head
                prep = head.text + " " if head.dep_ == "prep" and head.i == e.start - 1 else ""
                parts.append(prep + e.text)
            out.append((" ".join(parts), "when", ents[0].root.head))
    if q.slot == "person":
        ms = mentions(sent.doc)
        people = []
        for t in sent:
            if t.lower_ in asked or not t.is_alpha or _rel(t):
                continue
            if ((t.pos_ == "PROPN" and t.text[:1].isupper()) or t.lower_ in known) and \
                    t.ent_type_ not in _TIME_ENTS | _PLACE_ENTS:
                m = next((m for m in ms if t.i in m.tokens), None)
                # the event's own person first: "Sofia's wedding", "Lena is coming"
                tied = t.head.lemma_.lower() in words or _clause_verb(t).lemma_.lower() in words or (
                    m is not None and doc_head(sent.doc, m).head.lemma_.lower() in words)
                people.append((not tied, t.i, f"your {m.rel} {t.text}" if m else t.text, t))
        if people:
            _, _, value, t = min(people)
            out.append((value, "who", _clause_verb(t)))
    if q.slot == "place":
        for t in sent:
            if t.ent_type_ in _PLACE_ENTS and t.lower_ not in asked and t.pos_ == "PROPN":
                out.append((t.text, "where", t.head))
                break
    return out


def doc_head(doc, m: Mention):
    """The token of a mention that the rest of its sentence hangs on."""
    toks = [doc[i] for i in sorted(m.tokens)]
    return next((t for t in toks if t.head.i not in m.tokens), toks[0])


def _clause_of(sent, verb) -> str:
    """The clause of `verb` alone: its subtree without conjoined or loosely attached clauses
    ("I've got an appointment on Monday, not looking forward to it" -> the first part)."""
    drop = set()
    doc = sent.doc
    for c in verb.children:
        loose = c.dep_ == "advcl" and any(doc[i].is_punct for i in range(min(verb.i, c.left_edge.i), c.left_edge.i))
        if c.dep_ == "cc" or (c.dep_ in ("conj", "parataxis") and c.pos_ in ("VERB", "AUX")) or loose:
            drop |= {x.i for x in c.subtree}
    keep = [t for t in verb.subtree if t.i not in drop and sent.start <= t.i < sent.end]
    text = re.sub(r"[\s,;:-]+([.!?]*)$", r"\1", "".join(t.text_with_ws for t in keep).strip())
    end = sent.text.rstrip()[-1:]
    if text and text[-1] not in ".!?\u2026" and end in (".", "!", "\u2026"):
        text += end
    return text


def find(q: Question, candidates: list[Candidate], known: dict | None = None) -> Found | None:
    """The newest statement that answers `q`: a sentence that is not a question, about the entity,
    asserting a value of the slot that the question itself does not hold."""
    known = known or {}
    asked = {w.lower() for w in re.findall(r"\w+", q.text)}
    best: Found | None = None
    cands = sorted(candidates, key=lambda c: c.ordinal)
    docs = nlp.parse_many([facts.blank_quotes(c.text) for c in cands])
    for c, doc in zip(cands, docs):
        for sent in doc.sents:
            if sent.text.rstrip().endswith("?") or (sent[0].tag_ in _WH and len(sent) < 12) or reported_question(sent.text) \
                    or asks_recall(sent.text):
                continue  # a question is never an answer
            refs = _refs(sent, q, known)
            if q.entity.kind != "event" and not refs:
                continue
            for value, how, verb in _values(sent, q, refs, known):
                if {w.lower() for w in re.findall(r"\w+", value)} <= asked:
                    continue
                clause = _clause_of(sent, _top_verb(verb, sent)) if verb is not None else sent.text
                if value.split()[-1].lower() not in clause.lower():
                    clause = sent.text
                found = Found(value=value, sentence=_clean(clause), candidate=c, how=how)
                if best is None or c.ordinal >= best.candidate.ordinal:
                    best = found
                break
    return best


def _top_verb(tok, sent):
    """The verb heading the clause `tok` belongs to, climbing out of clauses that only elaborate it."""
    t = _clause_verb(tok)
    while t.dep_ in ("xcomp", "ccomp", "acl", "relcl", "advcl", "prep", "pobj") and t.head.i != t.i and \
            sent.start <= t.head.i < sent.end:
        t = _clause_verb(t.head) if t.head.pos_ not in ("VERB", "AUX") else t.head
    return t


def _clean(text: str) -> str:
    return _DISCOURSE.sub("", " ".join(text.split())).strip()


# ---------------------------------------------------------------- the answer


def second_person(text: str) -> str:
    """The participant's sentence as the companion says it back ("I'm flying" -> "you're flying")."""
    out = text
    for pat, rep in _FIRST_TO_SECOND:
        out = re.sub(pat, rep, out)
    return out


def _who(q: Question) -> tuple[str, bool]:
    """How the answer names the entity, and whether it is the participant ("you")."""
    e = q.entity
    if e.kind == "self":
        return "you", True
    if e.kind == "relation":
        return f"your {e.rel}", False
    return e.name or "they", False


def when_told(ts: str | None, now: datetime | None) -> str:
    """When they said it, as a person says it: earlier today, yesterday, on Monday, on 2 March."""
    if not ts or now is None:
        return ""
    then = datetime.fromisoformat(ts)
    if then.tzinfo is not None and now.tzinfo is not None:
        then = then.astimezone(now.tzinfo)
    days = (now.date() - then.date()).days
    if days <= 0:
        return " earlier today"
    if days == 1:
        return " yesterday"
    if days < 7:
        return f" on {then.strftime('%A')}"
    return f" on {then.day} {then.strftime('%B')}"


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def compose(q: Question, f: Found, now: datetime | None = None) -> str:
    """The reply: the answer from the statement, and when it was told."""
    who, me = _who(q)
    v = f.value.capitalize() if q.slot == "name" and f.value.islower() else f.value
    told = f"you told me{when_told(f.candidate.ts, now)}" if f.candidate.source == "message" else "you told me"
    if q.slot == "name":
        lead = f"Your name is {v}" if me else f"{_cap(who)} is called {v}"
    elif q.slot == "residence":
        lead = f"You live in {v}" if me else f"{_cap(who)} lives in {v}"
    elif q.slot == "origin":
        lead = f"You're from {v}" if me else f"{_cap(who)} is from {v}"
    elif q.slot == "workplace":
        lead = f"You {f.how.replace('works', 'work')} {v}" if me else f"{_cap(who)} {f.how} {v}"
    elif q.slot == "occupation":
        if f.how == "works as":
            lead = f"You work as {v}" if me else f"{_cap(who)} works as {v}"
        else:
            lead = f"You're {v}" if me else f"{_cap(who)} is {v}"
    elif q.slot == "kind":
        article = "" if re.match(r"^(a|an|the)\b", v, re.I) else ("an " if v[:1].lower() in "aeiou" else "a ")
        lead = f"{_cap(who)} is {article}{v}"
    elif q.slot == "age":
        lead = f"You're {v}" if me else f"{_cap(who)} is {v}"
    else:  # time, person, place: what they said, said back
        return f"{_cap(second_person(f.sentence).rstrip('.!'))}: {told}."
    return f"{lead}: {told}."


def not_told(q: Question) -> str:
    """Saying so, without guessing."""
    who, me = _who(q)
    e = q.entity
    what = {
        "name": "your name" if me else (f"what your {e.rel} is called" if e.kind == "relation" else f"{who}'s name"),
        "residence": "where you live" if me else f"where {who} lives",
        "origin": "where you're from" if me else f"where {who} is from",
        "workplace": "where you work" if me else f"where {who} works",
        "occupation": "what you do for a living" if me else f"what {who} does for a living",
        "kind": f"what kind of {q.kind_of or e.rel or 'one'} {who} is",
        "age": "how old you are" if me else f"how old {who} is",
    }.get(q.slot, "that")
    return f"I don't think you've told me {what}."


# ---------------------------------------------------------------- where the statements come from


def candidates(store, participant: str, as_of: int, q: Question, extra: list[Candidate] = (),
               limit: int = 40) -> list[Candidate]:
    """Statements that may answer `q`, as of the bound: `extra` (what retrieval found, the recent
    window), the participant's messages naming the entity (or the event's words), and the
    messages that the current profile claims about it were read from."""
    from memory import claims

    e = q.entity
    terms = [t for t in ([e.name] if e.name else []) + ([e.rel] if e.rel else []) + list(e.words) if t]
    if e.kind == "self" and not terms:
        terms = {"name": ["name", "i'm", "call"], "residence": ["live", "moved", "based"],
                 "origin": ["from", "grew", "born"], "workplace": ["work"],
                 "occupation": ["work", "job", "i'm"], "age": ["old"]}.get(q.slot, [])
    seen: dict[str, Candidate] = {}
    for c in extra:
        seen.setdefault(c.dayid or c.text, c)
    rows = []
    for t in terms:
        rows += store.conn.execute(
            "SELECT dayid, ordinal, ts, text FROM messages WHERE participant=? AND sender='user' AND ordinal<? "
            "AND lower(text) LIKE ? ORDER BY ordinal DESC LIMIT ?",
            (participant, as_of, f"%{t.lower()}%", limit)).fetchall()
    dayids = set()
    for c in claims.current(store, participant, as_of=as_of):
        if not c.slot or any(t.lower() in (c.slot + " " + c.text).lower() for t in terms):
            dayids |= set(c.source_dayids)
    if dayids:
        marks = ",".join("?" * len(dayids))
        rows += store.conn.execute(
            f"SELECT dayid, ordinal, ts, text FROM messages WHERE participant=? AND sender='user' AND ordinal<? "
            f"AND dayid IN ({marks})", (participant, as_of, *sorted(dayids))).fetchall()
    n_extra = len(seen)
    for r in rows:
        seen.setdefault(r["dayid"], Candidate(r["text"], r["dayid"], r["ordinal"], r["ts"], "message"))
    out = list(seen.values())
    if len(out) - n_extra > FIND_READ:  # `find` answers from the newest statement that holds a value
        out = out[:n_extra] + sorted(out[n_extra:], key=lambda c: c.ordinal, reverse=True)[:FIND_READ]
    return out


FIND_READ = 64  # the parse reader's statements beyond `extra`, at most: the newest (tests/test_perf_round5.py)


def _claim_names(store, participant: str, as_of: int) -> Names:
    """Names in the current profile's slots ("brother:arun:residence" -> arun, a brother)."""
    from memory import claims

    out = Names()
    for c in claims.current(store, participant, as_of=as_of):
        parts = (c.slot or "").split(":")
        if len(parts) == 3 and parts[1]:
            out[parts[1]] = parts[0]
            m = re.search(rf"\b({re.escape(parts[1])})\b", c.text, re.I)
            out.display.setdefault(parts[1], m.group(1) if m else parts[1].capitalize())
    return out


def answer(store, participant: str, as_of: int, text: str, items=(), recent=(), now: datetime | None = None,
           select: bool = True) -> tuple[str | None, dict]:
    """The turn's recall answer: (reply, what was read, for the trace), or (None, {...}) when the
    message is not a question this reader can answer from memory (the model answers it).
    `items`: what retrieval applied (hits); `recent`: the recent window's messages.

    The message is normalised and unframed first (everyday wording, below); the parse-based
    reader reads what is left, and where it finds no answer the slot-type reader tries; when
    neither finds a statement but one read a question, the answer-statement selector
    (memory.answer_select, `select`) quotes the participant's sentence that answers it when its
    score passes the stored threshold, else the reply says it was not told. A question no reader
    reads is given to the selector too when it asks about their past; below its threshold it is
    left to the model, as before."""
    from memory import messages

    if is_action_request(text):
        return None, {}
    own = [m for m in recent if m.sender == "user"]
    hit_ords = [h.ordinal for h in items if getattr(h, "sender", "") == "user"]
    hits = list(messages.by_ordinals(store, participant, hit_ords, as_of).values()) if hit_ords else []
    extra = [Candidate(m.text, m.dayid, m.ordinal, m.ts, "message") for m in own + hits]
    known = known_names([c.text for c in extra] + [text]).merge(_claim_names(store, participant, as_of))
    vocab = _vocab(store, participant, as_of)
    ask3 = read_relations(text, known, vocab)
    if ask3 is not None:
        cands = relation_candidates(store, participant, as_of, ask3, known, extra)
        known = known.merge(known_names([c.text for c in cands if c not in extra]))
        if ask3.kind == "who" and not any(re.search(rf"\b{re.escape(ask3.name)}\b", c.text) for c in cands):
            ask3 = None  # a name they never used ("who is Tom Hanks?"): not a question about their past
    if ask3 is not None:
        reply, found = answer_relations(ask3, cands, known, now)
        if ask3.kind == "chain" and found is None and not ask3.rest:
            # not resolved by its patterns: the readers below may read it ("met Mateo yesterday, Marisol's
            # mum"), taken only from a statement naming both the owner and the relation, not the owner
            alt = _older_readers(store, participant, as_of, text, extra, known, vocab, now)
            if alt is not None:
                r2, f2, q2 = alt
                owner_words = {o for o in _owner_names(ask3, known)} | ({ask3.owner} if ask3.owner_is_rel else set())
                sent = f2.sentence.lower()
                if re.search(rf"\b{re.escape(ask3.rel)}s?\b", sent) and any(
                        re.search(rf"\b{re.escape(o)}\b", sent) for o in owner_words) and \
                        f2.value.lower() not in owner_words:
                    reply, found = r2, f2.public()
        trace = {"version": VERSION, "question": ask3.public(), "candidates": len(cands), "found": found}
        if reply is None:  # the chain's person is found, and something else is asked of them
            reply, inner = answer(store, participant, as_of, ask3.rest.format(found["person"]) + "?", items, recent, now)
            if reply is None:
                reply = f"I don't think you've told me that about {found['person']}."
            trace["then"] = inner
        return reply, {**trace, "answer": reply}
    core = unframe(normalise(text, vocab))
    if _RHETORICAL.search(core):
        return None, {}
    q = _parse_question(text, core, known)
    if q is not None and q.slot != "workplace" and dict(_CUES)["workplace"].search(core.lower()):
        q = None  # "who do i work for?" asks for a workplace, not a person: the slot-type reader reads it
    f, cands = None, []
    if q is not None:
        cands = candidates(store, participant, as_of, q, extra)
        known = known.merge(known_names([c.text for c in cands if c not in extra]))
        f = find(q, cands, known)
    if f is not None:
        reply = compose(q, f, now)
        return reply, {"version": VERSION, "question": q.public(), "candidates": len(cands),
                       "found": f.public(), "answer": reply}
    ask = read_everyday(text, known, vocab)
    if ask is None and q is None:
        if select and _asks_own_past(text):
            chosen = _select(store, participant, as_of, core, extra, [], now, unread=True)
            if chosen is not None and chosen[0] is not None:
                return chosen[0], {"version": VERSION, "question": None, "candidates": 0, "found": chosen[1].get("found"),
                                   "selector": chosen[1], "answer": chosen[0]}
        return None, {}
    found = None
    if ask is not None:
        cands = everyday_candidates(store, participant, as_of, ask, known, extra)
        known = known.merge(known_names([c.text for c in cands if c not in extra]))
        found = find_everyday(ask, cands, known)
    chosen = None
    if found is not None:
        reply = compose_everyday(ask, found, now)
    else:
        chosen = _select(store, participant, as_of, core, extra, cands, now) if select else None
        if chosen is not None and chosen[0] is not None:
            reply = chosen[0]
        elif q is not None and not not_told(q).endswith("me that.") or ask is None:
            reply = not_told(q)
        else:
            reply = not_told_everyday(ask)
    out = {"version": VERSION, "question": (ask.public() if ask is not None else q.public()),
           "candidates": len(cands), "found": found.public() if found is not None else None, "answer": reply}
    if chosen is not None:
        out["selector"] = chosen[1]
        out["found"] = out["found"] or chosen[1].get("found")
    return reply, out


def _asks_own_past(text: str) -> bool:
    """A question no reader read that still asks about the participant's own past (a question or a
    recall request, about them or their people), never an action request or advice."""
    from memory.features import cue_features

    t = text.strip()
    if is_action_request(t) or _ADVICE.search(t.lower()):
        return False
    f = cue_features(t)  # memory.grounding's asks_about_the_past, read here (grounding imports this module)
    past = not f["action_request"] and (f["backref_cues"] > 0 or f["own_life_question"] > 0 or f["time_cues"] > 0)
    return (t.endswith("?") or asks_recall(t)) and bool(_SELF_WORDS.search(t)) and past


SELECTOR_LATEST = 200  # the participant's latest messages the selector always scores


def prefetch(store, participant: str) -> int:
    """Read ahead, outside any turn, what the participant's next recall question reads of their
    latest SELECTOR_LATEST messages: the names they use (`known_names`), the selector's stated
    sentences (`_selector_sentences`) and those sentences' vectors, each kept by text (memory.nlp's
    readings, the shared embedder's cache) exactly as a turn would keep them. Without it the first
    such question after a restart parses and embeds them all inside its turn (2 s here). The parses
    it makes of their messages are stored after it, as a turn's are (memory.parses). Returns the
    messages read. Reads nothing of anyone else's."""
    from memory import answer_select, parses

    p = store.conn.execute("SELECT next_ordinal FROM participants WHERE participant=?", (participant,)).fetchone()
    if p is None:
        return 0
    reading = parses.Reading(store, participant)  # their stored parses, as a turn reads them
    with nlp.source(reading):
        pool = selector_candidates(store, participant, p["next_ordinal"])
        known_names([c.text for c in pool])
        sents = _selector_sentences(pool)
        if sents:
            answer_select.embed([s.text for s in sents], _stored_vectors(store, participant, pool, sents))
    reading.store_later()
    return len(pool)


def selector_candidates(store, participant: str, as_of: int, extra=(), cands=(),
                        limit: int = SELECTOR_LATEST) -> list[Candidate]:
    """What the selector scores: the readers' candidates, what retrieval found and the recent
    window (`extra`), and the participant's latest `limit` messages before the bound."""
    seen: dict[str, Candidate] = {}
    for c in [*extra, *cands]:
        seen.setdefault(c.dayid or c.text, c)
    for r in store.conn.execute(
            "SELECT dayid, ordinal, ts, text FROM messages WHERE participant=? AND sender='user' AND ordinal<? "
            "ORDER BY ordinal DESC LIMIT ?", (participant, as_of, limit)).fetchall():
        seen.setdefault(r["dayid"], Candidate(r["text"], r["dayid"], r["ordinal"], r["ts"], "message"))
    return list(seen.values())


def _instruction(text, span=None) -> bool:
    """A sentence that asks or tells someone to do something, or carries such words ("send my
    boss an email saying I quit", "someone on reddit wrote: send my boss ..."): never a statement
    of the participant's past, so never quoted as the answer to a question about it. An
    instruction is a base-form verb heading a clause with no subject (the main one, or one
    reported or joined after it). `span`: the sentence as already parsed inside its message (the
    selector's candidates are: no second parse on the turn's path); else `text` is parsed."""
    if is_action_request(text):
        return True
    tokens = nlp.parse(text) if span is None else span
    start = 0 if span is None else span.start
    for t in tokens:
        after_colon = t.i > start and t.nbor(-1).text in (":", '"', "\u201c")  # "wrote: send ...", "said: tell ..."
        if t.tag_ == "VB" and (t.dep_ in ("ROOT", "ccomp", "parataxis", "conj") or after_colon) and \
                not any(c.dep_ in ("nsubj", "nsubjpass", "expl", "aux", "mark") for c in t.children) and \
                not (t.dep_ == "conj" and t.head.tag_ != "VB"):
            return True
    return False


def _stored_vectors(store, participant: str, pool: list[Candidate], sents) -> dict:
    """sentence text -> its message's stored vector, for each candidate sentence that is its whole
    message (most chat messages are one sentence): the vector index already holds it, made by the
    same embedder the selector uses, so it is not embedded again. Nothing when the store's
    embedder is another one (a benchmark's hash vectors)."""
    from memory import embeddings

    if store.vectors.embedder is not embeddings.default():
        return {}
    by_ord = {c.ordinal: c.text for c in pool}
    whole = {s.ordinal: s.text for s in sents if s.text == by_ord.get(s.ordinal, "").strip()}
    if not whole:
        return {}
    return {whole[o]: v for o, v in store.vectors.stored(participant, whole).items()}


def _select(store, participant: str, as_of: int, question: str, extra, cands, now, unread: bool = False):
    """(reply or None, trace) from the answer-statement selector; None when it cannot run (fail safe:
    the caller says not told, or leaves the question to the model)."""
    from memory import answer_select

    try:
        pool = selector_candidates(store, participant, as_of, extra, cands)
        sents = _selector_sentences(pool)
        chosen = answer_select.select(question, sents, unread=unread, expand=_expand,
                                      known=_stored_vectors(store, participant, pool, sents))
    except Exception:  # no parser, no embedder: the rule readers' reply stands
        return None
    trace = chosen.public()
    if not chosen.quoted:
        return None, trace
    s = chosen.sentence
    trace["found"] = {"value": None, "dayid": s.dayid, "source": "message", "sentence": s.text, "how": "selector"}
    return f"You told me{when_told(s.ts, now)}: \u201c{_quote(s.text)}\u201d", trace


def _parse_question(text: str, core: str, known) -> Question | None:
    """The parse reader's question from the unframed core, else from the message as written: the
    parse of one may fail where the other's holds ("what's our parrot called?" parses apart from
    "what's our parrot called again?"), and the frame words it keeps are ones it skips."""
    q = read_question(core if core.endswith("?") else core + "?", known)
    if q is None and core.strip() != text.strip() and text.strip().endswith("?"):
        q = read_question(text.strip(), known)
    return q


def _older_readers(store, participant: str, as_of: int, text: str, extra, known, vocab, now):
    """(reply, found, question) from the parse reader, then the slot-type reader; None when neither answers."""
    core = unframe(normalise(text, vocab))
    q = _parse_question(text, core, known)
    if q is not None:
        cands = candidates(store, participant, as_of, q, extra)
        f = find(q, cands, known.merge(known_names([c.text for c in cands if c not in extra])))
        if f is not None:
            return compose(q, f, now), f, q
    ask = read_everyday(text, known, vocab)
    if ask is not None:
        cands = everyday_candidates(store, participant, as_of, ask, known, extra)
        f = find_everyday(ask, cands, known.merge(known_names([c.text for c in cands if c not in extra])))
        if f is not None:
            return compose_everyday(ask, f, now), f, ask
    return None


def _vocab(store, participant: str, as_of: int, limit: int = 400) -> set[str]:
    """The words the participant wrote (their latest messages): what a typo is corrected towards."""
    rows = store.conn.execute(
        "SELECT text FROM messages WHERE participant=? AND sender='user' AND ordinal<? ORDER BY ordinal DESC LIMIT ?",
        (participant, as_of, limit)).fetchall()
    return {w for r in rows for w in re.findall(r"[a-z]{4,}", r["text"].lower())}


def everyday_candidates(store, participant: str, as_of: int, ask: "Ask", known: dict, extra=(),
                        limit: int = 40) -> list[Candidate]:
    """The participant's messages holding the question's content words (or the names of the
    people they name), plus `extra`; for a question about themself with no such word, their
    latest messages."""
    terms = set(ask.words) | {n for n, r in known.items() if r and r in ask.words}
    concept = _concept_of()
    terms |= _expand(ask.words)  # "where do I live?" is told as "Moved to Nantes ..."
    if ask.slot == "workplace":  # "the company I work for" is told as "a firm called ...", "my new job"
        terms |= {w for w, c in concept.items() if c == "work"}
    seen: dict[str, Candidate] = {}
    for c in extra:
        seen.setdefault(c.dayid or c.text, c)
    rows = []
    for t in sorted(terms):
        rows += store.conn.execute(
            "SELECT dayid, ordinal, ts, text FROM messages WHERE participant=? AND sender='user' AND ordinal<? "
            "AND lower(text) LIKE ? ORDER BY ordinal DESC LIMIT ?",
            (participant, as_of, f"%{t.lower()}%", limit)).fetchall()
    if not terms:
        rows += store.conn.execute(
            "SELECT dayid, ordinal, ts, text FROM messages WHERE participant=? AND sender='user' AND ordinal<? "
            "ORDER BY ordinal DESC LIMIT ?", (participant, as_of, limit * 5)).fetchall()
    n_extra = len(seen)
    for r in rows:
        seen.setdefault(r["dayid"], Candidate(r["text"], r["dayid"], r["ordinal"], r["ts"], "message"))
    out = list(seen.values())
    if len(out) - n_extra > EVERYDAY_READ:
        # hundreds of messages hold one of the words ("work", "going"): the reader parses only those
        # that can score highest (find_everyday's bound, from word forms, no parse), newest first
        words = _expand(ask.words)
        alias = {n for n, r in known.items() if r and r in words}
        found = out[n_extra:]
        found.sort(key=lambda c: (_reach(c, words, alias, concept), c.ordinal), reverse=True)
        out = out[:n_extra] + found[:EVERYDAY_READ]
    # a statement's neighbour: a message about someone by pronoun ("actually she moved to Leeds")
    # carries the message before it, where that person was named (one query for all of them)
    from memory import messages

    about = [c.ordinal for c in out if c.ordinal and _BY_PRONOUN.search(c.text)]
    before = messages.own_before(store, participant, about, as_of) if about else {}
    return [dataclasses.replace(c, before=before[c.ordinal]) if c.ordinal in before else c for c in out]


_BY_PRONOUN = re.compile(r"(?i)\b(?:he|she|they|he's|she's|they're)\b")
EVERYDAY_READ = 64  # the slot-type reader's statements beyond `extra`, at most (tests/test_perf_round5.py)


# ---------------------------------------------------------------- everyday wording (answers-v2)
#
# The reader above parses a question as asked of it directly ("where does Lena live?"). People
# ask indirectly, in slang, with typos, inside a story or as someone else's question: "random q,
# whose wedding did i say i'm going to? testing u", "Mia asked where im going and i said Portugal
# but she wanted the city... which one did i tell u?". So a message is first *normalised* (slang,
# typos against the words of the question lexicon and of what the participant wrote) and
# *unframed* (the asker, "testing u", "what did i tell you", the story before the question);
# what is left is read by the parse above, and, where that finds nothing, by slot type: the slot
# from its cue words (who/whose, which city, when, called, how old, for a living, breed), the
# statement chosen by the question's content words among the participant's statements that hold
# a value *of that slot's type* (a name, a place, a date or time, an age, a job, a kind) which
# the question does not already hold. A question is never an answer; nothing answers: not told.

_SLANG = {"wat's": "what's", "wats": "what's", "u": "you", "ur": "your", "ya": "you", "wat": "what", "wut": "what", "whats": "what's",
          "wheres": "where's", "whens": "when's", "whos": "who's", "hows": "how's", "im": "i'm", "ive": "i've",
          "dose": "does", "pls": "please", "plz": "please", "r": "are", "abt": "about", "bday": "birthday",
          "appt": "appointment", "thx": "thanks", "gonna": "going to", "wanna": "want to", "whered": "where did",
          "didnt": "didn't", "dont": "don't", "cant": "can't", "wasnt": "wasn't", "isnt": "isn't", "sis": "sister",
          "bro": "brother", "doin": "doing", "goin": "going", "livin": "living", "tho": "though", "ppl": "people"}
_FRAME_WORDS = set("""asked asking ask asks wants want wanted know knows knew tell told telling remind remember
 remembered recall forgot forget forgotten blanked blank testing test pop random q lol haha haha lmao
 again please right sure exact vague answer one which wait ok okay so hey hi um hmm totally completely
 realised realized couldn't could can you me mention mentioned say said saying ever actually just
 the a an and but or of to is are was were be been am it its that this there do did does i'm i i've
 my our we us your mine what what's where where's when when's who who's whose how how's
 something wasn't was memory see if let's lets in on at for from with about up now then
 have has had got get""".split())
_ASKER = re.compile(r"^(?:.*?\b)?(?:[A-Z][a-z]+|my \w+|someone|somebody|he|she|they)\s+"
                    r"(?:asked(?: me)?|was asking(?: me)?|were asking|is asking|wants to know|wanted to know|"
                    r"kept asking)\b", re.I)
_TAIL_FRAMES = re.compile(
    r"(?:[,.;!?…]+|\s)+(?:and\s+i\s+(?:totally\s+|completely\s+)?(?:blanked|forgot|couldn't remember|"
    r"gave a vague answer|said [^?]*)|what did i tell (?:you|u)|which one did i tell (?:you|u)|"
    r"which did i tell (?:you|u)|which one was it|i told you,? right|remind me|testing (?:you|u|your memory)|"
    r"(?:lol|haha|lmao)+)\W*$", re.I)
_ACTION = re.compile(r"\b(?:remind (?:me|us) (?:to|about|that|at|on|tomorrow|tonight|in \d)|set (?:a |me a )?reminder|"
                     r"(?:send|text|message|email|tell) \w+ (?:that|saying)|"
                     r"(?:can|could|would|will) (?:you|u) (?:please )?(?:book|schedule|add|cancel|send|text|message|email|"
                     r"note|write down|make a note)\b)", re.I)
_ADVICE = re.compile(r"\bwhere (?:do|should|would|can) i (?:even )?(?:start|begin)\b|\b(?:should|shall|ought|could i|can i|would (?:you|it|i)|might|any ideas|recommend|suggest|"
                     r"what's a good|how (?:do|can|should) i|is it (?:ok|okay|normal|worth))\b", re.I)
_RHETORICAL = re.compile(r"(?i)^\W*(?:right,?\s+|so,?\s+|ok,?\s+)?where (?:do|should|would|can) i (?:even )?(?:start|begin)\W*$")
_SELF_WORDS = re.compile(r"\b(?:i|i'm|i've|my|me|our|we|we're|mine)\b", re.I)

# slot cues, first match wins: (slot, pattern over the normalised question)
_CUES = [
    ("duration", re.compile(r"\bhow long\b|\bhow many (?:years|months|weeks)\b|\bsince when\b")),
    ("age", re.compile(r"\bhow old\b|\bwhat age\b|\bage\b")),
    ("kind", re.compile(r"\b(?:breed|kind of|type of|sort of)\b")),
    ("owner", re.compile(r"\bwhose\b")),
    ("workplace", re.compile(r"\bwhere (?:do|does|did) (?:i|we|\w+) work\b|\bwho (?:do|does|did) (?:i|we|\w+) work for\b|"
                             r"\bwhere (?:i|\w+) works?\b|\bwho (?:i|we) work for\b|\bwhich (?:company|firm)\b|\b(?:company|firm|employer) (?:i|we) work\b")),
    ("name", re.compile(r"\b(?:called|call|name|named|nickname)\b")),
    ("time", re.compile(r"\bwhen\b|\bwhen's\b|\bwhat (?:time|date|day)\b|\bwhich (?:day|date)\b|\bwhat time's\b")),
    ("occupation", re.compile(r"\b(?:job|for a living|for work|profession|occupation|career)\b|"
                              r"\bwhat (?:do|does|did) (?:i|\w+) do\b|\bwhat (?:i|\w+) (?:do|does)\b")),
    ("place", re.compile(r"\bwhere\b|\bwhere's\b|\b(?:which|what) (?:city|town|country|place|village)\b|"
                         r"\bthe city\b")),
    ("person", re.compile(r"\bwho\b|\bwho's\b")),
    ("name", re.compile(r"\bwhich (?!one\b|did\b|was\b|is\b)[a-z]+\b")),  # "which gym do i go to?": its name
]
_NAME_CUE = next(c for s, c in _CUES if s == "name")  # the first "name" cue: a name asked for in words ("called", "name")
_MONTHS = "january february march april may june july august september october november december".split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_CLOCK = re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b|\bnoon\b|\bmidday\b", re.I)
_DATE = re.compile(rf"\b(?:{'|'.join(_MONTHS)})\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
                   rf"\b(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+(?:{'|'.join(_MONTHS)})\b|"
                   rf"\bthe\s+\d{{1,2}}(?:st|nd|rd|th)\b|\b(?:on\s+)?(?:{'|'.join(_WEEKDAYS)})\b", re.I)
_AGE = re.compile(r"\b(?:is|'s|am|i'm|im|turned|turning|turn|being|aged|age)\s+(\d{1,3})\b(?!\s*(?:years? ago|:\d|am|pm|"
                  r"minutes|hours|mins|patients|people|times|km|miles|k\b))|\b(\d{1,3})[- ]years?[- ]old\b", re.I)


_NUM = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|several)"
_UNIT = r"(?:years?|months?|weeks?|days?)"
# how long: "for three years", "3 years into", "started it two years ago", "since March"
_DURATION = re.compile(rf"\b(?:for|past|last|over)\s+(?:the\s+)?(?:past\s+|last\s+)?({_NUM}\s+{_UNIT})\b|"
                       rf"\b({_NUM}\s+{_UNIT})\s+(?:into|now|in|ago|already|and counting)\b|"
                       rf"\b(since\s+(?:last\s+)?(?:{'|'.join(_MONTHS)}|\d{{4}}|christmas|easter|the summer|last year|"
                       rf"(?:{'|'.join(_WEEKDAYS)})))\b", re.I)


def _osa1(a: str, b: str) -> bool:
    """`a` and `b` differ by at most one edit (insertion, deletion, substitution, adjacent swap)."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    if la > lb:
        a, b = b, a
    for i in range(len(b)):
        if b[:i] + b[i + 1:] == a:
            return True
    return False


_QUESTION_VOCAB = set("""where when what which who whose how old called name named live lives living lived going
 flying fly trip work living job does appointment again city town country breed kind type sort birthday wedding
 party remember remind tell told brother sister cousin friend mother father daughter nephew niece""".split())


def normalise(text: str, vocab=()) -> str:
    """Lowercase words, slang spelled out, a word one edit away from a question word or a word the
    participant wrote corrected to it (names keep their case)."""
    words = set(vocab) | _QUESTION_VOCAB
    ordered = None  # the words a slip may be corrected to, question words first, each list sorted
    out = []
    for tok in re.findall(r"[\w']+|[^\w\s]+", text):
        low = tok.lower()
        if low in _SLANG:
            out.append(_SLANG[low])
            continue
        if low.isalpha() and len(low) >= 4 and low not in words and low not in _FRAME_WORDS \
                and low not in lexicon()["real_words"]:
            if ordered is None:
                ordered = [w for w in [*sorted(_QUESTION_VOCAB), *sorted(words)] if len(w) >= 4]
            n = len(low)  # one edit away: the lengths differ by at most one (checked before the edit itself)
            fix = next((w for w in ordered if abs(len(w) - n) <= 1 and _osa1(low, w)), None)
            if fix is not None:
                out.append(fix if not tok[:1].isupper() else fix.capitalize())
                continue
        out.append(tok)
    s = ""
    for tok in out:
        s += tok if (not s or re.match(r"[^\w\s(']", tok) or tok.startswith("'")) else " " + tok
    return s


def unframe(text: str) -> str:
    """The question inside a message: the clause that asks (with a slot cue), without who asked it
    ("Mia asked me ..."), the story before it, or "what did i tell you" / "testing u" around it."""
    parts = [p.strip() for p in re.split(r"(?<=[?!.…])\s+|\.{2,}|…|\s+-\s+|\s+—\s+", text) if p.strip()]
    cued = [p for p in parts if any(c.search(p.lower()) for _, c in _CUES)]
    core = cued[0] if len(cued) == 1 else (cued[-1] if cued else text)
    if len(cued) > 1:  # "what did i say X is called? which one did i tell u?": the one with most content
        core = max(cued, key=lambda p: len(_content(p)))
    m = re.search(r",\s*((?:what|where|when|which|who|whose|how)\b.*)$", core, re.I)
    if m and any(c.search(m.group(1).lower()) for _, c in _CUES):
        core = m.group(1)  # "..., and i realised i couldn't remember, what did i say ..."
    core = _ASKER.sub("", core).strip()
    core = re.sub(r"^(?:random q|ok pop quiz|pop quiz|quick q|quick question|let's see if (?:you|u) remember|"
                  r"testing your memory(?: lol)?|so|ok|okay|hey|wait)\W+", "", core, flags=re.I)
    core = _LEAD_FRAMES.sub("", core).strip()
    core = re.sub(r"^(?:can|could|would) (?:you|u) (?:remind me|tell me)\s+(?:again\s+)?|^remind me\s+(?:again\s+)?|"
                  r"^do (?:you|u) remember\s+|"
                  r"^did i (?:ever )?(?:tell|mention to) (?:you|u)\s+|^did i (?:ever )?mention\s+|"
                  r"^have i (?:ever )?(?:told (?:you|u)|mentioned(?: to (?:you|u))?|said)\s+|^did i (?:ever )?say\s+",
                  "", core, flags=re.I)
    core = re.sub(r"\s+to (?:you|u)\W*$", "", core, flags=re.I) if re.search(r"(?i)\bsay\b", text) else core
    for _ in range(3):
        core = _TAIL_MORE.sub("", _TAIL_FRAMES.sub("", core)).strip()
    core = re.sub(r"\s+please\W*$", "", core, flags=re.I).strip(" ,.;")
    return core


# frames before the question: forgetting, apologising, asking again ("I forgot what ...", "for the
# life of me I can't recall ...", "sorry to ask again but ...", "quick one though: ...")
_LEAD_FRAMES = re.compile(
    r"^(?:(?:sorry|ugh|argh|hmm|um|anyway|ok|okay|so|also|oh)\W+)*"
    r"(?:(?:sorry to ask again|sorry to ask|this is embarrassing|embarrassing|sorry|be honest)(?: but)?\W+|"
    r"(?:quick one|quick question|quick q|one thing)(?: though)?\W+|"
    r"(?:my mind's gone blank|my mind has gone blank|mind's gone blank|brain's not working(?: today)?|"
    r"my brain is fried|brain fog)\W+|"
    r"(?:for the life of me\s+)?i(?:'ve|\s+have)?\s+(?:totally\s+|completely\s+)?(?:forgot|forget|forgotten|"
    r"can't remember|cannot remember|can't recall|cannot recall|don't remember|do not remember|can't think)\s+)+", re.I)
_TAIL_MORE = re.compile(r"(?:[,.;!?…]+|\s)+(?:it's gone (?:right )?out of my head|i should know this|"
                        r"i keep forgetting|sorry|again|i forgot|my head is empty today)\W*$", re.I)


def _content(text: str) -> list[str]:
    words = (re.sub(r"'s$", "", w) for w in re.findall(r"[^\W_]+(?:'[^\W_]+)*", text.lower()))  # "café" whole
    return [w for w in words if w not in _FRAME_WORDS and len(w) > 1]


def _lemma_set(doc) -> set[str]:
    out = set()
    for t in doc:
        if t.is_alpha or t.like_num:
            out |= {t.lower_, t.lemma_.lower(), t.lower_.rstrip("s")}
    return out


@dataclass(frozen=True)
class Ask:
    """A question read by slot type: the slot, its content words, whether it is about the
    participant themself, and the question as unframed."""
    slot: str  # name person owner place time age occupation kind
    words: tuple
    core: str
    text: str
    city: bool = False  # "which city": a city, not the country
    clock: bool = False  # "what time": a clock time first

    def public(self) -> dict:
        return {"slot": self.slot, "words": list(self.words), "core": self.core, "reader": "slot-type"}


@lru_cache(maxsize=8192)
def is_action_request(text: str) -> bool:
    """"Can you remind me to call Lena?" asks for an action, not about the past. (Kept by text:
    the selector asks it of every candidate sentence, turn after turn.)"""
    t = normalise(text)
    return bool(_ACTION.search(t)) and not re.search(r"\bremind me (?:what|where|when|who|whose|which|how)\b", t, re.I)


def read_everyday(text: str, known: dict | None = None, vocab=()) -> Ask | None:
    """The slot and content words of a question about the participant's own past in everyday
    wording; None when it is not one (advice, a general question, an action request)."""
    known = known or {}
    if is_action_request(text):
        return None
    norm = normalise(text, vocab)
    core = unframe(norm)
    low = core.lower()
    if _ADVICE.search(low) and not re.search(r"\bdid i\b", low):
        return None
    slot = next((s for s, c in _CUES if c.search(low)), None)
    if slot is None:
        return None
    if slot == "name" and not _NAME_CUE.search(low):  # only "which <word>": a question's determiner,
        doc = nlp.parse_many([core])[0]  # not a relative clause ("..., which sounds boring but I love it")
        if not any(t.lower_ == "which" and t.dep_ == "det" and t.head.pos_ in ("NOUN", "PROPN") for t in doc):
            return None
    words = [w for w in _content(core) if not re.fullmatch(r"(?:called|call|name|named|nickname|breed|kind|type|"
                                                             r"sort|whose|time|date|day|old|age|city|town|place|"
                                                             r"country|village|job|living|work|profession)", w)]
    rels = facts.lexicon()["relations"]
    mine = bool(_SELF_WORDS.search(norm)) or any(w in known or w in rels for w in re.findall(r"[a-z]+", low))
    asks_question = "?" in text or re.match(r"(?i)\W*(?:what|where|when|which|who|whose|how)\b", core) \
        or re.search(r"(?i)\b(?:remind me|did i|tell u|tell you|testing|remember)\b", norm)
    if not mine or not asks_question:
        return None
    light = {"go", "going", "goes", "went", "do", "doing", "get", "getting"}
    if set(words) - light:  # "where do i go swimming?": the swimming, not any going
        words = [w for w in words if w not in light]
    if slot == "place" and not words:
        words = ["live"]  # "what city am i in?": where they live
    if slot == "workplace" and not set(words) & {"work", "works", "job", "company", "firm"}:
        words = [*words, "work"]  # the statement must be about work ("Ines stayed in Porto" is not where she works)
    return Ask(slot=slot, words=tuple(words), core=core, text=text, city=bool(re.search(r"\bcity|town\b", low)),
               clock=bool(re.search(r"\bwhat time\b", low)))


def _countries() -> frozenset:
    return lexicon().get("countries", frozenset())


@lru_cache(maxsize=1)
def _concept_of() -> dict[str, str]:
    data = json.loads(resources.files("memory").joinpath("data/answers.json").read_text(encoding="utf-8"))
    return {w: c for c, ws in data.get("concepts", {}).items() for w in ws}


def _expand(words) -> set[str]:
    """A question's content words with their concept ("going" -> every travel word)."""
    concept = _concept_of()
    out = set(words)
    for w in words:
        c = concept.get(w)
        if c:
            out |= {x for x, k in concept.items() if k == c}
    return out


def _self_subject(tok) -> bool:
    """The clause `tok` is in has the participant as its subject, or no subject ("Turned 50 yesterday")."""
    t = tok
    for _ in range(6):
        subj = [c for c in t.children if c.dep_ in ("nsubj", "nsubjpass")]
        if subj:
            return any(c.lower_ in ("i", "we") for c in subj)
        if t.head.i == t.i:
            return True
        t = t.head
    return True


def _negated_value(tok) -> bool:
    """A value said to be no longer so: "not in Bristol anymore", "left Bristol", "the Bristol flat is gone"."""
    verb = _clause_verb(tok)
    sent = tok.sent
    window = [t.lower_ for t in tok.doc[max(sent.start, tok.i - 3):min(sent.end, tok.i + 4)]]
    if any(c.dep_ == "neg" for c in verb.children) and not any(t.dep_ == "neg" and t.i > tok.i for t in sent):
        return verb.i < tok.i or any(w in ("anymore", "longer") for w in window)
    if verb.lemma_.lower() in ("leave", "quit") and tok.i > verb.i:
        return True
    return bool({"gone", "over", "sold", "anymore"} & {t.lower_ for t in tok.head.subtree} and tok.dep_ in ("compound", "amod"))


def _own_work_subject(tok, ask) -> bool:
    """A workplace inside a subject about their own work: "Work at X was a slog", "my boss at X wants ..."."""
    if ask.slot != "workplace":
        return False
    work = {w for w, c in _concept_of().items() if c == "work"}
    for a in [tok, *tok.ancestors]:
        if a.dep_ in ("nsubj", "nsubjpass") and a.lemma_.lower() in work:
            return not any(c.lower_ in ("his", "her", "their", "'s") or c.dep_ == "poss" and c.lower_ not in ("my", "our")
                           for c in a.children)
    return False


def _other_before(doc, i: int, sent, known: dict) -> bool:
    """Someone of theirs is named between the value and the nearest "I" before it ("can't believe
    my son greta is 12": the 12 is the son's)."""
    for j in range(i - 1, sent.start - 1, -1):
        t = doc[j]
        if t.lower_ in ("i", "i'm", "im", "me", "we", "myself", "'m"):
            return False
        if _rel(t) is not None or known.get(t.lower_):
            return True
    return False


def _typed_values(sent, ask: Ask, asked: set[str], known: dict | None = None) -> list[tuple[str, int]]:
    """(value, token index) of the slot's type in a sentence, none of whose words the question holds."""
    doc = sent.doc
    text = sent.text
    out: list[tuple[str, int]] = []
    rels = facts.lexicon()["relations"]
    occupations = facts.lexicon()["occupations"]
    pets = {w for w, c in rels.items() if c == "pets"}
    known = known or {}
    people = {n for n, r in known.items() if r}  # names the participant gave one of their people or pets

    def fresh(v: str) -> bool:
        ws = {w.lower() for w in re.findall(r"\w+", v)}
        return bool(ws) and not ws <= asked

    def at(char: int) -> int:
        span = doc.char_span(sent.start_char + char, sent.start_char + char + 1, alignment_mode="expand")
        return span.start if span is not None else sent.start

    slot = ask.slot
    if slot in ("name", "person", "owner"):
        m = re.search(r"\b(?:called|named|name is|name's)\s+((?:the\s+)?[A-Z][\w'-]*(?:\s+(?:and\s+|&\s+|of\s+)?(?!I\b|I')[A-Z][\w'-]*)*|[a-z]+)",
                      text)
        if m and fresh(m.group(1)) and m.group(1).lower() not in rels:
            out.append((m.group(1).strip(), at(m.start(1))))
        for t in sent:
            if t.is_alpha and t.text[:1].isupper() and t.i > sent.start or (t.is_alpha and t.ent_type_ == "PERSON"):
                if t.lower_ in rels or t.lower_ in _MONTHS or t.lower_ in _WEEKDAYS or t.lower_ == "i" \
                        or (t.ent_type_ in ("GPE", "LOC", "DATE", "TIME") and t.lower_ not in people) \
                        or t.lower_ in _countries():
                    continue
                if (t.pos_ == "PROPN" or t.ent_type_ == "PERSON") and fresh(t.text):
                    out.append((t.text, t.i))
            elif t.i == sent.start and t.pos_ == "PROPN" and t.ent_type_ not in ("GPE", "LOC", "DATE", "TIME") \
                    and t.lower_ not in rels and fresh(t.text) and t.lower_ not in _FRAME_WORDS \
                    and t.lower_ not in _NOT_NAMES:  # "Met Jo for coffee": a verb, capitalised
                out.append((t.text, t.i))
        runs = [(m.start(1), m.end(1), m.group(1)) for m in re.finditer(rf"((?:The\s+)?{_NAME})", text)
                if " " in m.group(1)]
        merged = []
        for v, i in out:  # a name of several words whole: "Iron Works", "The Daily Grind", not "Iron"
            off = doc[i].idx - sent.start_char
            run = next((r for r in runs if r[0] <= off < r[1] and fresh(r[2])), None)
            if run is not None and not any(w.lower() in _NOT_NAMES - {"the"} or w.lower() in people
                                           for w in run[2].split()):
                v = run[2]
            if v not in [x for x, _ in merged]:
                merged.append((v, i))
        out = merged
        for t in sent:  # a lowercase name right after the relation noun: "my cousin omar"
            if t.lower_ in rels and t.i + 1 < sent.end:
                n = doc[t.i + 1]
                if n.is_alpha and n.pos_ in ("PROPN", "NOUN") and n.lower_ not in rels and not n.is_stop \
                        and n.text.islower() and fresh(n.text) and n.lower_ not in occupations:
                    out.append((n.text.capitalize(), n.i))
    elif slot == "workplace":
        work_words = {w for w, c in _concept_of().items() if c == "work"} | {"joined", "started", "signed"}
        cues = [t.i for t in sent if t.lower_ in work_words and not (t.i > sent.start and doc[t.i - 1].lower_ in
                                                                        ("after", "before", "from", "since"))]
        for m in re.finditer(rf"\b(?:at|for|with|joined|called|named)\s+(?:a\s+[a-z]+\s+called\s+)?({_NAME})", text):
            v = m.group(1)
            if v.split()[0].lower() not in _NOT_NAMES and fresh(v) and v.lower() not in _countries() and \
                    not any(e.label_ in ("GPE", "LOC", "DATE", "TIME", "PERSON") and e.text == v for e in sent.ents) \
                    and v.lower() not in people:
                out.append((v, at(m.start(1))))
        for e in sent.ents:
            if e.label_ == "ORG" and fresh(e.text) and not any(e.text in v for v, _ in out) \
                    and e.text.lower() not in people:
                out.append((e.text, e.start))
        # tied to work: a work word near it ("my boss at X", "work at X"), not "went to X after work"
        out = [(v, i) for v, i in out if any(abs(i - c) <= 4 for c in cues)]
    elif slot == "place":
        for m in re.finditer(rf"\b(?:on|at|near|off|in|to|into)\s+((?:the\s+)?{_NAME})", text):
            v = m.group(1)
            first = v.split()[-1] if v.lower().startswith("the ") else v.split()[0]
            single_at = m.group(0).lower().startswith("at ") and v.lower() not in ("christmas", "easter", "uni", "home")
            if first.lower() not in _NOT_NAMES and fresh(v) and v.lower() not in people and (" " in v.strip() or single_at) \
                    and not any(w.lower() in _MONTHS + _WEEKDAYS for w in v.split()):
                out.append((v, at(m.start(1))))
        for e in sent.ents:
            if e.label_ in ("GPE", "LOC", "FAC") and fresh(e.text) and e.text.lower() not in people:
                out.append((e.text, e.start))
        for t in sent:
            if t.pos_ == "PROPN" and t.text[:1].isupper() and t.i > 0 and doc[t.i - 1].lower_ in ("in", "to", "into", "from") \
                    and not any(t.i >= s for _, s in out if False) and fresh(t.text) \
                    and t.lower_ not in _MONTHS + _WEEKDAYS and not any(v == t.text for v, _ in out):
                out.append((t.text, t.i))
        if ask.city or any(v.lower() in _countries() for v, _ in out):
            cities = [(v, i) for v, i in out if v.lower() not in _countries()]
            out = cities if cities or ask.city else out
    elif slot == "time":
        spans = []
        for rx in ((_CLOCK, _DATE) if ask.clock else (_DATE, _CLOCK)):
            for m in rx.finditer(text):
                if fresh(m.group(0)):
                    spans.append((m.start(), m.end()))
        if spans:
            spans.sort()
            first = spans[0]
            if ask.clock:
                clock = [s for s in spans if _CLOCK.fullmatch(text[s[0]:s[1]].strip())]
                first = clock[0] if clock else first
            # the day and the time together when they are side by side ("Monday at 4:30")
            lo, hi = first
            for s, e in spans:
                if 0 <= s - hi <= 4 or 0 <= lo - e <= 4:
                    lo, hi = min(lo, s), max(hi, e)
            out.append((text[lo:hi].strip(), at(lo)))
    elif slot == "age":
        for m in _AGE.finditer(text):
            v = m.group(1) or m.group(2)
            if fresh(v):
                out.append((v, at(m.start())))
    elif slot == "duration":
        for m in _DURATION.finditer(text):
            v = next(g for g in m.groups() if g)
            if fresh(v):
                out.append((v, at(m.start())))
    elif slot == "occupation":
        for t in sent:
            if t.lemma_.lower() in occupations and t.pos_ == "NOUN" and fresh(t.text):
                out.append((t.text, t.i))
    elif slot == "kind":
        concept = _concept_of()
        kinds = {concept[w] for w in ask.words if w in concept} or \
            {concept[w] for w in pets if w in concept}  # "what breed is Sprout?": a breed of any pet kind
        for t in sent:
            if not t.is_alpha or t.is_stop or not fresh(t.text) or t.lemma_.lower() in occupations:
                continue
            if concept.get(t.lower_) in kinds and t.lower_ not in ask.words and t.lower_ not in pets:
                out.append((t.text, t.i))  # a breed of the kind asked: "our lionhead Sprout"
                continue
            prev = {doc[j].lower_ for j in range(max(sent.start, t.i - 2), t.i)}
            if t.lower_ in pets and t.lower_ not in ("pet",) and t.lower_ not in ask.words or (
                    t.pos_ in ("NOUN", "PROPN") and prev & {"a", "an", "little", "typical", "fluffy"}
                    and (t.lower_ not in rels or t.lower_ in pets) and t.lower_ not in _FRAME_WORDS
                    and t.ent_type_ == "" and t.lower_ not in ask.words):
                out.append((t.text, t.i))
    return out


_CLAUSE_BREAK = re.compile(r",\s+(?=(?:so|but|and|though)?\s*(?:i|i'm|im|we|she|he|they|my|it's)\b)", re.I)


def _pronoun_about(sent, known: dict) -> bool:
    """The sentence is about someone by a pronoun only: a he/she/they subject, no name or relation of its own."""
    if not any(t.lower_ in ("he", "she", "they") and t.dep_ in ("nsubj", "nsubjpass") for t in sent):
        return False
    return not any(t.pos_ == "PROPN" and (t.ent_type_ == "PERSON" or known.get(t.lower_)) or _rel(t) is not None
                   for t in sent)


def _clauses(doc):
    """The sentences of a message; a run-on sentence whose main clause is negated or supposed
    ("my sister Ines lives in Bristol, so I don't see her much"; "Been doing Spanish for 3 years, my
    teacher says I'm improving, I'm not so sure") is read as its comma-joined clauses, each parsed
    on its own, so that what it states is not lost to the clause that follows."""
    for sent in doc.sents:
        if _stated(sent.root) or not _CLAUSE_BREAK.search(sent.text):
            yield sent
            continue
        parts = [p for p in _CLAUSE_BREAK.split(sent.text) if p.strip()]
        for d in nlp.parse_many(parts):
            yield from d.sents


def find_everyday(ask: Ask, candidates: list[Candidate], known: dict | None = None) -> Found | None:
    """The statement that answers `ask`: a sentence of the participant's (never a question, never
    negated or supposed) that holds a value of the slot's type, chosen by how many of the
    question's content words (or the names of the people those words are) it shares, and then
    its message ("Took Bramble to the park ... Best rabbit ever."); ties go to the newest. The
    value closest to those words is the answer; the quote is the sentence, or the whole message
    when the words that tie it to the question are in another of its sentences."""
    known = known or {}
    asked = {w.lower() for w in re.findall(r"\w+", ask.text)} | {w.lower() for w in re.findall(r"\w+", ask.core)}
    words = _expand(ask.words)
    # about the participant: no content word, or only where they live or work ("where do i live?")
    own = not {w for w in ask.words if _concept_of().get(w) not in ("residence", "work")}
    alias = {n for n, r in known.items() if r and r in words}  # "my brother" matches the brother's name
    rels = facts.lexicon()["relations"]
    asked_rels = {w for w in ask.words if w in rels}
    concept = _concept_of()
    # a person the question names ("where Marisol lives", "Dani's sister") must be in the statement:
    # a statement about someone else holds no answer about them (their never-told question says so)
    named = {w.lower() for i, w in enumerate(re.findall(r"[A-Za-z][\w'-]*", ask.core))
             if i and w[0].isupper() and w.lower() not in ("i", "i'm", "i'd", "i've") and w.lower() in ask.words}
    named |= {w.lower().removesuffix("'s") for w in re.findall(r"\b[A-Z][a-z]+'s\b", ask.core)} & set(ask.words)
    # what is asked of them (not who): a statement must say it ("where does Ines work?" is not
    # answered by "Ines stayed behind in Porto"; "when is Ines landing?" needs the landing)
    caps = {w.lower() for w in re.findall(r"\b[A-Z][\w'-]*", ask.core)}
    preds = _expand({w for w in ask.words if w not in named and w not in rels and w not in known and w not in caps
                     and not w.isdigit()}) if ask.slot in ("workplace", "place", "time", "person") else set()
    best, best_key = None, None
    cands = sorted(candidates, key=lambda c: c.ordinal)
    # A statement's score is at most the number of the question's words (by concept) and aliases
    # its words can have (nlp.forms: from the tokenizer and the lemmatizer's tables, no parse), and
    # the best is the highest (score, newest): statements are read from the highest such bound
    # down, and reading stops when no statement left can reach the best so far (the same answer as
    # reading them all, without parsing what cannot win).
    reach = [_reach(c, words, alias, concept) for c in cands]
    order = sorted(range(len(cands)), key=lambda i: (reach[i], cands[i].ordinal, i), reverse=True)
    if words:
        order = [i for i in order if reach[i] > 0]  # shares no word of the question: scores 0, never read
    for start in range(0, len(order), _READ_BATCH):
        batch = order[start:start + _READ_BATCH]
        if best_key is not None and (reach[batch[0]], cands[batch[0]].ordinal, batch[0]) < best_key:
            break
        docs = nlp.parse_many([facts.blank_quotes(cands[i].text) for i in batch])
        for i, doc in zip(batch, docs):
            c = cands[i]
            if best_key is not None and (reach[i], c.ordinal, i) < best_key:
                break
            best, best_key = _read_everyday_one(ask, c, i, doc, known, asked, words, own, alias, rels, asked_rels,
                                                concept, named, preds, best, best_key)
    return best


_READ_BATCH = 16  # statements parsed together while reading from the highest bound down


def _reach(c: Candidate, words: set, alias: set, concept: dict) -> int:
    """The most a sentence of `c` can score in find_everyday: its `every` (the question's words by
    concept, and the aliases, that any of its words can be), from the word forms alone."""
    f = nlp.forms(facts.blank_quotes(c.text))
    if c.before:  # "actually she moved to Leeds": the words of the message before count too
        f = f | nlp.forms(c.before) | {w.lower() for w in re.findall(r"[\w']+", c.before)}
    return len({concept.get(w, w) for w in words if w in f or w.rstrip("s") in f} | (alias & f))


def _read_everyday_one(ask, c, i, doc, known, asked, words, own, alias, rels, asked_rels, concept, named, preds,
                       best, best_key):
    """find_everyday's reading of one statement `c` (the `i`th by ordinal): the best so far, updated."""
    sents = []
    for sent in _clauses(doc):
        st = sent.text.strip()
        if not st or st.rstrip("\"'\u201d)").endswith("?") or (sent[0].tag_ in _WH and len(sent) < 12) \
                or reported_question(st) or asks_recall(st):
            continue  # a question is never an answer
        idiom = re.search(r"(?i)\b(?:can't|cannot|can not|couldn't) believe\b", st)  # asserts what follows
        if any(t.lower_ in ("if", "unless", "whether") for t in sent[:2]):
            continue
        # a sentence whose main clause is not stated ("..., I could barely get a bench") may still state
        # the value in a clause of its own ("Pulse was heaving tonight"): checked per value below
        if not idiom and not _stated(sent.root) and not any(
                t.pos_ in ("VERB", "AUX") and t.dep_ in ("ccomp", "conj", "parataxis", "advcl") and _stated(t)
                and t.head.i == sent.root.i for t in sent):
            continue
        lem = _lemma_set(sent)
        if c.before and _pronoun_about(sent, known):
            # "actually she moved to Leeds": she is the person (or relation) of the message before,
            # where the message names nobody itself
            lem = lem | {w.lower() for w in re.findall(r"[\w']+", c.before)
                         if w.lower() in rels or w.lower() in known}
        hits = {concept.get(w, w) for w in words if w in lem or w.rstrip("s") in lem}
        hits |= ({t.lower_ for t in sent} | lem) & alias
        sents.append((sent, st, lem, hits))
    every = set().union(*(h for *_, h in sents)) if sents else set()
    for sent, st, lem, hits in sents:
        others = every - hits
        score = len(hits) + 0.5 * len(others)
        if words and score == 0:
            continue
        if not words and not _SELF_WORDS.search(st) and any(
                c.dep_ in ("nsubj", "nsubjpass") for c in sent.root.children):
            continue  # about themself: said in the first person, or with no subject ("being a nurse is ...")
        # a relation asked about must be this message's (by its noun or a name given it)
        if asked_rels and not any(r in lem or any(n in lem for n, rr in known.items() if rr == r)
                                  or (concept.get(r) and lem & _expand({r}))
                                  for _, _, lem2, _ in sents for r in asked_rels for lem in [lem2]):
            continue
        if named and not named <= ({t.lower_ for t in sent} | {t.lower_.removesuffix("'s") for t in sent}
                                  | {n for n in alias if n in lem} | (lem & named)):
            # the name of a place or thing may come in the next sentence of the message about them
            # ("Coffee with Fran again. Little Bean never disappoints."): only for a name or a place,
            # only where this sentence names nobody else and the message names them
            if not (ask.slot in ("name", "place") and hits and named <= {w.lower() for w in re.findall(r"[\w']+", c.text)}
                    and not any((t.pos_ == "PROPN" and t.ent_type_ == "PERSON") or _rel(t) is not None
                                or t.lower_ in ("he", "she", "they", "his", "her", "their") for t in sent)):
                continue
        if preds and not any(w in lem or w.rstrip("s") in lem for w in preds):
            continue
        values = _typed_values(sent, ask, asked, known)
        if not idiom and not _stated(sent.root):
            values = [(v, i) for v, i in values if _clause_verb(sent.doc[i]).i != sent.root.i and _stated(_clause_verb(sent.doc[i]))]
        if own:  # about the participant: the value is said of them, not of "my son greta" before it
            values = [(v, i) for v, i in values if _own_work_subject(sent.doc[i], ask)
                      or (_self_subject(sent.doc[i]) and not _other_before(sent.doc, i, sent, known))]
        if not values:
            continue
        live = [(v, i) for v, i in values if not _negated_value(sent.doc[i])]
        values = live or values  # "she's not in Bristol anymore, she lives in Leeds now": Leeds
        anchors = [t.i for t in sent if t.lower_ in words or t.lemma_.lower() in words or t.lower_ in alias]
        value, vi = min(values, key=lambda v: min((abs(v[1] - a) for a in anchors), default=0))
        quote = st if hits or len(c.text) > 240 else c.text.strip()
        key = (score, c.ordinal, i)  # i: of two statements with one ordinal, the later one (as read in order)
        if best_key is None or key >= best_key:
            best, best_key = Found(value=value, sentence=_clean(quote), candidate=c, how=ask.slot), key
    return best, best_key


def compose_everyday(ask: Ask, f: Found, now: datetime | None = None) -> str:
    """The value, then the statement it was read from, quoted as they said it."""
    told = f"You told me{when_told(f.candidate.ts, now)}" if f.candidate.source == "message" else "You told me"
    v = f.value
    if ask.slot == "occupation":
        lead = _cap(("an " if v[:1].lower() in "aeiou" else "a ") + v) if not re.match(r"(?i)an? ", v) else _cap(v)
    elif ask.slot == "age":
        lead = v
    elif ask.slot == "duration":
        lead = _cap(re.sub(r"(?i)\s+ago$", "", v))
    else:
        lead = f"It's {v}"
    sentence = f.sentence if len(f.sentence) <= 200 else f.sentence[:199].rsplit(" ", 1)[0] + "\u2026"
    return f"{lead}. {told}: \u201c{sentence}\u201d"


def not_told_everyday(ask: Ask) -> str:
    """Saying so, in the question's own terms ("I don't think you've told me when your vet appointment is")."""
    core = re.sub(r"\?+$", "", ask.core).strip()
    head, comma, _ = core.partition(",")  # "what's my landlord called, need to email him": the question is before it
    if comma and re.match(r"(?i)(what|where|when|which|who|whose|how)\b", head) and len(head.split()) >= 2:
        core = head.strip()
    core = re.sub(r"(?i)\s+again$", "", core)
    core = re.sub(r"(?i)^(what|who)\s*(?:'s|is)\s+(.+?)\s+(called|named)$", r"\1 \2 is \3", core)
    # "when's hanna's wedding" / "where 's the party": the question's verb goes after its subject
    core = re.sub(r"(?i)^(where|when|what|who|whose|which|how old)\s*(?:'s|is)\s+(.+)$",
                  lambda m: f"{m.group(1)} {m.group(2)}" + ("" if re.search(r"\bis \w+$", m.group(2)) else " is"), core)
    m = re.match(r"(?i)(what|where|when|which|who|whose|how old|how)\b(.*)$", core)
    if m and len(core.split()) <= 12:
        rest = second_person(m.group(2)).strip()
        rest = re.sub(r"\b(?:did )?you (?:say|tell me|tell you|told me|told you|mention(?:ed)?)\s+", "", rest, flags=re.I)
        rest = re.sub(r"^(?:do you|does|did|is|are|am|was)\s+", "", rest, flags=re.I)
        if rest and not re.search(r"\b(?:you told me|you said)\b", rest):
            return f"I don't think you've told me {m.group(1).lower()} {rest}."
    return "I don't think you've told me that."


# ---------------------------------------------------------------- relations, topics, counts (answers-v3)
#
# Issue 25 on a week by another author: facts told inside long messages and through other people
# ("my sister Adjoa called, and her husband Kofi is building a treehouse"; "Dani's sister Mireille
# writes the questions") were asked back as "what's my sister's husband called?", "who is
# Mireille?", "what did I say about that Moroccan place?", "how many hens do we have?", and a
# never-told "where does Ines work?" was answered with the city Ines stayed in. This reader runs
# before the two above and is strict about who: a chain of relations ("my sister's husband",
# "Dani's sister") is resolved to the person a statement names as such, or the answer is that it
# was not told; "who is X" is answered by the relation a statement gives X; "what did I say
# about X" by the newest statement holding X's words; "how many X" by a number said before X.
# It returns None for every other question (the readers above answer them).

_NAME = r"[A-Z][\w'-]*(?:\s+(?:&|and|of|de|van|von)\s+(?!I\b|I')[A-Z][\w'-]*|\s+(?!I\b|I')[A-Z][\w'-]*)*"
_CAP = re.compile(rf"^{_NAME}$")
_NOT_NAMES = set(_MONTHS) | set(_WEEKDAYS) | {"i", "i'm", "i've", "i'd", "oh", "ok", "so", "the", "and", "also",
                                              "anyway", "then", "other", "right", "long", "made", "had", "met",
                                              "turns", "took", "went", "dinner", "work", "hey", "hi", "big",
                                              "honestly", "sunday", "we", "we're", "my", "our", "but", "he", "she",
                                              "they", "his", "her", "their", "it", "it's", "that", "this", "what"}
_PRONOUN_OWNER = {"his", "her", "their"}
_REPORTED_Q = re.compile(r"(?i)\b(?:wants? to know|wanted to know|asked(?: me)?|was asking(?: me)?|(?:am|was|i'm) wondering|"
                         r"remind me|tell me|do (?:you|u) remember|did i (?:ever )?(?:tell|mention)|i forgot|"
                         r"can't remember|couldn't remember|blanked on)\s+(?:what|where|when|who|whose|which|how)\b")


_ASKING = re.compile(
    r"(?i)^\W*(?:(?:sorry|ok|okay|so|anyway|hey|oh|um|hmm)\W+)*(?:(?:this is embarrassing|sorry to ask again|sorry)(?: but)?\W+)?"
    r"(?:(?:can|could|would) (?:you|u) (?:please )?remind me|remind me|(?:for the life of me )?i(?:'ve| have)? "
    r"(?:totally |completely )?(?:forgot|forgotten|forget|can't remember|cannot remember|can't recall|don't remember)|"
    r"did i (?:ever )?(?:tell|mention|say)|have i (?:ever )?(?:told|mentioned|said)|do (?:you|u) (?:happen to )?remember|"
    r"you remember|my mind's gone blank)\b.*\b(?:what|where|when|which|who|whose|how|the name of)\b")


def asks_recall(text: str) -> bool:
    """A sentence that asks about their past without a question mark ("remind me again what kind of
    cat Waffles is", "I forgot where I work"): a question, never an answer."""
    return bool(_ASKING.search(text.strip()))


def reported_question(text: str) -> bool:
    """A question asked inside a sentence ("Mia wants to know what my dog is called."): never an answer."""
    return bool(_REPORTED_Q.search(text))


_REL_MODIFIERS = {"pet", "baby", "twin", "kid", "step", "little", "big", "ex"}  # "my baby brother" is one person
_FOOD = {"food", "dish", "meal", "eat", "eating", "dinner", "lunch", "breakfast", "snack"}
_FAVOURITE = {"food": _FOOD, "dish": _FOOD, "meal": _FOOD, "eat": _FOOD, "thing": _FOOD}
_QUANT = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}


@dataclass(frozen=True)
class Ask3:
    """A question read by this reader: what it asks (chain, who, about, count) and its terms."""
    kind: str  # chain | who | about | count
    owner: str | None = None  # chain: "my sister" -> "sister" (rel) or a name; count: a name or None (self)
    owner_is_rel: bool = False
    rel: str | None = None  # chain: the relation asked ("husband")
    rest: str | None = None  # chain: what is asked of that person, when not their name ("where does X work")
    name: str | None = None  # who: the name asked about
    words: tuple = ()  # about/count: content words
    text: str = ""

    def public(self) -> dict:
        return {"reader": "relations", "kind": self.kind, **{k: v for k, v in (
            ("owner", self.owner), ("rel", self.rel), ("name", self.name), ("words", list(self.words) or None),
            ("rest", self.rest)) if v}}


def _relnoun(w: str) -> str | None:
    rels = facts.lexicon()["relations"]
    w = w.lower()
    for c in (w, w.removesuffix("s"), w.removesuffix("es")):
        if c in rels:
            return c
    return None


def _is_name(w: str, known: dict) -> bool:
    return bool(w) and w.lower() not in _NOT_NAMES and _relnoun(w) is None and (
        w[:1].isupper() or w.lower() in known)


_CHAIN = re.compile(r"\b(?:(my|our)\s+([a-z-]+)|(?<!\bmy )(?<!\bour )([A-Za-z][\w-]*))'s\s+([a-z-]+)\b")
_ABOUT = re.compile(r"^(?:so\s+)?what (?:did|have) (?:i|we) (?:say|tell (?:you|u)|told (?:you|u)|mention(?:ed)?)\s+about\s+(.+)$|"
                    r"^(?:did|have) (?:i|we) (?:ever )?(?:say|tell (?:you|u)|told (?:you|u)|mention(?:ed)?) "
                    r"(?:anything|much|something) about\s+(.+)$|^(?:tell me )?what (?:you know|do you know) about\s+(.+)$",
                    re.I)
_WHO = re.compile(r"^(?:who(?:'s| is| was)\s+(.+?)(?:\s+again|\s+exactly)?|who did (?:i|we) (?:say|tell (?:you|u)) (.+?) "
                  r"(?:is|was)|who (.+?) (?:is|was)(?: again| exactly)?)$", re.I)
_COUNT = re.compile(r"\bhow many\s+([a-z][a-z-]+)\b(.*)$", re.I)


def read_relations(text: str, known: dict | None = None, vocab=()) -> Ask3 | None:
    known = known or {}
    if is_action_request(text):
        return None
    core = unframe(normalise(text, vocab)).strip().rstrip("?!. ")
    core = re.sub(r"^(?:do|did|can|could) (?:you|u) (?:remember|recall|know|tell me)\s+|^you remember\s+|"
                  r"^do (?:you|u) happen to remember\s+|^(?:and|so|but)\s+", "", core, flags=re.I)
    core = re.sub(r",?\s*right$", "", core, flags=re.I).strip()
    # only a question: "Dani's sister Mireille writes the questions." tells, it does not ask
    if not (re.match(r"(?i)\W*(?:what|where|when|which|who|whose|how|do|did|does|is|are|was|can|could)\b", core)
            or re.search(r"(?i)\b(?:remind me|do (?:you|u) (?:happen to )?remember|you remember|did i (?:ever )?(?:tell|mention))\b",
                         text)):
        return None
    if _ADVICE.search(core) and not re.search(r"\b(?:did|have) i\b", core, re.I):
        return None
    m = _ABOUT.match(core)
    if m:
        topic = next(g for g in m.groups() if g)
        words = tuple(w for w in _content(topic) if w not in ("place", "thing", "stuff", "one", "that", "those",
                                                              "these", "time", "whole", "bit"))
        if words:
            return Ask3("about", words=words, rest=second_person(topic.strip()), text=text)
    chain_core = re.sub(r"(?i)\b(what|who|where|when|how|that|it|he|she|there)'s\b", r"\1 is", core)
    chain_core = re.sub(r"(?i)\b(my|our)\s+([a-z-]+?)(?:s|'s)?\s+([a-z-]+)\b",  # "my aunts girlfriend", "my aunt girlfriend"
                        lambda m: f"{m.group(1)} {m.group(2)}'s {m.group(3)}" if _relnoun(m.group(2)) and
                        _relnoun(m.group(3)) and m.group(2).lower() not in _REL_MODIFIERS else m.group(0), chain_core)
    m = re.search(r"(?i)\b(?:my|our)\s+(?:new\s+|all-time\s+|absolute\s+)?fav(?:ou?rite|e)\s+([a-z]+(?:\s+to\s+[a-z]+)?)", core) \
        or re.search(r"(?i)^what\s+(food|dish|meal|drink|music|band|film|book|show)\s+(?:do\s+)?(?:i|we)\s+(?:love|like best)\b", core)
    if m:
        noun = m.group(1).lower()
        return Ask3("favourite", words=tuple(sorted(_FAVOURITE.get(noun.split()[-1] if " to " in noun else noun,
                                                                  {noun}))), text=text)
    m = re.match(rf"(?i)^what(?:'s| is| was)\s+({_NAME}|[a-z]+)\s+(?:up to|doing|busy with|working on)\b", core) or \
        re.match(rf"(?i)^what\s+({_NAME}|[a-z]+)\s+(?:is|was|'s)\s+(?:up to|doing|busy with|working on)\b", core)
    if m and _is_name(m.group(1).split()[0], known) and m.group(1).lower() not in _FRAME_WORDS:
        return Ask3("about", words=(m.group(1).lower(),), text=text)
    for m in _CHAIN.finditer(chain_core):
        mine, r1, who, r2 = m.group(1), m.group(2), m.group(3), m.group(4)
        if _relnoun(r2) is None:
            continue
        nxt = re.match(r"\s+([a-z][a-z-]+)", chain_core[m.end():])
        if r2.lower() in _REL_MODIFIERS and nxt and _relnoun(nxt.group(1)) is None and \
                nxt.group(1).lower() not in _FRAME_WORDS:
            continue  # "Idris's baby shower" is an event, not Idris's baby
        if mine:
            if _relnoun(r1) is None:
                continue
            owner, is_rel = _relnoun(r1), True
        else:
            if not _is_name(who, known):
                continue
            owner, is_rel = (getattr(known, "display", {}).get(who.lower(), who[:1].upper() + who[1:])), False
        rest = chain_core[:m.start()] + "{}" + chain_core[m.end():]
        # the name of that person: "what's X called", "who is X", "X's name", "the name of X"
        asks_name = re.fullmatch(r"(?i)\s*(?:what(?:'s| is| was)?|what did (?:i|we) (?:say|tell (?:you|u)))?\s*"
                                 r"(?:the name of\s+)?(?:my\s+|our\s+)?\{\}(?:'s name|'s called| is called| was called|"
                                 r" called)?(?: again)?\s*", rest) or re.fullmatch(
            r"(?i)\s*(?:who(?:'s| is| was)|who did (?:i|we) say|who)\s+(?:my\s+|our\s+)?\{\}(?: is| was)?(?: again)?\s*",
            rest) or re.fullmatch(r"(?i)\s*(?:what|which) name did (?:i|we) (?:give|say|tell (?:you|u)) for "
                                  r"(?:my\s+|our\s+)?\{\}\s*", rest) or re.fullmatch(
            r"(?i)\s*(?:what|how) (?:is|'s|are)? ?(?:my\s+|our\s+)?\{\} (?:called|named)\s*", rest)
        return Ask3("chain", owner=owner, owner_is_rel=is_rel, rel=_relnoun(r2),
                    rest=None if asks_name else rest.replace("my {}", "{}").replace("our {}", "{}"), text=text)
    m = _WHO.match(core)
    if m:
        who = next(g for g in m.groups() if g).strip()
        if re.fullmatch(r"[A-Za-z][\w'-]*(?:\s+[A-Z][\w'-]*)?", who) and who.split()[0].lower() not in _NOT_NAMES \
                and who.split()[0].lower() not in _FRAME_WORDS and _relnoun(who.split()[0]) is None:
            shown = getattr(known, "display", {}).get(who.lower(), who[:1].upper() + who[1:])
            return Ask3("who", name=shown, text=text)
    m = _COUNT.search(core)
    if m and not re.fullmatch(r"years|months|weeks|days|hours", m.group(1).lower()):  # how long, not how many
        thing = m.group(1).lower()
        after = m.group(2)
        owner = next((w for w in re.findall(r"[A-Za-z][\w'-]*", after) if _is_name(w, known)
                      and w.lower() not in _FRAME_WORDS), None)
        if owner or re.search(r"\b(?:i|we|my|our)\b", after, re.I):
            return Ask3("count", owner=owner, words=(thing,), text=text)
    return None


def _owner_names(ask: Ask3, known: dict) -> set[str]:
    """Lowercase ways a statement names the chain's owner: their name(s), or the name itself."""
    if ask.owner_is_rel:
        return {n for n, r in known.items() if r == ask.owner}
    return {ask.owner.lower()}


def _owner_refs(ask: Ask3, known: dict) -> list[str]:
    """Patterns naming the owner in a statement: their name, and "my <relation>" when the name is
    one of theirs ("Oskar's husband" is told as "my uncle's husband" when Oskar is the uncle)."""
    refs = [rf"{re.escape(o)}'s" for o in _owner_names(ask, known)]
    rel = ask.owner if ask.owner_is_rel else known.get(ask.owner.lower())
    if rel:
        refs.append(rf"my {re.escape(rel)}'s")
    return refs


def _stated_sents(doc):
    """The sentences of `doc` that state something (no question, no supposition, nothing asked
    of memory), in order."""
    for sent in doc.sents:
        st = sent.text.strip()
        if not st or st.rstrip("\"'\u201d)").endswith("?") or (sent[0].tag_ in _WH and len(sent) < 12) \
                or reported_question(st) or asks_recall(st):
            continue
        if not _stated(sent.root) or any(t.lower_ in ("if", "unless", "whether") for t in sent[:2]):
            continue
        yield sent


def _sentences(cands: list[Candidate]):
    """(candidate, sentence span, message text) of every statement (no question, no supposition)."""
    cands = sorted(cands, key=lambda c: c.ordinal)
    docs = nlp.parse_many([facts.blank_quotes(c.text) for c in cands])
    for c, doc in zip(cands, docs):
        for sent in _stated_sents(doc):
            yield c, sent, c.text


def _selector_read(doc) -> tuple:
    """What the answer selector needs of one message's stated sentences, kept by text
    (nlp.read_many): the readings are the same turn after turn, the parse is not redone."""
    from memory import answer_select

    return tuple(answer_select.read_sentence(sent, _instruction(sent.text.strip(), sent))
                 for sent in _stated_sents(doc))


def _selector_sentences(cands: list[Candidate]) -> list:
    """The selector's candidate sentences (memory.answer_select.Sentence) of `cands`' stated
    sentences, oldest message first, without instructions (`_instruction`)."""
    from memory import answer_select

    cands = sorted(cands, key=lambda c: c.ordinal)
    reads = nlp.read_many("selector", [facts.blank_quotes(c.text) for c in cands], _selector_read)
    return [s for s in answer_select.candidate_sentences((c, r) for c, rs in zip(cands, reads) for r in rs)
            if not s.read.instruction]


def _first_name(s: str, known: dict) -> str | None:
    m = re.match(rf"\s*,?\s*\(?\s*({_NAME})", s)
    if m:
        n = m.group(1).split()[0] if " " in m.group(1) and m.group(1).split()[1][:1].islower() else m.group(1)
        n = n.split(" and ")[0].split(" & ")[0] if not re.search(r"&|\band\b", s[:m.end()]) else n
        first = n.split()[0]
        if _is_name(first, known) and first[:1].isupper():
            return first if len(n.split()) == 1 or _relnoun(n.split()[-1]) else n
    return None


def _resolve_chain(ask: Ask3, cands: list[Candidate], known: dict):
    """The person the chain names (value, candidate, sentence), from the newest statement naming
    them as the owner's relation: "my sister's husband Kofi", "Adjoa's husband, Kofi", "her husband
    Kofi" after "my sister", "Kofi is my sister's husband", "Dani's sister Mireille"."""
    owners = _owner_names(ask, known)
    rel = ask.rel
    relrx = rf"{re.escape(rel)}s?"
    best = None
    for c, sent, msg in _sentences(cands):
        st = sent.text
        low = st.lower()
        if not re.search(rf"\b{relrx}\b", low):
            continue
        refs = _owner_refs(ask, known)
        # a possessive pronoun points at the owner when the message named them before it
        before = msg[:msg.find(st)] + st
        owner_named = ask.owner_is_rel and re.search(rf"\bmy {re.escape(ask.owner)}\b", before, re.I) or any(
            re.search(rf"\b{re.escape(o)}\b", before, re.I) for o in owners)
        if owner_named:
            refs.append(r"(?:his|her|their)")
        for ref in refs:
            for m in re.finditer(rf"(?i)\b{ref}\s+{relrx}\b", st):
                tail = st[m.end():]
                n = _first_name(re.sub(r"^\s*(?:is|'s)?\s*(?:called|named)\s+", " ", tail), known)
                if n and n.lower() not in owners:
                    best = (n, c, st)
                    break
            else:
                # "Kofi is my sister's husband", "Mireille, Dani's sister"
                m = re.search(rf"({_NAME})(?:,|\s+is|\s+was|\s*\()\s*(?i:{ref}\s+{relrx})\b", st)
                if m and _is_name(m.group(1).split()[-1], known) and m.group(1).split()[-1].lower() not in owners:
                    best = (m.group(1).split()[-1], c, st)
                continue
            break
    return best


def _relation_of(name: str, cands: list[Candidate], known: dict):
    """How a statement relates `name` to the participant or someone: ("your sister" | "Dani's sister"
    | "from work", candidate, sentence), newest first."""
    n = re.escape(name)
    best = None
    for c, sent, msg in _sentences(cands):
        st = sent.text
        if not re.search(rf"\b{n}\b", st):
            continue
        found = None
        m = re.search(rf"(?i)\b(my|our)\s+([a-z-]+)\s*,?\s*{n}\b", st) or re.search(
            rf"\b{n}\s*(?:,|\(|\s+is|\s+was)\s*\(?(my|our)\s+([a-z-]+)", st)
        if m and _relnoun(m.group(2)):
            found = f"your {m.group(2).lower()}"
        if found is None:
            m = re.search(rf"\b([A-Z][\w-]*)'s\s+([a-z-]+)\s*,?\s*{n}\b", st) or re.search(
                rf"\b{n}\s*(?:,|\(|\s+is|\s+was)\s*\(?([A-Z][\w-]*)'s\s+([a-z-]+)", st)
            if m and _relnoun(m.group(2)) and m.group(1).lower() != name.lower():
                found = f"{m.group(1)}'s {m.group(2).lower()}"
        if found is None:
            m = re.search(rf"(?i)\b(his|her|their)\s+([a-z-]+)\s*,?\s*{n}\b", st)
            if m and _relnoun(m.group(2)):
                before = msg[:msg.find(st)] + st[:m.start()]
                owner = [x for x in re.findall(rf"\b(?:my [a-z-]+|{_NAME})\b", before)
                         if x.lower() not in _NOT_NAMES and (x.startswith("my ") and _relnoun(x[3:]) or
                                                              _is_name(x.split()[0], known))]
                if owner:
                    o = owner[-1]
                    found = f"your {o[3:]}'s {m.group(2).lower()}" if o.startswith("my ") else \
                        f"{o.split()[0]}'s {m.group(2).lower()}"
        if found is None:
            m = re.search(rf"\b{n} from (work|school|uni|college|the [a-z]+|[A-Z][\w-]*)\b", st)
            if m:
                found = f"someone from {m.group(1)}"
        if found is not None:
            best = (found, c, st)
    return best


def _about(words: tuple, cands: list[Candidate]):
    """The newest statement holding every content word of the topic (plural-less)."""
    best = None
    for c, sent, msg in _sentences(cands):
        lem = _lemma_set(sent)
        if all(w in lem or w.rstrip("s") in lem for w in words):
            best = (c, sent.text.strip())
    return best


def _count(ask: Ask3, cands: list[Candidate], known: dict):
    thing = ask.words[0].lower()
    stem = thing.rstrip("s")
    best = None
    for c, sent, msg in _sentences(cands):
        st = sent.text
        m = re.search(rf"(?i)\b(\d{{1,3}}|{'|'.join(_QUANT)})\s+(?:[a-z-]+\s+)?{re.escape(stem)}s?\b", st) or re.search(
            rf"(?i)\b{re.escape(stem)}s?\b[^.?!]{{0,20}}?:\s*(\d{{1,3}}|{'|'.join(_QUANT)})\b", st)
        if not m:
            continue
        if ask.owner and not re.search(rf"\b{re.escape(ask.owner)}\b", st, re.I):
            continue
        if not ask.owner and not _SELF_WORDS.search(st):
            continue
        best = (m.group(1), c, st)
    return best


def _quote(st: str) -> str:
    st = _clean(st)
    return st if len(st) <= 200 else st[:199].rsplit(" ", 1)[0] + "\u2026"


def answer_relations(ask: Ask3, cands: list[Candidate], known: dict, now: datetime | None = None
                     ) -> tuple[str | None, dict | None]:
    """(reply, found) for a chain, who, about or count question; reply None for a chain whose
    person is found but asked something else (the caller asks that of the person by name)."""
    def told(c: Candidate) -> str:
        return f"you told me{when_told(c.ts, now)}" if c.source == "message" else "you told me"

    if ask.kind == "chain":
        whose = f"your {ask.owner}'s {ask.rel}" if ask.owner_is_rel else f"{ask.owner}'s {ask.rel}"
        hit = _resolve_chain(ask, cands, known)
        if hit is None:
            return f"I don't think you've told me who {whose} is.", None
        value, c, st = hit
        f = Found(value=value, sentence=_clean(st), candidate=c, how="chain")
        if ask.rest:
            return None, {"person": value, **f.public()}
        return f"{_cap(whose)} is {value}: {told(c)} (\u201c{_quote(st)}\u201d).", f.public()
    if ask.kind == "who":
        hit = _relation_of(ask.name, cands, known)
        if hit is not None:
            value, c, st = hit
            f = Found(value=value, sentence=_clean(st), candidate=c, how="relation")
            return f"{ask.name} is {value}: {told(c)} (\u201c{_quote(st)}\u201d).", f.public()
        hit = _about((ask.name.lower(),), cands)
        if hit is None:
            return f"I don't think you've told me who {ask.name} is.", None
        c, st = hit
        return f"You mentioned {ask.name}{when_told(c.ts, now)}: \u201c{_quote(st)}\u201d", \
            Found(value=ask.name, sentence=_clean(st), candidate=c, how="mention").public()
    if ask.kind == "about":
        hit = _about(ask.words, cands)
        topic = ask.rest or " ".join(ask.words)
        if hit is None:
            return f"I don't think you've told me anything about {topic}.", None
        c, st = hit
        return f"{_cap(told(c))}: \u201c{_quote(st)}\u201d", Found(value=topic, sentence=_clean(st), candidate=c,
                                                                   how="about").public()
    if ask.kind == "favourite":
        hit = None
        for c, sent, msg in _sentences(cands):
            lem = _lemma_set(sent)
            if lem & {"favourite", "favorite", "fave", "love"} and lem & set(ask.words):
                hit = (c, sent.text.strip())
        thing = "favourite " + ("food" if set(ask.words) == _FOOD else ask.words[0])
        if hit is None:
            return f"I don't think you've told me your {thing}.", None
        c, st = hit
        return f"About your {thing}, {told(c)}: \u201c{_quote(st)}\u201d", \
            Found(value=thing, sentence=_clean(st), candidate=c, how="favourite").public()
    if ask.kind == "count":
        hit = _count(ask, cands, known)
        who = ask.owner or "you"
        if hit is None:
            return f"I don't think you've told me how many {ask.words[0]} {who} {'have' if who == 'you' else 'has'}.", None
        value, c, st = hit
        return f"{value}: {told(c)} (\u201c{_quote(st)}\u201d).", Found(value=value, sentence=_clean(st), candidate=c,
                                                                        how="count").public()
    return None, None


def relation_candidates(store, participant: str, as_of: int, ask: Ask3, known: dict, extra=(),
                        limit: int = 60) -> list[Candidate]:
    terms = set(ask.words) | {t.lower() for t in (ask.owner, ask.rel, ask.name) if t}
    if ask.kind == "chain" and ask.owner_is_rel:
        terms |= _owner_names(ask, known)
    return everyday_candidates(store, participant, as_of, Ask("x", tuple(sorted(terms)), "", ""), {}, extra, limit)
