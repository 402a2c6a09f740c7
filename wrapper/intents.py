"""What a participant's own message asks for: actions, times, approval of a held action.

Two steps, so they work with the embedded default model (which cannot call tools):
1. `candidates`: every place the message names an action of the inventory (the everyday forms
   of "text my sister saying ...", "send a message to Lena saying ...", "tell Jonas that ...",
   "could you let my boss know ...", "remind me to ...", "make a note that ...", "put X in my
   calendar", "check in with me ..."), with its slots; the dictated words exactly as written.
2. `read`: each one read from the dependency parse (wrapper.directives) as a *request* to the
   companion to do it now, or as something else (a question, a negation, a quote, a story ...),
   with the reason. Only requests are acted on; a model's proposal counts as requested only when
   it is the very action a request asked for (`asks_for`: same kind, recipient, time and every
   dictated word), so an action nobody asked for in this message (one a retrieved memory told the
   model to take, or a cut of what was dictated) is never run without approval.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from importlib import resources
from typing import Callable

from wrapper import directives, inventory

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ten": 10, "fifteen": 15,
        "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45, "half an": 0.5, "a couple of": 2, "a couple": 2}
_UNITS = {"minute": "minutes", "min": "minutes", "mins": "minutes", "m": "minutes", "hour": "hours", "hr": "hours",
          "hrs": "hours", "h": "hours", "day": "days", "week": "weeks"}
# Parts of the day: (the hour a reminder is set for, the earliest hour an unmarked clock there is
# read in: "thursday evening at like 7" is 19:00).
PARTS = {"morning": (9, 5), "afternoon": (15, 12), "evening": (19, 16), "night": (21, 18), "tonight": (20, 16),
         "lunch": (12, 11), "noon": (12, 11), "midday": (12, 11)}
_DAYWORD = r"tues?|thu(?:rs?)?|fri|" + "|".join(WEEKDAYS)  # no "sat", "sun", "wed", "mon": words of their own
_IN = (r"in (?P<n>\d+|an?|one|two|three|four|five|ten|fifteen|twenty|thirty|forty(?:-five)?|half an|a couple(?: of)?)"
       r"\s*(?P<u>minutes?|mins?|m|hours?|hrs?|h|days?|weeks?)\b")
_CLOCK_LOOSE = (r"(?:(?:at|by|for|around|about|abt|@)\s+)?(?:like\s+|about\s+|around\s+|approx\.?\s+|~\s*)?"
                r"(?P<h>\d{1,2})(?:[:.](?P<m>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?(?:\s*-?\s*ish)?")
# Every phrase that states a time, for taking it out of the words to be reminded of.
TIME_PHRASE = re.compile(
    r"\b(?:" + _IN.replace("?P<n>", "?:").replace("?P<u>", "?:") +
    r"|in a (?:bit|while|sec|minute)|(?:first thing|early|late|later)\s+(?:tomorrow|tmrw|tmr)"
    r"(?:\s+(?:morning|evening|afternoon|night))?|first thing(?: in the morning)?|"
    r"(?:this|tomorrow|tmrw|tmr|in the|at)\s+(?:morning|afternoon|evening|night)\b|tomorrow|tmrw|tmr|tonight|tonite|"
    r"later (?:today|on|tonight)|next week|(?:after|before) (?:lunch|work|dinner|school|breakfast)|"
    r"at (?:noon|midday|lunch(?:time)?)|"
    r"(?:(?:on|this|next|by|for)\s+)?(?:" + _DAYWORD + r")(?:\s+(?:morning|afternoon|evening|night))?|"
    r"(?:(?:at|by|for|around|about|@)\s+)(?:like\s+|about\s+|around\s+|~\s*)?\d{1,2}(?:[:.]\d{2})?\s*"
    r"(?:am|pm|a\.m\.|p\.m\.)?(?:\s*-?\s*ish)?|(?:like\s+|around\s+)?\d{1,2}(?:[:.]\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)"
    r"(?:\s*-?\s*ish)?|\d{1,2}\s*-?\s*ish)(?=\W|$)", re.I)


def _at_clock(day: datetime, h: str, m: str | None, ampm: str | None, part: str | None = None) -> datetime | None:
    hour, minute = int(h), int(m or 0)
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm.startswith("p") else 0)
    elif hour <= 12:
        # no am/pm: the part of the day said decides ("evening ... like 7"), else people mean
        # 1-7 as the afternoon or evening and 8-12 as the morning
        floor = PARTS[part][1] if part else None
        if floor is not None and hour < floor and hour + 12 < 24:
            hour += 12
        elif floor is None and 1 <= hour <= 7:
            hour += 12
    if hour > 23 or minute > 59:
        return None
    return day.replace(hour=hour, minute=minute, second=0, microsecond=0)


def _weekday(word: str) -> int | None:
    w = word.lower()
    for i, d in enumerate(WEEKDAYS):
        if w == d or (len(w) >= 3 and d.startswith(w)):
            return i
    return None


_AFTER = {"after": {"lunch": 13, "work": 18, "dinner": 20, "school": 15, "breakfast": 9},
          "before": {"lunch": 11, "work": 8, "dinner": 17, "school": 7, "breakfast": 7}}


def parse_when(text: str, now: datetime) -> datetime | None:
    """A time stated in `text`, relative to `now` (timezone-aware); None when none is stated or
    only a vague one ("later", "in a bit", "sometime"): then the action waits for a time and the
    companion asks for it.

    Understood: "in 20 min / an hour / half an hour / 3 days", "tomorrow [morning]", "tonight",
    "this evening", "first thing tomorrow", "after lunch / work", "next week", "[on] friday
    [evening / night] [at 14:30]", "at 6pm", "7pm-ish", "at like 7" (an hour without am/pm read
    by the part of the day said, else 1-7 as pm), today or tomorrow when past.
    """
    t = text.lower().replace("\u2019", "'")
    if m := re.search(r"\b" + _IN, t):
        n = _NUM.get(m["n"]) or float(m["n"])
        u = m["u"] if m["u"] in _UNITS else m["u"].rstrip("s")
        return (now + timedelta(**{_UNITS[u]: n})).replace(microsecond=0)
    part = None
    # the part of the day: one said with a day first ("thursday evening"), else the first one;
    # lunch and noon only as a time ("at lunch"), not as a thing ("lunch with Mei")
    parts = r"(morning|afternoon|evening|night|tonight|tonite|(?<=at )lunch(?:time)?|(?<=at )noon|midday|lunchtime)"
    pm = re.search(r"\b(?:" + _DAYWORD + r"|tomorrow|tmrw|tmr|this)\s+" + parts + r"\b", t) or re.search(
        r"\b" + parts + r"\b", t)
    if pm:
        part = {"tonite": "tonight", "lunchtime": "lunch"}.get(pm[1], pm[1])
    clock = None
    for cm in re.finditer(r"(?<![\d:.])" + _CLOCK_LOOSE + r"(?![\d:])", t):
        marked = cm["ampm"] or re.match(r"(?:at|by|for|around|about|abt|@|like)\b|~", cm.group(0).strip()) or \
            re.search(r"ish$", cm.group(0))
        if marked and not re.match(r"\s*(?:minutes?|mins?|hours?|hrs?|days?|weeks?|%|th|st|nd|rd)\b", t[cm.end():]):
            clock = cm
            break
    after = re.search(r"\b(after|before) (lunch|work|dinner|school|breakfast)\b", t)
    base = None
    if re.search(r"\b(tomorrow|tmrw|tmr)\b", t):
        base = now + timedelta(days=1)
    elif re.search(r"\bnext week\b", t):
        base = now + timedelta(days=7)
    elif m := re.search(r"\b(" + _DAYWORD + r")\b", t):
        wd = _weekday(m[1])
        if wd is not None and not re.search(r"\b(?:last|every|each)\s+" + re.escape(m[1]), t):
            base = now + timedelta(days=(wd - now.weekday()) % 7 or 7)
    if base is None and re.search(r"\bfirst thing\b", t):
        base = now + timedelta(days=1) if now.hour >= 8 else now
    if base is not None:
        if clock:
            return _at_clock(base, clock["h"], clock["m"], clock["ampm"], part)
        hour = _AFTER[after[1]][after[2]] if after else 8 if re.search(r"\bfirst thing\b", t) else \
            PARTS[part][0] if part else 9
        return base.replace(hour=hour, minute=0, second=0, microsecond=0)
    if clock:
        when = _at_clock(now, clock["h"], clock["m"], clock["ampm"], part)
        if when is not None and when <= now:
            when += timedelta(days=1)
        return when
    if after:
        hour = _AFTER[after[1]][after[2]]
    elif part in ("tonight", "lunch", "noon", "midday") or (part and re.search(
            r"\b(?:this|today)\s+(?:morning|afternoon|evening)\b|\b(?:at|around)\s+(?:night|noon|midday)\b|"
            r"\b(?:in|this)\s+the\s+(?:morning|afternoon|evening)\b|\btonight\b", t)):
        hour = PARTS[part][0]
    else:
        return None
    when = now.replace(hour=hour, minute=0, second=0, microsecond=0)
    if when <= now:
        if part in ("tonight", "evening", "night"):
            return (now + timedelta(hours=1)).replace(microsecond=0)
        when += timedelta(days=1)
    return when


def _times_near(text: str, start: int, end: int) -> str:
    """The words that can state the action's time: its sentence, and a short sentence after it
    that only adds one ("... to call the landlord? like 7pm-ish")."""
    out = text[start:end + 1]
    nxt = re.match(r"\s*([^.!?\n]{1,60})", text[end + 1:])
    if nxt and TIME_PHRASE.search(nxt[1]):
        # what the sentence says besides its time: a few words of comment to the companion
        # ("would be good", "works best for me", "if you can"), no one else as its subject
        rest = TIME_PHRASE.sub(" ", nxt[1]).split()
        if len(rest) <= 5 and not re.search(r"\b(?:i|he|she|they|we|it|i'm|i'll|she's|he's|they're)\b", nxt[1], re.I):
            out += " " + nxt[1]
    return out



@dataclass
class Intent:
    kind: str  # an action name of the inventory
    args: dict = field(default_factory=dict)
    requested: bool = True  # an instruction to the companion, now (wrapper.directives); else only mentioned
    reason: str = ""  # the reading's reason, traced
    at: int = 0  # where the action's words start in the message

    def public(self) -> dict:
        return {"kind": self.kind, "requested": self.requested, "reason": self.reason,
                "args": {k: v for k, v in self.args.items() if v}}


def _clean(s: str | None) -> str:
    return re.sub(r"\s+", " ", (s or "")).strip(" .,:;!")


def own_words(text: str) -> str:
    """The sentences of a message that speak for the participant: those that quote or report
    someone, or recite an idiom, left out (see `reported`)."""
    return " ".join(s for s in re.split(r"(?<=[.!?;])\s+", text) if s.strip() and not reported(s))


@lru_cache(maxsize=1)
def _markers() -> dict[str, re.Pattern]:
    """The phrase bank (wrapper/data/addressed.json): words that mark a sentence as reported or
    recited (for what preferences are read from) and words that take back a held action."""
    data = json.loads((resources.files("wrapper") / "data/addressed.json").read_text())
    return {kind: re.compile(r"\b(?:" + "|".join(data[kind]) + r")\b") for kind in ("reported", "idiom", "cancel")}


def reported(sentence: str) -> bool:
    """A sentence that quotes or reports someone's words, or an idiom ("my motto is just do it"):
    it states no preference of the participant's about how the companion should help."""
    low = sentence.lower()
    return directives.quoted(sentence, len(sentence)) or bool(re.match(r"\s*[\"\u201c\u2018']", sentence)) or any(
        _markers()[k].search(low) for k in ("reported", "idiom"))


# ------------------------------------------------------------------ what the message names


_ABBREV = r"(?<!\bdr)(?<!\bmr)(?<!\bmrs)(?<!\bms)(?<!\bst)(?<!\bprof)(?<!\ba\.m)(?<!\bp\.m)"
_SENT_END = re.compile(_ABBREV + r"[.!?]+(?=\s|$)|;|\n", re.I)
_NOT_WHO = (r"(?:a|an|the|me|myself|you|u|it|this|that|some|someone|anyone|everyone|back|up|out|now|again|please|pls|"
            r"just|also|saying|that|to|know|something|anything|about|in|on|with|for|message|messages|email|text|down|off|a|"
            r"if|whether|what|when|where|why|how|who|which|this|these|those|here|there|i)")
_TITLE = r"(?:(?:dr|mr|mrs|ms|prof)\.?|aunt|uncle|auntie|grandma|grandpa|nana|cousin)"  # only an abbreviation takes a period
WHO = (r"(?:(?:my|our|the)\s+(?:[\w'\u2019-]+\s+){0,2}?[\w'\u2019-]+|" + _TITLE + r"\s+[\w'\u2019-]+|(?!" + _NOT_WHO +
       r"\b)[\w'\u2019-]+(?:\s+(?!" + _NOT_WHO + r"\b)(?-i:[A-Z])[\w'\u2019-]+)?)")
# A recipient when nothing but a comma, a dash or a quote sets the words off: a name (capitalized),
# a title, a possessive or determiner phrase, a pronoun or a word of kinship.
_RECIPIENT = re.compile(r"(?:my|our|the)\s|" + _TITLE + r"\s|(?-i:[A-Z])|(?:him|her|them|mum|mom|mommy|mummy|dad|daddy|"
                        r"grandma|grandpa|granny|nana|gran|papa|mama|auntie|aunty)\b", re.I)
# What to pass on as a question: "message X asking if ...", "email X to ask when ...", "text X and
# ask whether ...": the dictated words start at the question word.
_ASKING = r"\s+(?:asking|to\s+ask|and\s+ask|to\s+(?:see|check|find\s+out))(?:\s+(?:him|her|them))?(?=\s+(?:if|whether|when|what|where|why|how|who|which)\b)"
# Dictated words announced by an object ("send X this: ...", "message X the following: ...",
# "text X the words '...'") or by "quote": set off by a colon, a dash, a quote mark or "quote".
_DICT_OBJ = r"\s+(?:this|with|the\s+following|these\s+words|the\s+words|this\s+(?:message|text|note|email|msg))"
_DICT_DELIM = r"(?:\s*:|\s+[-\u2013\u2014]+(?=\s)|(?=\s+[\"\u201c\u2018']\w)|\s*,?(?=\s+quote\b))"
_SAYING = r"(?:" + _ASKING + r"|" + _DICT_OBJ + _DICT_DELIM + r"|\s*,?(?=\s+quote\b)|\s+saying|\s+(?:that|which)\s+(?:says|reads)|\s+that|\s+to\s+say|\s+and\s+say|" \
          r"\s+and\s+tell\s+(?:him|her|them)(?:\s+that)?|\s+and\s+let\s+(?:him|her|them)\s+know(?:\s+that)?|" \
          r"\s+telling\s+(?:him|her|them)(?:\s+that)?|\s*:|\s*,\s*saying|\s+[-\u2013\u2014]+(?=\s)|" \
          r"(?=\s+[\"\u201c\u2018']\w))"
_NOTE_DELIM = r"(?:\s*:|\s+[-\u2013\u2014]+(?=\s)|\s*,)"  # a note's or an entry's words set off after a header
_CHANNEL = (r"(?:\s+(?:on|by|via|over|through)\s+(?:whatsapp|text|email|e-mail|signal|telegram|sms|slack|messenger|imessage|"
            r"dm|message))")
# The end of the sentence naming the recipient, and the start of the next one that dictates
# the words: "... . say ...", "...? just tell her ...", "... . the message is: ...", "... . ask him if ..."
_NEXT_SAY = (r"(?:\s+please)?\s*[.!?]+\s+(?:(?:just|and|please|pls|then|maybe|simply)\s+)*(?:say|write|put|"
             r"tell\s+(?:him|her|them)|let\s+(?:him|her|them)\s+know|ask\s+(?:him|her|them)(?=\s+(?:if|whether|when|what|"
             r"where|why|how|who|which)\b)|the\s+(?:message|text|msg)(?:\s+(?:is|should\s+(?:be|say|read)|says|reads))?|"
             r"it\s+should\s+(?:say|read)|something\s+like)(?:\s+that)?(?:\s*:)?\s+")
_FOR_ME = r"(?:\s+(?:for\s+me|real\s+quick|quick(?:ly)?|now|for\s+me\s+(?:real\s+)?quick(?:ly)?)|" + _CHANNEL + r")?"
_NOTE_WORD = (r"(?:(?:whatsapp|sms|signal|slack|telegram|email|text|voice|facebook|insta(?:gram)?)\s+)?"  # "a whatsapp message"
              r"(?:message|text|email|e-mail|note|line|msg|dm|reply|letter|response|whatsapp|sms)")
# (kind, pattern). Named groups: trig (the action's verb), to, body (the dictated words), what.
def _v(*stems: str) -> str:
    """A verb in its base form or its -ing form ("would you mind putting ..."): "put" -> put(?:ting)?"""
    out = []
    for st in stems:
        if st.endswith("e") and not st.endswith("ee"):
            out.append(st[:-1] + "(?:e|ing)")
        elif re.search(r"[^aeiou][aeiou][bdgmnpt]$", st) and st not in ("text", "email", "message"):
            out.append(st + "(?:" + st[-1] + "ing)?")
        else:
            out.append(st + "(?:ing)?")
    return "(?:" + "|".join(out) + ")"


# (kind, pattern). Named groups: trig (the action's verb), to, body (the dictated words), what.
_FORMS: list[tuple[str, re.Pattern]] = [(k, re.compile(p, re.I)) for k, p in [
    ("draft_message", r"\b(?P<trig>" + _v("draft", "write") + r")(?:\s+(?:up|me|out))?\s+(?:a|an)\s+(?:quick\s+|short\s+)?"
                      r"(?:draft\s+)?" + _NOTE_WORD + r"(?:\s+(?:to|for)\s+(?P<to>" + WHO + r"))?(?:" + _SAYING +
                      r"|\s*,|\s+about)\s+(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>" + _v("send", "shoot", "drop", "write", "fire", "get", "ping", "flick", "zap") +
                     r")(?:\s+(?:off|over|out))?\s+(?:(?P<to>" + WHO + r")\s+)?(?:a|an)\s+"
                     r"(?:quick\s+|short\s+)?" + _NOTE_WORD + r"(?:(?:\s+(?:over|across|off))?\s+to\s+(?P<to2>" + WHO + r"))?" + _FOR_ME + _SAYING +
                     r"\s+(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>" + _v("text", "txt", "email", "e-mail", "message", "msg", "dm", "ping", "whatsapp", "sms") +
                     r"|writ(?:e|ing)\s+to|reply(?:ing)?\s+to)\s+(?P<to>" + WHO + r")" + _FOR_ME + r"(?:" + _SAYING +
                     r"|\s*,(?!\s*(?:(?:and|then|or|but|so|because|cause|cos|since|if|when|she|he|they)\b|(?-i:[A-Z])[\w'-]+\s*"
                     r"(?:,|and\b))))\s+(?P<body>\S.*)"),
    # reaching someone, then what to say: "reach out to X and let her know ...", "hit X up and say ..."
    ("send_message", r"\b(?P<trig>reach(?:ing)?\s+out\s+to|get(?:ting)?\s+in\s+touch\s+with|" + _v("contact") +
                     r"|hit(?:ting)?\s+up)\s+(?P<to>" + WHO + r")" + _FOR_ME + _SAYING + r"\s+(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>hit(?:ting)?)\s+(?P<to>" + WHO + r")\s+up" + _FOR_ME + _SAYING + r"\s+(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>" + _v("give") + r")\s+(?P<to>" + WHO + r")\s+an?\s+(?:quick\s+)?(?:shout|buzz|holler|bell)"
                     + _FOR_ME + _SAYING + r"\s+(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>" + _v("send", "forward") + r")\s+(?P<to>" + WHO + r")" + _DICT_OBJ + _FOR_ME + _DICT_DELIM +
                     r"\s+(?P<body>\S.*)"),
    # the recipient in one sentence, the words in the next: "send a message to X. say ...", "can you
    # text X? just tell her ...", "message X for me. the message is: ..."
    ("send_message", r"\b(?P<trig>" + _v("send", "shoot", "drop", "write", "fire", "get") + r")(?:\s+(?:off|over|out))?\s+"
                     r"(?:(?P<to>" + WHO + r")\s+)?(?:a|an)\s+(?:quick\s+|short\s+)?" + _NOTE_WORD + r"(?:(?:\s+(?:over|across|"
                     r"off))?\s+to\s+(?P<to2>" + WHO + r"))?" + _FOR_ME + _NEXT_SAY + r"(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>" + _v("text", "txt", "email", "e-mail", "message", "msg", "dm", "ping", "whatsapp") +
                     r"|writ(?:e|ing)\s+to)\s+(?P<to>" + WHO + r")" + _FOR_ME + _NEXT_SAY + r"(?P<body>\S.*)"),
    # the words first, the recipient after: "send this (message) to X: ...", "here's a message for X: ..."
    ("send_message", r"\b(?P<trig>" + _v("send", "forward", "pass") + r")\s+(?:this|the\s+following)(?:\s+(?:message|text|"
                     r"msg|note|email|on))?\s+to\s+(?P<to>" + WHO + r")" + _FOR_ME + _DICT_DELIM + r"\s+(?P<body>\S.*)"),
    ("send_message", r"(?:^|(?<=[.!?:]\s)|(?<=[.!?:]\s\s))(?P<trig>(?:here'?s\s+|(?:please\s+)?send\s+)?(?:an?\s+)?(?:quick\s+)?"
                     r"(?:message|text|msg)\s+(?:for|to)\s+)(?P<to>(?!self\b|myself\b|me\b|you\b)" + WHO + r")\s*:\s+(?P<body>\S.*)"),
    # asking someone something: "ask Lena if she's free on Sunday" (not "ask me ...": a check-in)
    ("send_message", r"\b(?P<trig>" + _v("ask") + r")\s+(?P<to>(?!me\b|myself\b|you\b|u\b|for\b|around\b|about\b|"
                     r"if\b|whether\b)" + WHO + r")" + _FOR_ME + r"(?=\s+(?:if|whether|when|what|where|why|how|who|which)\b)"
                     r"\s+(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>" + _v("give") + r")\s+(?P<to>" + WHO + r")\s+(?:a\s+)?(?:quick\s+)?heads?[-\s]?up"
                     r"(?:\s+that|\s*:|\s*,|\s+[-\u2013\u2014]+(?=\s))\s+(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>" + _v("tell", "inform") + r")\s+(?P<to>" + WHO + r")(?:\s*:|\s+that)?\s+(?P<body>\S.*)"),
    ("send_message", r"\b(?P<trig>" + _v("let") + r")\s+(?P<to>" + WHO + r")\s+know" + _CHANNEL + r"?\s+(?:that\s+)?(?P<body>\S.*)"),
    ("set_reminder", r"\b(?P<trig>" + _v("remind", "nudge", "ping", "buzz") + r")\s+me,?\s+(?P<pre>(?:[\w:.'~-]+,?\s+)"
                     r"{0,7}?)(?:(?:to|about|that|of)\s+|(?P<pre2>[\w.'~-]+)\s*:\s+)(?P<what>\S.*)"),
    ("set_reminder", r"\b(?P<trig>" + _v("set", "add", "make", "create", "schedule") + r")\s+(?:me\s+)?(?:a|an)\s+"
                     r"reminder\s+(?:for|at)\s+(?P<pre>[^.!?]*?)\s+(?:to|about)\s+(?P<what>\S.*)"),
    ("set_reminder", r"\b(?P<trig>" + _v("set", "add", "make", "create", "schedule") + r"|put(?:ting)?\s+in)\s+"
                     r"(?:me\s+)?(?:a|an|another)\s+reminder\s+(?:to|for|about|that)\s+(?P<what>\S.*)"),
    ("set_reminder", r"\b(?P<trig>don'?t|do\s+not)\s+let\s+me\s+forget\s+(?:to|about)\s+(?P<what>\S.*)"),
    ("set_reminder", r"(?:^|[.!?]\s+)(?P<trig>reminder)\s*:\s*(?P<what>\S.*)"),
    ("schedule_checkin", r"\b(?P<trig>" + _v("check") + r")\s+(?:in|back)(?:\s+(?:with|on)\s+me\b|(?=\s+(?:tomorrow|"
                         r"tonight|later|next week|on \w+day|in \d+|at \d)))(?P<what>.*)"),
    ("schedule_checkin", r"\b(?P<trig>" + _v("follow") + r")\s+up\s+with\s+me\b(?P<what>.*)"),
    ("schedule_checkin", r"\b(?P<trig>(?:" + _v("come") + r"\s+(?:and\s+)?)?" + _v("check") + r")\s+(?:in\s+)?on\s+me\b"
                         r"(?P<what>.*)"),
    ("schedule_checkin", r"\b(?P<trig>" + _v("touch") + r")\s+base\s+with\s+me\b(?P<what>.*)"),
    # asking the participant later how something went: a check-in when a time is said (`_candidate`)
    ("schedule_checkin", r"\b(?P<trig>" + _v("ask") + r")\s+me\s+(?P<pre>(?:[\w:.'~-]+,?\s+){0,6}?)(?P<q>how|whether|if|"
                         r"about)\s+(?P<what>[^.!?\n]+)"),
    ("schedule_checkin", r"\b(?P<trig>" + _v("see") + r")\s+how\s+(?:I'?m|I\s+am)\s+(?:doing|getting\s+on|holding\s+up|"
                         r"feeling)\b(?P<what>.*)"),
    ("schedule_checkin", r"\b(?P<trig>" + _v("schedule", "book") + r"|set(?:ting)?\s+up)\s+(?:a|an)\s+check-?\s?in\b"
                         r"(?P<what>.*)"),
    ("add_note", r"\b(?P<trig>" + _v("make", "take", "add", "save", "write", "jot", "leave", "keep") + r")\s+(?:down\s+)?"
                 r"(?:a|an|this\s+as\s+a)?\s*(?:quick\s+)?note\b(?:\s+of\s+this)?(?:\s+that|\s+saying|\s+to\s+say|\s*:|"
                 r"\s+of|\s+about|\s*,)?\s*(?P<body>\S.*)"),
    ("add_note", r"\b(?P<trig>not(?:e|ing))(?:\s+(?:this|it))?(?:\s+down)?(?:\s+that|" + _NOTE_DELIM + r")\s+"
                 r"(?P<body>\S.*)"),
    ("add_note", r"\b(?P<trig>" + _v("jot", "write") + r")\s+down\s+(?:that\s+)?(?P<body>(?!a\s+note)\S.*)"),
    ("add_note", r"\b(?P<trig>" + _v("jot", "write", "note", "get", "put", "take") + r")\s+(?:this|that|it|these)\s+down"
                 r"(?:\s+for\s+me)?" + _NOTE_DELIM + r"\s*(?P<body>\S.*)"),
    ("add_note", r"\b(?P<trig>" + _v("add", "put", "save", "stick", "pop", "write", "keep", "store", "file", "log", "jot") +
                 r")\s+(?:(?:this|that|it|these|the\s+following)\s+)?(?:in|to|into|on|onto)\s+(?:my|the)\s+notes?"
                 r"(?:\s+app)?(?:\s+for\s+me)?(?:" + _NOTE_DELIM + r"|\s+that)\s*(?P<body>\S.*)"),
    ("add_note", r"\b(?P<trig>new\s+note|for\s+(?:my|the)\s+notes|(?:add\s+)?to\s+(?:my|the)\s+notes)"
                 r"(?:\s*:|\s+[-\u2013\u2014]+(?=\s))\s*(?P<body>\S.*)"),
    ("add_calendar_entry", r"\b(?P<trig>" + _v("put", "add", "pop", "stick", "pencil", "book", "schedule", "enter", "mark",
                                                "save", "write", "jot", "slot") + r"|block(?:ing)?"
                           r"(?:\s+(?:off|out))?)\s+(?P<what>(?:(?!:\s).)+?)\s+(?:in|on|to|into)\s+(?:my|the)\s+(?:calendar|schedule|diary|"
                           r"agenda)\b(?:\s+for\s+(?P<what2>[^.!?\n]+))?"),
    ("add_calendar_entry", r"\b(?P<trig>(?:(?:" + _v("add", "put", "pop", "stick", "pencil", "enter", "save") + r")(?:\s+(?:this|it))?"
                           r"\s+(?:in|to|into|on)\s+(?:my\s+|the\s+)?|for\s+(?:my|the)\s+|new\s+|" + _v("add", "put", "create") +
                           r"\s+(?:an?\s+)?(?:event|entry|appointment)\s+(?:to|in|into|on)\s+(?:my\s+|the\s+)?)?(?:calendar|diary|"
                           r"agenda)(?:\s+(?:entry|event|item))?)" + _NOTE_DELIM + r"\s*(?P<what>[^.!?\n]+)"),
    ("add_calendar_entry", r"\b(?P<trig>" + _v("add", "create", "make") + r"|put(?:ting)?\s+in)\s+(?:a|an)\s+(?:calendar\s+)?"
                           r"(?:entry|event|appointment)\s+(?:for|called|titled|about|:)\s*(?P<what>[^.!?]+)"),
]]
_WH_START = re.compile(r"^(?:what|which|who|whom|whose|when|where|why|how|whether|if|anything|everything|something)\b",
                       re.I)
_TRAILING_POLITE = re.compile(r"(?:\s*,?\s*(?:please|pls|plz|thanks|thank you|thx|ty|asap|ok\??|okay\??))+"
                              r"\s*[.!?]*$", re.I)


def _sentence_end(text: str, start: int) -> int:
    m = _SENT_END.search(text, start)
    return m.start() if m else len(text)


_QUOTE_SPAN = re.compile(r"(?i)\s*(?:,\s*)?quote\s*[,:]?\s+(?P<w>[^\n]{1,300}?)[\s,]*\b(?:(?:end|close)\s+quote|unquote)\b")
_QUOTE_WORDS = re.compile(r"(?i)\s*(?:,\s*)?quote\s*[,:]?\s+(?P<w>.+?)[\s,]*(?:\b(?:end|close)\s+quote|\bunquote)\b\W*$")


def _body(text: str, start: int, question_form: bool) -> tuple[str, int, int]:
    """The dictated words from `start` to the end of their sentence, without the quotation marks
    around them or a "please" / "thanks" said to the companion after them; words spoken between
    "quote" and "unquote" / "end quote" are taken whole, across sentence ends."""
    if q := _QUOTE_SPAN.match(text, start):
        return q["w"].strip(" ,"), q.start("w"), q.end()
    end = _sentence_end(text, start)
    body = text[start:end]
    if end < len(text) and text[end] == "?" and not _WH_START.match(body) and not re.match(
            r"(?i)\s*(?:can|could|would|will|do|does|did|is|are|was|were|should|have|has)\s+(?:you|u|i|we|he|she|they|"
            r"it|there|(?-i:[A-Z]\w+))\b", body):
        # the question mark belongs to the request form ("can you text her saying hi?"), unless the
        # words are a question of their own ("... saying are you coming?"); "do not worry" is not
        pass
    elif end < len(text) and text[end] in "!?":
        body += text[end]
    if end < len(text) and text[end] == "?":
        body = re.sub(r"(?i)\s+for me\s*$", "", body)  # "would you text her saying ... for me?": said to the companion
    body = _TRAILING_POLITE.sub("", body).rstrip(" ,;:")
    if q := _QUOTE_WORDS.match(body):  # "quote, I'll be late, end quote": the words between
        return q["w"].strip(" ,"), start + q.start("w"), end
    stripped = body.strip()
    lead = len(body) - len(body.lstrip())
    if len(stripped) > 1 and stripped[0] in "\"\u201c\u2018'" and stripped[-1] in "\"\u201d\u2019'":
        return stripped[1:-1].strip(), start + lead + 1, end
    return stripped.strip(" .,;:"), start + lead, end


def _strip_when(s: str) -> str:
    """The words without the phrases that state a time ("call the landlord thursday evening")."""
    out = TIME_PHRASE.sub("", s)
    return _clean(re.sub(r"\s*[,?]?\s*(?:\b(?:like|around|ish|at|on|for))?\s*$", "", out))


@dataclass
class Candidate:
    kind: str
    start: int  # the trigger word
    end: int  # end of the words that belong to the action
    content_start: int | None
    args: dict
    hint: str = ""
    ing: bool = False  # the verb in its -ing form ("would you mind putting ...")


def candidates(text: str, now: datetime, doc=None) -> list[Candidate]:
    """Every place the message names an action, with its slots, whoever is meant to do it. The
    words of one action are never read as another action ("text her saying remind me ...")."""
    found: list[Candidate] = []
    for kind, pattern in _FORMS:
        for m in pattern.finditer(text):
            c = _candidate(kind, m, text, now, doc)
            if c is not None:
                verb = m["trig"].lower().split()[0]
                c.ing = verb.endswith("ing") and verb not in ("ping", "ring", "bring", "sing")
                found.append(c)
    found.sort(key=lambda c: (c.start, -(c.end - c.start)))
    out: list[Candidate] = []
    for c in found:
        if any(o.start <= c.start < o.end for o in out):
            continue  # inside another action's words (its dictated content, or the same words again)
        out.append(c)
    return out


def _candidate(kind: str, m: re.Match, text: str, now: datetime, doc) -> Candidate | None:
    start = m.start("trig")
    sentence_end = _sentence_end(text, start)
    when = parse_when(_times_near(text, start, sentence_end), now)
    when_iso = when.isoformat() if when else None
    if kind in ("send_message", "draft_message"):
        to = m.groupdict().get("to") or m.groupdict().get("to2")
        body_start = m.start("body")
        if kind == "send_message" and m["trig"].lower() in ("tell", "inform", "let") and doc is not None and to:
            to, body_start = _chunk(doc, text, m.start("to"), m.end("to"), body_start, m["trig"].lower())
        if to and to.strip().lower() in ("me", "myself", "you", "u"):
            return None
        # (not where "a message / a text" names it already, nor for "tell X ...", "let X know ...")
        bare = kind == "send_message" and "to2" not in m.groupdict() and not m["trig"].lower().startswith(
            ("tell", "inform", "let"))
        if to and bare and not _RECIPIENT.match(to) and not re.search(
                r"(?i)\b(?:saying|says|reads|say|tell|telling|know|that)\b|:", text[m.end("to"):body_start]):
            return None  # set off by a comma, a dash or a quote only: "message board - spam" names no one
        body, cstart, end = _body(text, body_start, True)
        if body and _asked_of_you(text, start):
            body = re.sub(r"(?i)\s+for me\s*$", "", body)  # "would you text Ana that I'm late for me": said to the companion
        if body and re.search(r"(?i)\bif\s+(?:you|u)\s+(?:could|can|would)\s*$", text[max(0, start - 40):start]):
            # "if you could text her saying ..., that would be great": the thanks is the companion's
            body = re.sub(r"(?i),?\s*(?:that|it)(?:'d|\s+would)\s+be\s+(?:great|amazing|lovely|awesome|perfect|brilliant|"
                          r"wonderful|fab|a\s+(?:huge\s+|big\s+)?help)\W*$", "", body) or body
        if kind == "send_message" and not (to and body):
            return None
        # a question to pass on ("asking if ...", "ask her whether ..."): its "if" is not a condition
        hint = "passes_on" if body and re.search(r"(?i)\b(?:ask(?:ing)?|see|check|find\s+out)(?:\s+\S+){0,3}\s*$", text[start:cstart]) and re.match(
            r"(?i)(?:if|whether)\b", body) else ""
        return Candidate(kind, start, end, cstart, {"to": _clean(to) or None, "text": body or None}, hint)
    if kind == "set_reminder" and m["trig"].lower().startswith(("ping", "nudge", "buzz")) and re.match(
            r"(?i)(?:ask|see|check)\s+(?:in\s+)?(?:(?:with|on)\s+me\s+)?(?:how|whether|if|about)\b", m["what"]):
        # "ping me friday to ask how the interview went": the companion asking, a check-in
        kind = "schedule_checkin"
        topic = re.sub(r"(?i)^(?:ask|see|check)\s+(?:in\s+)?(?:(?:with|on)\s+me\s+)?(?:about\s+)?", "", m["what"])
        end = _sentence_end(text, m.start("what"))
        topic = _TRAILING_POLITE.sub("", topic[: end - m.start("what")])
        if m.groupdict().get("pre") and _strip_when(m["pre"]).lower() not in ("", "later", "later on"):
            return None
        return Candidate(kind, start, end, None, {"when": when_iso, "topic": _yours(_strip_when(topic)) or None})
    if kind == "set_reminder":
        pre = (m.groupdict().get("pre") or "") + (m.groupdict().get("pre2") or "")
        if pre and _strip_when(pre).lower() not in ("", "later", "later on"):
            return None  # "remind me why I ..." and the like: only a time may stand before "to"
        what_start = m.start("what")
        end = _sentence_end(text, what_start)
        what = text[what_start:end]
        if end < len(text) and text[end] == "?":
            what = re.sub(r"(?i)\s+for me\s*$", "", what)  # "would you remind me to ... for me?"
        what = _TRAILING_POLITE.sub("", what)
        if _WH_START.match(what):
            return None  # "remind me what I asked": a question, not a reminder to set
        hint = "let_forget" if m["trig"].lower().startswith("don") or m["trig"].lower().startswith("do") else ""
        return Candidate(kind, start, end, what_start, {"text": _strip_when(what) or None, "when": when_iso}, hint)
    if kind == "schedule_checkin" and m.groupdict().get("q"):
        # "ask me on friday how the interview went": only with a time is it a check-in (without
        # one, "ask me how my day was" asks for a question now)
        if _strip_when(m["pre"] or "") or when is None:
            return None
        end = _sentence_end(text, m.start("what"))
        topic = text[m.start("what"):end] if m["q"].lower() == "about" else text[m.start("q"):end]
        topic = _TRAILING_POLITE.sub("", re.sub(r"(?i)\s+for me\s*$", "", topic))
        return Candidate(kind, start, end, None, {"when": when_iso, "topic": _yours(_strip_when(topic)) or None})
    if kind == "schedule_checkin" and m["trig"].lower().startswith("see") and when is None:
        return None  # "see how I'm doing" with no time is not a check-in to schedule
    if kind == "schedule_checkin":
        rest = m["what"] or ""
        end = m.end("what") if m["what"] else m.end()
        end = min(end, _sentence_end(text, start))
        topic = re.search(r"\b(?:about|on how|to see how|regarding)\s+(?P<t>.+)", rest[: max(end - m.start("what"), 0)]
                          if m["what"] else "", re.I)
        return Candidate(kind, start, end, None,
                         {"when": when_iso, "topic": _yours(_strip_when(_TRAILING_POLITE.sub("", topic["t"])))
                          if topic else None})
    if kind == "add_note":
        body, cstart, end = _body(text, m.start("body"), False)
        return Candidate(kind, start, end, cstart, {"text": body or None})
    if not re.match(r"(?i)" + _v("add", "put", "pop", "stick", "pencil", "enter", "save", "create", "block", "book",
                                   "schedule", "mark", "write", "jot", "slot", "make"), m["trig"]) and when is None:
        return None  # a header with no verb ("calendar: totally full") is an entry only with its time
    title = _strip_when(m["what"])
    if not title and m.groupdict().get("what2"):  # "block out friday evening in my calendar for book club"
        title = _strip_when(m["what2"])
    if re.match(r"(?i)(?:a |an )?reminder\b", title):
        return None
    end = _sentence_end(text, start)
    return Candidate(kind, start, end, m.start("what"), {"title": title or None, "when": when_iso})


def _asked_of_you(text: str, start: int) -> bool:
    """The sentence asks the companion with a modal before the action ("would you ... "): a
    trailing "for me" is then said to the companion, not part of what is dictated."""
    before = text[:start]
    cut = max((m.end() for m in _SENT_END.finditer(before)), default=0)
    return bool(re.search(r"(?i)\b(?:can|could|would|will)\s+(?:you|u)\b", before[cut:]))


def _chunk(doc, text: str, to_start: int, to_end: int, body_start: int, trig: str) -> tuple[str, int]:
    """For "tell X ..." / "let X know ...": the recipient is the noun phrase the parse finds
    there ("tell my best friend I'm sorry"), the dictated words what follows it."""
    for chunk in getattr(doc, "noun_chunks", []):
        if chunk.start_char <= to_start < chunk.end_char:
            if trig == "let":  # "let X know": the recipient is all before "know" ("my friend Sam")
                return text[to_start:max(chunk.end_char, to_end)], body_start
            toks = [t for t in chunk if t.idx >= to_start]
            if toks and toks[0].pos_ == "PROPN" and any(t.pos_ != "PROPN" for t in toks):
                # "tell Mei happy birthday": the parser ran the name into the words; the name ends
                # where the proper nouns do
                k = next(i for i, t in enumerate(toks) if t.pos_ != "PROPN")
                end = toks[k - 1].idx + len(toks[k - 1].text)
                skip = re.match(r"\s+(?:that\s+)?", text[end:])
                return text[to_start:end], end + (skip.end() if skip else 0)
            rest = text[chunk.end_char:]
            skip = re.match(r"\s+(?:that\s+)?", rest)
            return text[to_start:chunk.end_char], chunk.end_char + (skip.end() if skip else 0)
    return text[to_start:to_end], body_start


# ------------------------------------------------------------------ what the message asks for


def read(text: str, now: datetime, parse: Callable | None,
         standing: Callable[[str], bool] | None = None) -> list[Intent]:
    """Every action the message names, each read as a request to the companion or not, with the
    reading's reason (wrapper.directives). `parse(text)` gives a dependency parse (the app's spaCy
    pipeline); without one nothing is a request. `standing` tells a standing permission ("feel
    free to check in on me without being asked": a preference about how to help from now on)
    from a check-in to schedule now; the app passes the preference phrases' reading."""
    doc = parse(text) if parse is not None else None
    out = []
    for c in candidates(text, now, doc):
        external = inventory.load().action(c.kind).external
        r = directives.request(text, doc, parse, c.start, c.content_start, external=external,
                               recipient=c.args.get("to"), ing=c.ing, hint=c.hint)
        requested, reason = r.request, r.reason
        if requested and _taken_back(text[c.start:]):
            requested, reason = False, "not a request: taken back in the same message"
        if requested and c.kind == "schedule_checkin" and not c.args.get("when") and standing is not None \
                and standing(text):
            requested, reason = False, "not a request: a standing permission, learned as a preference"
        out.append(Intent(c.kind, c.args, requested, reason, c.start))
    return out


_BACK = re.compile(r"\b(?:no,? wait|wait,? no|actually,? no|on second thought|second thoughts)\b|"
                   r"[,;.!?\u2014\u2013-]\s*(?:(?:no|wait|actually|hmm|nah),?\s*)*(?:don'?t|do not)(?: do it| send it)?"
                   r"\s*[.!]*\s*$", re.I)


def _taken_back(rest: str) -> bool:
    """Words after the action that take it back ("... - no wait, don't", "scratch that")."""
    low = rest.lower().replace("\u2019", "'")
    return bool(_BACK.search(low) or _markers()["cancel"].search(low))


def actions_requested(text: str, now: datetime, parse: Callable | None,
                      standing: Callable[[str], bool] | None = None) -> list[Intent]:
    """The actions the participant asks the companion for, now, in so many words (see `read`).
    Missing facts stay missing (None)."""
    return [i for i in read(text, now, parse, standing) if i.requested]


def norm_words(s: str | None) -> list[str]:
    return re.findall(r"[a-z0-9]+", (s or "").lower().replace("\u2019", "'").replace("'", ""))


def _recipient(s: str | None) -> str:
    words = norm_words(s)
    while words and words[0] in ("to", "my"):
        words = words[1:]
    return " ".join(words)


_FIELDS = {"send_message": ("to", "text"), "draft_message": ("to", "text"), "set_reminder": ("text", "when"),
           "add_note": ("text",), "add_calendar_entry": ("title", "when"), "schedule_checkin": ("when", "topic")}


def same_action(kind: str, args: dict, intent: Intent) -> bool:
    """Whether a proposed action is the very one the intent asked for: the same kind, recipient,
    time, and every word of what was dictated, no more, no fewer, in order. A cut of the
    dictated words, a reordering or an addition is another action."""
    if intent.kind != kind:
        return False
    for f in _FIELDS[kind]:
        mine, theirs = args.get(f), intent.args.get(f)
        if f == "to":
            if _recipient(mine) != _recipient(theirs):
                return False
        elif f == "when":
            if (mine or None) != (theirs or None):
                return False
        elif f == "topic":  # said back to the participant: "my run" is "your run"
            if _own_words(mine) != _own_words(theirs):
                return False
        elif norm_words(mine) != norm_words(theirs):
            return False
    return True


def _own_words(s: str | None) -> list[str]:
    swap = {"your": "my", "you": "me", "yours": "mine"}
    return [swap.get(w, w) for w in norm_words(s)]


def asks_for(kind: str, args: dict, asked: list[Intent]) -> bool:
    """Whether the current message asks for this very action (see `same_action`): a message
    remembered from last week, proposed again, or a cut of today's words, is not what was asked."""
    return any(i.requested and same_action(kind, args, i) for i in asked)


_EXISTING = {"reminders": ("reminder", "remind"), "notes": ("note", "jot"),
             "calendar": ("calendar", "diary", "schedule", "agenda", "appointment")}


def _about(t) -> str | None:
    """Which stored actions a word names: the noun ("my reminders", "my calendar") or a verb of
    making them that stands under another verb ("anything I asked you to remind me about")."""
    lemma, low = t.lemma_.lower(), t.lower_
    for what, words in _EXISTING.items():
        noun, verb = words[0], words[1]
        if lemma == noun or low.startswith(noun) or low in words[2:] or (
                lemma == verb and t.dep_ != "ROOT") or (what == "notes" and lemma == "note" and t.dep_ != "ROOT"):
            return what
    return None


def _recall_frame(t) -> bool:
    """"remind me" said around a question about the past: followed by a question word, a comma or
    nothing ("when am I seeing the knee fellow, remind me?"), not by what to be reminded of."""
    doc = t.doc
    if t.lemma_.lower() != "remind" or t.i + 1 >= len(doc) or doc[t.i + 1].lower_ not in ("me", "us"):
        return False
    nxt = doc[t.i + 2] if t.i + 2 < len(doc) else None
    return nxt is None or nxt.is_punct or nxt.lower_ in directives.WH


# verbs that open a request to see what is stored ("show me my notes?", "check my calendar for friday?")
_TELL = ("tell", "list", "show", "remind", "give", "read")  # ... me what / which ...: a question about the list
_LISTING = _TELL + ("check", "look", "see", "find", "search", "pull")


def asks_about_existing(text: str, parse: Callable | None, read_as: list[Intent]) -> str | None:
    """What stored actions a question asks to see ("is there anything I asked you to remind me
    about?", "what's in my calendar this week?", "what notes have I made?", "remind me what I
    asked you to remind me of"): "reminders", "notes" or "calendar", or None. It asks for a list
    and makes nothing. A request for an action is not one; "remind me, who is coming?" asks for
    a fact, not for the reminders."""
    if parse is None or any(i.requested for i in read_as):
        return None
    for sent in parse(text).sents:
        words = [t for t in sent if not t.is_punct and t.lower_ not in directives.OPENERS]
        if not words:
            continue
        first = words[0]
        # an opening "remind me ..." is the frame of a question about the past ("remind me when
        # parents evening is now"), not a word naming the reminders; a later one may name them
        # ("remind me what I asked you to remind me of")
        named = [w for w in (_about(t) for t in sent if not (t.i == first.i and t.lemma_.lower() == "remind")
                             and not _recall_frame(t)) if w]
        if not named:
            continue
        if first.tag_ == "VB" and first.lemma_.lower() not in _LISTING and first.lower_ not in directives.QUESTION_START:
            continue  # "Stick that in my calendar, would you?": an instruction with a tag, not a question about the list
        if sent.text.rstrip().endswith("?") or first.lower_ in directives.QUESTION_START:
            return named[0]
        if first.lemma_.lower() in _TELL and any(
                t.lower_ in directives.WH or _about(t) for t in words[1:]):
            return named[0]
    return None


def asks_about_reminders(text: str, parse: Callable | None, read_as: list[Intent]) -> bool:
    """A question about the reminders already set (see `asks_about_existing`)."""
    return asks_about_existing(text, parse, read_as) == "reminders"


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
