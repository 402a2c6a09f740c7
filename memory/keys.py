"""dayid keys: `day{n}-{j}`.

n = 1 + whole calendar days since the participant's first message, in the participant's
time zone; j = 1-based position of the message within that day, both senders counted.
A key is assigned once and never reused, also after deletions (see `messages.append`).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAYID = re.compile(r"^day([1-9][0-9]*)-([1-9][0-9]*)$")


class KeyError_(ValueError):
    """A malformed dayid or time zone."""


def format_dayid(n: int, j: int) -> str:
    if n < 1 or j < 1:
        raise KeyError_(f"dayid parts must be >= 1, got day {n}, position {j}")
    return f"day{n}-{j}"


def parse_dayid(dayid: str) -> tuple[int, int]:
    m = DAYID.match(dayid or "")
    if not m:
        raise KeyError_(f"malformed dayid {dayid!r}: expected 'day<n>-<j>' with n, j >= 1")
    return int(m.group(1)), int(m.group(2))


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise KeyError_(f"unknown time zone {name!r}") from e


def machine_zone_name() -> str:
    try:
        import tzlocal

        return tzlocal.get_localzone_name() or "UTC"
    except Exception:
        return "UTC"


def local_date(ts: datetime, tz: str) -> date:
    if ts.tzinfo is None:
        raise KeyError_(f"timestamp {ts.isoformat()} has no time zone")
    return ts.astimezone(zone(tz)).date()


def day_number(first: date, ts: datetime, tz: str) -> int:
    """1 + whole calendar days between the first message's local date and this one's."""
    n = 1 + (local_date(ts, tz) - first).days
    if n < 1:
        raise KeyError_(
            f"message time {ts.isoformat()} is before the participant's first day {first}"
        )
    return n
