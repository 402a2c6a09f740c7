"""Releases carry each participant's ratings as Uxx/feedback.jsonl (docs/FORMAT.md)."""

import json

from companion.turn import turn
from consent import export as exporter
from consent import erasure, records
from eval.readers import read_release
from memory import feedback


def test_release_has_feedback_jsonl_per_rated_participant(store, settings, tmp_path):
    for p in ("ana", "ben"):
        records.accept(store, p, tz="Europe/Berlin")
    a1 = turn(store, "ana", "the weather is nice today", settings=settings)
    a2 = turn(store, "ana", "going for a walk later", settings=settings)
    turn(store, "ben", "reading a book tonight", settings=settings)
    feedback.record(store, "ana", a1.reply.dayid, "down", tag="misfit")
    feedback.record(store, "ana", a2.reply.dayid, "up")
    feedback.record(store, "ana", a2.reply.dayid, "none")
    out = tmp_path / "release"
    summary = exporter.export(store, out)
    assert set(summary["participants"]) == {"U01", "U02"}
    pid = dict(store.conn.execute("SELECT participant, pseudonym FROM export_members").fetchall())  # drawn at random
    rows = [json.loads(x) for x in (out / pid["ana"] / "feedback.jsonl").read_text().splitlines()]
    assert [(r["dayid"], r["rating"], r["tag"]) for r in rows] == [
        (a1.reply.dayid, "down", "misfit"), (a2.reply.dayid, "up", None), (a2.reply.dayid, "none", None)]
    assert rows[0]["arm"] == a1.trace.arm["name"] and set(rows[0]) == {"dayid", "rating", "tag", "arm", "gate",
                                                                       "via", "at"}
    assert not (out / pid["ben"] / "feedback.jsonl").exists()  # ben rated nothing
    assert "ana" not in (out / pid["ana"] / "feedback.jsonl").read_text()
    read_release(out)  # the eval reader takes the release with the extra file


def test_a_rating_of_a_deleted_reply_is_left_out(store, settings, tmp_path):
    records.accept(store, "ana", tz="Europe/Berlin")
    a1 = turn(store, "ana", "the weather is nice today", settings=settings)
    a2 = turn(store, "ana", "going for a walk later", settings=settings)
    feedback.record(store, "ana", a1.reply.dayid, "up")
    feedback.record(store, "ana", a2.reply.dayid, "down")
    erasure.delete_messages(store, "ana", [a1.reply.dayid])
    exporter.export(store, tmp_path / "r")  # one participant: U01
    rows = [json.loads(x) for x in (tmp_path / "r" / "U01" / "feedback.jsonl").read_text().splitlines()]
    assert [r["dayid"] for r in rows] == [a2.reply.dayid]
