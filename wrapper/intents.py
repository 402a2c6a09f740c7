"""What a participant's own message asks for: actions, times, approval of a held action.

Rules over explicit wording, so they work with the embedded default model (which cannot call
tools). The same parse decides whether an action a model proposes was *requested* in this
message: an action nobody asked for in this turn (for instance one a retrieved memory told the
model to take) is never run without approval, whatever the autonomy level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

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


def actions_requested(text: str, now: datetime) -> list[Intent]:
    """Actions the participant asks for in so many words (not negated ones). Missing facts stay
    missing (None)."""
    text = text.strip()
    return [i for i in _requested(text, now)
            if not _negated(text, i.args.pop("_at", 0)) and not (i.kind == "schedule_checkin" and _standing(text))]


def _standing(text: str) -> bool:
    """"Feel free to check in on me without being asked" states how to help from now on (a
    Proactive Outreach preference, learned as such), not a check-in to schedule now."""
    from memory.extract import preference_phrases

    _, found = preference_phrases(text, "personal")
    return any(attribute == "proactive_outreach" for attribute, _, _ in found)


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
        out.append(Intent("schedule_checkin", {"when": when_iso, "topic": _clean(topic["t"]) if topic else None,
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


UPCOMING = re.compile(r"\b(tomorrow|tonight|next week|on (?:" + "|".join(WEEKDAYS) + r")|"
                      r"interview|exam|appointment|deadline|presentation|surgery|flight)\b", re.I)


def mentions_upcoming(text: str) -> bool:
    return bool(UPCOMING.search(text))


_YES = re.compile(r"^(yes|yep|yeah|sure|ok|okay|approve[ds]?|go ahead|do it|please do|send it|confirmed?)"
                  r"(?:[ ,.!]+(please|go ahead|do it|thanks|thank you|send it|all|to all|approve))*[ .!]*$")
_NO = re.compile(r"^(no|nope|don't|do not|cancel|reject|stop|no thanks|don't do it|don't send it|never mind)"
                 r"(?:[ ,.!]+(thanks|thank you|cancel it|don't|all|to all|please))*[ .!]*$")


def resolution(text: str) -> str | None:
    """"approve" / "reject" when the whole message answers a pending request, else None.

    Only a short answer counts: "no, I meant the other Ana" is a correction, not a rejection.
    """
    t = re.sub(r"\s+", " ", text.strip().lower())
    if len(t.split()) > 6:
        return None
    if _YES.match(t):
        return "approve"
    if _NO.match(t):
        return "reject"
    return None


def applies_to_all(text: str) -> bool:
    return bool(re.search(r"\ball\b", text.lower()))
