"""Grounding what the companion says in the participant's own words.

Two checks a turn may run on a reply (the turn decides when, and traces what they did):

- `ground`: when the participant asks about their own past and the model's answer does not name
  what they said, one line quotes the statement that answers the question (`You told me: "..."`),
  so the answer is on the screen instead of guessed at. Only a statement that answers it is ever
  quoted: memory.answers reads the slot asked for and who it is about, and finds the sentence of
  theirs that asserts it; a question is never an answer, and a statement about someone else is
  not one ("did I tell you where Marisol lives?" never gets "my brother Tomas lives in Lyon").
- `NameCheck`: a sentence naming a person, pet or place the participant never mentioned is
  dropped before it is shown (a small model invents "your friend Sarah").

Nothing is invented by either: a quote is the stored message, shortened to its answering clause.
"""

from __future__ import annotations

import re

from memory import answers
from memory.features import cue_features
from memory.retrievers import Hit

VERSION = "grounding-v2"
QUOTE = "You told me: \u201c{text}\u201d"
QUOTE_CHARS = 160


def asks_about_the_past(text: str) -> bool:
    """A back-reference ("remind me", "again", "did I tell you"), a time cue, or a question about
    the participant's own life and people in it (the gate's message-only evidence); never a request
    that the companion do something ("can you remind me to ...")."""
    f = cue_features(text)
    return not f["action_request"] and (f["backref_cues"] > 0 or f["own_life_question"] > 0
                                       or (f["time_cues"] > 0 and text.rstrip().endswith("?")))


def quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > QUOTE_CHARS:
        text = text[: QUOTE_CHARS - 1].rsplit(" ", 1)[0] + "\u2026"
    return QUOTE.format(text=text)


def ground(question: str, reply: str, items: list[Hit], recent=()) -> tuple[str | None, dict]:
    """(the line to add, or None; what was checked, for the trace). `items`: what retrieval applied;
    `recent`: the messages of the recent window (a statement there is as much the answer)."""
    own = [answers.Candidate(h.text, h.dayid, h.ordinal, None, "message") for h in items if h.sender == "user"]
    own += [answers.Candidate(m.text, m.dayid, m.ordinal, m.ts, "message") for m in recent if m.sender == "user"]
    if not own or not asks_about_the_past(question):
        return None, {}
    known = answers.known_names([c.text for c in own] + [question])
    q = answers.read_question(question, known)
    if q is None:
        return None, {"checked": True, "version": VERSION,
                      "reason": "no slot read from the question: no statement can be checked to answer it"}
    f = answers.find(q, own, known)
    if f is None:
        return None, {"checked": True, "version": VERSION, "question": q.public(),
                      "reason": "no applied statement of theirs answers it"}
    terms = {w.lower() for w in re.findall(r"\w+", f.value)} - {"a", "an", "the", "your", "at", "on", "in"}
    said = {w.lower() for w in re.findall(r"\w+", reply)}
    named = sorted(terms & said)
    info = {"checked": True, "version": VERSION, "question": q.public(), "dayid": f.candidate.dayid,
            "value": f.value, "named": named}
    if named:
        return None, info
    return quote(f.sentence), {**info, "quoted": True}


# ---------------------------------------------------------------- names the participant never used

POSTCHECK_VERSION = "postcheck-v1"
_UNIT = re.compile(r"[.!?\u2026][\"')\]\u201d\u2019*]*\s+|\n+")
_NAME_ENTS = {"PERSON", "NORP", "GPE", "LOC", "FAC", "ORG"}


_CLAUSE = re.compile(r"[,;:\u2013\u2014]\s+")
CLAUSE_WORDS = 4  # a reply's first clause is shown on its own once it has this many words


def first_clause_end(text: str) -> int | None:
    """Where a reply's first unit may end early: after its first clause (a comma, semicolon, colon
    or dash, then a space) once that clause has CLAUSE_WORDS words, if that comes before the first
    sentence end. What is shown first then waits for a few words, not a whole long sentence; the
    backend's stream (companion.backends.shaping) and the name check cut it at the same place."""
    end = _UNIT.search(text)
    for m in _CLAUSE.finditer(text):
        if end is not None and m.start() >= end.start():
            return None
        if len(re.findall(r"[\w'-]+", text[:m.start()])) >= CLAUSE_WORDS:
            return m.end()
    return None


def units(text: str) -> list[str]:
    """The text cut after each sentence end or line break (and after the first clause, see
    first_clause_end), white space kept: joined back, the same text."""
    out, pos = [], 0
    cut = first_clause_end(text)
    if cut is not None:
        out.append(text[:cut])
        pos = cut
    for m in _UNIT.finditer(text, pos):
        out.append(text[pos:m.end()])
        pos = m.end()
    if text[pos:]:
        out.append(text[pos:])
    return out


def unheard(sentence: str, heard) -> list[str]:
    """What a sentence names that the participant never wrote: a person, pet, place or
    organisation (a capitalised proper noun, or a named entity), or "your <thing>" ("your
    husband", "your hospital" when they never mentioned one). `heard(word)` says whether they
    wrote the word."""
    from memory import nlp

    if not (re.search(r"[A-Z]", sentence) or re.search(r"\byour\b", sentence, re.I)):
        return []
    out = []
    for t in nlp.parse(sentence):
        if not t.is_alpha:
            continue
        # a sentence's first word is capitalised anyway: a bare proper-noun tag there ("Bye now.")
        # counts only as a subject or an address ("Biscuku, she's ..."), an entity always
        first = t.i == t.sent.start
        named = t.text[:1].isupper() and t.lower_ != "i" and t.ent_type_ not in ("DATE", "TIME") and (
            t.ent_type_ in _NAME_ENTS or (t.pos_ == "PROPN" and (not first or t.dep_ in ("nsubj", "npadvmod", "appos"))))
        # "your husband", "your hospital", "your visit": something of theirs they never spoke of
        theirs = t.pos_ in ("NOUN", "PROPN") and any(c.dep_ == "poss" and c.lower_ == "your" for c in t.children)
        if (named or theirs) and not heard(t.lower_) and not (theirs and heard(t.lemma_.lower())):
            out.append(t.text if named else f"your {t.lower_}")
    return out


def words_heard(store, participant: str, as_of: int, text: str):
    """`heard(word)`: the participant wrote `word` (as a whole word) in this message or any before it."""
    cache: dict[str, bool] = {}
    now = set(re.findall(r"\w+", text.lower()))

    def heard(word: str) -> bool:
        w = word.lower()
        if w not in cache:
            if w in now:
                cache[w] = True
            else:
                rows = store.conn.execute(
                    "SELECT text FROM messages WHERE participant=? AND sender='user' AND ordinal<? "
                    "AND lower(text) LIKE ? LIMIT 50", (participant, as_of, f"%{w}%")).fetchall()
                cache[w] = any(re.search(rf"(?<![\w]){re.escape(w)}(?![\w])", r["text"].lower()) for r in rows)
        return cache[w]

    return heard


class NameCheck:
    """Units (sentences; a reply's first clause on its own) are let through only when they name
    nothing the participant never mentioned; what is dropped is kept for the trace. Feed a stream
    to `feed` (checked units go on to `emit`) or a whole text to `text`: both cut the same units."""

    def __init__(self, heard, emit=None):
        self.heard, self.emit = heard, emit
        self.held = ""
        self.seen = ""  # everything fed so far: units are cut on the whole reply, as `text` cuts them
        self.done = 0  # characters of `seen` already decided
        self.dropped: list[dict] = []
        self.kept: list[str] = []
        self._dropping = False  # the first clause was dropped: so is the rest of its sentence
        self._clause_cut = False  # the first clause was kept, the rest of its sentence dropped

    def _unit(self, unit: str, ends_sentence: bool) -> None:
        names = [] if self._dropping else unheard(unit, self.heard)
        if names or self._dropping:
            if names:
                self.dropped.append({"sentence": unit.strip(), "names": names})
            self._dropping = not ends_sentence
            return
        self.kept.append(unit)
        if self.emit is not None and unit:
            self.emit(unit)

    def _decide(self, final: bool) -> None:
        parts = units(self.seen)
        pos = 0
        for i, u in enumerate(parts):
            end = pos + len(u)
            if end > self.done:
                last = list(_UNIT.finditer(u))
                whole = bool(last) and last[-1].end() == len(u)
                clause = i == 0 and first_clause_end(self.seen) == end
                if not (whole or clause or final):
                    break  # an unfinished sentence waits for its end
                before = len(self.kept)
                self._unit(u, ends_sentence=whole or (final and not clause))
                if i == 1 and len(self.kept) == before and first_clause_end(self.seen) == pos and self.kept:
                    self._clause_cut = True
                self.done = end
            pos = end

    def feed(self, piece: str) -> None:
        self.seen += piece
        self._decide(final=False)

    def finish(self) -> str:
        self._decide(final=True)
        return self._joined()

    def text(self, text: str) -> str:
        self.seen += text
        self._decide(final=True)
        return self._joined()

    def _joined(self) -> str:
        kept = list(self.kept)
        if self._clause_cut:  # the first clause shown, the rest of its sentence dropped: marked as cut
            kept[0] = kept[0].rstrip().rstrip(",;:\u2013\u2014 ") + "\u2026" + (" " if len(kept) > 1 else "")
        return "".join(kept).strip()
