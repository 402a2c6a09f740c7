"""Grounding an answer about the past in the participant's own words.

A small model given the right note often answers a recall question without naming what the
note says (the embedded 135M model did so in about half of the bench's recall turns). When the
participant asks about their own past, retrieval found their own statement, and the reply names
none of that statement's distinctive words, the reply gets one line quoting it: what the
companion answers from is then on the screen, in the participant's words, instead of being
guessed at. Nothing is invented: the line is the stored message, shortened.

Pure functions over the message, the reply and the applied items; the turn decides when to
call them and traces what they did.
"""

from __future__ import annotations

import re

from memory.features import cue_features
from memory.retrievers import Hit
from memory.tokens import STOPWORDS

VERSION = "grounding-v1"
QUOTE = "You told me: \u201c{text}\u201d"
QUOTE_CHARS = 160
_WORD = re.compile(r"[A-Za-z\u00C0-\u024F][\w'\u00C0-\u024F-]*|\d[\d:.,/]*")


def asks_about_the_past(text: str) -> bool:
    """A back-reference ("remind me", "again", "did I tell you"), a time cue, or a question about
    the participant's own life and people in it (the gate's message-only evidence)."""
    f = cue_features(text)
    return f["backref_cues"] > 0 or f["own_life_question"] > 0 or (f["time_cues"] > 0 and text.rstrip().endswith("?"))


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def key_terms(note: str, question: str) -> set[str]:
    """What naming the note means: its names and numbers (capitalized past the first word, or
    digits) not already in the question; failing those, its content words not in the question."""
    asked = {w.lower() for w in _words(question)}
    words = _words(note)
    names = {w.lower() for i, w in enumerate(words)
             if (w[0].isupper() and i > 0 and w.lower() != "i") or w[0].isdigit()}
    names -= asked | STOPWORDS
    if names:
        return names
    return {w.lower() for w in words if len(w) > 3 and w.lower() not in STOPWORDS} - asked


def best_note(items: list[Hit], question: str) -> Hit | None:
    """The participant's own applied statement that shares most content words with the question;
    None when none shares any (retrieval brought something, but not what this question is about)."""
    asked = {w.lower() for w in _words(question)} - STOPWORDS
    own = [(len(asked & {w.lower() for w in _words(h.text)}), h.score, h) for h in items if h.sender == "user"]
    shared, _, note = max(own, key=lambda x: x[:2], default=(0, 0.0, None))
    return note if shared else None


def quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > QUOTE_CHARS:
        text = text[: QUOTE_CHARS - 1].rsplit(" ", 1)[0] + "\u2026"
    return QUOTE.format(text=text)


def ground(question: str, reply: str, items: list[Hit], recent=()) -> tuple[str | None, dict]:
    """(the line to add, or None; what was checked, for the trace). `items`: what retrieval applied;
    `recent`: the messages of the recent window (a statement there is as much the answer)."""
    own_recent = [Hit(m.ordinal, m.dayid, m.sender, m.text, 0.0) for m in recent if m.sender == "user"]
    if not (items or own_recent) or not asks_about_the_past(question):
        return None, {}
    note = best_note(list(items) + own_recent, question)
    if note is None:
        return None, {"checked": True, "reason": "no statement of the participant's own about this was applied"}
    terms = key_terms(note.text, question)
    said = {w.lower() for w in _words(reply)}
    named = sorted(terms & said)
    info = {"checked": True, "dayid": note.dayid, "terms": sorted(terms), "named": named, "version": VERSION}
    if named or not terms:
        return None, info
    return quote(note.text), {**info, "quoted": True}
