"""What a participant's own message asks for: actions, times, approval of a held action.

Rules over explicit wording, so they work with the embedded default model (which cannot call
tools). The same parse decides whether an action a model proposes was *requested* in this
message: an action nobody asked for in this turn (for instance one a retrieved memory told the
model to take) is never run without approval, whatever the autonomy level.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from importlib import resources
from typing import Callable

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_CLOCK = r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?"


def _at_clock(day: datetime, h: str, m: str | None, ampm: str | None) -> datetime | None:
    hour, minute = int(h), int(m or 0)
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm.startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    return day.replace(hour=hour, minute=minute, second=0, microsecond=0)


def parse_when(text: str, now: datetime) -> datetime | None:
    """A time stated in `text`, relative to `now` (timezone-aware); None when none is stated.

    Understood: "in 20 minutes / 2 hours / 3 days", "tomorrow [at 9am]", "tonight",
    "this evening", "next week", "on friday [at 14:30]", "at 6pm" (today, or tomorrow when past).
    """
    t = text.lower()
    if m := re.search(r"\bin (?P<n>\d+|an?|one|two|three) (?P<u>minute|min|hour|day|week)s?\b", t):
        n = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(m["n"]) or int(m["n"])
        unit = {"minute": "minutes", "min": "minutes", "hour": "hours", "day": "days", "week": "weeks"}[m["u"]]
        return (now + timedelta(**{unit: n})).replace(microsecond=0)
    clock = re.search(r"\bat " + _CLOCK + r"\b", t)
    base = None
    if re.search(r"\btomorrow\b", t):
        base = now + timedelta(days=1)
    elif re.search(r"\b(tonight|this evening)\b", t):
        return now.replace(hour=20, minute=0, second=0, microsecond=0) if now.hour < 20 else now + timedelta(hours=1)
    elif re.search(r"\bnext week\b", t):
        base = now + timedelta(days=7)
    elif m := re.search(r"\bon (" + "|".join(WEEKDAYS) + r")\b", t):
        ahead = (WEEKDAYS.index(m[1]) - now.weekday()) % 7 or 7
        base = now + timedelta(days=ahead)
    if base is not None:
        if clock:
            return _at_clock(base, clock["h"], clock["m"], clock["ampm"])
        return base.replace(hour=9, minute=0, second=0, microsecond=0)
    if clock:
        when = _at_clock(now, clock["h"], clock["m"], clock["ampm"])
        if when is not None and when <= now:
            when += timedelta(days=1)
        return when
    return None


_WHEN_TAIL = r"(?:\s+(?:in \w+ \w+|tomorrow\b.*|tonight\b.*|this evening\b.*|next week\b.*|on (?:" + \
    "|".join(WEEKDAYS) + r")\b.*|at \d.*))?$"


@dataclass
class Intent:
    kind: str  # an action name of the inventory
    args: dict = field(default_factory=dict)


def _clean(s: str | None) -> str:
    return re.sub(r"\s+", " ", (s or "")).strip(" .,:;!")


_NEGATED = re.compile(r"\b(don't|do not|dont|never|no need to|stop|please don't|without)\b[^.!?;:,]*$", re.I)  # within one clause


def _negated(text: str, start: int) -> bool:
    """"Don't check in on me unless I ask" asks for nothing: a negation earlier in the clause."""
    return bool(_NEGATED.search(text[:start]))


@lru_cache(maxsize=1)
def _markers() -> dict[str, re.Pattern]:
    """The phrase bank (wrapper/data/addressed.json): words that make a request something else."""
    data = json.loads((resources.files("wrapper") / "data/addressed.json").read_text())
    return {kind: re.compile(r"\b(?:" + "|".join(data[kind]) + r")\b")
            for kind in ("wish", "hypothetical", "reported", "idiom", "cancel")}


_OPENERS, _CLOSERS = "\"\u201c\u2018'", "\"\u201d\u2019'"


def _quoted(text: str, start: int) -> bool:
    """Inside a quotation at `start`: more opening quote marks before it than closing ones (an
    apostrophe inside a word, as in "I'm", is neither)."""
    opened = closed = 0
    for i, ch in enumerate(text[:start]):
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        if ch in _OPENERS and (before.isspace() or before in "([:") and not after.isspace():
            opened += 1
        elif ch in _CLOSERS and not before.isspace() and (after.isspace() or after in ".,!?;:)"):
            closed += 1
    return opened > closed


def not_addressed(text: str, start: int) -> str | None:
    """Why the words at `start` ask the companion for nothing (quoted, wish, hypothetical,
    reported, idiom), or None when they are a request addressed to it. Only the clause the words
    stand in counts: "after what she said, remind me to ..." is a request."""
    if _quoted(text, start):
        return "quoted"
    clause = re.split(r"[.!?;,]", text[:start].lower())[-1]
    for kind in ("wish", "hypothetical", "reported", "idiom"):
        if _markers()[kind].search(clause):
            return kind
    return None


def own_words(text: str) -> str:
    """The sentences of a message that speak for the participant: those that quote or report
    someone, or recite an idiom, left out (see `reported`)."""
    return " ".join(s for s in re.split(r"(?<=[.!?;])\s+", text) if s.strip() and not reported(s))


def reported(sentence: str) -> bool:
    """A sentence that quotes or reports someone's words, or an idiom ("my motto is just do it"):
    it states no preference of the participant's about how the companion should help."""
    low = sentence.lower()
    return _quoted(sentence, len(sentence)) or bool(re.match(r"\s*[\"\u201c\u2018']", sentence)) or any(
        _markers()[k].search(low) for k in ("reported", "idiom"))


def actions_requested(text: str, now: datetime, standing: Callable[[str], bool] | None = None) -> list[Intent]:
    """Actions the participant asks the companion for in so many words (not negated, wished,
    supposed, reported or quoted ones). Missing facts stay missing (None). `standing` tells a
    standing permission ("feel free to check in on me without being asked": a preference about
    how to help from now on) from a check-in to schedule now; the app passes the preference
    phrases' reading."""
    text = text.strip()
    out = []
    for i in _requested(text, now):
        at = i.args.pop("_at", 0)
        if _negated(text, at) or not_addressed(text, at) or (
                i.kind == "schedule_checkin" and standing is not None and standing(text)):
            continue
        out.append(i)
    return out


def _norm(s: str | None) -> list[str]:
    return re.findall(r"[a-z0-9]+", (s or "").lower().replace("\u2019", "'").replace("'", ""))


def _recipient(s: str | None) -> str:
    words = _norm(s)
    while words and words[0] in ("to", "my"):
        words = words[1:]
    return " ".join(words)


def asks_for(kind: str, args: dict, asked: list[Intent], text: str, external: bool) -> bool:
    """Whether the current message asks for this very action. An internal one: the same kind.
    An external one: the same kind, the same recipient, and its words taken from this message
    (a message remembered from last week, proposed again, is not what was asked for today)."""
    same = [i for i in asked if i.kind == kind]
    if not same or not external:
        return bool(same)
    words, said = _norm(args.get("text")), _norm(text)
    from_message = bool(words) and any(said[k:k + len(words)] == words for k in range(len(said) - len(words) + 1))
    return from_message and any(_recipient(args.get("to")) and _recipient(args.get("to")) == _recipient(i.args.get("to"))
                                for i in same)


def _requested(text: str, now: datetime) -> list[Intent]:
    out: list[Intent] = []
    t = text.strip()
    low = t.lower()
    when = parse_when(t, now)
    when_iso = when.isoformat() if when else None
    if m := re.search(r"\bremind me (?:to |about |that |of )?(?P<what>.+?)" + _WHEN_TAIL, t, re.I | re.S):
        out.append(Intent("set_reminder", {"text": _clean(m["what"]) or None, "when": when_iso, "_at": m.start()}))
    if c := re.search(r"\bcheck (?:in|back) (?:with|on) me\b|\bcheck in (?:tomorrow|later|next week|on )", low):
        topic = re.search(r"\b(?:about|on how) (?P<t>.+?)" + _WHEN_TAIL, t, re.I)
        out.append(Intent("schedule_checkin", {"when": when_iso, "topic": _yours(_clean(topic["t"])) if topic else None,
                                               "_at": c.start()}))
    if m := re.search(r"\b(?:add|make|take|save|write down) (?:a |this as a )?note\b(?: that| saying| to say|:)?\s*(?P<text>.*)",
                      t, re.I | re.S) or re.match(r"\s*note(?: that|:)\s+(?P<text>.+)", t, re.I | re.S):
        out.append(Intent("add_note", {"text": _clean(m["text"]) or None, "_at": m.start()}))
    if m := re.search(r"\b(?:put|add) (?P<title>.+?) (?:in|on|to|into) my calendar\b", t, re.I):
        out.append(Intent("add_calendar_entry", {"title": _clean(m["title"]) or None, "when": when_iso,
                                                 "_at": m.start()}))
    if m := re.search(r"\bdraft (?:a |an )?(?:message|email|e-mail|note|text|reply|letter)"
                      r"(?: to (?P<to>(?:my )?\w+))?(?:,| saying| that| about| to say|:)?\s*(?P<text>.*)", t, re.I | re.S):
        out.append(Intent("draft_message", {"to": _clean(m["to"]) or None, "text": _clean(m["text"]) or None,
                                            "_at": m.start()}))
    elif m := re.search(r"\b(?:send|email|e-mail|text|message) (?P<to>my \w+|(?!a\b|an\b|the\b)\w+)"
                        r"(?: (?:a|an) (?:message|email|e-mail|text))?(?: saying| that| to say|:)\s*(?P<text>.+)",
                        t, re.I | re.S) or re.search(r"\b[Tt]ell (?P<to>my \w+|[A-Z]\w+) that (?P<text>.+)", t, re.S):
        out.append(Intent("send_message", {"to": _clean(m["to"]) or None, "text": _clean(m["text"]) or None,
                                           "_at": m.start()}))
    return out


_EVENTS = r"interview|exam|appointment|deadline|presentation|surgery|flight"
UPCOMING = re.compile(r"\b(tomorrow|tonight|next week|on (?:" + "|".join(WEEKDAYS) + r")|" + _EVENTS + r")\b", re.I)


def _yours(phrase: str) -> str:
    """The participant's words as the companion says them back: "my exam" -> "your exam"."""
    swap = {"my": "your", "me": "you", "i": "you", "i'm": "you're", "mine": "yours"}
    return " ".join(swap.get(w.lower(), w) for w in phrase.split())


def topic_of(text: str) -> str | None:
    """What a check-in offered after this message is about: the event it names ("your exam",
    "the interview"), or None (then the offer names only its time). Never the whole message."""
    m = re.search(r"\b(?:(?P<det>my|our|the|this|that|an?|your)\s+)?(?P<what>(?:[a-z]+ )?(?:" + _EVENTS + r"))\b",
                  text, re.I)
    if not m:
        return None
    det = (m["det"] or "the").lower()
    det = {"my": "your", "your": "my", "a": "the", "an": "the", "this": "the", "that": "the"}.get(det, det)
    what = m["what"]
    if what.split()[0].lower() in ("about", "for", "to", "of", "at", "after", "before", "is", "was", "s") \
            or what.split()[0].lower() in ("my", "the", "a", "an", "our", "your"):
        what = what.split(None, 1)[1] if " " in what else what
    return f"{det} {what}"


def mentions_upcoming(text: str) -> bool:
    return bool(UPCOMING.search(text))


_YES = re.compile(r"^(yes|yep|yeah|sure|ok|okay|approve[ds]?|go ahead|do it|please do|send it|confirmed?)"
                  r"(?:[ ,.!]+(please|go ahead|do it|thanks|thank you|send it|all|to all|approve))*[ .!]*$")
_NO = re.compile(r"^(no|nope|don't|do not|cancel|reject|stop|no thanks|don't do it|don't send it)"
                 r"(?:[ ,.!]+(thanks|thank you|cancel it|don't|all|to all|please))*[ .!]*$")


_FILLER = re.compile(r"^(actually|oh|ok|okay|wait|hmm|um|please|thanks|thank you|sorry|no)$")


def resolution(text: str) -> str | None:
    """"approve" / "reject" when the whole message answers the companion's question about a held
    action; "cancel" when it takes back the newest held action ("never mind, forget about it");
    else None.

    Only a short answer counts: "no, I meant the other Ana" is a correction, not a rejection.
    """
    t = re.sub(r"\s+", " ", text.strip().lower().replace("\u2019", "'"))
    if len(t.split()) > 8:
        return None
    chunks = [re.sub(r"^(?:actually|oh|ok|okay|wait|hmm|um) ", "", c.strip()) for c in re.split(r"[,.!;]+", t)]
    chunks = [c for c in chunks if c]
    cancel = _markers()["cancel"]
    if any(cancel.fullmatch(c) for c in chunks) and all(cancel.fullmatch(c) or _FILLER.match(c) for c in chunks):
        return "cancel"
    if len(t.split()) > 6:
        return None
    if _YES.match(t):
        return "approve"
    if _NO.match(t):
        return "reject"
    return None


def applies_to_all(text: str) -> bool:
    return bool(re.search(r"\ball\b", text.lower()))
