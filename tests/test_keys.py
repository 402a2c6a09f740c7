"""dayid rules, as docs/DESIGN.md defines them."""

from datetime import datetime, timezone

import pytest

from memory import keys, messages
from memory.store import StoreError

pytestmark = pytest.mark.both_backends  # the store and turn suites run on SQLite and PostgreSQL


def at(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc)


def test_midnight_rollover_follows_the_participants_zone(store, ana):
    # 22:50 and 23:10 UTC are the same UTC day, but 23:50 and 00:10 in Berlin (UTC+1 in March).
    a = messages.append(store, ana, "user", "late evening", "personal", ts=at("2026-03-01T22:50:00"))
    b = messages.append(store, ana, "companion", "still up?", "personal", ts=at("2026-03-01T22:55:00"))
    c = messages.append(store, ana, "user", "just past midnight", "personal", ts=at("2026-03-01T23:10:00"))
    assert [a.dayid, b.dayid, c.dayid] == ["day1-1", "day1-2", "day2-1"]
    # three days later, in Berlin
    d = messages.append(store, ana, "user", "back again", "work", ts=at("2026-03-04T08:00:00"))
    assert d.dayid == "day4-1"


def test_both_senders_count_and_ordinals_increase(store, ana):
    t = at("2026-03-02T09:00:00")
    got = [messages.append(store, ana, s, f"m{i}", "personal", ts=t) for i, s in
           enumerate(["user", "companion", "user", "companion"])]
    assert [m.dayid for m in got] == ["day1-1", "day1-2", "day1-3", "day1-4"]
    assert [m.ordinal for m in got] == [1, 2, 3, 4]


def test_a_deletion_frees_no_key(store, ana):
    t = at("2026-03-02T09:00:00")
    for i in range(3):
        messages.append(store, ana, "user", f"m{i}", "personal", ts=t)
    messages.delete(store, ana, "day1-3")  # the newest: max(j)+1 would hand day1-3 out again
    messages.delete(store, ana, "day1-2")
    nxt = messages.append(store, ana, "user", "after deletions", "personal", ts=t)
    assert nxt.dayid == "day1-4"
    assert nxt.ordinal == 4
    assert [m.dayid for m in messages.read(store, ana, as_of=10)] == ["day1-1", "day1-4"]


def test_keys_are_per_participant(store, ana):
    from consent import records as consent

    consent.accept(store, "ben", tz="UTC")
    t = at("2026-03-02T09:00:00")
    assert messages.append(store, ana, "user", "hi", "personal", ts=t).dayid == "day1-1"
    assert messages.append(store, "ben", "user", "hi", "personal", ts=t).dayid == "day1-1"


def test_as_of_hides_the_bound_and_everything_after(store, ana):
    t = at("2026-03-02T09:00:00")
    ms = [messages.append(store, ana, "user", f"m{i}", "personal", ts=t) for i in range(5)]
    assert [m.text for m in messages.read(store, ana, as_of=ms[2].ordinal)] == ["m0", "m1"]
    assert [m.text for m in messages.read(store, ana, as_of=ms[4].ordinal, limit=2)] == ["m2", "m3"]
    assert messages.by_dayids(store, ana, [ms[3].dayid], as_of=ms[3].ordinal) == []


def test_malformed_dayids_and_zones_are_named():
    with pytest.raises(ValueError, match="malformed dayid 'day0-1'"):
        keys.parse_dayid("day0-1")
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        keys.zone("Mars/Olympus")
    assert keys.parse_dayid("day12-305") == (12, 305)


def test_bad_input_is_refused_and_loses_nothing(store, ana):
    messages.append(store, ana, "user", "keep me", "personal")
    for bad, why in [("", "empty"), ("   ", "empty"), (b"\xff\xfe", "UTF-8"), ("a\x00b", "NUL")]:
        with pytest.raises(StoreError, match=why):
            messages.append(store, ana, "user", bad, "personal")
    with pytest.raises(StoreError, match="unknown participant"):
        messages.append(store, "nobody", "user", "hi", "personal")
    assert [m.text for m in messages.read(store, ana, as_of=100)] == ["keep me"]
    assert messages.append(store, ana, "user", "next", "personal").dayid == "day1-2"
