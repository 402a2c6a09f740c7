"""Issue 13 items 6, 12, 15: identifiers in every form, release times and numbering, a killed
export's staging folder, and the release ledger across withdrawal.

The recognizer examples here are development cases, written in their own style; the held-out
sets in tests/data are measured by `test_held_out_planted_set` and tests/anonymization_bench.py.
"""

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from companion.cli import main
from consent import erasure, ledger, recognizers
from consent import export as exporter
from consent import records
from eval.readers import read_release
from memory import messages

sys.path.insert(0, str(Path(__file__).parent))
import anonymization_bench  # noqa: E402

DEV = [  # (text, identifier, kind)
    ("Last week Zoë Brandt asked me out", "Zoë Brandt", "PERSON"),
    ("I told mateus that I'd be late", "mateus", "PERSON"),
    ("Ольга sent me a postcard", "Ольга", "PERSON"),
    ("Met Björn after the match", "Björn", "PERSON"),
    ("my cousin oskar is visiting", "oskar", "PERSON"),
    ("Write to kim dot park at hotmail dot com", "kim dot park at hotmail dot com", "EMAIL"),
    ("ping me at a.b[at]web[dot]de", "a.b[at]web[dot]de", "EMAIL"),
    ("Find me @kpark_99 on twitter", "@kpark_99", "HANDLE"),
    ("My address: 12 Elm Street, Boston, MA 02118.", "12 Elm Street", "ADDRESS"),
    ("My address: 12 Elm Street, Boston, MA 02118.", "02118", "POSTCODE"),
    ("My address: 12 Elm Street, Boston, MA 02118.", "Boston", "PLACE"),
    ("Born on 5 May 1990, a Saturday", "5 May 1990", "DOB"),
    ("I work for Acme Corp. now", "Acme Corp.", "ORG"),
    ("SSN 123-45-6789 for the form", "123-45-6789", "US_SSN"),
    ("NI AB 12 34 56 C on my payslip", "AB 12 34 56 C", "UK_NI"),
    ("DNI 12345678Z, lo siento", "12345678Z", "ES_DNI"),
    ("the reg was WX63 ABC", "WX63 ABC", "PLATE"),
    ("my plate number is KX5 882B", "KX5 882B", "PLATE"),
    ("We flew from Lisbon yesterday", "Lisbon", "PLACE"),
    ("our tortoise Pimpernel escaped again", "Pimpernel", "PERSON"),
    ("my dog Biscuit is a beagle", "Biscuit", "PERSON"),
    ("we moved to 3512 JK last spring", "3512 JK", "POSTCODE"),
    ("new flat is at K1A 0B6, near the canal", "K1A 0B6", "POSTCODE"),
]
ORDINARY = ["On Tuesday I'm seeing the doctor about my knee", "Grandma's recipe for soup never works",
            "The doctor said it's nothing serious", "we met on 12 May 2026 at noon", "I'm 34 and tired",
            "Christmas is going to be chaotic this year", "my plate was empty by nine",
            "the dog, honestly, is a menace", "I walked the dog Tuesday", "call at 1030 PM", "in 1990 BC"]


@pytest.mark.parametrize("text,ident,kind", DEV)
def test_recognizers_find_each_form(text, ident, kind):
    hits = recognizers.scan(text)
    assert any(h.text == ident and h.kind == kind for h in hits), [(h.kind, h.text) for h in hits]


def test_recognizers_leave_ordinary_messages_alone():
    assert recognizers.scan_many(ORDINARY) == [[] for _ in ORDINARY]


def test_a_spanish_dni_needs_its_check_letter():
    assert [h.kind for h in recognizers.scan("DNI 12345678Z")] == ["ES_DNI"]
    assert "ES_DNI" not in [h.kind for h in recognizers.scan("DNI 12345678A")]


def test_held_out_planted_set():
    """The held-out set (written before the recognizers): survivors as measured at the end of
    this work (3 of 51, see the bench; 5 before the third round), and not one ordinary word
    replaced; the gate passes."""
    r = anonymization_bench.run()
    assert r["planted"] == 51
    assert r["gate_refused"] == 0
    assert r["verbatim_survivors"] + r["partial_survivors"] <= 3, r["survivors"]
    assert r["ordinary_words_replaced"] == 0, r["replaced"]


def _say(store, p, rows, start, step=timedelta(minutes=2, seconds=17, microseconds=123)):
    out, t = [], start
    for sender, text in rows:
        t += step
        out.append(dict(sender=sender, text=text, context="personal", ts=t))
    messages.append_many(store, p, out)


@pytest.fixture
def two(store):
    d0 = datetime(2026, 3, 2, 8, 0, 41, 5123, tzinfo=timezone.utc)
    for p in ("ana", "bob"):
        records.accept(store, p, tz="Europe/Madrid")
    _say(store, "ana", [("user", "my SSN is 078-05-1120, don't tell"), ("companion", "I won't."),
                        ("user", "lunch with józef at the new place"), ("companion", "Enjoy józef's company!")], d0)
    _say(store, "bob", [("user", "email me at bob dot r at mail dot com"), ("companion", "Noted.")],
         d0 + timedelta(days=3))
    return store


def test_release_times_are_shifted_per_participant_and_cut_to_the_minute(two, tmp_path):
    exporter.export(two, tmp_path / "rel", seed=1)
    pid = dict(two.conn.execute("SELECT participant, pseudonym FROM export_members").fetchall())
    for p in ("ana", "bob"):
        shift = two.conn.execute("SELECT shift_days FROM release_keys WHERE participant=?", (p,)).fetchone()[0]
        assert shift % 7 == 0 and -728 <= shift <= -28
        rows = [json.loads(x) for x in (tmp_path / "rel" / pid[p] / "conversation.jsonl").read_text().splitlines()]
        for row, m in zip(rows, messages.read(two, p, messages.next_ordinal(two, p))):
            out = datetime.fromisoformat(row["ts"])
            assert row["dayid"] == m.dayid and out.utcoffset() == timedelta(0)
            assert out.second == 0 and out.microsecond == 0
            assert out == (datetime.fromisoformat(m.ts) + timedelta(days=shift)).replace(second=0, microsecond=0)
    text = "".join(f.read_text() for f in (tmp_path / "rel").rglob("*") if f.is_file())
    assert "2026-03-02" not in text and "shift" not in json.loads((tmp_path / "rel" / "manifest.json").read_text()).get(
        "participants", [])


def test_participants_are_numbered_at_random(store, tmp_path):
    names = ["aaron", "beth", "carl", "dora", "emil", "fay", "gus", "hana"]
    for p in names:
        records.accept(store, p, tz="UTC")
        _say(store, p, [("user", "a quiet day today")], datetime(2026, 3, 2, tzinfo=timezone.utc))
    orders = []
    for i in range(2):
        r = exporter.export(store, tmp_path / f"r{i}", seed=0)
        pid = dict(store.conn.execute("SELECT participant, pseudonym FROM export_members WHERE release=?",
                                      (r["release"],)).fetchall())
        orders.append([pid[p] for p in names])
    alphabetical = [f"U{i:02d}" for i in range(1, 9)]
    # 1 in 40320 that a random draw is alphabetical, and as unlikely that two draws agree
    assert orders[0] != alphabetical and orders[0] != orders[1]


def test_the_gate_names_file_row_and_kind_of_a_surviving_identifier(two, tmp_path):
    exporter.export(two, tmp_path / "rel", seed=1)
    pid = dict(two.conn.execute("SELECT participant, pseudonym FROM export_members").fetchall())
    surr = {r[0] for r in two.conn.execute("SELECT surrogate FROM export_surrogates")}
    conv = tmp_path / "rel" / pid["bob"] / "conversation.jsonl"
    rows = conv.read_text().splitlines()
    bad = json.loads(rows[1])
    bad["text"] = "sure, and my NI is JX 44 55 66 B, Zoë Brandt knows"
    conv.write_text("\n".join([rows[0], json.dumps(bad, ensure_ascii=False)] + rows[2:]) + "\n")
    problems = exporter.check_release(tmp_path / "rel", {}, surr)
    assert problems == [
        f"identifiers: {pid['bob']}/conversation.jsonl line 2, field 'text': UK_NI 'JX 44 55 66 B' (found by the "
        "UK_NI pattern) survives replacement",
        f"identifiers: {pid['bob']}/conversation.jsonl line 2, field 'text': PERSON 'Zoë Brandt' (found by the NER "
        "model (spaCy)) survives replacement"]


def test_surrogates_are_consistent_across_participants_and_files(two, tmp_path):
    records.accept(two, "cy", tz="UTC")
    _say(two, "cy", [("user", "józef says hi to everyone")], datetime(2026, 3, 9, tzinfo=timezone.utc))
    exporter.export(two, tmp_path / "rel", seed=1)
    pid = dict(two.conn.execute("SELECT participant, pseudonym FROM export_members").fetchall())
    s = two.conn.execute("SELECT DISTINCT surrogate FROM export_surrogates WHERE original='józef'").fetchall()
    assert len(s) == 1
    ana = (tmp_path / "rel" / pid["ana"] / "conversation.jsonl").read_text()
    cy = (tmp_path / "rel" / pid["cy"] / "conversation.jsonl").read_text()
    assert f"lunch with {s[0][0]}" in ana and f"Enjoy {s[0][0]}'s company" in ana and s[0][0] in cy
    assert "078-05-1120" not in ana and "[SSN 1]" in ana


KILLED_EXPORT = """
import sys, time
from consent import export as exporter
from memory.store import Store

def stall(*a, **k):
    print("staged", flush=True)
    time.sleep(120)

exporter.check_release = stall
exporter.export(Store(sys.argv[1]), sys.argv[2], seed=1)
"""


def test_a_killed_export_leaves_no_release_and_its_staging_is_cleaned_next_time(two, home, tmp_path):
    two.close()
    out = tmp_path / "releases" / "r1"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_EXPORT, str(home), str(out)], stdout=subprocess.PIPE,
                            text=True, cwd=Path(__file__).parent.parent)
    try:
        assert proc.stdout.readline().strip() == "staged"  # written, not yet through the gates
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    staged = list(out.parent.glob(".r1.staging-*"))
    assert len(staged) == 1 and (staged[0] / "manifest.json").exists() and not out.exists()
    from memory.store import Store

    store = Store(home)
    try:
        assert [r["state"] for r in ledger.releases(store.conn)] == ["staging"]
        with pytest.raises(FileExistsError, match="staging folder, not a release"):
            exporter.export(store, staged[0], seed=1, overwrite=True)
        r = exporter.export(store, out.parent / "r2", seed=1)
        assert r["cleaned"] == [str(staged[0].resolve())] and not staged[0].exists()
        states = {x["folder"]: x["state"] for x in ledger.releases(store.conn)}
        assert states == {str(out.resolve()): "abandoned", str((out.parent / "r2").resolve()): "released"}
        assert ledger.recalls(store, exporter.eligible(store)) == []
    finally:
        store.close()


def test_withdrawal_keeps_the_ledger_row_lists_the_recall_and_a_reissue_leaves_them_out(two, tmp_path):
    r = exporter.export(two, tmp_path / "rel", seed=4)
    pid = dict(two.conn.execute("SELECT participant, pseudonym FROM export_members").fetchall())
    bob_before = (tmp_path / "rel" / pid["bob"] / "conversation.jsonl").read_text()
    erasure.erase(two, "ana")
    rows = [dict(x) for x in two.conn.execute("SELECT * FROM release_ledger_members ORDER BY pseudonym")]
    assert {x["pseudonym"] for x in rows} == {"U01", "U02"}  # the row that says the release held her stays
    gone = next(x for x in rows if x["pseudonym"] == pid["ana"])
    assert gone["member_key"] is None and gone["withdrawn_at"]
    # nothing left points at her: not her keyed hash, not her secret shift, not her surrogate map
    with two.transaction() as conn:
        key = ledger.member_key(conn, "ana")
    assert key not in json.dumps(ledger.releases(two.conn)) + json.dumps(rows)
    for table in ("release_keys", "export_members", "export_surrogates"):
        assert two.conn.execute(f"SELECT count(*) FROM {table} WHERE participant='ana'").fetchone()[0] == 0
    raw = Path(two.path).read_bytes() + Path(str(two.path) + "-wal").read_bytes()
    assert b"078-05-1120" not in raw and "józef".encode() not in raw
    assert ledger.recalls(two, exporter.eligible(two)) == [
        {"release": r["release"], "folder": str((tmp_path / "rel").resolve()),
         "created_at": ledger.releases(two.conn)[0]["created_at"], "withdrawn": [pid["ana"]]}]
    again = exporter.export(two, tmp_path / "rel2", reissue=r["release"])
    assert list(again["participants"]) == [pid["bob"]] and again["reissue_of"] == r["release"]
    assert (tmp_path / "rel2" / pid["bob"] / "conversation.jsonl").read_text() == bob_before
    assert not (tmp_path / "rel2" / pid["ana"]).exists()
    read_release(tmp_path / "rel2")
    with pytest.raises(Exception, match="takes its participants from the ledger"):
        exporter.export(two, tmp_path / "rel3", ["bob"], reissue=r["release"])


def test_export_scope_withdrawal_is_a_recall_too_and_the_cli_lists_it(home, tmp_path):
    run = lambda *a: CliRunner().invoke(main, list(a), catch_exceptions=False)  # noqa: E731
    for p in ("ana", "bob"):
        run("consent", "accept", "-p", p)
    r = CliRunner().invoke(main, ["chat", "-p", "ana", "--model", "echo"], input="my neighbour keisha says hi\n")
    r = CliRunner().invoke(main, ["chat", "-p", "bob", "--model", "echo"], input="a calm day\n")
    r = run("export", "--out", str(tmp_path / "rel"))
    assert r.exit_code == 0, r.output
    release = r.output.split("release ")[1].split()[0]
    assert "keisha" not in "".join(f.read_text() for f in (tmp_path / "rel").rglob("*.jsonl"))
    assert run("export", "--recalls").output.strip() == "no release holds anyone who has withdrawn"
    run("consent", "withdraw", "-p", "ana", "--scope", "export")
    out = run("export", "--recalls").output
    assert out.startswith(f"recall {release} at {(tmp_path / 'rel').resolve()}: withdrawn U0")
    led = run("export", "--ledger").output
    assert release in led and "released" in led and "ana" not in led
    r = run("export", "--reissue", release, "--out", str(tmp_path / "rel2"))
    assert r.exit_code == 0 and f"(re-issue of {release})" in r.output
    assert len(read_release(tmp_path / "rel2").participants) == 1
