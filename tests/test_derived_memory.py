"""Derived memory stores: provenance, supersession with history, as-of views, deletion with
tombstones, contexts kept apart, the re-capture guard, the file budget, version restore."""

from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from companion.cli import main
from consent import erasure
from memory import cells, claims, derived, extract, filememory, messages, registry
from memory.context import TurnContext
from memory.store import StoreError

T0 = datetime(2026, 3, 2, 8, tzinfo=timezone.utc)


def say(store, p, rows):
    """rows: (sender, text, context); one message an hour."""
    n = messages.next_ordinal(store, p)
    return [messages.append(store, p, s, t, c, ts=T0 + timedelta(hours=n + i)) for i, (s, t, c) in enumerate(rows)]


def ctx(store, p, as_of, context="personal", text="where do I live"):
    return TurnContext(store=store, participant=p, text=text, context=context, as_of=as_of)


@pytest.fixture
def talked(store, ana):
    msgs = say(store, ana, [
        ("user", "I'm 34 and I work nights at the hospital.", "personal"),       # 1
        ("companion", "Night shifts are hard. Do you live near the hospital?", "personal"),  # 2
        ("user", "I live in Porto. My sister Ana lives in Porto too.", "personal"),  # 3
        ("user", "Just the short version, please.", "work"),                      # 4
        ("user", "I moved to Lisbon last week.", "personal"),                     # 5
        ("user", "I live in Lisbon now and I love it.", "personal"),              # 6
    ])
    extract.consolidate(store, ana)
    return msgs


def test_every_item_has_provenance(store, ana, talked):
    dayids = {m.dayid for m in talked}
    all_claims, all_cells = claims.all_(store, ana), cells.all_(store, ana)
    assert all_claims and all_cells
    for item in [*all_claims, *all_cells]:
        assert item.source_dayids and set(item.source_dayids) <= dayids
        assert item.from_dayid in dayids and item.valid_from >= 1 and item.verdict == "supported"
    for line in filememory.lines(store, ana):
        assert line.source_dayids and line.since_dayid in dayids and line.scope in ("work", "personal")
        assert f"since {line.since_dayid}" in line.markdown() and line.source_dayids[0] in line.markdown()
    # Nothing from the companion's message (day1-2) is remembered.
    assert all("day1-2" not in i.source_dayids for i in [*all_claims, *all_cells])
    rows = extract.profile_rows(store, ana)
    assert set(rows[0]) == {"id", "text", "category", "confidence", "valid_from", "valid_to", "source_dayids", "verdict"}


def test_supersession_keeps_history_and_one_current_value(store, ana, talked):
    residence = [c for c in claims.all_(store, ana) if c.slot == "residence"]
    assert [c.text for c in residence] == ["Lives in Porto", "Lives in Lisbon"]
    porto, lisbon = residence
    assert porto.status == "superseded" and porto.superseded_by == lisbon.id and porto.to_dayid == talked[4].dayid
    assert lisbon.status == "current" and lisbon.valid_to is None
    # "I live in Lisbon now" restates: one more source, no new claim.
    assert lisbon.source_dayids == [talked[4].dayid, talked[5].dayid]
    for as_of in range(1, 9):
        now = [c for c in claims.current(store, ana, as_of=as_of) if c.slot == "residence"]
        assert len(now) <= 1
    hist = claims.history(store, ana, lisbon.id)
    assert [c["text"] for c in hist["slot_history"]] == ["Lives in Porto", "Lives in Lisbon"]
    assert any(e["event"] == "supersedes" for e in hist["events"])
    # The sister's residence is a different slot: untouched.
    assert any(c.text == "Sister Ana lives in Porto" and c.status == "current" for c in claims.all_(store, ana))
    # The file memory replaced the line, and kept the old one in an earlier version.
    text = filememory.render(store, ana)
    assert "Lives in Lisbon" in text and "- Lives in Porto" not in text
    assert any("- Lives in Porto" in filememory.version_text(store, ana, v["version"])
               for v in filememory.versions(store, ana))


def test_as_of_hides_later_items(store, ana, talked):
    before_move = talked[4].ordinal  # a probe at the "I moved" message sees only what precedes it
    now = claims.current(store, ana, as_of=before_move)
    assert "Lives in Porto" in [c.text for c in now] and "Lives in Lisbon" not in [c.text for c in now]
    later = claims.current(store, ana, as_of=talked[5].ordinal)
    lisbon = [c for c in later if c.text == "Lives in Lisbon"][0]
    assert lisbon.source_dayids == [talked[4].dayid]  # the restatement at day1-6 is still in the future
    assert claims.current(store, ana, as_of=1) == []
    assert "Lisbon" not in filememory.render(store, ana, as_of=before_move)
    assert "Lives in Porto" in filememory.render(store, ana, as_of=before_move)
    # Retrievers read as of the bound too.
    profile = registry.create("retriever", "profile")
    hits = profile.search(ctx(store, ana, before_move), "where do I live", 5)
    assert [h.text for h in hits] == ["Lives in Porto", "Sister Ana lives in Porto"]
    assert hits[0].dayid == talked[2].dayid and hits[0].ordinal == talked[2].ordinal
    hits = profile.search(ctx(store, ana, talked[5].ordinal + 1), "where do I live", 5)
    assert hits[0].text == "Lives in Lisbon"
    file_hits = registry.create("retriever", "file").search(ctx(store, ana, before_move), "", 3)
    # k is ignored: the whole file (age, work, residence, the sister, where she lives, the preference)
    assert all("Lisbon" not in h.text for h in file_hits) and len(file_hits) == 6
    assert registry.create("retriever", "preferences").search(ctx(store, ana, talked[3].ordinal, "work"), "", 5) == []


def test_preference_cells_keep_work_and_personal_apart(store, ana, talked):
    # "Just the short version" while work replies are already brief steps to terse (issue 25 item 4)
    assert cells.settings_for(store, ana, "work") == {"verbosity": "terse"}
    assert cells.settings_for(store, ana, "personal") == {}
    say(store, ana, [("user", "At work give me more detail, actually.", "personal"),
                     ("user", "Show me your reasoning, for both work and personal stuff.", "work")])
    extract.consolidate(store, ana)
    assert cells.settings_for(store, ana, "work") == {"verbosity": "detailed", "reasoning_visibility": "show"}
    assert cells.settings_for(store, ana, "personal") == {"reasoning_visibility": "show"}
    hist = cells.history(store, ana, "work", "verbosity")
    assert [(c.setting, c.status) for c in hist] == [("terse", "superseded"), ("detailed", "current")]
    say(store, ana, [("user", "Keep it short.", "personal")])
    extract.consolidate(store, ana)
    assert cells.settings_for(store, ana, "work")["verbosity"] == "detailed"  # a personal correction stays there
    assert cells.settings_for(store, ana, "personal")["verbosity"] == "terse"  # brief is the personal default
    hits = registry.create("retriever", "preferences").search(ctx(store, ana, 1 << 40, "work"), "", 10)
    assert {h.text.split(":")[0] for h in hits} == {"verbosity", "reasoning_visibility"}


def test_deletion_everywhere_and_no_re_extraction(store, ana, talked):
    age = [c for c in claims.current(store, ana) if c.slot == "age"][0]
    line = filememory.line_for_origin(store, ana, f"claim:{age.id}")
    assert line is not None
    claims.delete(store, ana, age.id)
    assert all(c.slot != "age" for c in claims.all_(store, ana))
    assert "34" not in filememory.render(store, ana)
    assert all("34 years" not in filememory.version_text(store, ana, v["version"]) for v in filememory.versions(store, ana))
    n_events = store.conn.execute("SELECT COUNT(*) FROM memory_events WHERE detail LIKE '%34 years%'").fetchone()[0]
    assert n_events == 0
    # Not again from the same message, by consolidation or by a full rebuild.
    extract.consolidate(store, ana)
    report = extract.rebuild(store, ana)
    assert report.tombstoned == 1 and all(c.slot != "age" for c in claims.all_(store, ana))
    # Nor in other words from the same message (a model extractor may rephrase).
    p = extract.Proposal("claim", "Is thirty-four", [talked[0].dayid], "I'm 34", slot="age", extractor="model")
    rep = extract.Report(ana, "model")
    extract.merge(store, ana, p, extract.verify(store, ana, p), rep)
    assert rep.tombstoned == 1 and all(c.slot != "age" for c in claims.all_(store, ana))
    # Said again: remembered again.
    say(store, ana, [("user", "I'm 34, by the way.", "personal")])
    extract.consolidate(store, ana)
    again = [c for c in claims.current(store, ana) if c.slot == "age"]
    assert len(again) == 1 and again[0].source_dayids == ["day1-7"]


def test_deleting_a_line_deletes_its_claim_and_a_cell_everywhere(store, ana, talked):
    cell = cells.current(store, ana, "work")[0]
    cells.delete(store, ana, cell.id)
    assert cells.all_(store, ana) == [] and "short replies" not in filememory.render(store, ana)
    extract.rebuild(store, ana)
    assert cells.all_(store, ana) == []
    sister = [c for c in claims.current(store, ana) if c.slot == "sister:ana:residence"][0]
    line = filememory.line_for_origin(store, ana, f"claim:{sister.id}")
    filememory.delete_line(store, ana, line.id)
    assert all(c.slot != "sister:ana:residence" for c in claims.all_(store, ana))


def test_erasure_removes_derived_memory(store, ana, talked):
    erasure.erase(store, ana)
    for table in ("memory_claims", "memory_cells", "memory_file_lines", "memory_file_versions",
                  "memory_events", "memory_tombstones", "memory_state"):
        assert store.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table


def test_recapture_guard(store, ana, talked):
    injected = [line.text for line in filememory.lines(store, ana)]
    derived.note_injected(store, ana, talked[-1].ordinal + 1, injected)
    # The companion repeating memory is never a source: proposals citing it are refused.
    [echo] = say(store, ana, [("companion", "You told me: I work nights at the hospital and I live in Lisbon.", "personal")])
    fake = extract.Proposal("claim", "Works nights at the hospital", [echo.dayid], "I work nights at the hospital",
                            slot="work", extractor="model")
    assert extract.verify(store, ana, fake).verdict == "refused"
    report = extract.consolidate(store, ana)
    assert report.proposals == 0 and report.claims == {}
    # A line removed from the file, injected earlier, is not captured back by consolidation ...
    line = [x for x in filememory.lines(store, ana) if x.text == "Works nights at the hospital"][0]
    filememory.remove(store, ana, line.id)
    with pytest.raises(filememory.Recapture):
        filememory.add(store, ana, "personal", "Works nights at the hospital", sources=[(talked[0].dayid, 1)],
                       origin="claim:999")
    # ... while the participant may write it back by hand.
    assert filememory.add(store, ana, "personal", "Works nights at the hospital").origin == "manual"


def test_budget_policy_refuses_and_keeps_the_claim(store, ana):
    say(store, ana, [("user", "I'm 34.", "personal")])
    extract.consolidate(store, ana)
    size = len(filememory.render(store, ana))
    say(store, ana, [("user", "I have a cat called Miso and I live in Porto.", "personal")])
    report = extract.consolidate(store, ana, budget_chars=size + 5)
    assert report.lines_refused == {"budget": 2}
    assert {c.text for c in claims.current(store, ana)} == {"Is 34 years old", "Has a cat called Miso", "Lives in Porto"}
    assert len(filememory.render(store, ana)) == size  # nothing evicted, nothing added
    with pytest.raises(filememory.MemoryFull):
        filememory.add(store, ana, "personal", "x" * 50, budget_chars=size + 5)
    refused = store.conn.execute("SELECT COUNT(*) FROM memory_events WHERE event='refused_budget'").fetchone()[0]
    assert refused == 3
    # Replacing with a line that does not grow the document is allowed when full.
    line = filememory.lines(store, ana)[0]
    filememory.replace(store, ana, line.id, "Is 34", budget_chars=size + 5)


def test_single_line_edits_versions_and_restore(store, ana, talked):
    before = filememory.render(store, ana)
    v_before = filememory.versions(store, ana)[-1]["version"]
    a = filememory.add(store, ana, "work", "Prefers mornings for planning")
    b = filememory.replace(store, ana, a.id, "Prefers early mornings for planning")
    assert "early mornings" in filememory.render(store, ana) and "- Prefers mornings" not in filememory.render(store, ana)
    first = filememory.lines(store, ana)[0]
    filememory.remove(store, ana, first.id)
    assert first.text not in filememory.render(store, ana)
    with pytest.raises(StoreError):
        filememory.add(store, ana, "work", "Prefers early mornings for planning")  # duplicate line
    n = filememory.restore(store, ana, v_before)
    assert filememory.render(store, ana) == before
    assert filememory.versions(store, ana)[-1]["version"] == n and n > v_before
    # Every version is kept: the one with the edit is still readable and restorable.
    with_edit = [v["version"] for v in filememory.versions(store, ana) if v["op"].startswith("replace") and
                 "early mornings" in filememory.version_text(store, ana, v["version"])]
    filememory.restore(store, ana, with_edit[0])
    assert "early mornings" in filememory.render(store, ana) and b.id not in [x.id for x in filememory.lines(store, ana)]


def test_cli_memory_commands(store, ana, talked, home, tmp_path):
    store.close()
    r = CliRunner().invoke(main, ["memory", "show", "-p", ana, "--json"], catch_exceptions=False)
    assert r.exit_code == 0 and '"Lives in Lisbon"' in r.output
    r = CliRunner().invoke(main, ["memory", "consolidate", "-p", ana, "--json"], catch_exceptions=False)
    assert r.exit_code == 0 and '"messages": 0' in r.output  # the high-water mark holds
    r = CliRunner().invoke(main, ["memory", "rebuild", "-p", ana], catch_exceptions=False)
    assert r.exit_code == 0 and "6 messages" in r.output
    out = tmp_path / "exp"
    r = CliRunner().invoke(main, ["memory", "export", "-p", ana, "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0 and "0 Big Five traits" in r.output  # nothing here says how Ana is
    import json

    persona = json.loads((out / "persona.json").read_text())
    assert persona["slots"]["residence"] == {"value": "Lisbon", "strength": "strong", "evidence": ["day1-5", "day1-6"]}
    assert persona["slots"]["age"]["value"] == "34" and persona["big_five"] == {} and persona["descriptions"] == []

    rows = [json.loads(x) for x in (out / "profile.jsonl").read_text().splitlines()]
    porto = [x for x in rows if x["text"] == "Lives in Porto"][0]
    assert porto["valid_to"] == "day1-5" and porto["verdict"] == "supported"
    r = CliRunner().invoke(main, ["memory", "consolidate", "-p", "nobody"])
    assert r.exit_code == 2


def test_edit_supersedes_and_rebuild_keeps_hand_written_lines(store, ana, talked):
    from memory import persona

    lisbon = [c for c in claims.current(store, ana) if c.slot == "residence"][0]
    edited = claims.edit(store, ana, lisbon.id, "Lives in Lisbon, in Alfama")
    assert edited.origin == "manual" and edited.source_dayids == lisbon.source_dayids
    assert [c.text for c in claims.all_(store, ana) if c.slot == "residence"] == \
        ["Lives in Porto", "Lives in Lisbon", "Lives in Lisbon, in Alfama"]
    assert persona.persona(store, ana, as_of=talked[4].ordinal)["slots"]["residence"]["value"] == "Porto"
    assert "- Lives in Lisbon, in Alfama" in filememory.render(store, ana)
    assert "- Lives in Lisbon _(" not in filememory.render(store, ana)
    mine = filememory.add(store, ana, "personal", "Call me by my nickname, Nana")
    extract.rebuild(store, ana)
    assert mine.id in [x.id for x in filememory.lines(store, ana)]
    # The correction survives a rebuild, as the current value, with its file line.
    now = [c for c in claims.current(store, ana) if c.slot == "residence"]
    assert [(c.text, c.origin) for c in now] == [("Lives in Lisbon, in Alfama", "manual")]
    assert "- Lives in Lisbon, in Alfama" in filememory.render(store, ana)
    assert "- Lives in Lisbon _(" not in filememory.render(store, ana)


def test_a_rebuild_puts_back_lines_that_were_injected_since(store, ana, talked):
    before = sorted(line.text for line in filememory.lines(store, ana))
    assert before  # the fixture's consolidation wrote lines ...
    derived.note_injected(store, ana, talked[-1].ordinal + 1, before)  # ... and later turns carried them
    report = extract.rebuild(store, ana)
    assert report.lines_refused.get("recapture") is None
    assert sorted(line.text for line in filememory.lines(store, ana)) == before
