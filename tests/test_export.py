"""Export: planted identifiers do not survive, surrogates are consistent, each gate refuses."""

import json
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from companion.cli import main
from consent import export as exporter
from consent import records
from consent.pseudonymize import Pseudonymizer, stated_terms
from eval.readers import read_release
from memory import messages

PLANTED = ["Lena Vogt", "Lena", "Vogt", "Porto", "lena.vogt@gmail.com", "+49 170 1234567",
           "https://lena-blog.example.com/post", "Acme Hospital", "Marek", "Kraków"]


def _say(store, p, rows, start):
    t = start
    out = []
    for sender, text in rows:
        t += timedelta(minutes=2)
        out.append(dict(sender=sender, text=text, context="personal", ts=t))
    messages.append_many(store, p, out)


@pytest.fixture
def study(store, tmp_path, monkeypatch):
    for p, scopes in (("ana", None), ("bob", None), ("cara", ("logging", "memory"))):
        records.accept(store, p, tz="UTC", scopes=scopes)
    d0 = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
    _say(store, "ana", [("user", "hey, first day at Acme Hospital"), ("companion", "Congratulations!"),
                        ("user", "my sister Lena Vogt moved to Porto"), ("companion", "Do you miss Lena?"),
                        ("user", "write to her at lena.vogt@gmail.com or call +49 170 1234567")], d0)
    _say(store, "ana", [("user", "back again"), ("companion", "Welcome back!"),
                        ("user", "she posted at https://lena-blog.example.com/post"), ("companion", "Nice."),
                        ("user", "I might visit Kraków with my friend called Marek")], d0 + timedelta(days=1))
    _say(store, "bob", [("user", "my friend Lena Vogt says hi"), ("companion", "Hi to Lena!"),
                        ("user", "LENA works at acme hospital too")], d0)
    _say(store, "cara", [("user", "cara-private-text never exported")], d0)
    monkeypatch.setattr(exporter, "profile_sources", lambda: [_profile])
    deny = tmp_path / "deny.txt"
    deny.write_text("# researcher list\nORG\tAcme Hospital\n", encoding="utf-8")
    return deny


def _profile(store, p):
    if p != "ana":
        return [], None
    claims = [{"id": "c0001", "text": "Has a sister called Lena Vogt who lives in Porto", "category": "family",
               "confidence": 0.9, "valid_from": "day1-3", "valid_to": None, "source_dayids": ["day1-3"],
               "verdict": "supported"}]
    persona = {"big_five": {}, "slots": {"sibling": {"value": "Lena Vogt", "strength": "strong", "evidence": ["day1-3"]}},
               "descriptions": [{"facet": "family", "text": "Misses Lena, who moved to Porto", "evidence": ["day1-3"]}]}
    return claims, persona


def _all_text(root):
    return "\n".join(f.read_text(encoding="utf-8") for f in root.rglob("*") if f.is_file())


def test_stated_terms_rule():
    t = stated_terms(["my sister Lena Vogt moved to Porto in May", "a friend called Marek", "to Berlin on Monday",
                      "I went to The shop"])
    assert t == {"Lena Vogt": "PERSON", "Lena": "PERSON", "Vogt": "PERSON", "Porto": "PLACE",
                 "Marek": "PERSON", "Berlin": "PLACE"}


def test_surrogates_are_consistent_and_never_an_original():
    ps = Pseudonymizer({"Lena": "PERSON", "Casey": "PERSON"}, seed=1)
    a, b = ps.apply("Lena and LENA"), ps.apply("lena")
    s = ps.map[("PERSON", "lena")]
    assert a == f"{s} and {s}" and b == s and s != "Casey"
    assert ps.apply("+49 170 1234567") == ps.apply("+491701234567")


def test_export_writes_a_readable_release_with_no_identifier(store, study, tmp_path):
    out = tmp_path / "release"
    r = exporter.export(store, out, seed=3, deny_list=study, recent_window=3, probe_share=0.2)
    rel = read_release(out)  # the eval reader validates the whole format
    assert rel.manifest.participants == ["U01", "U02"] and rel.recent_window == 3
    pid = dict(store.conn.execute("SELECT participant, pseudonym FROM export_members").fetchall())
    A, B = pid["ana"], pid["bob"]
    assert r["participants"][A] == {"messages": 10, "chat_rows": len(rel.participants[A].chat_gold), "claims": 1}
    text = _all_text(out).casefold()
    for s in PLANTED + ["ana", "bob", "cara"]:
        assert s.casefold() not in text.replace("banana", ""), s
    # the same original has the same surrogate across files and participants
    lena = store.conn.execute("SELECT DISTINCT surrogate FROM export_surrogates WHERE original='Lena Vogt'").fetchall()
    assert len(lena) == 1
    lena = lena[0][0]
    u1, u2 = rel.participants[A], rel.participants[B]
    assert lena in u1.row("day1-3").text and lena in u2.row("day1-1").text
    assert lena in u1.profile[0].text and u1.persona.slots["sibling"].value == lena
    porto = store.conn.execute("SELECT surrogate FROM export_surrogates WHERE original='Porto'").fetchone()[0]
    assert porto in u1.profile[0].text and porto in u1.persona.descriptions[0].text and porto in u1.row("day1-3").text
    assert "@example.org" in u1.row("day1-5").text
    # probes: cold opens are controls, the sample is proportional, all are participant messages
    gold = {g.probe_dayid: g for g in u1.chat_gold}
    assert gold["day1-1"].stratum in ("control", "proportional") and gold["day2-1"].stratum in ("control", "proportional")
    assert [g.stratum for g in u1.chat_gold].count("proportional") == 1  # round(0.2 * 6 messages)
    assert {g.probe_dayid for g in u1.chat_gold if g.stratum == "control"} <= {"day1-1", "day2-1"}
    assert any(g.stratum == "control" and g.scoreable and not g.grounding_dayids for g in u1.chat_gold)
    for g in u1.chat_gold:
        assert u1.row(g.probe_dayid).sender == "user" and len(g.recent_context) <= 3
        assert g.annotation in ("pending", "not_needed")
    # the map is in the database, not in the release
    assert not any("surrogate" in f.name for f in out.rglob("*"))
    assert sorted(pid) == ["ana", "bob"] and sorted(pid.values()) == ["U01", "U02"]
    # withdrawing the export scope removes ana's map rows and keeps her out of the next release
    records.withdraw_scope(store, "ana", "export")
    assert store.conn.execute("SELECT count(*) FROM export_surrogates WHERE participant='ana'").fetchone()[0] == 0
    assert exporter.eligible(store) == ["bob"]
    with pytest.raises(Exception, match="not consented to export"):
        exporter.export(store, tmp_path / "r2", ["ana"])


def test_same_seed_same_release(store, study, tmp_path):
    """U-numbers are drawn afresh, but each participant's files are the same under the same seed."""
    a = exporter.export(store, tmp_path / "a", seed=5, deny_list=study)
    b = exporter.export(store, tmp_path / "b", seed=5, deny_list=study)

    def files(r, d):
        pid = dict(store.conn.execute("SELECT participant, pseudonym FROM export_members WHERE release=?",
                                      (r["release"],)).fetchall())
        return {(p, f.name): f.read_text() for p, u in pid.items() for f in (d / u).glob("*.jsonl")}

    fa, fb = files(a, tmp_path / "a"), files(b, tmp_path / "b")
    assert fa == fb and len(fa) >= 4 and a["release"] != b["release"]


@pytest.fixture
def good(store, study, tmp_path):
    out = tmp_path / "good"
    exporter.export(store, out, seed=3, deny_list=study, recent_window=3, probe_share=0.2)
    ids = {r["original"]: r["kind"] for r in map(dict, store.conn.execute("SELECT kind, original FROM export_surrogates"))}
    surr = {r[0] for r in store.conn.execute("SELECT surrogate FROM export_surrogates")}
    assert exporter.check_release(out, ids, surr) == []
    pid = dict(store.conn.execute("SELECT participant, pseudonym FROM export_members").fetchall())
    return out, ids, surr, pid["ana"], pid["bob"]


def _edit(path, n, fn):
    lines = path.read_text(encoding="utf-8").split("\n")
    row = json.loads(lines[n - 1])
    fn(row)
    lines[n - 1] = json.dumps(row)
    path.write_text("\n".join(lines), encoding="utf-8")


def _broken(good, tmp_path, name):
    dst = tmp_path / name
    shutil.copytree(good[0], dst)
    return dst


def test_gate_dayids_resolve(good, tmp_path):
    A, B = good[3], good[4]
    d = _broken(good, tmp_path, "b1")
    _edit(d / A / "chat_gold.jsonl", 1, lambda g: g.update(grounding_dayids=["day99-1"]))
    _edit(d / A / "profile.jsonl", 1, lambda c: c.update(source_dayids=["day1-3", "day42-7"]))
    p = exporter.check_release(d, good[1], good[2])
    assert f"dayids: {A}/chat_gold.jsonl line 1: field 'grounding_dayids': 'day99-1' is not in the conversation" in p
    assert f"dayids: {A}/profile.jsonl line 1: field 'source_dayids': 'day42-7' is not in the conversation" in p


def test_gate_citations_precede_the_probe(good, tmp_path):
    A, B = good[3], good[4]
    d = _broken(good, tmp_path, "b2")
    rows = [json.loads(x) for x in (d / A / "chat_gold.jsonl").read_text().splitlines()]
    n = next(i for i, g in enumerate(rows, 1) if g["probe_dayid"] != "day2-5")
    _edit(d / A / "chat_gold.jsonl", n, lambda g: g.update(episode_refs=["day2-5"]))
    p = exporter.check_release(d, good[1], good[2])
    assert p == [f"order: {A}/chat_gold.jsonl line {n}: field 'episode_refs': 'day2-5' does not precede the probe"]


def test_gate_no_identifier_survives(good, tmp_path):
    A, B = good[3], good[4]
    d = _broken(good, tmp_path, "b3")
    _edit(d / B / "conversation.jsonl", 2, lambda r: r.update(text="Hi to Lena!"))
    _edit(d / B / "conversation.jsonl", 3, lambda r: r.update(text="mail zed@corp-mail.io now"))
    p = exporter.check_release(d, good[1], good[2])
    # the researcher sees their own data in full: file, line, field, text, and which rule found it
    assert (f"identifiers: {B}/conversation.jsonl line 2, field 'text': PERSON 'Lena' (the surrogate map "
            "(an original of this release)) survives") in p
    assert (f"identifiers: {B}/conversation.jsonl line 3, field 'text': EMAIL 'zed@corp-mail.io' (found by the "
            "EMAIL pattern) survives replacement") in p


def test_gate_counts_agree(good, tmp_path):
    A, B = good[3], good[4]
    d = _broken(good, tmp_path, "b4")
    m = json.loads((d / "manifest.json").read_text())
    m["counts"][A]["messages"] = 11
    (d / "manifest.json").write_text(json.dumps(m))
    (d / "U03").mkdir()
    p = exporter.check_release(d, good[1], good[2])
    assert f"counts: manifest.json counts.{A}.messages says 11, the files hold 10" in p
    assert "counts: folder U03/ is not listed in manifest.json participants" in p


def test_a_failing_gate_refuses_the_whole_release(store, study, tmp_path, monkeypatch):
    def bad(store, p):
        return [{"id": "c0009", "text": "x", "source_dayids": ["day77-1"], "verdict": "pending"}], None

    monkeypatch.setattr(exporter, "profile_sources", lambda: [bad])
    with pytest.raises(exporter.ReleaseRefused) as e:
        exporter.export(store, tmp_path / "out", seed=1)
    assert "dayids: U01/profile.jsonl line 1: field 'source_dayids': 'day77-1' is not in the conversation" in e.value.problems
    assert not (tmp_path / "out").exists() and not any(tmp_path.glob(".out.staging-*"))
    assert store.conn.execute("SELECT count(*) FROM exports").fetchone()[0] == 0


def test_export_cli(home, tmp_path):
    run = lambda *a, **k: CliRunner().invoke(main, list(a), catch_exceptions=False, **k)  # noqa: E731
    run("consent", "accept", "-p", "ana")
    run("consent", "accept", "-p", "bob", "--scopes", "logging,memory")
    run("chat", "-p", "ana", "--model", "echo", input="my brother Tomasz lives in Gdansk\n")
    out = tmp_path / "rel"
    r = run("export", "--out", str(out), "--seed", "2")
    assert r.exit_code == 0, r.output
    assert "U01: 2 messages" in r.output
    assert "Tomasz" not in _all_text(out) and "Gdansk" not in _all_text(out)
    read_release(out)
    r = run("export", "--out", str(tmp_path / "rel2"), "--participants", "bob")
    assert r.exit_code == 2 and "not consented to export" in r.output
    assert run("export", "--out", str(out)).exit_code == 2  # exists
    assert run("export", "--out", str(out), "--overwrite").exit_code == 0


def test_a_release_carries_the_derived_profile_and_persona_pseudonymized(store, tmp_path, monkeypatch):
    import companion.release_sources

    from memory import extract

    assert exporter.profile_sources() == [companion.release_sources.derived_memory]  # registered, not imported
    records.accept(store, "dina", tz="UTC")
    _say(store, "dina", [("user", "I live in Lisbon with my cat"), ("companion", "Lovely."),
                         ("user", "I'm a real introvert, honestly"), ("companion", "Noted.")],
         datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc))
    extract.consolidate(store, "dina")
    exporter.export(store, tmp_path / "rel", ["dina"], seed=3)
    release = read_release(tmp_path / "rel")
    assert len(release.participants) == 1  # and it reads back in the benchmark format
    profile = (tmp_path / "rel" / "U01" / "profile.jsonl").read_text(encoding="utf-8")
    assert "Lives in" in profile and "Lisbon" not in profile  # the stated place got its surrogate
    assert all(d in {m["dayid"] for m in map(json.loads, (tmp_path / "rel" / "U01" / "conversation.jsonl")
                                             .read_text().splitlines())}
               for row in map(json.loads, profile.splitlines()) for d in row["source_dayids"])
    persona = json.loads((tmp_path / "rel" / "U01" / "persona.json").read_text(encoding="utf-8"))
    assert persona["big_five"]["extraversion"]["value"] == "low"
    assert persona["big_five"]["extraversion"]["evidence"] == ["day1-3"]
