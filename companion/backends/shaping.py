"""Delivery control for a small model's stream: whole sentences only, and no loops.

Text is held back until a sentence ends, so a reply cut by the token budget loses only its
unfinished tail, never shows half a sentence, and a sentence that repeats an earlier one (in
this reply or in the companion's recent replies) ends generation before it is shown.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from memory.grounding import first_clause_end

# A sentence ends at . ! ? or an ellipsis (closing quotes/brackets may follow) before white
# space, or at a line break (list items, short lines).
_BOUNDARY = re.compile(r"[.!?\u2026][\"')\]\u201d\u2019*]*\s+|\n+")
_WORD = re.compile(r"[a-z0-9']+")

SIMILAR = 0.8  # word-set overlap at which two sentences count as the same sentence
NGRAM, NGRAM_REPEATS = 4, 3  # a 4-word run three times inside one sentence is a loop


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _same(a: list[str], b: list[str]) -> bool:
    if a == b:
        return True
    sa, sb = set(a), set(b)
    if min(len(sa), len(sb)) < 4:
        return False
    return len(sa & sb) / len(sa | sb) >= SIMILAR


def sentences(text: str) -> list[str]:
    out, pos = [], 0
    for m in _BOUNDARY.finditer(text):
        out.append(text[pos:m.end()])
        pos = m.end()
    if text[pos:].strip():
        out.append(text[pos:])
    return out


def _runs_in_circles(text: str) -> bool:
    toks = _words(text)
    seen: dict[tuple, int] = {}
    for i in range(len(toks) - NGRAM + 1):
        g = tuple(toks[i:i + NGRAM])
        seen[g] = seen.get(g, 0) + 1
        if seen[g] >= NGRAM_REPEATS:
            return True
    return False


class SentenceStream:
    """Feed model pieces in; whole, new sentences come out through ``emit``.

    ``feed`` returns True when generation should stop (a loop was found)."""

    def __init__(self, emit: Callable[[str], None] | None = None, said_before: Iterable[str] = (),
                 first_clause: bool = False):
        self._emit = emit
        self.held = ""
        self.out: list[str] = []
        self.looped = False
        # first_clause: the reply's first clause (memory.grounding.first_clause_end) is released on
        # its own, so what is shown first waits for a few words, not a whole long sentence; the rest
        # of that sentence follows when it ends.
        self.first_clause = first_clause
        self._partial: list[str] | None = None  # words of a first clause shown before its sentence ended
        # Sentences of at least 3 words from the companion's recent replies: saying one again
        # is the byte-identical reply the issue saw.
        self._seen = [w for s in said_before for w in [_words(s)] if len(w) >= 3]
        self._mine: list[list[str]] = []

    def _give(self, unit: str) -> None:
        self.out.append(unit)
        if self._emit is not None:
            self._emit(unit)

    def _early(self) -> None:
        """Release the reply's first clause before its sentence ends (not one that starts like a
        sentence said before, nor one running in circles: those wait for the whole sentence)."""
        if not self.first_clause or self.out or self._partial is not None:
            return
        cut = first_clause_end(self.held)
        if cut is None:
            return
        clause = self.held[:cut]
        w = _words(clause)
        if _runs_in_circles(clause) or any(o[:len(w)] == w for o in self._seen + self._mine):
            return
        self.held = self.held[cut:]
        self._partial = w
        self._give(clause)

    def feed(self, piece: str) -> bool:
        if self.looped:
            return True
        self.held += piece
        self._early()
        while True:
            m = _BOUNDARY.search(self.held)
            if m is None:
                break
            unit, self.held = self.held[:m.end()], self.held[m.end():]
            if self._partial is not None:  # the rest of a first clause already shown: its sentence ends here
                whole, self._partial = self._partial + _words(unit), None
                if _runs_in_circles(unit):
                    self.looped = True
                    self.held = ""
                    return True
                self._mine.append(whole)
                self._give(unit)
                continue
            w = _words(unit)
            if len(w) >= 3 and (any(_same(w, o) for o in self._mine) or any(_same(w, o) for o in self._seen)):
                if self.out:  # a repeat after something new was said: the reply is done
                    self.looped = True
                    self.held = ""
                    return True
                continue  # a repeat as the first sentence: skip it, let the model go on
            if _runs_in_circles(unit):
                self.looped = True
                self.held = ""
                return True
            if w:
                self._mine.append(w)
            if unit.strip() or self.out:
                self._give(unit)
        if _runs_in_circles(self.held):  # a loop inside a sentence that never ends
            self.looped = True
            self.held = ""
            return True
        return False

    def finish(self, cut: bool) -> str:
        """End of generation. ``cut``: stopped by the token budget, so the held tail is unfinished."""
        tail, self.held = self.held, ""
        if self._partial is not None:  # a first clause was shown and its sentence never ended
            self._partial = None
            if tail.strip() and not cut and not self.looped:
                self._give(tail)
            else:  # the final text marks it cut short (what was streamed is replaced by it)
                self.out[-1] = self.out[-1].rstrip().rstrip(",;:\u2013\u2014") + "\u2026"
            return self.text
        if cut and _BOUNDARY.search(tail.rstrip() + " ", max(0, len(tail.rstrip()) - 4)):
            cut = False  # the budget ran out just after a full stop: the sentence is whole
        if tail.strip() and not cut and not self.looped:
            self._give(tail)
        elif tail.strip() and not "".join(self.out).strip():
            # Nothing whole was said: show the tail up to its last full word, marked as cut short.
            words = tail.strip().split()
            trimmed = " ".join(words[:-1] if len(words) > 1 else words).rstrip(",;:-")
            if trimmed:
                self._give(trimmed + "\u2026")
        return self.text

    @property
    def text(self) -> str:
        return "".join(self.out).rstrip()


def trim_cut_tail(text: str) -> str:
    """A reply stopped by its token budget: keep the whole sentences, drop the unfinished one.
    With no whole sentence, keep the words up to the last full one, marked as cut short."""
    s = SentenceStream()
    for piece in sentences(text):
        if s.feed(piece):
            break
    return s.finish(cut=True)
