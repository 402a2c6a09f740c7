"""Verification: each proposal is checked against the messages it cites (see memory.extract)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from memory import derived, persona_rules, preferences
from memory.messages import Message, _row as _message_row
from memory.proposal import HYPOTHETICAL, QUOTED, SENTENCE, Proposal
from memory.store import Store


_STOP = set("i me my mine we our you your a an the is am are was were be been to of in on at for and or but so "
            "with as by it its that this has have had do does did not no just".split())
_STATE_VERBS = {"works", "lives", "has", "is", "called", "wants", "prefers", "years", "old", "their"}


def content_words(text: str) -> set[str]:
    return {w for w in derived.norm(text).split() if w not in _STOP and w not in _STATE_VERBS}


def _said(words: set[str], said: set[str]) -> bool:
    """Every claim word is in the message, allowing the third person a claim is written in
    ("Plays bass" from "I play bass", "Studies" from "study", "Goes" from "go")."""
    def base(w):
        return {w, w[:-1], w[:-2], w[:-3] + "y"} if w.endswith("s") else {w}
    return all(base(w) & said for w in words)


def _only_hypothetical(ev: str, found: list[Message]) -> bool:
    """True when every sentence quoting the evidence asks or supposes rather than states."""
    for m in found:
        for sent in SENTENCE.finditer(QUOTED.sub(" ", m.text)):
            ns = derived.norm(sent.group(0))
            i = ns.find(ev)
            if i < 0:
                continue
            if not sent.group(0).strip().endswith("?") and not HYPOTHETICAL.search(ns[:i]):
                return False
    return True


def _only_negated(evidence: str, found: list[Message]) -> bool:
    """True when every sentence quoting the evidence negates it ("I don't think I'm shy").
    Looked for in the sentence as written (commas end a clause), else in its normalized form."""
    straight = lambda t: t.replace("\u2019", "'").replace("\u2018", "'").lower()  # noqa: E731
    raw_ev, ev = straight(evidence.strip()), derived.norm(evidence)
    for m in found:
        for sent in SENTENCE.finditer(QUOTED.sub(" ", m.text)):
            raw = straight(sent.group(0))
            i = raw.find(raw_ev) if raw_ev else -1
            if i >= 0:
                if not persona_rules.negated(raw, i):
                    return False
                continue
            ns = derived.norm(sent.group(0))
            i = ns.find(ev)
            if i >= 0 and not persona_rules.negated(ns, i):
                return False
    return True


# Further checks of preference proposals that the app registers (memory imports no app code):
# `check(proposal, cited messages) -> reason or None`. The app's: what may raise autonomy
# (companion.actions, wrapper.directives.grant).
_CHECKS: list[Callable[[Proposal, list[Message]], str | None]] = []


def check_preferences_with(check: Callable[[Proposal, list[Message]], str | None]) -> None:
    """Register a check every preference proposal must also pass (once per function)."""
    if check not in _CHECKS:
        _CHECKS.append(check)


@dataclass
class Verdict:
    verdict: str  # supported | repairable | unsupported | refused
    reason: str
    sources: list[tuple[str, int]]
    context: str | None


def verify(store: Store, participant: str, p: Proposal) -> Verdict:
    """Check a proposal against the messages it cites."""
    if not p.source_dayids:
        return Verdict("unsupported", "cites no message", [], None)
    marks = ",".join("?" * len(p.source_dayids))
    found = [_message_row(r) for r in store.conn.execute(
        f"SELECT * FROM messages WHERE participant=? AND dayid IN ({marks}) ORDER BY ordinal",
        (participant, *p.source_dayids))]
    if len(found) < len(set(p.source_dayids)):
        missing = sorted(set(p.source_dayids) - {m.dayid for m in found})
        if not found:
            return Verdict("unsupported", f"cited messages do not exist: {missing}", [], None)
    if any(m.sender != "user" for m in found):
        return Verdict("refused", "cites a companion message: memory text is not captured back", [], None)
    sources = [(m.dayid, m.ordinal) for m in found]
    if p.kind == "preference":
        for check in _CHECKS:
            if reason := check(p, found):
                return Verdict("unsupported", reason, sources, found[-1].context)
    ev = derived.norm(p.evidence)
    if ev and any(ev in derived.norm(m.text) for m in found):
        if _only_hypothetical(ev, found) and not (
                p.kind == "preference" and any(preferences.still_stated(p.evidence, m.text) for m in found)):
            return Verdict("unsupported", "the cited words are asked, supposed, quoted from someone else or span sentences", sources,
                           found[-1].context)
        if p.kind == "persona" and _only_negated(p.evidence, found):
            return Verdict("unsupported", "the cited words are negated in the message", sources, found[-1].context)
        if p.kind == "claim" and not _said(content_words(p.text), content_words(" ".join(m.text for m in found))):
            return Verdict("repairable", "evidence quoted, but the claim says more than it", sources, found[-1].context)
        return Verdict("supported", "evidence found in the cited message", sources, found[-1].context)
    words = content_words(p.text if p.kind == "claim" else p.evidence)
    said = content_words(" ".join(m.text for m in found))
    if words and _said(words, said):
        return Verdict("repairable", "evidence not verbatim; every content word is in the cited message",
                       sources, found[-1].context)
    return Verdict("unsupported", "the cited messages do not state it", sources, found[-1].context)
