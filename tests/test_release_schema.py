"""One schema for every file of a release (consent.formats): what export writes is what `release
check`, the annotator and the eval reader read. A release holding every kind of row the product
stores passes the check and reads back; and for generated combinations of stored rows, a fresh
export passes `release check` (hypothesis)."""

from __future__ import annotations

import json
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from companion import trials
from companion.settings import Settings
from companion.turn import turn
from consent import annotate as A
from consent import export as exporter
from consent import formats, records, releasecheck, releasefiles
from eval.readers import read_release
from memory import extract, feedback, messages
from memory.store import Store

MODELS = {"conversation.jsonl": formats.ConversationRow, "profile.jsonl": formats.ProfileClaim,
          "chat_gold.jsonl": formats.ChatProbe, "qa.jsonl": formats.QAItem, "feedback.jsonl": formats.FeedbackRow}


def _validate_every_file(rel: Path) -> set[str]:
    """Every file against its model; returns the names seen."""
    seen = set()
    formats.Manifest.model_validate(json.loads((rel / "manifest.json").read_text()))
    for f in rel.rglob("*"):
        if not f.is_file() or f.name == "manifest.json":
            continue
        seen.add(f.name if f.parent.name != "annotations" else "annotations")
        if f.name == "persona.json":
            formats.Persona.model_validate(json.loads(f.read_text()))
            continue
        model = formats.AnnotationRecord if f.parent.name == "annotations" else MODELS[f.name]
        for line in f.read_text().splitlines():
            model.model_validate(json.loads(line))
    return seen


def test_a_release_of_every_kind_of_stored_row_passes_its_check(store, tmp_path):
    s = Settings(home=store.data_dir, model="echo")
    records.accept(store, "ana", tz="UTC")
    lines = ["my sister moved to a new flat last week", "I live in a small village", "I'm a real introvert, honestly",
             "remind me to water the plants tomorrow at 9", "the tomatoes are ripe", "do you remember where my sister moved?"]
    turn(store, "ana", lines[0], settings=s)  # before any trial: the configured arm
    trials.randomize(store, "ana", ["never", "always"], 3, "bm25", "earlier_turns")
    results = [turn(store, "ana", t, settings=s) for t in lines[1:]]
    replies = [r.reply.dayid for r in results if r.reply is not None]
    feedback.record(store, "ana", replies[0], "up")
    feedback.record(store, "ana", replies[1], "down", tag="forgot")
    feedback.record(store, "ana", replies[1], "none")  # a retraction
    feedback.record(store, "ana", replies[2], "down", tag="misfit")
    extract.consolidate(store, "ana")
    stored = {"actions": store.conn.execute("SELECT count(*) FROM actions").fetchone()[0],
              "traces": store.conn.execute("SELECT count(*) FROM traces").fetchone()[0]}
    rel = tmp_path / "rel"
    exporter.export(store, rel, seed=1, recent_window=2, probe_share=0.5)
    names = _validate_every_file(rel)
    assert {"conversation.jsonl", "chat_gold.jsonl", "profile.jsonl", "persona.json", "feedback.jsonl"} <= names
    assert stored["traces"] == len(lines) and stored["actions"] >= 1  # stored, and not part of a release
    rows = [json.loads(x) for x in (rel / "U01" / "feedback.jsonl").read_text().splitlines()]
    assert [(r["rating"], r["tag"]) for r in rows] == [("up", None), ("down", "forgot"), ("none", None),
                                                      ("down", "misfit")]
    assert {r["arm"] for r in rows} <= {"never/bm25/earlier_turns", "always/bm25/earlier_turns"}
    gold = [json.loads(x) for x in (rel / "U01" / "chat_gold.jsonl").read_text().splitlines()]
    assert {g["annotation"] for g in gold} >= {"pending"}
    assert releasecheck.check(rel).ok, [str(f) for f in releasecheck.check(rel).failures]

    # annotated and finalized, the same schema still holds: pending, done and not_needed rows
    key = next(f"U01/{g['probe_dayid']}" for g in gold if g["annotation"] == "pending")
    A.set_many(rel, key, {"A": {"locus": "none", "note": "n"},
                          "B": {"referent_on_screen": "no", "note": "nothing earlier"},
                          "C": {"tier": "basic", "category": "chitchat", "rule": "no past needed", "note": "n"},
                          "D": {"reference_reply": "Tell me more.", "note": "n"},
                          "E": {"scoreable": True, "note": "n"}}, "rita")
    A.finalize(rel, "rita")
    assert "annotations" in _validate_every_file(rel)
    after = [json.loads(x) for x in (rel / "U01" / "chat_gold.jsonl").read_text().splitlines()]
    assert sum(g["annotation"] == "done" for g in after) == 1
    report = releasecheck.check(rel)
    assert report.ok, [str(f) for f in report.failures]
    back = read_release(rel)  # the eval reader takes every file, feedback included
    assert len(back.participants["U01"].feedback) == 4 and back.participants["U01"].profile


def test_the_checker_reads_feedback_with_the_writers_model(store, tmp_path):
    """The old checker wanted `kind` where export writes `rating`/`tag`: a fresh export failed
    `schema`. A row the model refuses is named by file, line and field."""
    records.accept(store, "ana", tz="UTC")
    r = turn(store, "ana", "the tomatoes are ripe", settings=Settings(home=store.data_dir, model="echo"))
    feedback.record(store, "ana", r.reply.dayid, "down", tag="wrong")
    exporter.export(store, tmp_path / "rel", seed=1)
    assert releasecheck.check(tmp_path / "rel").ok
    f = tmp_path / "rel" / "U01" / "feedback.jsonl"
    row = json.loads(f.read_text())
    f.write_text(json.dumps({**row, "tag": "rude", "rating": "sideways"}) + "\n")
    fails = [str(x) for x in releasecheck.check(tmp_path / "rel").failures]
    assert fails == ["schema: U01/feedback.jsonl line 1: field 'rating': Input should be 'up', 'down' or 'none', "
                     "got 'sideways'; field 'tag': unknown tag 'rude': one of forgot, misfit, wrong (or null)"]


# --- for generated combinations of stored rows, a fresh export passes release check --------------------

WORDS = ["the", "tomatoes", "are", "ripe", "garden", "rain", "today", "soup", "was", "good", "a", "long", "walk",
         "my", "cat", "sleeps", "bus", "late", "reading", "novel", "tired", "happy", "work", "tea"]
sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
message = st.tuples(st.sampled_from(["user", "companion"]), sentence, st.integers(0, 3 * 24 * 60))
rating = st.tuples(st.integers(0, 50), st.sampled_from(["up", "down", "none"]),
                   st.sampled_from([None, "forgot", "misfit", "wrong"]))
participant = st.fixed_dictionaries({
    "messages": st.lists(message, min_size=1, max_size=14),
    "ratings": st.lists(rating, max_size=5),
    "claims": st.lists(st.tuples(sentence, st.integers(0, 50), st.sampled_from(list(formats.Verdict.__args__))),
                       max_size=3),
    "persona": st.booleans(),
    "trial": st.sampled_from([None, "fixed", "randomized"]),
})


@hsettings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(people=st.lists(participant, min_size=1, max_size=3), share=st.sampled_from([0.0, 0.3, 1.0]),
       window=st.integers(0, 4), seed=st.integers(0, 5))
def test_any_combination_of_stored_rows_exports_to_a_release_that_passes_its_check(people, share, window, seed,
                                                                                  monkeypatch):
    home = Path(tempfile.mkdtemp(prefix="companion-prop-"))
    monkeypatch.setenv("COMPANION_HOME", str(home))
    store = Store(home)
    derived: dict[str, tuple[list, dict | None]] = {}
    try:
        start = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
        for i, p in enumerate(people):
            name = f"p{i}x"
            records.accept(store, name, tz="UTC")
            if p["trial"] == "fixed":
                trials.set_arm(store, name, "never", "bm25", "earlier_turns")
            elif p["trial"] == "randomized":
                trials.randomize(store, name, ["never", "always"], seed, "bm25", "earlier_turns")
            rows = sorted(p["messages"], key=lambda m: m[2])
            messages.append_many(store, name, [dict(sender=s, text=t, context="personal",
                                                    ts=start + timedelta(minutes=m)) for s, t, m in rows])
            stored = messages.read(store, name, messages.next_ordinal(store, name))
            replies = [m.dayid for m in stored if m.sender == "companion"]
            for k, r, tag in p["ratings"]:
                if replies:
                    feedback.record(store, name, replies[k % len(replies)], r, tag=None if r == "none" else tag)
            claims = [{"id": f"c{j:04d}", "text": t, "verdict": v, "source_dayids": [stored[k % len(stored)].dayid]}
                      for j, (t, k, v) in enumerate(p["claims"])]
            persona = ({"big_five": {"openness": {"value": "high", "evidence": [stored[0].dayid]}},
                        "descriptions": [{"facet": "mood", "text": stored[0].text, "evidence": [stored[0].dayid]}]}
                       if p["persona"] else None)
            derived[name] = (claims, persona)
        monkeypatch.setattr(exporter, "profile_sources", lambda: [lambda store, p: derived.get(p, ([], None))])
        exporter.export(store, home / "rel", seed=seed, recent_window=window, probe_share=share)
        report = releasecheck.check(home / "rel")
        assert report.ok, [str(f) for f in report.failures]
        read_release(home / "rel")
    finally:
        store.close()
        shutil.rmtree(home, ignore_errors=True)


def test_a_participant_id_is_a_u_number_before_it_is_a_path():
    assert releasefiles.participants_of({"participants": ["U01", "U102"]}) == ["U01", "U102"]
    for bad in (["../x"], ["/abs"], ["U01/.."], ["u01"], ["U1"], [7], "U01"):
        with pytest.raises(releasefiles.ReleaseFileError):
            releasefiles.participants_of({"participants": bad})
