"""`companion bench chat` replays a week written by anyone in the script format (version, why,
participant, tz, context, turns [{at, text, recall?, unknown?, action?}]) and scores it, with no
code change: here on the deterministic echo model, through the real turn."""

from __future__ import annotations

import json

import pytest

from tests.test_cli import run as run_cli

# another author's week, not the project's: other people, places, words, a turn with no time
WEEK = {
    "version": "another-week-test",
    "why": "a stand-in for a week written by someone else",
    "participant": "bench-tomek",
    "tz": "America/Toronto",
    "context": "personal",
    "turns": [
        {"at": "2026-05-04T09:00", "text": "Morning! My partner Oriane works as a nurse in Montreal."},
        {"at": "2026-05-04T09:02", "text": "Our parrot is called Kiwi, he never stops whistling."},
        {"text": "Rough commute today, the train sat still for half an hour."},
        {"at": "2026-05-05T18:00", "text": "what's our parrot called again?", "recall": "Kiwi"},
        {"at": "2026-05-05T18:05", "text": "where does Oriane work?", "recall": ["Montreal", "a nurse"]},
        {"at": "2026-05-05T18:06", "text": "where does my cousin live?", "unknown": "the cousin's home"},
        {"at": "2026-05-05T18:07", "text": "what's my dentist called?", "never_told": True},
        {"at": "2026-05-06T08:00", "text": "remind me to call the vet tomorrow at 9am", "action": "set_reminder"},
    ],
}


def _bench(*args):
    return run_cli("bench", "chat", "--model", "echo", "--no-alone", *args)


def test_a_week_from_a_path_is_replayed_and_scored(tmp_path):
    path = tmp_path / "their-week.json"
    path.write_text(json.dumps(WEEK), encoding="utf-8")
    r = _bench("--script", str(path), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    assert out["script"] == "another-week-test" and out["turns"] == 8
    # what the participant saw: recall answered from what they said, the never-told one declined
    rows = out["rows"]
    assert rows[3]["reply"].startswith("Your parrot is called Kiwi")
    assert out["recall"] == {**out["recall"], "asked": 2, "right": 2}
    assert rows[5]["reply"] == "I don't think you've told me where your cousin lives."
    assert rows[6]["reply"].startswith("I don't think you've told me")
    # "never_told": true is the other spelling of the never-told marker, counted the same
    assert out["never_told"] == {"asked": 2, "right": 2}
    assert out["actions"] == {"requested": 1, "made": 1}
    assert out["quoted_questions"] == 0


@pytest.mark.parametrize("broken,message", [
    ({"participant": "x"}, "'turns' must be a non-empty list"),
    ({**WEEK, "turns": [{"at": "2026-05-04T09:00"}]}, "turn 1: 'text' must be a non-empty string"),
    ({**WEEK, "turns": [{"text": "hi", "at": "monday"}]}, "turn 1: 'at' 'monday' is not an ISO time"),
    ({**WEEK, "tz": "Mars/Olympus"}, "'tz' 'Mars/Olympus' is not a time zone name"),
    ({**WEEK, "turns": [{"text": "hi", "recall": 3}]}, "turn 1: 'recall' must be the fact"),
    ({**WEEK, "turns": [{"text": "hi", "nevertold": True}]}, "turn 1: unknown field(s) 'nevertold' (did you mean 'never_told'?)"),
    ({**WEEK, "turns": [{"text": "hi", "never_told": 1}]}, "turn 1: 'never_told' must be true/false"),
])
def test_a_script_that_cannot_be_replayed_is_refused_with_what_is_wrong(tmp_path, broken, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    r = _bench("--script", str(path))
    assert r.exit_code != 0 and message in r.output
    r = _bench("--script", str(tmp_path / "missing.json"))
    assert r.exit_code != 0 and "no such file" in r.output
