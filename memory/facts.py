"""Facts from the participant's own words, read from the spaCy parse (memory.nlp), not from
surface patterns: who a clause is about (the participant, or a person or animal of theirs,
found by a relation noun with "my"/"our", its name by apposition, compound or "called X"),
what its predicate says (lives in, works at, is a nurse, has asthma, plays bass, is off to
Lisbon ...), and whether it is stated at all.

Not stated, so nothing is read: a clause whose verb (or a verb it hangs under) is negated
("I don't live in London anymore"), asked (the sentence ends in "?"), supposed ("if I ever
moved to Canada", "I'd love to live by the sea": a conditional mark or a hedging modal),
reported from someone else ("she says ...", quoted words are blanked before parsing), or a
past habit ("I used to live in Madrid"). A negated statement is dropped, never stored as its
opposite.

The word lists (relation nouns, occupations, conditions, hobby verbs ...) are data:
memory/data/facts.json. Claim texts are third person; the slots that a later statement
contradicts follow memory.claims ("residence", "age", "sister:lena:residence" ...), and the
usual ones keep the wording the rest of the product uses ("Lives in Braga", "Is 34 years
old", "Works as a nurse", "Has a cat called Miso"), so a restatement is a duplicate, not a
supersession. Evidence is the contiguous span of the message that states the fact.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from memory import nlp

VERSION = "facts-parse-1"


@lru_cache(maxsize=1)
def lexicon() -> dict:
    data = json.loads(resources.files("memory").joinpath("data/facts.json").read_text(encoding="utf-8"))
    rel = {w: cat for cat, words in data["relations"].items() for w in words}
    sets = {k: frozenset(v) for k, v in data.items() if isinstance(v, list)}
    return {"version": data["version"], "relations": rel, **sets}


@dataclass(frozen=True)
class Fact:
    text: str
    slot: str | None
    category: str
    evidence: str
    ends: tuple = ()  # a past state ("No longer lives in London"): the words of what ended
    origin: str = "rule"  # rule | fact-classifier (memory.fact_classifier)


_CATEGORY = {"family": "family", "friends": "relationships", "work": "work", "pets": "pets"}
_SELF = {"i", "we", "me", "us"}
_PRONOUN = {"he", "she", "they", "him", "her", "them"}
_QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d")
_NUMBER_WORDS = set("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
                    "hundred".split())
_PLAN_TIME = re.compile(r"\b(tomorrow|tonight|next|soon|this (?:week|weekend|month|year|summer|winter|spring|"
                        r"autumn|fall)|in (?:january|february|march|april|may|june|july|august|september|october|"
                        r"november|december|the spring|the summer|the autumn|the fall|the winter|the new year)|"
                        r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
                        r"(?:on|in|for|from) (?:the )?\d{1,2}(?:st|nd|rd|th)?(?: of)? (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*|"
                        r"(?:on|in|for|from) (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w* \d{1,2}(?:st|nd|rd|th)?|"
                        r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|till|until|later)\b", re.I)
_RELATIVE = re.compile(r"\b(yesterday|today|tomorrow|tonight|next|last|this|ago|weekend)\b", re.I)
_FUTURE_AUX = {"will", "'ll", "shall", "wo", "gon", "going"}
_DROP_DEPS = {"intj", "discourse", "cc", "mark", "advcl", "parataxis", "ccomp", "punct", "dep", "meta"}
_DISCOURSE = {"so", "anyway", "honestly", "btw", "lol", "haha", "tbh", "also", "well", "oh", "ok", "okay", "um",
              "hmm", "ugh", "like", "really", "actually", "basically", "literally", "just"}


def blank_quotes(text: str) -> str:
    """Quoted words are someone else's: blanked (same length, so offsets stay the message's)."""
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), text)


_SENT = re.compile(r"[^.!?]*[.!?]+|[^.!?]+$")
_DECLARATIVE = re.compile(r"^\W*(?:(?:so|well|ok|okay|hey|hi|ugh|btw|anyway|honestly|also|and|but)\W+)*"
                          r"(?:(?:since|as|because|now that|given that|seeing as)\s+)?"
                          r"(?:i|i'm|im|i've|ive|we|we're|we've|my|our)\b", re.I)
_ASKING = re.compile(r"^\W*(?:(?:and|so|but|then)\s+)?(?:what|how|where|which|who|whose|when|why|do|does|did|can|"
                     r"could|should|would|will|is|are|any|anything|anyone|thoughts|ideas|tips|recommendations|"
                     r"advice|suggestions|got)\b", re.I)


def split_asked(text: str) -> str:
    """A statement made in passing before a question ("I work nights at the pharmacy, any tips for
    sleeping?", "Since I just moved to Leeds, where do people go out?") is stated: the comma that
    joins it to the question becomes a full stop, so the parse reads it as a sentence of its own
    and only the question part is asked. Same length: offsets stay the message's."""
    out = list(text)
    for m in _SENT.finditer(text):
        sent = m.group(0)
        if not sent.rstrip().endswith("?"):
            continue
        for k in range(len(sent) - 1, -1, -1):
            if sent[k] not in ",;":
                continue
            before, after = sent[:k], sent[k + 1:]
            if _DECLARATIVE.match(before) and _ASKING.match(after) and len(before.split()) >= 3 and \
                    not re.search(r"\b(?:if|unless|whether)\b", before, re.I):
                out[m.start() + k] = "."
                break
    return "".join(out)


def prepare(text: str) -> str:
    """The text the parse reads: quotes blanked, statements made in passing before a question split off."""
    return split_asked(blank_quotes(text))


# ---------------------------------------------------------------- people and animals

@dataclass
class Mention:
    rel: str | None
    category: str
    names: list
    tokens: set = field(default_factory=set)  # token indices that refer to it (relation noun, names)
    span: tuple = (0, 0)  # token range stating the relation ("my brother Tomasz")
    mine: bool = True

    @property
    def name(self) -> str | None:
        return self.names[0].text if self.names else None

    def who(self) -> str:
        if self.rel and self.name:
            return f"{self.rel.capitalize()} {self.name}"
        return self.rel.capitalize()

    def key(self) -> str:
        return f"{self.rel}:{self.name.lower()}" if self.name else self.rel

    def verb(self, third: str, base: str) -> str:
        """'lives' for "Sister Lena", 'live' for "Their parents"."""
        return base if self.rel.endswith("s") and not self.name else third


@lru_cache(maxsize=1)
def _multiword() -> tuple:
    """The relations written in more than one token ("mother-in-law", "step mum"), longest first."""
    return tuple(sorted((w for w in lexicon()["relations"] if "-" in w or " " in w), key=len, reverse=True))


def _rel_at(tok) -> str | None:
    """The relation noun starting at `tok` ("mother-in-law" spans tokens), by its lemma or text."""
    if tok.pos_ not in ("NOUN", "PROPN"):
        return None
    rel = lexicon()["relations"]
    low = tok.lower_
    # only a multi-token relation that begins with this token's text can start here: the text after
    # it is joined from the next tokens (at most 20 characters), not from the whole doc's text
    multi = [w for w in _multiword() if w.startswith(low) or low.startswith(w)]
    if multi:
        doc = tok.doc
        rest = "".join(t.text_with_ws for t in doc[tok.i: min(len(doc), tok.i + 20)])[:20].lower()
        for w in multi:
            if rest.startswith(w) and not rest[len(w): len(w) + 1].isalpha():
                return w
    for w in (tok.lower_, tok.lemma_.lower()):
        if w in rel:
            return w
    if tok.lower_.endswith("s") and tok.lower_[:-1] in rel:
        return tok.lower_[:-1]
    return None


def _is_name(tok) -> bool:
    return (tok.text[:1].isupper() and tok.is_alpha and tok.pos_ in ("PROPN", "NOUN") and _rel_at(tok) is None
            and tok.ent_type_ not in ("DATE", "TIME", "CARDINAL", "ORDINAL"))


def _with_conj(tok) -> list:
    out = [tok]
    for c in tok.children:
        if c.dep_ == "conj" and _is_name(c):
            out.append(c)
    return out


def _mine(tok) -> bool:
    """Owned by "my"/"our", or had by the participant ("I have a cat called Luna")."""
    if any(c.dep_ == "poss" and c.lower_ in ("my", "our") for c in tok.children):
        return True
    head = tok.head
    return tok.dep_ == "dobj" and head.lemma_ in ("have", "get", "adopt", "own", "rescue") and any(
        c.dep_ == "nsubj" and c.lower_ in ("i", "we") for c in head.children)


def mentions(doc) -> list[Mention]:
    """People and animals of the participant's: a relation noun owned by "my"/"our" (or a kin
    title before a name, "Aunt Bea"), with the names the parse attaches to it."""
    out = []
    for tok in doc:
        rel = _rel_at(tok)
        if rel is None:
            continue
        names, extra = [], set()
        head = tok.head
        mine = _mine(tok)
        # "my aunt Sofia" (compound of the name), "Aunt Bea" (a kin title needs no "my")
        if tok.dep_ == "compound" and _is_name(head):
            names = _with_conj(head)
            mine = mine or _mine(head) or (rel in lexicon()["kin_titles"] and tok.text[:1].isupper())
        # "Kenji, my old roommate" / "Dani (my girlfriend)" / "Marisol, my boss"
        elif tok.dep_ == "appos" and _is_name(head):
            names = _with_conj(head)
        for c in tok.children:
            # "my brother Tomasz", "our cat, Biscuit,", "two sons, Adam and Ben"
            if c.dep_ in ("appos", "compound") and _is_name(c) and not names:
                names = _with_conj(c)
            # "a golden retriever named Max"
            if c.dep_ == "acl" and c.lemma_ in ("name", "call"):
                names = names or [o for x in c.children if x.dep_ in ("oprd", "attr", "dobj") and _is_name(x)
                                  for o in _with_conj(x)]
                # the parser sometimes hangs the name on the main verb: take the word after "called"
                if not names and c.i + 1 < len(doc) and _is_name(doc[c.i + 1]):
                    names = [doc[c.i + 1]]
        # lowercase chat the parser gets wrong ("my boyfriend Pieter is ...": boyfriend as npadvmod)
        if not names and tok.i + 1 < len(doc) and _is_name(doc[tok.i + 1]) and tok.dep_ not in ("compound",) and \
                doc[tok.i + 1].dep_ in ("nsubj", "nsubjpass", "appos", "npadvmod", "dobj", "pobj", "conj", "attr"):
            names = [doc[tok.i + 1]]
        # "my best friend is called Yusuf", "our rabbit is called Clover"
        if not names and tok.dep_ in ("nsubjpass", "nsubj") and head.lemma_ in ("call", "name"):
            names = [o for x in head.children if x.dep_ in ("oprd", "attr") and _is_name(x) for o in _with_conj(x)]
        # "my daughter's name is Rosa"
        if not names and tok.dep_ == "poss" and head.lemma_ == "name" and head.dep_ == "nsubj":
            names = [x for x in head.head.children if x.dep_ == "attr" and _is_name(x)]
            extra = {head.i}
        # "me and my wife Noor": owned through the conjunction's own "my"
        if not mine and any(c.dep_ == "poss" and c.lower_ in ("my", "our") for c in tok.subtree if c.i < tok.i):
            mine = True
        if not mine:
            continue
        idx = {tok.i, *(n.i for n in names), *extra}
        lo = min(idx | {c.i for c in tok.children if c.dep_ in ("poss", "amod", "det") and c.i < tok.i})
        hi = max(idx)
        shown = tok.lower_ if tok.lower_.endswith("s") and tok.lower_[:-1] == rel else rel
        out.append(Mention(shown, lexicon()["relations"][rel], names, idx, (lo, hi)))
    return out


# ---------------------------------------------------------------- is it stated?

def _ancestors_clauses(tok):
    t = tok
    while t.head.i != t.i:
        t = t.head
        yield t


def _negated(tok) -> bool:
    return any(c.dep_ == "neg" or (c.dep_ == "advmod" and c.lower_ in ("never", "hardly", "barely"))
               or (c.dep_ == "det" and c.lower_ == "no") for c in tok.children) or \
        any(c.dep_ == "det" and c.lower_ == "no" for o in tok.children if o.dep_ in ("dobj", "attr")
            for c in o.children)


def _own_subject(tok) -> bool:
    return any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in tok.children)


def _no_longer(tok) -> bool:
    """"not ... anymore", "no longer", "not ... any more": a state that ended."""
    kids = list(tok.children)
    words = {c.lower_ for c in kids if c.dep_ in ("advmod", "npadvmod", "neg")}
    if "anymore" in words or "longer" in words:
        return True
    return any(c.lower_ == "more" and any(x.lower_ == "any" for x in c.children) for c in kids) or any(
        c.lower_ == "longer" for o in kids for c in o.children if c.dep_ == "advmod")


def _aside(clause) -> bool:
    """"if you must know", "if you ask me", "if you're wondering": an if-clause about the listener
    asking or knowing is an aside to them, not a condition on what the main clause states."""
    subj = [c for c in clause.children if c.dep_ in ("nsubj", "nsubjpass")]
    return bool(subj) and subj[0].lower_ == "you" and clause.lemma_.lower() in lexicon()["aside_verbs"] and \
        not any(c.dep_ in ("dobj", "attr", "ccomp") for c in clause.children)


_HEARSAY = {"apparently", "supposedly", "allegedly", "reportedly", "rumoredly", "purportedly"}
_ROLES = {"boss", "king", "queen", "landlord", "ruler", "master", "overlord", "chef", "princess", "prince", "mvp"}


def _figure(pred) -> bool:
    """A role or a bond said in figure: "My dog is the real boss of this house" (a household role
    with "the"), "I'm married to my job" (married to something of theirs that is no person)."""
    if pred.lemma_ == "be":
        for c in pred.children:
            if c.dep_ == "attr" and c.lemma_.lower() in _ROLES and any(d.dep_ == "det" and d.lower_ == "the"
                                                                     for d in c.children):
                return True
    for c in [pred, *pred.children]:
        if c.lower_ in ("married", "engaged", "wedded"):
            for p in c.children:
                if p.dep_ == "prep" and p.lower_ == "to":
                    o = _pobj(p)
                    if o is not None and o.pos_ != "PROPN" and o.lemma_.lower() not in lexicon()["relations"] and \
                            o.lower_ not in _PRONOUN:
                        return True
    return False


def not_stated(pred) -> str | None:
    """Why the clause headed by `pred` states nothing (None: it is stated). "ended": it states a
    past state ("I'm not with Dan anymore", "I used to live in Madrid"), read by `_ended`."""
    lex = lexicon()
    chain = [pred]
    t = pred
    # a conjunct without its own subject shares its head's negation and modality
    while (t.dep_ in ("conj", "xcomp") or _listed(t)) and not _own_subject(t) and t.head.i != t.i:
        t = t.head
        chain.append(t)
    for t in chain:
        if any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether") for c in t.children):
            return "supposed"
        if any(c.dep_ == "aux" and c.lower_ in lex["hedge_modals"] for c in t.children):
            return "supposed"
        if any(c.dep_ == "advcl" and any(m.dep_ == "mark" and m.lower_ in ("if", "unless") for m in c.children)
               and not _aside(c) for c in t.children):
            return "supposed"  # "if my sister visits we will go out"
        if any(c.dep_ == "advmod" and c.lower_ in ("maybe", "perhaps", "possibly", "hopefully") for c in t.children):
            return "supposed"  # "maybe I'll sign up one day"
        if any(c.dep_ == "advmod" and c.lower_ in _HEARSAY for c in t.children) or \
                any(c.dep_ == "prep" and c.lower_ == "according" for c in t.children):
            return "reported or wished"  # "Apparently my neighbour is moving to Leeds", "According to Lena, ..."
        if t is pred and (any(c.dep_ == "advmod" and c.lower_ in ("basically", "literally", "practically")
                              for c in t.children) or "at this point" in t.sent.text.lower()):
            return "figure of speech"  # "I basically live at the gym at this point lol"
        if t is pred and _figure(t):
            return "figure of speech"
        if t is pred and _no_longer(t):
            return "ended"
        if _negated(t):
            return "negated"
        if t.lemma_ == "use" and any(c.dep_ == "xcomp" for c in t.children) and t.tag_ == "VBD":
            return "ended" if t is not pred and len(chain) == 2 else "past habit"
    for a in _ancestors_clauses(pred):
        if a.pos_ not in ("VERB", "AUX"):
            continue
        if a.lemma_ in lex["speech_verbs"]:
            subj = [c for c in a.children if c.dep_ in ("nsubj", "nsubjpass")]
            mood = a.lemma_ in ("wish", "dream", "imagine", "pretend", "suppose", "doubt", "wonder", "hope")
            if mood or not subj or subj[0].lower_ not in _SELF:
                return "reported or wished"
        if _negated(a) and a.lemma_ in lex["speech_verbs"]:
            return "negated"
        if any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether") for c in a.children):
            return "supposed"
    return None


# ---------------------------------------------------------------- the predicate's words

def _subject(pred):
    t = pred
    for _ in range(4):
        for c in t.children:
            if c.dep_ in ("nsubj", "nsubjpass"):
                return c
        if (t.dep_ in ("conj", "xcomp") or _listed(t)) and t.head.i != t.i:
            t = t.head
        else:
            break
    return None


def _listed(t) -> bool:
    """A finite verb the parse hangs as an unmarked adverbial clause of the one before it, in a list
    of predicates sharing one subject ("I work as a nurse, live in Denver, and have three kids"):
    it shares that subject, and that clause's negation and modality."""
    return t.dep_ == "advcl" and t.tag_ in ("VBP", "VBZ", "VBD") and not _own_subject(t) and \
        not any(c.dep_ in ("mark", "advmod") and c.tag_ in ("IN", "WRB") for c in t.children)


def _phrase_tokens(pred, subj):
    """The predicate's words: its subtree without the subject, clauses of their own, discourse
    words, and edge punctuation."""
    skip = set()
    if subj is not None:
        skip |= {t.i for t in subj.subtree}
    for c in pred.children:
        if c.dep_ in _DROP_DEPS or (c.dep_ == "conj" and c.pos_ in ("VERB", "AUX")) or \
                (c.dep_ in ("advmod", "intj", "npadvmod") and c.lower_ in _DISCOURSE):
            skip |= {t.i for t in c.subtree}
        if c.dep_ == "neg":
            skip.add(c.i)
    toks = [t for t in pred.subtree if t.i not in skip]
    while toks and (toks[-1].is_punct or toks[-1].lower_ in _DISCOURSE):
        toks.pop()
    while toks and (toks[0].is_punct or toks[0].lower_ in _DISCOURSE):
        toks.pop(0)
    return toks


_FIRST = {"my": "their", "our": "their", "me": "them", "us": "them", "myself": "themselves", "mine": "theirs"}


def _words(toks, first_person: bool) -> str:
    out = []
    prev = None
    for t in toks:
        w = t.text
        if first_person and t.lower_ in _FIRST:
            w = _FIRST[t.lower_]
        if prev is not None and (prev.whitespace_ or t.i != prev.i + 1):
            out.append(" ")
        out.append(w)
        prev = t
    return "".join(out).replace(" n't", "n't")


def _verb_third(tok, plural_subject: bool = False) -> str:
    from memory.persona_rules import conjugate

    w = tok.lower_
    if w in ("'m", "am", "are", "'re") or (w == "'s" and tok.lemma_ == "be"):
        return "is"
    if w in ("'ve", "have") or (w == "'s" and tok.lemma_ == "have"):
        return "has"
    if w == "'ll":
        return "will"
    if w == "'d":
        return "would"
    if tok.tag_ == "VBP" or (plural_subject and tok.tag_ == "VB"):
        return conjugate(w)
    return w


def clause_text(pred, subj, who: str | None) -> tuple[str, list]:
    """The clause in the third person: "Plays bass in a terrible pub band", "Sister Lena is
    coming to stay this weekend"; and the tokens it was read from."""
    toks = _phrase_tokens(pred, subj)
    if not toks:
        return "", []
    before = [t for t in toks if t.i < pred.i and t.dep_ not in ("aux", "auxpass", "neg", "prt")
              and t.head.i == pred.i]
    before_ids = {x.i for b in before for x in b.subtree}
    main = [t for t in toks if t.i not in before_ids]
    if pred.dep_ == "xcomp" and pred.head.lemma_ in ("plan", "intend", "go", "gon", "hope", "aim", "decide"):
        main = [t for t in main if not (t.dep_ == "aux" and t.lower_ == "to")]
        head, rest = "plans to", _words(main, True)
        text = f"{head} {rest}"
    else:
        if not main:
            return "", []
        first = main[0]
        head = _verb_third(first) if first.pos_ in ("VERB", "AUX") else first.text
        text = (head + " " + _words(main[1:], True)).strip()
    if before:
        text += " " + _words([t for t in toks if t.i in before_ids], True)
    if who:
        text = f"{who} {text}"
    return text[:1].upper() + text[1:], toks


def _span(doc, idx) -> str:
    lo, hi = min(idx), max(idx)
    return doc[lo: hi + 1].text


# ---------------------------------------------------------------- predicates

def _num(tok) -> str | None:
    if tok.like_num or tok.lower_ in _NUMBER_WORDS:
        t = tok.text
        for c in tok.children:  # "thirty-eight"
            if c.dep_ == "compound" and (c.like_num or c.lower_ in _NUMBER_WORDS):
                t = tok.doc[c.i: tok.i + 1].text
        return t
    return None


def _age(pred):
    if pred.tag_ == "VBD":  # "when I was 10": an age once held, not the current one
        return None
    for c in pred.children:
        if any(x.dep_ == "prep" and x.lower_ == "of" for x in c.children):
            continue  # "is one of my favourites"
        if c.dep_ == "attr" and c.lower_ in _DISCOURSE | {"btw", "lol", "now", "tho", "though"}:
            n = next((x for x in c.children if x.dep_ == "nummod" and _num(x)), None)
            if n is not None:
                return _num(n), n
        if c.dep_ in ("attr", "acomp") and _num(c):
            return _num(c), c
        if c.dep_ == "acomp" and c.lower_ == "old":
            for y in c.children:
                if y.dep_ == "npadvmod":
                    for n in y.children:
                        if _num(n):
                            return _num(n), c
    return None


def _pobj(prep):
    for c in prep.children:
        if c.dep_ == "pobj":
            return c
    return None


def _plan(pred) -> bool:
    """Said as something coming: will/going to, or under way with a time ahead named."""
    auxes = {c.lower_ for c in pred.children if c.dep_ == "aux"}
    if auxes & _FUTURE_AUX:
        return True
    if pred.dep_ == "xcomp" and pred.head.lemma_ in ("plan", "intend", "go", "gon", "hope", "aim", "decide"):
        return True
    span = pred.doc[min(t.i for t in pred.subtree): max(t.i for t in pred.subtree) + 1].text
    if pred.tag_ in ("VBG", "VBP", "VBZ") and _PLAN_TIME.search(span):
        return True
    return any(c.lower_ == "off" and c.dep_ in ("advmod", "prt", "prep", "acomp") for c in pred.children)


@dataclass
class _Who:
    self_: bool
    mention: Mention | None = None


def _resolve(subj, pred, ms: list[Mention], doc) -> _Who | None:
    if subj is None:
        # diary style without a subject ("training for the Berlin marathon"), never an order
        if pred.dep_ == "ROOT" and pred.tag_ in ("VBG", "VBN", "VBD") and pred.i == pred.sent.start + \
                sum(1 for t in pred.sent if t.i < pred.i and (t.is_punct or t.lower_ in _DISCOURSE or t.dep_ in ("advmod", "aux", "intj"))):
            return _Who(True)
        return None
    if subj.lower_ in _SELF:
        return _Who(True)
    for m in ms:
        if subj.i in m.tokens:
            return _Who(False, m)
    if subj.lower_ in _PRONOUN:
        # "He's a plumber, my dad": the appositive names who
        for c in pred.children:
            for a in c.children:
                if a.dep_ == "appos":
                    for m in ms:
                        if a.i in m.tokens:
                            return _Who(False, m)
        before = [m for m in ms if max(m.tokens) < subj.i and m.category != "pets"]
        if before:
            return _Who(False, before[-1])
    return None


def _facts_of(pred, who: _Who, subj, ms, doc) -> list[Fact]:
    lex = lexicon()
    out: list[Fact] = []
    m = who.mention
    sidx = {t.i for t in subj.subtree} if subj is not None else set()
    if m is not None:
        sidx = sidx | set(range(m.span[0], m.span[1] + 1)) if subj is not None and subj.i in m.tokens else sidx
    lemma = pred.lemma_.lower()
    kids = list(pred.children)
    preps = [c for c in kids if c.dep_ == "prep"]
    who_text = None if who.self_ else m.who()
    key = None if who.self_ else m.key()
    cat_of_m = "family" if who.self_ else _CATEGORY[m.category]

    def emit(text, slot, category, used):
        ev = _span(doc, sidx | {t.i for t in used} | {pred.i})
        out.append(Fact(text[:1].upper() + text[1:], slot, category, ev))

    def generic(category, slot=None):
        text, toks = clause_text(pred, subj, who_text)
        if text and len(toks) <= 16 and not _vague_object(toks):
            emit(text, slot, category, toks)

    if lemma == "turn" and pred.tag_ in ("VBD", "VBN", "VBZ", "VBP"):  # "I turned 29 last week"
        n = next((c for c in kids if c.dep_ in ("dobj", "attr", "oprd", "acomp") and _num(c)), None)
        if n is not None:
            emit(f"Is {_num(n)} years old" if who.self_ else f"{who_text} is {_num(n)} years old",
                 "age" if who.self_ else f"{key}:age", "biographical", [n, *n.subtree])
        return out
    if lemma in ("quit", "leave") and pred.tag_ in ("VBD", "VBN") and who.self_:
        # "I quit my job at Philips", "I left Siemens in November": a job that ended
        for o in (c for c in kids if c.dep_ == "dobj"):
            where = o if o.pos_ == "PROPN" and o.ent_type_ in ("ORG", "") else None
            if o.lemma_.lower() == "job":
                p = next((x for x in o.children if x.dep_ == "prep" and x.lower_ in ("at", "with")), None)
                where = _pobj(p) if p is not None else None
            if where is not None and where.pos_ == "PROPN":
                place = _words(list(where.subtree), False)
                out.append(Fact(f"No longer works at {place}", "work", "work",
                                _span(doc, sidx | {pred.i, o.i, *(t.i for t in where.subtree)}),
                                ends=tuple(sorted({t.lower_ for t in where.subtree if t.is_alpha}))))
        return out
    if lemma == "be":
        age = _age(pred)
        attr = next((c for c in kids if c.dep_ == "attr"), None)
        acomp = next((c for c in kids if c.dep_ == "acomp"), None)
        if age:
            n, tok = age
            emit(f"Is {n} years old" if who.self_ else f"{who_text} is {n} years old",
                 "age" if who.self_ else f"{key}:age", "biographical", [tok, *tok.subtree])
            return out
        if attr is not None and attr.lemma_.lower() in lex["occupations"]:
            words = _words([t for t in attr.subtree if not (t.dep_ == "det" and t.head.i == attr.i) and
                            t.dep_ not in ("punct", "appos") and
                            not (t.dep_ in ("amod", "advmod") and t.i < attr.i and t.lower_ in ("just", "only", "basically"))
                            and not any(a.dep_ == "appos" for a in t.ancestors if a.i >= attr.i and a.i != attr.i)], True)
            article = "an" if words[:1].lower() in "aeiou" else "a"
            emit(f"Works as {article} {words}" if who.self_ else f"{who_text} is {article} {words}",
                 "occupation" if who.self_ else f"{key}:occupation", "work", [attr, *attr.subtree])
            return out
        if acomp is not None and acomp.lower_ == "allergic":
            objs = [t for p in acomp.children if p.lower_ == "to" for t in p.subtree if t.i != p.i] or \
                   [t for x in acomp.children if x.dep_ == "xcomp" for t in x.subtree if t.dep_ != "aux"]
            if objs:
                emit(f"Is allergic to {_words(objs, True)}" if who.self_ else f"{who_text} is allergic to {_words(objs, True)}",
                     None, "health", [acomp, *objs])
            return out
        if acomp is not None and acomp.lower_ in lex["diets"]:
            slot = "diet" if acomp.lower_ in ("vegetarian", "vegan", "pescatarian") else None
            emit(f"Is {acomp.lower_}" if who.self_ else f"{who_text} is {acomp.lower_}",
                 (slot if who.self_ else f"{key}:{slot}") if slot else None, "health", [acomp])
            return out
        if attr is not None and attr.lower_ in lex["diets"]:
            emit(f"Is {attr.lower_}" if who.self_ else f"{who_text} is {attr.lower_}", None, "health", [attr])
            return out
        for p in preps:
            o = _pobj(p)
            if o is None:
                continue
            if p.lower_ == "from" and o.pos_ == "PROPN":
                place = _words(list(o.subtree), False)
                emit(f"Is from {place}" if who.self_ else f"{who_text} is from {place}",
                     "origin" if who.self_ else f"{key}:origin", "biographical", [p, *o.subtree])
                return out
            if p.lower_ == "on" and (o.lower_ in lex["medication_nouns"] or
                                     re.search(r"(ine|ol|pam|lin|ide|one|ate|azole|pril|statin|mab)$", o.lower_)):
                generic("health")
                return out
            if p.lower_ == "in" and o.pos_ == "PROPN" and not who.self_:
                emit(f"{who_text} is in {_words(list(o.subtree), False)}", f"{key}:residence", "residence",
                     [p, *o.subtree])
                return out
        if _plan(pred) and who.self_ or any(c.lower_ == "off" for c in kids):
            generic("plans")
        return out

    if lemma in ("live", "reside", "stay") and not _plan(pred):
        for p in preps + [c for c in kids if c.dep_ == "advmod" and c.lower_ in ("outside", "near", "abroad")]:
            o = _pobj(p) if p.dep_ == "prep" else next((x for x in p.children if x.dep_ in ("pobj", "npadvmod")), None)
            if p.dep_ == "prep" and p.lower_ not in lex["residence_preps"]:
                continue
            if o is None and p.lower_ != "abroad":
                continue
            if lemma == "stay" and who.self_:
                break
            if pred.tag_ == "VBD" and who.self_:  # "I lived in Valencia for years": a state that ended
                if p.lower_ == "in" and o is not None and o.pos_ == "PROPN":
                    place = _words([p, *o.subtree], False)
                    out.append(Fact(f"Used to live {place}", "residence", "residence",
                                    _span(doc, sidx | {pred.i, p.i, *(t.i for t in o.subtree)}),
                                    ends=tuple(sorted({t.lower_ for t in o.subtree if t.is_alpha}))))
                return out
            place = _words([p, *(o.subtree if o is not None else [])], False)
            if p.lower_ == "in" and o is not None and o.pos_ == "PROPN" and not any(
                    c.dep_ == "advmod" for c in kids if c.lower_ in ("outside", "near", "just")):
                text = f"Lives {place}" if who.self_ else f"{who_text} {m.verb('lives', 'live')} {place}"
            else:
                text = clause_text(pred, subj, who_text)[0]
            emit(text, "residence" if who.self_ else f"{key}:residence", "residence",
                 [p, *(o.subtree if o is not None else [])])
            return out
    if lemma == "move" and any(p.lower_ == "to" for p in preps):
        if _plan(pred):
            generic("plans")
        else:
            p = next(p for p in preps if p.lower_ == "to")
            o = _pobj(p)
            if o is not None:
                place = _words(list(o.subtree), False)
                emit(f"Lives in {place}" if who.self_ else f"{who_text} {m.verb('lives', 'live')} in {place}",
                     "residence" if who.self_ else f"{key}:residence", "residence", [p, *o.subtree])
        return out
    origin = ("was born", "birthplace") if lemma in ("bear", "born") or pred.lower_ == "born" else \
        ("grew up", "hometown") if lemma == "grow" and any(c.lower_ == "up" for c in kids) else None
    if origin:  # "born in X", "grew up in X": where someone comes from
        said, slot = origin
        for p in preps:
            o = _pobj(p)
            if p.lower_ == "in" and o is not None:
                place = _words(list(o.subtree), False)
                emit(f"{said.capitalize()} in {place}" if who.self_ else f"{who_text} {said} in {place}",
                     slot if who.self_ else f"{key}:{slot}", "biographical", [p, *o.subtree])
        return out
    if lemma in ("have", "get", "adopt", "own") and not _plan(pred):
        for o in (c for c in kids if c.dep_ == "dobj"):
            rel = _rel_at(o)
            if rel is not None and who.self_:
                if any(x.dep_ in ("appos", "acl") for x in o.children) or any(o.i in mm.tokens and mm.names for mm in ms):
                    continue  # named: the mention says it
                num = next((x.text for x in o.children if x.dep_ == "nummod"), None)
                article = num or ("an" if rel[:1] in "aeiou" else "a")
                noun = o.text.lower() if num else rel
                category = _CATEGORY[lexicon()["relations"][rel]]
                emit(f"Has {article} {noun}", f"has:{rel}" if num else None, category, [o, *o.subtree])
            elif o.lemma_.lower() in lex["conditions"] or o.lower_ in lex["conditions"]:
                words = _words([t for t in o.subtree if t.dep_ not in ("det",) and t.lower_ not in ("my", "our")], False)
                emit(f"Has {words}" if who.self_ else f"{who_text} has {words}", None, "health", [o, *o.subtree])
        if who.self_ or not out:
            if not who.self_ and lemma != "have":
                generic(cat_of_m)
            return out
    if lemma in ("suffer", "diagnose") or (lemma in lex["medication_verbs"] and any(
            c.dep_ == "dobj" and c.lemma_.lower() in lex["medication_nouns"] for c in kids)):
        generic("health")
        return out
    if lemma == "speak":
        if any(c.dep_ == "dobj" for c in kids):  # "I speak Portuguese", not "since we last spoke"
            generic("other")
        return out
    if lemma in lex["work_verbs"] and who.self_ and not _plan(pred):
        if lemma == "work" and not any(p.lower_ in ("at", "for", "as", "in") for p in preps) and not any(
                c.dep_ in ("npadvmod", "dobj", "advmod") and c.lower_ in ("nights", "days", "weekends", "shifts", "remotely", "part-time", "full-time") for c in kids):
            return out
        if lemma == "run" and not any(c.dep_ == "dobj" for c in kids):
            pass
        else:
            if lemma == "work" and any(p.lower_ == "for" and _pobj(p) is not None and _pobj(p).lower_ in
                                       ("hours", "ages", "years", "days", "weeks", "months", "a while") for p in preps):
                return out
            slot = "work" if lemma == "work" else None
            generic("work", slot)
            return out
    hobby = (lemma in lex["hobby_verbs"] and (lemma not in ("love", "enjoy", "like") or any(
        c.dep_ == "xcomp" and c.tag_ == "VBG" for c in kids))) or \
        any(c.lower_ in lex["hobby_nouns"] for c in pred.subtree if c.i != pred.i and c.dep_ in ("dobj", "pobj", "xcomp"))
    if lemma == "go" and any(c.dep_ == "xcomp" and c.tag_ == "VBG" for c in kids):
        hobby = True
    if who.self_ and _plan(pred) and lemma not in lex["other_verbs_never"]:
        generic("plans")
        return out
    if who.self_ and hobby and lemma not in ("have", "get"):
        generic("hobbies")
        return out
    if not who.self_ and lemma in lex["work_verbs"] and pred.tag_ == "VBD":
        return out  # "my mum worked as a nurse for years": a past job, not what they do now
    if not who.self_ and lemma not in lex["other_verbs_never"] and pred.pos_ == "VERB":
        slot = f"{key}:work" if lemma == "work" else None
        generic(cat_of_m if not _plan(pred) else "plans", slot)
    return out


def _dates(doc, ms) -> list[Fact]:
    """Birthdays and anniversaries: "my birthday's on the 3rd of march", "it's my son Leo's birthday tomorrow"."""
    out = []
    for tok in doc:
        if tok.lemma_.lower() not in ("birthday", "anniversary"):
            continue
        owner = next((c for c in tok.children if c.dep_ == "poss"), None)
        if owner is None:
            continue
        m = next((m for m in ms if owner.i in m.tokens), None)
        if owner.lower_ not in ("my", "our") and m is None:
            continue
        sent = tok.sent
        pred = tok.head if tok.dep_ in ("nsubj", "attr", "appos") else tok
        while pred.dep_ == "appos" or (pred.pos_ not in ("AUX", "VERB") and pred.head.i != pred.i):
            pred = pred.head
        within = {t.i for t in pred.subtree}
        # a date relative to a day we do not resolve ("tomorrow", "last week") is not stored
        dates = [e for e in doc.ents if e.label_ == "DATE" and e.start >= sent.start and e.end <= sent.end
                 and e.start in within and tok.i not in range(e.start, e.end) and not e.text.isdigit()
                 and not _RELATIVE.search(e.text)]
        if not dates:
            continue
        if not_stated(pred):
            continue
        d = dates[0]
        if m is None:
            text, slot = f"Has their {tok.lower_} on {d.text}", tok.lower_
        else:
            text, slot = f"{m.who()}'s {tok.lower_} is {d.text}", f"{m.key()}:{tok.lower_}"
        idx = {owner.i, tok.i, d.start, d.end - 1}
        if m is not None:
            idx |= set(range(m.span[0], m.span[1] + 1))
        if tok.lower_ == "anniversary":
            slot = None if m else "anniversary"
        out.append(Fact(text, slot, "biographical", _span(doc, idx)))
    return out


def _name(doc) -> list[Fact]:
    """"my name is X" (a be-clause on "name" owned by "my"); "everyone calls me Jules"."""
    out = []
    for tok in doc:
        if tok.lemma_ == "call" and tok.pos_ == "VERB" and any(c.dep_ == "dobj" and c.lower_ == "me" for c in tok.children) \
                and not not_stated(tok) and not tok.sent.text.strip().endswith("?"):
            name = next((c for c in tok.children if c.dep_ in ("oprd", "attr", "xcomp", "npadvmod") and _is_name(c)), None)
            if name is not None:
                subj = _subject(tok)
                lo = subj.i if subj is not None else tok.i
                out.append(Fact(f"Is called {name.text}", None, "biographical", _span(doc, {lo, name.i})))
        if tok.lower_ == "name" and tok.dep_ == "nsubj" and _mine(tok) and not not_stated(tok.head):
            for c in tok.head.children:
                if c.dep_ == "attr" and _is_name(c):
                    out.append(Fact(f"Is called {c.text}", "name", "biographical", _span(doc, {tok.i - 1, c.i})))
    return out


_TOGETHER = {"marry": "married", "engage": "engaged", "wed": "married"}
_APART = {("break", "up"), ("split", "up"), ("divorce", None), ("separate", None)}


_PARTNER_LEMMAS = {*_TOGETHER, *(v for v, _ in _APART), "date", "see"}


def _joint_name(subj):
    """"Lena and I", "me and Kofi", "Kofi and me": the name said together with the speaker."""
    group = [subj, *subj.conjuncts]
    doc = subj.doc
    if subj.lower_ in ("i", "me") and not subj.conjuncts:
        # the parse may split "Amara and I" (the name as a clause of its own): read the words
        if subj.i >= 2 and doc[subj.i - 1].lower_ == "and" and _is_name(doc[subj.i - 2]) and \
                (subj.i == 2 or doc[subj.i - 3].is_punct or doc[subj.i - 3].is_sent_start is None or
                 doc[subj.i - 3].pos_ in ("INTJ", "CCONJ", "ADV", "PUNCT")):
            return doc[subj.i - 2]
        if subj.i + 2 < len(doc) and doc[subj.i + 1].lower_ == "and" and _is_name(doc[subj.i + 2]):
            return doc[subj.i + 2]
    if not any(t.lower_ in ("i", "me") for t in group):
        return None
    names = [t for t in group if _is_name(t) and t.lower_ not in ("i", "me")]
    return names[0] if len(names) == 1 else None


def _partners(doc, questions) -> list[Fact]:
    """Someone of the speaker's named with no relation word: "Lena and I got married in March",
    "Kofi and I have been married for five years" -> "Is married to Lena"; "Yuki and I broke up",
    "me and Kofi split up" -> "Is no longer with Yuki" (ends Yuki); "I've been seeing Jonas since
    June", "Been dating Tomasz for months" -> "Is dating Jonas". Through the same gates as every
    clause (`not_stated`); a question's sentence is skipped."""
    out = []
    for tok in doc:
        if tok.sent.start in questions or tok.pos_ not in ("VERB", "AUX", "ADJ"):
            continue
        if tok.lemma_.lower() not in _PARTNER_LEMMAS and tok.lower_ not in ("married", "engaged"):
            continue  # cheap first: only the verbs this reads
        verb = tok
        while verb.dep_ in ("acomp", "xcomp", "oprd", "auxpass") and verb.head.i != verb.i and verb.pos_ != "AUX":
            verb = verb.head
        why = not_stated(tok) or (not_stated(verb) if verb is not tok else None)
        if why:
            continue
        lemma = tok.lemma_.lower()
        word = tok.lower_
        subj = _subject(verb)
        if subj is None and verb.dep_ == "ROOT" and verb.i == verb.sent.start + (1 if doc[verb.sent.start].lower_ in
                                                                             ("been", "just") else 0):
            subj_self, name = True, None  # "Been dating Tomasz", "Just married Lena"
        else:
            subj_self = subj is not None and subj.lower_ in ("i",) and not subj.conjuncts
            name = _joint_name(subj) if subj is not None else None
        lo = min([tok.i, verb.i] + ([subj.i] if subj is not None else []) + ([name.i] if name is not None else []))
        if any(t.lower_ in ("not", "n't", "never", "no", "nt") for t in doc[lo: tok.i]):
            continue  # a negation the parse hung elsewhere ("Diego and I never got married")
        if name is not None:
            if lemma in _TOGETHER or word in ("married", "engaged"):
                kind = _TOGETHER.get(lemma, word)
                out.append(Fact(f"Is {kind} to {name.text}", None, "family", _span(doc, {name.i, tok.i})))
                continue
            prt = next((c.lower_ for c in tok.children if c.dep_ == "prt"), None)
            if (lemma, prt) in _APART or (lemma, None) in _APART:
                out.append(Fact(f"Is no longer with {name.text}", None, "family", _span(doc, {name.i, tok.i}),
                                ends=(name.lower_,)))
                continue
        if subj_self and lemma in ("date", "see") and tok.tag_ == "VBG" and \
                any(c.dep_ == "aux" and c.lemma_ == "be" for c in tok.children) | (doc[tok.sent.start].lower_ == "been"):
            obj = next((c for c in tok.children if c.dep_ == "dobj" and _is_name(c)), None)
            if obj is not None:
                out.append(Fact(f"Is dating {obj.text}", None, "family", _span(doc, {tok.i, obj.i})))
    return out


_GENERIC_CONDITIONS = {"condition", "disease", "disorder", "injury", "pressure", "syndrome", "cold"}


def _own_conditions(doc, questions) -> list[Fact]:
    """A condition named as the speaker's in passing: "My asthma is acting up again", "Can't sleep,
    my eczema is terrible this week" -> "Has asthma". The noun is in the conditions list, owned by
    "my", the subject of a stated clause (a negated, supposed or asked one says nothing)."""
    lex = lexicon()
    out = []
    for tok in doc:
        if tok.sent.start in questions or tok.dep_ not in ("nsubj", "nsubjpass"):
            continue
        if not (tok.lemma_.lower() in lex["conditions"] or tok.lower_ in lex["conditions"]) or \
                tok.lower_ in _GENERIC_CONDITIONS:
            continue
        if not any(c.dep_ == "poss" and c.lower_ == "my" for c in tok.children):
            continue
        if not_stated(tok.head):
            continue
        out.append(Fact(f"Has {tok.lower_}", None, "health", _span(doc, {tok.i - 1, tok.i})))
    return out


_ENDED_WORDS = {"anymore", "longer", "no", "not", "n't", "never", "any", "more", "either"}


def _ended(pred, who, subj, ms, doc) -> list[Fact]:
    """A state that ended: "I'm not with Dan anymore" -> "Is no longer with Dan" (ends Dan),
    "I don't live in London anymore" -> "No longer lives in London" (slot residence, ends
    London), "I used to live in Madrid" -> "Used to live in Madrid". The slot is the one the
    same clause would fill if stated; merging closes the current claim it ends (memory.consolidate)."""
    stated = _facts_of(pred, who, subj, ms, doc)
    slot = next((f.slot for f in stated if f.slot), None)
    category = stated[0].category if stated else ("family" if who.self_ else _CATEGORY[who.mention.category])
    who_text = None if who.self_ else who.mention.who()
    toks = [t for t in _phrase_tokens(pred, subj) if t.lower_ not in _ENDED_WORDS and t.i != pred.i
            and not (t.dep_ == "aux" and t.lemma_ == "do")]
    toks = [t for t in toks if not (t.dep_ == "aux" and t.i < pred.i)]
    rest = _words(toks, True)
    used = pred.dep_ == "xcomp" and pred.head.lemma_ == "use"
    if used:
        text = f"used to {pred.lower_} {rest}".strip()
    elif pred.lemma_ == "be":
        text = f"{_verb_third(pred) if who.self_ or who.mention.name else 'are'} no longer {rest}".strip()
    else:
        from memory.persona_rules import conjugate

        plural = not who.self_ and who.mention.rel.endswith("s") and not who.mention.name
        verb = pred.lower_ if pred.tag_ in ("VBD", "VBN") or plural else conjugate(pred.lemma_.lower())
        text = f"no longer {verb} {rest}".strip()
    if who_text:
        text = f"{who_text} {text}"
    ends = tuple(sorted({t.lower_ for t in toks if t.pos_ in ("PROPN", "NOUN") and t.is_alpha}))
    if any(t.lower_ in _FIRST or t.lower_ in _SELF for t in toks if t.dep_ in ("conj", "appos", "npadvmod")):
        return []  # "not together any more, me and Jonas": too loose to say what ended
    if not rest or not ends:
        return []
    sidx = {t.i for t in subj.subtree} if subj is not None else set()
    ev = _span(doc, sidx | {t.i for t in toks} | {pred.i} | ({pred.head.i} if used else set()))
    return [Fact(text[:1].upper() + text[1:], slot, category, ev, ends=ends)]


@dataclass(frozen=True)
class Candidate:
    """A stated clause about the participant or someone of theirs that no rule read: what the
    learned road (memory.fact_classifier) decides on. `text` is the clause in the third person."""
    text: str
    evidence: str
    about: str | None  # None: the participant; else the mention's key ("sister:lena")
    category: str  # the mention's category, or "other" for the participant
    sentence: str = ""  # the sentence it sits in
    scope: str = ""  # the clause's own words and what governs it (`clause_scope`): the second gate reads it


def read_doc(doc) -> tuple[list[Fact], list[Candidate]]:
    """The rule road's facts, and the stated clauses no rule read (candidates for the learned road).
    Both come through the same gates: no question, negation, supposition, report or quote."""
    ms = mentions(doc)
    found: list[Fact] = []
    cands: list[Candidate] = []
    questions = {s.start for s in doc.sents if s.text.strip().endswith("?")}
    for m in ms:
        sent = doc[m.span[0]].sent
        if sent.start in questions:
            continue
        if m.names:
            names = " and ".join(n.text for n in m.names)
            if len(m.names) == 1:
                count, noun = ("an" if m.rel[:1] in "aeiou" else "a"), m.rel
            else:
                head = doc[min(m.tokens)]
                count = next((c.text for c in head.children if c.dep_ == "nummod"), str(len(m.names)))
                noun = m.rel if m.rel.endswith("s") else m.rel + "s"
            found.append(Fact(f"Has {count} {noun} called {names}", None,
                              _CATEGORY[m.category], _span(doc, set(range(m.span[0], m.span[1] + 1)))))
        elif m.rel not in _EVERYONE and m.category in ("family", "pets") and _stated_around(doc[min(m.tokens)]):
            # friends, neighbours, colleagues named by the relation alone are everyone's: no claim
            # "my partner thinks I work too much": someone of theirs named by the relation alone
            plural = m.rel.endswith("s") and m.rel[:-1] in lexicon()["relations"]
            noun = m.rel if plural else ("an " if m.rel[:1] in "aeiou" else "a ") + m.rel
            found.append(Fact(f"Has {noun}", None, _CATEGORY[m.category],
                              _span(doc, set(range(m.span[0], m.span[1] + 1)))))
    for tok in doc:
        if tok.sent.start in questions or tok.pos_ not in ("VERB", "AUX"):
            continue
        if tok.dep_ not in ("ROOT", "conj", "ccomp", "advcl", "xcomp", "relcl", "parataxis"):
            continue
        if tok.dep_ == "advcl" and any(c.dep_ == "mark" for c in tok.children):
            if any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether", "when", "before", "until") for c in tok.children):
                continue
        if tok.dep_ == "xcomp" and tok.head.lemma_ not in ("go", "gon", "plan", "intend", "start", "begin",
                                                           "decide", "use", "train", "be"):
            continue
        if tok.pos_ == "AUX" and tok.dep_ not in ("ROOT", "conj", "ccomp", "advcl", "parataxis"):
            continue
        if any(c.dep_ == "xcomp" and c.pos_ == "VERB" and not (c.tag_ == "VBG" and tok.lemma_ == "go")
               for c in tok.children) and tok.lemma_ in ("go", "gon", "plan", "intend", "start", "begin", "decide",
                                                          "use", "train"):
            continue  # the xcomp carries the content ("going to visit", but "go swimming" is go's)
        if tok.dep_ == "xcomp" and tok.tag_ == "VBG" and tok.head.lemma_ == "go":
            continue
        if tok.dep_ == "relcl" or _wh_clause(tok) or _chat_move(tok):
            continue
        subj = _subject(tok)
        who = _resolve(subj, tok, ms, doc)
        if who is None:
            continue
        why = not_stated(tok)
        if why == "ended":
            found += _ended(tok, who, subj, ms, doc)
            continue
        if why:
            continue
        got = _facts_of(tok, who, subj, ms, doc)
        found += got
        if not got:
            c = _candidate(tok, who, subj, doc)
            if c is not None:
                cands.append(c)
    frag, fcands, listed = _fragments(doc, ms, questions)
    found += frag
    cands = [c for c in cands if c.sentence not in listed] + fcands
    found += _dates(doc, ms)
    found += _name(doc)
    found += _partners(doc, questions)
    found += _own_conditions(doc, questions)
    # "Has a brother" says nothing another claim of the message does not ("Brother is an electrician")
    found = [f for f in found if not (f.text.startswith("Has ") and f.slot is None and not f.ends and len(f.text.split()) <= 3
                                      and any(g.text.lower() != f.text.lower() and f.text.split()[-1].lower() in g.text.lower().split()
                                              for g in found))]
    seen, out = set(), []
    for f in found:
        k = f.text.lower()
        if k not in seen:
            seen.add(k)
            out.append(f)
    kept = []
    for c in cands:
        if c.text.lower() not in seen:
            seen.add(c.text.lower())
            kept.append(c)
    return out, kept


# ---------------------------------------------------------------- verb-less fact lists

_FINITE = {"VBZ", "VBP", "VBD", "MD"}
_ITEM_SPLIT = {",", ";", "/", "|", "&", "+", "and", "-", "\u2013", "\u2014", "with"}
_AGE_WORDS = re.compile(r"^(?:age[ds]?\s+)?(\d{1,2})\s*(?:y/?o|yrs?(?: old)?|years? old|years? young)?$|^(\d{1,2})yo$", re.I)
_ITEM_LEAD = {"and", "a", "an", "just", "also", "plus", "oh", "so", "well", "btw", "um", "lol", "haha", "me", "about",
              "im", "i'm"}


def _fragment_items(sent) -> list[list]:
    """The items of a verb-less sentence ("38, nurse, two kids"; "retired teacher from Leeds &
    a grandma"): its tokens cut at commas, semicolons, slashes and "and" (between items)."""
    items, cur = [], []
    for t in sent:
        if t.lower_ in _ITEM_SPLIT or (t.is_punct and t.text not in ("'", "-")):
            if cur:
                items.append(cur)
            cur = []
            continue
        cur.append(t)
    if cur:
        items.append(cur)
    out = []
    for it in items:
        while it and (it[0].lower_ in _ITEM_LEAD or it[0].lower_ in _DISCOURSE or it[0].is_punct):
            it = it[1:]
        while it and (it[-1].lower_ in _DISCOURSE or it[-1].is_punct or it[-1].lower_ in ("lol", "haha", "btw")):
            it = it[:-1]
        if it and not all(t.pos_ in ("INTJ", "PUNCT") or t.lower_ in _DISCOURSE for t in it):
            out.append(it)
    return out


def _item_fact(it, who, doc, alone: bool = False) -> Fact | Candidate | None:
    """One item of a verb-less list said of `who` (None: the participant; else a Mention): an
    age, an occupation, a count of people or animals, a diet or state, where they are from, or
    else a candidate for the learned gate (its words, first person as "their")."""
    lex = lexicon()
    words = " ".join(t.text for t in it)
    ev = doc[it[0].i: it[-1].i + 1].text
    low = [t.lower_ for t in it]
    key = who.key() if who is not None else None
    subj = who.who() + " is" if who is not None else "Is"
    m = _AGE_WORDS.match(words.strip())
    if m:
        n = int(m.group(1) or m.group(2))
        if (5 if who is None else 0) <= n <= 110:
            return Fact(f"{subj} {n} years old", f"{key}:age" if key else "age", "biographical", ev)
        return None
    head = it[-1]
    if len(it) == 1 and head.lower_ in lex["diets"]:
        return Fact(f"{subj} {head.lower_}", (f"{key}:diet" if key else "diet") if head.lower_ in
                    ("vegetarian", "vegan", "pescatarian") else None, "health", ev)
    cut = next((k for k, t in enumerate(it) if t.pos_ == "ADP"), len(it))
    occ = next((k for k in range(cut - 1, -1, -1) if it[k].lemma_.lower() in lex["occupations"] or
                it[k].lower_ in lex["occupations"]), None)
    if occ is not None and all(t.pos_ in ("ADJ", "NOUN", "PROPN", "DET", "NUM") for t in it[:occ]) and \
            (occ == len(it) - 1 or it[occ + 1].pos_ == "ADP"):
        body = _words([t for t in it if t.lower_ not in ("a", "an", "the") or t.i > it[occ].i], True)
        if it[0].pos_ != "PROPN":
            body = body[:1].lower() + body[1:]
        article = "an" if body[:1].lower() in "aeiou" else "a"
        if who is not None:
            return Fact(f"{subj} {article} {body}", f"{key}:occupation", "work", ev)
        if low[0] in ("retired", "former", "ex", "ex-") or it[occ].lemma_.lower() in ("student", "retiree"):
            return Fact(f"Is {article} {body}", "occupation", "work", ev)
        return Fact(f"Works as {article} {body}", "occupation", "work", ev)
    if who is None and len(it) >= 2 and (_num(it[0]) or low[0] in ("a", "an")):
        rel = _rel_at(it[-1])
        if rel is not None:
            noun = _words(it[1:], True).lower()
            slot = f"has:{rel}" if _num(it[0]) else None
            return Fact(f"Has {low[0]} {noun}", slot, _CATEGORY[lex["relations"][rel]], ev)
    at = 2 if low[:2] in (["based", "in"], ["living", "in"], ["located", "in"]) else 1 if low[0] == "in" else 0
    if at and len(it) > at and all(t.pos_ == "PROPN" for t in it[at:] if t.is_alpha):
        place = _words(it[at:], False)
        return Fact(f"{who.who()} {who.verb('lives', 'live')} in {place}" if who is not None else f"Lives in {place}",
                    f"{key}:residence" if key else "residence", "residence", ev)
    if low[0] == "from" and len(it) >= 2 and all(t.text[:1].isupper() for t in it[1:] if t.is_alpha):
        place = _words(it[1:], False)
        return Fact(f"{subj} from {place}", f"{key}:origin" if key else "origin", "biographical", ev)
    content = [t for t in it if t.is_alpha and not t.is_stop and t.lower_ not in _VAGUE and t.pos_ != "INTJ"]
    if len(content) < (2 if alone else 1) or len(it) > 12 or any(t.lower_ in _LISTENER for t in it):
        return None
    text = _words(it, True)
    if who is not None:
        text = f"{who.who()}: {text}"
    return Candidate(text[:1].upper() + text[1:], ev, key, "other" if who is None else _CATEGORY[who.category],
                     it[0].sent.text, ev)


def _fragments(doc, ms, questions) -> tuple[list[Fact], list[Candidate], set]:
    """Facts of verb-less sentences ("38, nurse, two kids."; "Retired teacher from Leeds."):
    each item on its own (`_item_fact`), said of the participant, or of someone of theirs when
    the sentence opens with them ("my sister: 34, nurse in Leeds"). A sentence with a finite
    verb is the clause readers'; a question, a negation or a supposition states nothing here."""
    facts_, cands, listed = [], [], set()
    for sent in doc.sents:
        if sent.start in questions or any(t.tag_ in _FINITE for t in sent):
            continue
        if any(t.dep_ == "neg" or t.lower_ in ("no", "not", "never", "if", "maybe", "ex", "former", "formerly", "used")
               for t in sent) or len(sent) > 30:
            continue
        who = None
        items = _fragment_items(sent)
        if items:
            first = {t.i for t in items[0]}
            m = next((m for m in ms if m.tokens & first and m.mine), None)
            if m is not None:
                who = m
                items = items[1:]
                if not items:
                    continue
        alone = len(items) == 1 and who is None  # a one-item sentence ("Great job!") needs more to be a fact
        got_facts, got_cands = [], []
        for it in items:
            if any(t.i in mm.tokens for mm in ms for t in it):
                continue  # the mention reader says it ("a dog called Rex")
            got = _item_fact(it, who, doc, alone)
            if isinstance(got, Fact):
                got_facts.append(got)
            elif got is not None:
                got_cands.append(got)
        if got_facts:  # a fact list: its other items go to the learned gate, the clause reader's give way
            listed.add(sent.text)
            facts_ += got_facts
            cands += got_cands
        # a verb-less sentence with no item a rule reads ("Wow, great job!") is talk: nothing (LoCoMo
        # test precision fell 0.778 -> 0.673 when every item went to the gate)
    return facts_, cands, listed


_PRONOUN_OBJECT = {"it", "that", "this", "them", "those", "these", "one", "there"}
_LISTENER = {"you", "your", "yours", "yourself", "ya", "u"}
_ANCHOR_ENTS = {"DATE", "TIME", "GPE", "LOC", "FAC", "ORG", "PERSON", "EVENT", "NORP", "PRODUCT", "WORK_OF_ART"}


def _vague_object(toks) -> bool:
    """The clause's object is a pronoun whose referent is elsewhere ("she gave it to me", "my
    parents got me that", "I go there now and then"): what it says cannot be read from it alone."""
    return any(t.lower_ in _PRONOUN_OBJECT and (t.dep_ in ("dobj", "dative", "pobj") or
                                                (t.dep_ == "advmod" and t.lower_ == "there")) for t in toks)


def _wh_clause(tok) -> bool:
    """A clause opened by a wh-word ("this is where I spend my time", "when we hiked", "what I
    received"): a relative or embedded clause whose subject matter is outside it."""
    return any(c.tag_ in ("WRB", "WP", "WDT") and c.i < tok.i for c in tok.children)


def _chat_move(tok) -> bool:
    """A move in the conversation, not a fact: a clause that speaks of the listener ("I'll play it
    with you", "I'll send you the link"), or a will-future with nothing to anchor it: no time and
    no named place, person or thing ("I'll check my schedule", "we'll go there sometime"; but
    "I'll be in Porto next week", "I will start at Ikea" are plans)."""
    sub = list(tok.subtree)
    if any(t.lower_ in _LISTENER for t in sub if t.dep_ not in ("nsubj", "nsubjpass")):
        return True
    auxes = {c.lower_ for c in tok.children if c.dep_ == "aux"}
    if not auxes & {"will", "'ll", "shall", "wo"}:
        return False
    lo, hi = sub[0].i, sub[-1].i
    anchored = any(e.label_ in _ANCHOR_ENTS and e.start >= lo and e.end - 1 <= hi for e in tok.doc.ents)
    return not anchored and not _PLAN_TIME.search(tok.doc[lo: hi + 1].text)


_EVERYONE = {"parent", "parents", "mom", "mum", "mother", "dad", "father", "mothers", "fathers", "moms", "mums", "dads",
             "pet", "pets", "ex"}


def _stated_around(tok) -> bool:
    """The clause a mention sits in is stated (its verb passes `not_stated`)."""
    t = tok
    while t.pos_ not in ("VERB", "AUX") and t.head.i != t.i:
        t = t.head
    return t.pos_ in ("VERB", "AUX") and not_stated(t) is None


_VAGUE = {"it", "that", "this", "so", "too", "them", "those", "these", "one", "things", "stuff", "lot", "sure"}


def _candidate(pred, who, subj, doc) -> Candidate | None:
    """The clause as a claim text, when it carries content words of its own (not "I love that!")."""
    who_text = None if who.self_ else who.mention.who()
    text, toks = clause_text(pred, subj, who_text)
    content = [t for t in toks if t.is_alpha and not t.is_stop and t.lower_ not in _VAGUE and t.i != pred.i]
    if not text or len(toks) > 24 or not content or _vague_object(toks):
        return None
    sidx = {t.i for t in subj.subtree} if subj is not None else set()
    ev = _span(doc, sidx | {t.i for t in toks} | {pred.i})
    m = who.mention
    return Candidate(text[:1].upper() + text[1:], ev, None if who.self_ else m.key(),
                     "other" if who.self_ else _CATEGORY[m.category], pred.sent.text, clause_scope(pred))


_GOVERNING = {"neg", "aux", "auxpass", "mark", "advmod", "npadvmod", "nsubj", "nsubjpass", "prt", "punct", "expl"}
_OWN_CLAUSE = {"conj", "parataxis"}
_ENDED_OR_JOKE = re.compile(r"\b(?:used to|anymore|any more|longer|formerly|ex|jk|kidding|joking)\b", re.I)


def clause_scope(pred) -> str:
    """The words the learned road's second gate (memory.fact_classifier.plain) reads for the
    clause headed by `pred`: its subtree, without a coordinated clause of its own subject ("I work
    at the hospital and I don't like it": the second clause's negation is not the first's) unless
    that one says the state ended or it was a joke ("I live in Porto, or I used to"); and, for
    every clause above it, the head and what governs it: negation, auxiliaries, markers,
    adverbs, subject ("I don't live in Leeds, I live in Porto" keeps the n't; "My friend said I
    live in Porto" keeps said). A sign of any of those in another clause of the sentence does not
    keep this one out (the sentence gate it replaces did)."""
    drop = set()
    for c in pred.children:
        if c.dep_ in _OWN_CLAUSE and c.pos_ in ("VERB", "AUX") and _own_subject(c):
            sub = {t.i for t in c.subtree}
            words = " ".join(pred.doc[i].text for i in sorted(sub))
            if not _ENDED_OR_JOKE.search(words.replace("\u2019", "'")):
                drop |= sub
    idx = {t.i for t in pred.subtree} - drop
    for a in _ancestors_clauses(pred):
        idx.add(a.i)
        for c in a.children:
            if c.dep_ in _GOVERNING or (c.dep_ == "advcl" and any(m.dep_ == "mark" for m in c.children)):
                idx |= {t.i for t in c.subtree}
    doc = pred.doc
    return " ".join(doc[i].text for i in sorted(idx))


def learned_road_on(learned: bool | None = None) -> bool:
    """Whether the learned road reads: `learned` if given, else COMPANION_FACTS_LEARNED (on by
    default; 0 turns it off). On since issue 27: behind the sentence gate (memory.fact_classifier.plain)
    and at the threshold chosen on the dev sources by the whole reader (0.70, facts3: no dev source's
    precision under the rule road's minus 0.02, recall up on each; `python -m eval.factsources
    sweep`); the curve and the choice are in the weights' record and the README."""
    if learned is not None:
        return learned
    return os.environ.get("COMPANION_FACTS_LEARNED", "1").strip().lower() not in ("0", "false", "no", "off")


def _learned(kept: list[Candidate]) -> list[Fact]:
    """The learned road's kept candidates as Facts: the clause itself is the claim (slot None: it
    deduplicates by text; a correction in the panel supersedes it, memory.claims.edit). A clause
    about the participant gets its kind from the kind classifier (memory.fact_classifier.kind_of;
    "other" when unsure); one about someone of theirs keeps that person's category."""
    from memory.fact_classifier import NAME, kind_of

    own = [c for c in kept if c.about is None]
    kinds = dict(zip((id(c) for c in own), kind_of([c.text for c in own]))) if own else {}
    return [Fact(c.text, None, kinds.get(id(c), c.category), c.evidence, origin=NAME) for c in kept]


def from_doc(doc, learned: bool | None = None) -> list[Fact]:
    """Facts of one parsed message: the rule road, then (when the shipped weights are there and
    the learned road is on, see `learned_road_on`) the learned road over the clauses no rule read
    (memory.fact_classifier)."""
    found, cands = read_doc(doc)
    if learned_road_on(learned) and cands:
        from memory import fact_classifier

        found += _learned(fact_classifier.decide(cands))
    return found


def extract(text: str, learned: bool | None = None) -> list[Fact]:
    """Facts stated in one participant message (quotes blanked first)."""
    return from_doc(nlp.parse(prepare(text)), learned)


def extract_many(texts: list[str], learned: bool | None = None) -> list[list[Fact]]:
    docs = nlp.parse_many([prepare(t) for t in texts])
    if not learned_road_on(learned):
        return [from_doc(d, False) for d in docs]
    from memory import fact_classifier

    read = [read_doc(d) for d in docs]
    decided = fact_classifier.decide_many([c for _, c in read])
    return [f + _learned(d) for (f, _), d in zip(read, decided)]
