"""What `bench chat` checks in a scripted conversation's replies, by rules written apart from the
generation code they judge (their own sentence split, their own reading of the parse).

Every rule reads only the reply as shown and what the participant wrote up to that turn; the
script says what each recall question must get back (docs: README, "Benchmarks").

**Invented participant facts.** A reply invents when one of its sentences is *about the
participant's world* and *introduces something they never wrote*.
- About their world: the sentence has a second-person word (you, your ...), or a name or a
  relation noun ("sister", "cat") the participant used, or a name or he/she/they as a subject
  (or standing alone: "Biscuku, she's a sweet lady").
- Introduces: (1) a name (a capitalised proper noun, or a person, group, place or organisation
  entity) none of whose words the participant wrote; (2) "your <relation>" for a relation they
  never named ("your husband" when they only mentioned a brother; questions count too: "how is
  your husband?" presumes one); (3) a number in digits, a clock time, a weekday or a month they never wrote.
  (4) a name the participant wrote, said of one of their people or pets they never wrote it with
  in one message ("your brother lives in Lisbon" when Lisbon was only their own trip); (5) a
  relative day they never used ("tomorrow", "last week").
  (6) words put in their mouth: a quoted span of three or more words that is not theirs, after
  "you said", "they asked", "the user replied" ...; (7) an action or possession of one of their
  people or pets (the subject "your <relation>", a name of theirs, or he/she/they after one in the
  same reply) whose verb, or for "has" whose object, the participant never wrote ("Arun runs a
  restaurant", "she has a big belly"; linking and perceiving verbs such as is, sounds, seems do
  not count).
  (1), (3), (4), (5) and (7) do not count in a question, nor in a suggestion (a clause with could, should, might,
  may, can, would, or an imperative): "you could visit the Royal Armouries" states nothing about
  them; nor do (3) and (5) count in the companion saying when it was told ("you told me on Monday").
  The participant's own words quoted back are not read, nor a parenthesis (the companion's own
  bookkeeping: "(Fri 06 Mar, 18:00)").
Not caught: a wrong pronoun ("she" for a male dog) or an invented quality with no name or number
("she has a big belly"); the bench prints every finding so a reader can check the count by hand.

**Recall answered right** (turns with `recall`): one of the expected facts is named in the
reply outside quotation marks, or inside a quoted statement of the participant's only when that
statement is not a question (the quote counts only if it is the answering statement). Phrases
match on whole words, case-insensitively; `"4:30"` matches "4:30pm", `"14th"` "14th of March".

**Questions quoted as facts:** a quoted span (“...” or "...") of at least three words that
repeats the participant's own words and is a question. **Quoted non-answers:** on a recall turn,
a quoted statement that does not hold the expected fact; on an `unknown` turn, any quote.

**Never told** (turns with `unknown`): right when the reply invents nothing (the rules above)
and quotes nothing: the answer is not in memory, so nothing may be presented as it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

_QUOTED = re.compile(r"\u201c([^\u201d]{3,})\u201d|\"([^\"]{3,})\"")
_SENT = re.compile(r"(?<=[.!?\u2026])[\"'\u201d\u2019)]*\s+|\n+")
_TOKEN = re.compile(r"[a-z\u00c0-\u024f]+|\d+")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_SECOND = {"you", "your", "yours", "yourself", "youre", "you're", "you've", "you'll", "you'd", "ya", "u", "ur"}
_MODALS = {"could", "should", "might", "may", "can", "would", "ca", "'d", "must"}
_NAME_ENTS = {"PERSON", "NORP", "GPE", "LOC", "FAC", "ORG"}
_CALENDAR = set("monday tuesday wednesday thursday friday saturday sunday january february march april may june "
                "july august september october november december".split())
_ABBREV = {a[:3]: a for a in _CALENDAR} | {"tues": "tuesday", "thurs": "thursday", "sept": "september"}
_RELATIVE = {"tomorrow", "tonight", "yesterday"}
_RELATIVE_AFTER = {"last", "next"}  # "last week", "next month"
_PERIODS = {"week", "weekend", "month", "year", "night", "time", "summer", "winter", "spring", "autumn"}
_PAREN = re.compile(r"\([^)]*\)")
_ABOUT_DEPS = {"nsubj", "nsubjpass", "npadvmod", "appos", "ROOT"}
_THIRD = {"he", "she", "they"}
_TELL = {"tell", "say", "mention", "write"}
_SPEAKERS = {"you", "they", "user", "participant", "he", "she", "person"}
_SAYING = {"said", "asked", "told", "replied", "added", "wrote", "say", "ask", "tell", "mentioned", "corrected"}
# (7): verbs that link or perceive ("is", "sounds", "seems") say nothing the participant must have said
_LINKING = {"be", "sound", "seem", "look", "feel", "appear", "become", "deserve", "need", "get", "have"}
_ALWAYS_FINE = {"i", "ok", "okay", "hi", "hey", "hello"}


@lru_cache(maxsize=1)
def relation_nouns() -> frozenset[str]:
    """People and animals a participant has (the fact reader's lexicon, read as data)."""
    data = json.loads(resources.files("memory").joinpath("data/facts.json").read_text(encoding="utf-8"))
    return frozenset(w for words in data["relations"].values() for w in words if " " not in w)


def tokens(text: str) -> list[str]:
    """Lowercase word and digit tokens; number words as digits; a possessive 's dropped."""
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"'s\b", "", text)
    out = []
    for t in _TOKEN.findall(text):
        t = _NUMBER_WORDS.get(t, t)
        out.append(t.lstrip("0") or "0" if t.isdigit() else t)
    return out


def _stem(w: str) -> str:
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


@dataclass
class Known:
    """What the participant wrote so far, as words (and their plural-less forms)."""
    words: set = field(default_factory=set)
    texts: list = field(default_factory=list)

    def add(self, text: str) -> None:
        self.texts.append(text)
        for t in tokens(text):
            self.words.add(t)
            self.words.add(_stem(t))

    def has(self, word: str) -> bool:
        ws = tokens(word)
        return bool(ws) and all(w in self.words or _stem(w) in self.words for w in ws)


def contains(text: str, phrase: str) -> bool:
    """`phrase` occurs in `text` on word boundaries (its last word may continue: "4:30" in "4:30pm")."""
    t, p = " ".join(tokens(text)), " ".join(tokens(phrase))
    return bool(p) and re.search(rf"(?:^| ){re.escape(p)}", t) is not None


def quoted_spans(reply: str, known: Known) -> list[str]:
    """Quoted spans of the reply that repeat the participant's own words (3+ words)."""
    said = " ".join(" ".join(tokens(t)) for t in known.texts)
    out = []
    for m in _QUOTED.finditer(reply):
        span = (m.group(1) or m.group(2)).strip()
        toks = tokens(span.rstrip("\u2026"))
        if len(toks) >= 3 and " ".join(toks) in said:
            out.append(span)
    return out


def is_question(text: str) -> bool:
    return text.rstrip().rstrip("\"'\u201d\u2019)").rstrip().endswith("?")


def _unquoted(reply: str, spans: list[str]) -> str:
    for s in spans:
        reply = reply.replace(f"\u201c{s}\u201d", " ").replace(f"\"{s}\"", " ")
    return reply


def _suggestion(tok) -> bool:
    """The token's clause is a suggestion: a modal on its verb (or a verb above it), or an imperative."""
    t = tok
    while True:
        if t.pos_ in ("VERB", "AUX"):
            if any(c.dep_ == "aux" and c.lower_ in _MODALS for c in t.children):
                return True
            if t.dep_ == "ROOT" and t.tag_ == "VB" and not any(c.dep_.startswith("nsubj") for c in t.children):
                return True
        if t.head.i == t.i:
            return False
        t = t.head


def _telling(tok) -> bool:
    """The token belongs to the companion saying when it was told ("you told me on Monday")."""
    t = tok
    while t.head.i != t.i and t.pos_ not in ("VERB", "AUX"):
        t = t.head
    return t.lemma_ in _TELL and any(c.dep_ == "nsubj" and c.lower_ == "you" for c in t.children)


def _calendar(tok) -> str | None:
    """The weekday or month a token names ("Mon" and "Mar" in a date count), else None."""
    if tok.lower_ in _CALENDAR:
        return tok.lower_
    if tok.text[:1].isupper() and tok.lower_.rstrip(".") in _ABBREV:
        return _ABBREV[tok.lower_.rstrip(".")]
    return None


def _is_name(tok) -> bool:
    return tok.is_alpha and tok.text[:1].isupper() and (tok.pos_ == "PROPN" or tok.ent_type_ in _NAME_ENTS) \
        and tok.lower_ not in _ALWAYS_FINE and _calendar(tok) is None


def _relative_time(tok) -> str | None:
    if tok.lower_ in _RELATIVE:
        return tok.lower_
    nxt = tok.doc[tok.i + 1] if tok.i + 1 < len(tok.doc) else None
    if tok.lower_ in _RELATIVE_AFTER and nxt is not None and nxt.lower_ in _PERIODS:
        return f"{tok.lower_} {nxt.lower_}"
    return None


def _together(known: Known, a: str, b: str) -> bool:
    """The participant wrote `a` and `b` in one message."""
    ta, tb = set(tokens(a)), set(tokens(b))
    return any(ta <= set(tokens(t)) and tb <= set(tokens(t)) for t in known.texts)


def _subject_entity(tok, rels) -> str | None:
    """The participant's person or pet a clause is about: its subject is "your <relation>" or a
    name of theirs (the token's own clause, or the nearest verb above it)."""
    t = tok
    while t.pos_ not in ("VERB", "AUX") and t.head.i != t.i:
        t = t.head
    for c in t.children:
        if c.dep_ in ("nsubj", "nsubjpass"):
            if c.lower_ in rels:
                return c.lower_
            if _is_name(c):
                return c.text
    return None


def _fabricated_quotes(reply: str, known: Known) -> list[dict]:
    """(6) words put in the participant's mouth: a quoted span of 3+ words that is not theirs,
    introduced as said by them ("you said", "they asked", "the user replied: ...")."""
    out = []
    said = " ".join(" ".join(tokens(t)) for t in known.texts)
    for m in _QUOTED.finditer(reply):
        span = (m.group(1) or m.group(2)).strip()
        toks = tokens(span.rstrip("\u2026"))
        if len(toks) < 3 or " ".join(toks) in said:
            continue
        before = tokens(reply[max(0, m.start() - 40):m.start()])[-4:]
        if set(before) & _SPEAKERS and set(before) & _SAYING:
            out.append({"rule": "words put in their mouth", "term": span[:60], "sentence": span})
    return out


def _their_subject(t, rels, known: Known, last: list) -> str | None:
    """Who a clause (headed by verb `t`) is about, when it is one of the participant's people or
    pets: "your <relation>", a name of theirs, or he/she/they after one in this reply."""
    for c in t.children:
        if c.dep_ not in ("nsubj", "nsubjpass"):
            continue
        if c.lower_ in rels and (any(p.dep_ == "poss" and p.lower_ == "your" for p in c.children)):
            return c.lower_
        if _is_name(c) and known.has(c.text):
            return c.text
        if c.lower_ in _THIRD and last:
            return last[-1]
    return None


def inventions(reply: str, known: Known) -> list[dict]:
    """Findings of the rules above in one reply: {"rule", "term", "sentence"}."""
    from memory import nlp

    spans = quoted_spans(reply, known)
    found = _fabricated_quotes(reply, known)
    text = _PAREN.sub(" ", _QUOTED.sub(" ", _unquoted(reply, spans)))
    rels = relation_nouns()
    last: list[str] = []  # their people and pets named so far in this reply (for he/she/they)
    for sent in (s.strip() for s in _SENT.split(text)):
        if not sent or not re.search(r"[A-Za-z]", sent):
            continue
        doc = nlp.parse(sent)
        words = set(tokens(sent))
        question = is_question(sent)
        about = bool(words & _SECOND) or any(
            (t.lower_ in rels and known.has(t.lower_)) or (_is_name(t) and known.has(t.text)) for t in doc) or any(
            t.dep_ in _ABOUT_DEPS and (_is_name(t) or t.lower_ in _THIRD) for t in doc)
        if not about:
            continue
        seen = set()

        def add(rule, term):
            if (rule, term.lower()) not in seen:
                seen.add((rule, term.lower()))
                found.append({"rule": rule, "term": term, "sentence": sent})

        for t in doc:
            # (2) your <relation> never named
            if t.lower_ in rels and any(c.dep_ == "poss" and c.lower_ in ("your", "ur") for c in t.children) \
                    and not known.has(t.lower_):
                add("relation", f"your {t.lower_}")
            if question or _suggestion(t) or _telling(t):
                continue
            # (1) a name never written; (4) a name of theirs said of someone they never said it of
            if _is_name(t):
                if not known.has(t.text):
                    add("name", t.text)
                else:
                    who = _subject_entity(t, rels)
                    if who and who.lower() != t.lower_ and known.has(who) and not _together(known, who, t.text):
                        add("misattributed", f"{t.text} (of {who})")
            # (3) a number, time, weekday or month never written; (5) a relative day never said
            cal = _calendar(t)
            if any(ch.isdigit() for ch in t.text) or cal:
                for w in ([cal] if cal else [d for d in tokens(t.text) if d.isdigit()]):
                    if not known.has(w):
                        add("number or date", t.text)
            rel_time = _relative_time(t)
            if rel_time and not known.has(rel_time):
                add("relative time", rel_time)
            # (7) something their person or pet does or has that the participant never wrote
            if t.pos_ == "VERB" and t.lemma_ not in _LINKING and not (t.dep_ == "xcomp" and t.head.lemma_ in _LINKING):
                who = _their_subject(t, rels, known, last)
                if who and not t.dep_ == "aux":
                    claimed = [t] if t.lemma_ != "have" else [o for o in t.children if o.dep_ == "dobj"]
                    for w in claimed:
                        if w.is_alpha and not known.has(w.text) and not known.has(w.lemma_):
                            add("attribute", f"{who}: {w.text}")
        for t in doc:  # remember who this sentence named, for a pronoun in the next one
            if t.dep_ in ("nsubj", "nsubjpass") and ((t.lower_ in rels and any(p.lower_ == "your" for p in t.children))
                                                     or (_is_name(t) and known.has(t.text))):
                last.append(t.text)
    return found


def without_quotes(reply: str, known: Known) -> str:
    """The reply without the participant's own words quoted back."""
    return _unquoted(reply, quoted_spans(reply, known))


def recall_right(reply: str, expected: list[str], known: Known) -> bool:
    spans = quoted_spans(reply, known)
    if any(contains(_unquoted(reply, spans), e) for e in expected):
        return True
    return any(not is_question(s) and any(contains(s, e) for e in expected) for s in spans)


def quotes(reply: str, known: Known, expected: list[str] | None) -> dict:
    """Quoted questions and quoted non-answers (expected None: nothing may be quoted as the answer)."""
    spans = quoted_spans(reply, known)
    questions = [s for s in spans if is_question(s)]
    statements = [s for s in spans if not is_question(s)]
    if expected is None:
        nonanswers = statements
    else:
        nonanswers = [s for s in statements if not any(contains(s, e) for e in expected)]
    return {"quoted": spans, "questions": questions, "nonanswers": nonanswers}
