"""Time in a release: every timestamp, and every date written inside a text, moved by the
participant's secret offset (a whole number of weeks back, `release_keys.shift_days`).

- `shift_timestamp(value, days)`: an ISO 8601 timestamp or date as a release writes it: shifted,
  in UTC when it carries an offset, cut to the minute (`2025-01-06T07:14:00+00:00`).
- `shift_tree(obj, days)`: the same for every timestamp anywhere in a JSON value (any key: a
  feedback row's `at`, a trace's times, an annotation's `at`), and for epoch seconds or
  milliseconds under a key that names a time (`at`, `ts`, `time`, `*_at`, `timestamp`).
- `shift_text(text, days, ref, day_first)`: dates a person or the companion wrote inside a text:
  ISO dates ("2026-12-14"), numeric dates with a year ("14/12/2026", "12.14.26") and without
  ("14/12"; "3/4" is a fraction and stays), month-name dates in either order, with or without
  ordinal, weekday and year ("December 14th", "14 Dec", "the 14th of December", "Wed 02 Dec"), and
  a day of the month after "on/by/until the" ("on the 14th"), read against `ref` (the time of the
  message it is in). Day-month order: decided by a part over 12, else by `day_first` (the
  participant's zone: month first in America/*). The shift is whole weeks, so weekdays and
  times of day are what they were; a weekday written with a date is recomputed all the same.
  What is not shifted: a year alone ("in 2019"), a month alone ("in March"), holidays by name
  ("Christmas") and relative words ("tomorrow"); docs/SECURITY.md says what they can reveal.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta, timezone

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$")
_TIME_KEY = re.compile(r"(?:^|_)(?:at|ts|time|timestamp|date|created|updated|when)$", re.I)
_EPOCH = (946684800, 4102444800)  # 2000 .. 2100


def shift_timestamp(value: str, days: int) -> str | None:
    """`value` shifted by `days` and cut to the minute (UTC if it has an offset); None if it is no
    ISO 8601 timestamp or date."""
    v = value.strip()
    if not ISO.match(v):
        return None
    try:
        if len(v) == 10:
            return (date.fromisoformat(v) + timedelta(days=days)).isoformat()
        t = datetime.fromisoformat(v.replace("Z", "+00:00")) + timedelta(days=days)
    except ValueError:
        return None
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc)
    return t.replace(second=0, microsecond=0).isoformat()


def _epoch(x, days: int):
    for scale in (1, 1000):
        if _EPOCH[0] * scale <= x <= _EPOCH[1] * scale:
            minute = 60 * scale
            return type(x)(((x + days * 86400 * scale) // minute) * minute)
    return None


# Fields of written text: their dates were moved by `shift_text` (a message that is only
# "2026-12-14" must not move twice).
TEXT_KEYS = frozenset({"text", "question", "answer", "reference_reply", "note", "value"})


def shift_tree(obj, days: int, key: str = "", seen: set | None = None):
    """A copy of the JSON value `obj` with every timestamp shifted (see the module doc), except
    in fields of written text (`TEXT_KEYS`); `seen`, when given, collects every timestamp written
    (the gate checks a release holds no other)."""
    if isinstance(obj, dict):
        return {k: (v if k in TEXT_KEYS and isinstance(v, str) else shift_tree(v, days, k, seen))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [shift_tree(v, days, key, seen) for v in obj]
    if isinstance(obj, str):
        out = shift_timestamp(obj, days)
        if out is None:
            return obj
        if seen is not None:
            seen.add(out)
        return out
    if isinstance(obj, (int, float)) and not isinstance(obj, bool) and _TIME_KEY.search(key or ""):
        out = _epoch(obj, days)
        if out is not None:
            if seen is not None:
                seen.add(out)
            return out
    return obj


def timestamps(obj) -> list[str]:
    """Every ISO timestamp string in a JSON value (what the gate compares with what was shifted)."""
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in timestamps(v)]
    if isinstance(obj, list):
        return [t for v in obj for t in timestamps(v)]
    return [obj] if isinstance(obj, str) and ISO.match(obj.strip()) else []


# --- dates inside text ----------------------------------------------------------------------------

_MONTH_NAMES = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTH_ABBR = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_MONTH_ABBR["sept"] = 9
_WEEKDAYS = [d.lower() for d in calendar.day_name]
_WD_ABBR = {**{d.lower(): i for i, d in enumerate(calendar.day_abbr)}, "tues": 1, "weds": 2, "thur": 3, "thurs": 3}
_MON = r"(?:January|February|March|April|May|June|July|August|September|October|November|December|" \
       r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)"
_WD = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Mon|Tues|Tue|Weds|Wed|Thurs|Thur|Thu|Fri|Sat|Sun)"
_ORD = r"(?:st|nd|rd|th)"
_DATES = re.compile("|".join([
    r"(?P<iso>\b(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})\b)",
    r"(?P<num>\b(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})\b(?![.\-/]\d))",
    r"(?P<short>(?<![\d/.])\b(?P<sa>\d{1,2})/(?P<sb>\d{1,2})\b(?![/\d]))",
    rf"(?P<dm>\b(?:(?P<dmw>{_WD})\.?,?\s+)?(?:the\s+)?(?P<dmd>\d{{1,2}})(?P<dmo>{_ORD})?\s+(?:of\s+)?(?P<dmm>{_MON})\b\.?"
    rf"(?:,?\s+(?P<dmy>\d{{4}}))?)",
    rf"(?P<md>\b(?:(?P<mdw>{_WD})\.?,?\s+)?(?P<mdm>{_MON})\.?\s+(?:the\s+)?(?P<mdd>\d{{1,2}})(?P<mdo>{_ORD})?\b"
    rf"(?!\s*(?:%|am\b|pm\b|:\d))(?:,?\s+(?P<mdy>\d{{4}}))?)",
    rf"(?P<day>\b(?P<dp>on|by|until|till|before|after|since|from)\s+the\s+(?P<dd>\d{{1,2}})(?P<do>{_ORD})"
    r"(?=\s*(?:[.,!?;)]|$|\s+(?:of\s+(?:this|next|last)\s+month|and|or|at|then)\b)))",
]), re.IGNORECASE)


def _month(word: str) -> int:
    w = word.lower().rstrip(".")
    return _MONTH_NAMES.get(w) or _MONTH_ABBR.get(w) or _MONTH_ABBR.get(w[:3], 0)


def _styled(like: str, new: str) -> str:
    if like.isupper() and len(like) > 1:
        return new.upper()
    if like[:1].isupper():
        return new[:1].upper() + new[1:]
    return new.lower()


def _month_word(like: str, m: int) -> str:
    w = like.lower().rstrip(".")
    full = calendar.month_name[m]
    if w in _MONTH_NAMES:
        out = full
    elif w == "sept":
        out = "Sept" if m == 9 else calendar.month_abbr[m]
    else:
        out = calendar.month_abbr[m]
    return _styled(like, out)


def _weekday_word(like: str, d: date) -> str:
    w = like.lower().rstrip(".")
    full = calendar.day_name[d.weekday()]
    if w in _WEEKDAYS:
        out = full
    elif w in ("tues", "weds", "thur", "thurs"):
        out = {1: "Tues", 2: "Weds", 3: "Thurs"}.get(d.weekday(), calendar.day_abbr[d.weekday()])
    else:
        out = calendar.day_abbr[d.weekday()]
    return _styled(like, out)


def _ordinal(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _near(month: int, day: int, ref: date | None) -> date | None:
    """The date with that month and day closest to `ref` (the year a message means)."""
    ref = ref or date.today()
    best = None
    for y in (ref.year - 1, ref.year, ref.year + 1):
        try:
            d = date(y, month, day)
        except ValueError:
            continue
        if best is None or abs((d - ref).days) < abs((best - ref).days):
            best = d
    return best


def _width(part: str) -> int:
    """Zero-padded as written ("02 Dec", "03/04") or not ("2 Dec", "14/12")."""
    return 2 if part.startswith("0") else 1


def _year(y: str) -> int:
    return int(y) + (2000 if len(y) == 2 else 0)


def shift_text(text: str, days: int, ref: datetime | date | None = None, day_first: bool = True,
               seen: set | None = None) -> str:
    """`text` with every date written in it shifted by `days` (see the module doc); `seen`, when
    given, collects every date written (the gate checks a release holds no other)."""
    if not text or not any(c.isdigit() for c in text):
        return text
    r = ref.date() if isinstance(ref, datetime) else ref
    delta = timedelta(days=days)

    def sub(m: re.Match) -> str:
        new = _shift_match(m, delta, r, day_first)
        if seen is not None and new != m.group(0):
            seen.add(new)
        return new

    return _DATES.sub(sub, text)


def dates_in_text(text: str) -> list[str]:
    """The date expressions in `text` that `shift_text` moves (what the gate compares with what
    the time pass wrote)."""
    if not text or not any(c.isdigit() for c in text):
        return []
    week = timedelta(days=7)
    return [m.group(0) for m in _DATES.finditer(text) if _shift_match(m, week, None, True) != m.group(0)]


def _shift_match(m: re.Match, delta: timedelta, r: date | None, day_first: bool) -> str:
    g = m.groupdict()
    s = m.group(0)
    try:
        if g["iso"]:
            d = date(int(g["iy"]), int(g["im"]), int(g["id"])) + delta
            return d.isoformat()
        if g["num"]:
            a, b, y = int(g["a"]), int(g["b"]), _year(g["y"])
            dfirst = a > 12 or (b <= 12 and day_first)
            day, month = (a, b) if dfirst else (b, a)
            if g["sep"] == "." and len(g["y"]) == 2 and (len(g["a"]) < 2 or len(g["b"]) < 2):
                return s  # "2.4.10": a version, not a date
            d = date(y, month, day) + delta
            first, second = (d.day, d.month) if dfirst else (d.month, d.day)
            width, width_b = _width(g["a"]), _width(g["b"])
            year = f"{d.year}" if len(g["y"]) == 4 else f"{d.year % 100:02d}"
            return f"{first:0{width}d}{g['sep']}{second:0{width_b}d}{g['sep']}{year}"
        if g["short"]:
            sa, sb = g["sa"], g["sb"]
            if len(sa) == 1 and len(sb) == 1:
                return s  # "3/4": a fraction
            a, b = int(sa), int(sb)
            if a > 31 or b > 31 or (a > 12 and b > 12):
                return s
            dfirst = a > 12 or (b <= 12 and day_first)
            day, month = (a, b) if dfirst else (b, a)
            base = _near(month, day, r)
            if base is None:
                return s
            d = base + delta
            first, second = (d.day, d.month) if dfirst else (d.month, d.day)
            return f"{first:0{_width(sa)}d}/{second:0{_width(sb)}d}"
        if g["dm"] or g["md"]:
            p = "dm" if g["dm"] else "md"
            mword, dword, oword, yword, wword = g[p + "m"], g[p + "d"], g[p + "o"], g[p + "y"], g[p + "w"]
            if mword.lower() in ("may", "march", "mar") and not mword[0].isupper():
                return s  # "you may 2 ...", "march 5 miles"
            month, day = _month(mword), int(dword)
            base = date(int(yword), month, day) if yword else _near(month, day, r)
            if base is None:
                return s
            d = base + delta
            out = s
            # each part replaced where it stands (keeps spacing, "the", "of", commas)
            spans = [(m.start(p + "m"), m.end(p + "m"), _month_word(mword, d.month)),
                     (m.start(p + "d"), m.end(p + "d"), f"{d.day:0{_width(dword)}d}")]
            if oword:
                spans.append((m.start(p + "o"), m.end(p + "o"), _styled(oword, _ordinal(d.day))))
            if yword:
                spans.append((m.start(p + "y"), m.end(p + "y"), str(d.year)))
            if wword:
                spans.append((m.start(p + "w"), m.end(p + "w"), _weekday_word(wword, d)))
            base_at = m.start()
            for a, b, new in sorted(spans, reverse=True):
                out = out[:a - base_at] + new + out[b - base_at:]
            return out
        if g["day"]:
            dd = int(g["dd"])
            r0 = r or date.today()
            # the next such day on or after the message (or this month's, if it has passed)
            base = None
            for k in range(0, 3):
                y, mo = (r0.year + (r0.month - 1 + k) // 12, (r0.month - 1 + k) % 12 + 1)
                try:
                    cand = date(y, mo, dd)
                except ValueError:
                    continue
                if cand >= r0 - timedelta(days=3):
                    base = cand
                    break
            if base is None:
                return s
            d = base + delta
            return (s[:m.start("dd") - m.start()] + str(d.day) + _styled(g["do"], _ordinal(d.day))
                    + s[m.end("do") - m.start():])
    except ValueError:
        return s
    return s


def day_first(tz: str | None) -> bool:
    """Whether a participant writes the day before the month (their zone: America/* does not)."""
    return not (tz or "").startswith(("America/", "US/", "Canada/"))
