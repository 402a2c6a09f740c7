"""The benchmark reader: counts, grounding, memory-bearing by hand, and errors that name file, line, field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval.fixtures import make_release
from eval.formats import ChatProbe, ConversationRow
from eval.readers import CorpusError, Participant, read_release, write_release


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory) -> Path:
    return make_release(tmp_path_factory.mktemp("fx") / "release")


@pytest.fixture(scope="module")
def release(fixture_dir):
    return read_release(fixture_dir)


# --- the generated fixture, read back ----------------------------------------------------------


def test_counts_agree_with_manifest(release):
    assert list(release.participants) == release.manifest.participants == ["U01", "U02", "U03"]
    for pid, p in release.participants.items():
        c = release.manifest.counts[pid]
        assert (c.messages, c.chat_rows, c.qa, c.claims) == (len(p.conversation), len(p.chat_gold), len(p.qa), len(p.profile))
        assert p.persona is not None


def test_every_probe_is_a_user_message_and_its_gold_precedes_it(release):
    for p in release.participants.values():
        for g in p.chat_gold:
            at = p.index[g.probe_dayid]
            assert p.row(g.probe_dayid).sender == "user"
            assert all(p.index[d] < at for d in g.grounding_dayids + g.episode_refs + g.recent_context)
            assert g.recent_context == [r.dayid for r in p.conversation[max(0, at - 1 - release.recent_window):at - 1]]


# --- memory-bearing and distant, computed by hand ----------------------------------------------


def _probe(grounding, on_screen="no", at="day2-3") -> ChatProbe:
    return ChatProbe(probe_dayid=at, stratum="enriched", scoreable=True, locus="episode",
                     grounding_dayids=grounding, tier="basic", referent_on_screen=on_screen)


# ordinals 1..8; the probe day2-3 is ordinal 7, so with a window of 3 the window is ordinals 4, 5, 6
# (day1-4, day2-1, day2-2) and day1-1 .. day1-3 lie outside it.
INDEX = {d: i for i, d in enumerate(["day1-1", "day1-2", "day1-3", "day1-4", "day2-1", "day2-2", "day2-3", "day2-4"], 1)}


@pytest.mark.parametrize("grounding, bearing, distant", [
    (["day1-2"], True, True),
    (["day1-3"], True, True),  # ordinal 3: the last one outside the window
    (["day1-4"], False, False),  # ordinal 4: the oldest one inside
    (["day2-2"], False, False),
    (["day1-3", "day2-1"], True, False),  # reaches outside, but not all of it
    (["day1-1", "day1-2"], True, True),
    ([], False, False),
])
def test_memory_bearing_by_hand(grounding, bearing, distant):
    g = _probe(grounding)
    assert g.memory_bearing(INDEX, 3) is bearing
    assert g.memory_bearing(INDEX, 3, strict=True) is bearing  # referent not on screen
    assert g.distant(INDEX, 3) is distant


def test_strict_reading_drops_only_clear_referents():
    assert _probe(["day1-2"], "clear").memory_bearing(INDEX, 3) is True
    assert _probe(["day1-2"], "clear").memory_bearing(INDEX, 3, strict=True) is False
    assert _probe(["day1-2"], "partial").memory_bearing(INDEX, 3, strict=True) is True


def test_window_size_moves_the_boundary():
    g = _probe(["day2-2"])  # the message just before the probe
    assert g.memory_bearing(INDEX, 0) and g.distant(INDEX, 0)
    assert not _probe(["day1-1"]).memory_bearing(INDEX, 6)
    assert _probe(["day1-1"]).memory_bearing(INDEX, 5)


def test_gold_at_or_after_the_probe_is_refused():
    with pytest.raises(ValueError, match="does not precede"):
        _probe(["day2-4"]).memory_bearing(INDEX, 3)
    with pytest.raises(ValueError, match="not in the conversation"):
        _probe(["day9-9"]).distant(INDEX, 3)


def test_participant_index_is_file_order():
    rows = [ConversationRow(dayid=d, sender="user", text="x", ts="2026-03-02T08:00:00+01:00") for d in ["day1-1", "day1-2", "day3-1"]]
    assert Participant("P", rows).index == {"day1-1": 1, "day1-2": 2, "day3-1": 3}


# --- errors name file, line and field ----------------------------------------------------------

ROWS = [
    {"dayid": "day1-1", "sender": "user", "text": "hey, first day at the new job", "ts": "2026-03-02T08:14:00+01:00"},
    {"dayid": "day1-2", "sender": "companion", "text": "Congratulations! How did it go?", "ts": "2026-03-02T08:14:09+01:00"},
    {"dayid": "day1-3", "sender": "user", "text": "long, but good", "ts": "2026-03-02T08:15:00+01:00"},
    {"dayid": "day2-1", "sender": "user", "text": "morning", "ts": "2026-03-03T07:00:00+01:00"},
]
PROBE = {"probe_dayid": "day2-1", "stratum": "proportional", "scoreable": True, "locus": "episode",
         "grounding_dayids": ["day1-1"], "tier": "basic", "referent_on_screen": "no"}


def _write(root: Path, rows=ROWS, manifest=None, files=None) -> Path:
    """A tiny release; `files` maps a name under U01/ to raw text (or lines of objects)."""
    root.mkdir(parents=True, exist_ok=True)
    m = {"format": "companion-benchmark", "version": 1, "recent_window": 3, "participants": ["U01"]}
    (root / "manifest.json").write_text(json.dumps(manifest if manifest is not None else m))
    (root / "U01").mkdir(exist_ok=True)
    files = {"conversation.jsonl": rows, **(files or {})}
    for name, body in files.items():
        if not isinstance(body, (str, bytes)):
            body = "".join(json.dumps(r) + "\n" for r in body)
        (root / "U01" / name).write_bytes(body if isinstance(body, bytes) else body.encode())
    return root


def _error(root: Path) -> str:
    with pytest.raises(CorpusError) as e:
        read_release(root)
    return str(e.value)


def test_minimal_release_reads_with_optional_files_absent(tmp_path):
    r = read_release(_write(tmp_path))
    p = r.participants["U01"]
    assert [x.dayid for x in p.conversation] == ["day1-1", "day1-2", "day1-3", "day2-1"]
    assert (p.profile, p.persona, p.chat_gold, p.qa) == ([], None, [], [])


def test_missing_required_field(tmp_path):
    rows = [dict(r) for r in ROWS]
    del rows[1]["dayid"]
    assert _error(_write(tmp_path, rows)) == "U01/conversation.jsonl line 2: field 'dayid' missing"


def test_bad_json_line(tmp_path):
    body = "".join(json.dumps(r) + "\n" for r in ROWS[:2]) + '{"dayid": "day1-3", "sender": }\n'
    msg = _error(_write(tmp_path, files={"conversation.jsonl": body}))
    assert msg.startswith("U01/conversation.jsonl line 3: invalid JSON")


def test_not_an_object(tmp_path):
    msg = _error(_write(tmp_path, files={"conversation.jsonl": '["day1-1", "user"]\n'}))
    assert msg == "U01/conversation.jsonl line 1: expected a JSON object, got list"


def test_unknown_sender(tmp_path):
    rows = [dict(r) for r in ROWS]
    rows[1]["sender"] = "bot"
    msg = _error(_write(tmp_path, rows))
    assert msg.startswith("U01/conversation.jsonl line 2: field 'sender'") and "'bot'" in msg


def test_duplicate_dayid(tmp_path):
    rows = [dict(r) for r in ROWS]
    rows[2]["dayid"] = "day1-1"
    msg = _error(_write(tmp_path, rows))
    assert msg == "U01/conversation.jsonl line 3: field 'dayid': duplicate 'day1-1' (first at line 1)"


def test_malformed_dayid_and_naive_timestamp(tmp_path):
    rows = [dict(r) for r in ROWS]
    rows[3]["dayid"] = "d2-1"
    assert _error(_write(tmp_path / "a", rows)).startswith("U01/conversation.jsonl line 4: field 'dayid': malformed dayid 'd2-1'")
    rows = [dict(r) for r in ROWS]
    rows[0]["ts"] = "2026-03-02T08:14:00"
    assert "line 1: field 'ts'" in _error(_write(tmp_path / "b", rows))


def test_rows_out_of_order(tmp_path):
    # what a lexicographic sort does: day10 before day2
    rows = [dict(r) for r in ROWS] + [dict(ROWS[3], dayid="day10-1"), dict(ROWS[3], dayid="day2-2")]
    rows[3], rows[4] = rows[4], rows[3]
    msg = _error(_write(tmp_path, rows))
    assert msg.startswith("U01/conversation.jsonl line 5: field 'dayid': 'day2-1' comes after 'day10-1'")


def test_truncated_mid_line(tmp_path, fixture_dir):
    data = (fixture_dir / "U02" / "conversation.jsonl").read_bytes()
    lines = data.count(b"\n")
    root = tmp_path / "r"
    shutil.copytree(fixture_dir, root)
    (root / "U02" / "conversation.jsonl").write_bytes(data[: len(data) - 25])  # cut inside the last row
    msg = _error(root)
    assert msg.startswith(f"U02/conversation.jsonl line {lines}: invalid JSON")


def test_truncated_at_a_line_boundary(tmp_path, fixture_dir):
    root = tmp_path / "r"
    shutil.copytree(fixture_dir, root)
    path = root / "U03" / "qa.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-2]))
    assert _error(root) == "manifest.json: field 'counts.U03.qa': says 9, the files hold 7 (truncated or stale?)"


def test_invalid_utf8(tmp_path):
    body = (json.dumps(ROWS[0]) + "\n").encode() + b'{"dayid": "day1-2", "sender": "user", "text": "caf\xe9"}\n'
    assert _error(_write(tmp_path, files={"conversation.jsonl": body})).startswith("U01/conversation.jsonl line 2: not valid UTF-8")


def test_chat_gold_errors(tmp_path):
    assert _write(tmp_path / "ok", files={"chat_gold.jsonl": [PROBE]}) and read_release(tmp_path / "ok")
    cases = {
        "missing": ({k: v for k, v in PROBE.items() if k != "tier"}, "U01/chat_gold.jsonl line 1: field 'tier' missing"),
        "absent": (dict(PROBE, probe_dayid="day9-9"),
                   "U01/chat_gold.jsonl line 1: field 'probe_dayid': 'day9-9' is not in the conversation"),
        "companion": (dict(PROBE, probe_dayid="day1-2", grounding_dayids=[]),
                      "U01/chat_gold.jsonl line 1: field 'probe_dayid': 'day1-2' is a companion message"),
        "future": (dict(PROBE, grounding_dayids=["day2-1"]),
                   "U01/chat_gold.jsonl line 1: field 'grounding_dayids': 'day2-1' does not precede the probe"),
    }
    for name, (row, want) in cases.items():
        assert _error(_write(tmp_path / name, files={"chat_gold.jsonl": [row]})) == want
    msg = _error(_write(tmp_path / "stratum", files={"chat_gold.jsonl": [dict(PROBE, stratum="random")]}))
    assert msg.startswith("U01/chat_gold.jsonl line 1: field 'stratum'")


def test_other_files_name_their_field(tmp_path):
    claim = {"id": "c1", "text": "t", "source_dayids": ["day1-9"], "verdict": "supported"}
    assert _error(_write(tmp_path / "p", files={"profile.jsonl": [claim]})) == \
        "U01/profile.jsonl line 1: field 'source_dayids': 'day1-9' is not in the conversation"
    persona = json.dumps({"slots": {"job": {"value": "nurse", "evidence": ["day1-9"]}}})
    assert _error(_write(tmp_path / "s", files={"persona.json": persona})) == \
        "U01/persona.json: field 'slots.job.evidence': 'day1-9' is not in the conversation"
    qa = {"id": "q1", "question": "?", "answer": "a"}
    assert _error(_write(tmp_path / "q", files={"qa.jsonl": [qa]})) == "U01/qa.jsonl line 1: field 'evidence_dayids' missing"
    assert _error(_write(tmp_path / "m", manifest={"participants": ["U01"]})) == "manifest.json: field 'recent_window' missing"
    assert "participant 'U02' has no folder" in _error(_write(
        tmp_path / "f", manifest={"recent_window": 3, "participants": ["U01", "U02"]}))
    assert "manifest.json: field 'participants[0]'" in _error(_write(
        tmp_path / "x", manifest={"recent_window": 3, "participants": ["../U01"]}))


def test_unknown_fields_are_kept_and_written_back(tmp_path):
    rows = [dict(ROWS[0], mood="cheerful", context="work")] + ROWS[1:]
    manifest = {"recent_window": 3, "participants": ["U01"], "exporter": {"version": "9.9"}}
    r = read_release(_write(tmp_path / "a", rows, manifest, files={"chat_gold.jsonl": [dict(PROBE, annotator="B")]}))
    p = r.participants["U01"]
    assert p.conversation[0].model_extra == {"mood": "cheerful", "context": "work"}
    assert p.chat_gold[0].model_extra == {"annotator": "B"}
    assert r.manifest.model_extra == {"exporter": {"version": "9.9"}}
    back = read_release(write_release(r, tmp_path / "b"))
    assert back == r and back.participants["U01"].conversation[0].model_extra["mood"] == "cheerful"


# --- writing ----------------------------------------------------------------------------------


def test_round_trip_is_lossless_and_byte_stable(tmp_path, fixture_dir, release):
    out = write_release(release, tmp_path / "copy")
    assert read_release(out) == release
    files = sorted(p.relative_to(fixture_dir) for p in fixture_dir.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    for f in files:
        assert (fixture_dir / f).read_bytes() == (out / f).read_bytes(), f


def test_write_refuses_to_clobber_and_publishes_nothing_invalid(tmp_path, release):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        write_release(release, other, overwrite=True)
    assert (other / "keep.txt").read_text() == "mine"

    dest = write_release(release, tmp_path / "rel")
    with pytest.raises(FileExistsError):
        write_release(release, dest)
    write_release(release, dest, overwrite=True)  # an existing release may be replaced

    p = release.participants["U01"]
    broken_probe = p.chat_gold[0].model_copy(update={"probe_dayid": "day99-1"})
    broken = type(release)(release.manifest, {**release.participants, "U01": Participant(
        "U01", p.conversation, p.profile, p.persona, [broken_probe] + p.chat_gold[1:], p.qa)})
    with pytest.raises(CorpusError, match="U01/chat_gold.jsonl line 1: field 'probe_dayid'"):
        write_release(broken, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["notes", "rel"]  # no temporary left behind
