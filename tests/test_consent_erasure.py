"""Withdrawal erases a participant everywhere, down to the bytes of every file in the data directory."""

import json

import pytest
from click.testing import CliRunner

from companion import trials
from companion.cli import main
from companion.turn import turn
from consent import audit, erasure, records
from memory import feedback, messages, traces
from memory.store import Store, StoreError
from memory.traces import Trace

pytestmark = pytest.mark.both_backends  # the store and turn suites run on SQLite and PostgreSQL

NAME = "zqx-canary-person"
CANARIES = ["QWERTY-canary-7731 my secret diary", "ZEPHYR-canary-5150 lives on Canary Wharf",
            "trace-only-canary-9921"]


def _scan(home) -> dict[str, list[str]]:
    """canary -> files of the data directory whose bytes contain it."""
    hits: dict[str, list[str]] = {}
    files = [f for f in home.rglob("*") if f.is_file()]
    for f in files:
        data = f.read_bytes()
        for c in [*CANARIES, NAME]:
            for needle in (c.split()[0].encode(), c.encode()):
                if needle in data:
                    hits.setdefault(c, []).append(f.name)
    return hits


def _plant(store, settings):
    records.accept(store, NAME, tz="Europe/Berlin")
    records.accept(store, "bob", tz="Europe/Berlin")
    s = settings.model_copy(update={"gate": "always", "retriever": "hybrid"})
    first = turn(store, NAME, CANARIES[0], settings=s)
    bobs = turn(store, "bob", "bob's ordinary day", settings=s)
    feedback.record(store, NAME, first.reply.dayid, "down", tag="forgot")  # feedback rows (m011) go too
    feedback.record(store, NAME, first.reply.dayid, "up")
    feedback.record(store, "bob", bobs.reply.dayid, "up")
    if store.engine == "sqlite":
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # some canaries in the main file ...
    turn(store, NAME, CANARIES[1], settings=s)  # ... some only in the WAL
    t = Trace(participant=NAME, dayid="day1-3", hits=[{"dayid": "day1-1", "snippet": CANARIES[2]}])
    with store.transaction() as conn:
        traces.save(store, t, conn)
    trials.set_arm(store, NAME, "lexical", "bm25", "earlier_turns")
    # the in-memory caches hold the participant too
    store.bm25.scores(NAME, "canary diary", as_of=100)
    store.vectors.synced(NAME)


def test_withdrawal_erases_every_byte_and_keeps_others(store, home, settings):
    _plant(store, settings)
    sqlite = store.engine == "sqlite"  # on PostgreSQL the bytes are the server's (docs/SECURITY.md)
    assert not sqlite or set(_scan(home)) >= {*CANARIES, NAME}  # the scan can see them before
    store.settle()  # the last reply's vector is stored after the turn returned (companion/turn.py)
    before = store.conn.execute("SELECT count(*) FROM message_vectors WHERE participant=?", (NAME,)).fetchone()[0]
    assert before == 4

    report = records.withdraw(store, NAME)

    assert report.counts["messages"] == 4 and report.counts["message_vectors"] == 4
    assert report.counts["traces"] == 3 and report.counts["trials"] == 1
    assert report.counts["consent_records"] == 1 and report.counts["participants"] == 1
    assert report.counts["day_counters"] == 1
    assert report.counts["feedback"] == 2
    assert report.vacuumed and report.wal_truncated == sqlite
    assert report.counts["traces"] == 3  # in the report; the participant is told in plain words:
    assert "your 4 messages" in report.message() and "traces" not in report.message()
    assert ("VACUUM" in report.message()) == (not sqlite)
    assert _scan(home) == {}
    assert not store.compaction_pending()
    # no table still holds the name; the caches forgot the participant
    for t in erasure.participant_tables(store.conn):
        assert store.conn.execute(f"SELECT count(*) FROM {t} WHERE participant=?", (NAME,)).fetchone()[0] == 0
    assert NAME not in store.bm25._parts and NAME not in store.vectors._parts
    assert store.bm25.scores(NAME, "canary diary", as_of=100)[0].size == 0
    # bob is untouched and still searchable
    assert [m.text for m in messages.read(store, "bob", 100)][0] == "bob's ordinary day"
    assert store.bm25.scores("bob", "ordinary", as_of=100)[0].max() > 0
    assert records.status(store, "bob").accepted
    assert [f.rating for f in feedback.current(store, "bob")] == [1]
    # the gate refuses the erased name; re-joining starts from nothing
    st = records.status(store, NAME)
    assert not st.accepted and st.version is None
    assert "Nothing was stored" in turn(store, NAME, "hello?", settings=settings).shown


def test_erasure_survives_a_fresh_process_view(home, settings):
    s1 = Store(home)
    _plant(s1, settings)
    s2 = Store(home)  # another process's cache view (same files)
    s2.bm25.scores(NAME, "canary", as_of=100)
    records.withdraw(s1, NAME)
    # the other store's cache rebuilds (participant row gone) instead of answering from memory
    assert s2.bm25.scores(NAME, "canary", as_of=100)[0].size == 0
    s1.close()
    s2.close()
    assert _scan(home) == {}


def test_audit_log_keeps_no_name_and_no_text(store, home, settings):
    _plant(store, settings)
    records.withdraw_scope(store, NAME, "export")
    records.withdraw(store, NAME)
    evs = audit.events(store, participant=NAME)
    assert [e["event"] for e in evs] == ["accepted", "scope_withdrawn", "withdrawn", "erased"]
    assert evs[0]["version"] == "1" and evs[1]["detail"]["scope"] == "export"
    assert evs[2]["detail"]["records"][0]["version"] == "1"
    assert evs[3]["detail"]["counts"]["messages"] == 4
    raw = json.dumps([dict(r) for r in store.conn.execute("SELECT * FROM consent_events")])
    assert NAME not in raw and "canary" not in raw
    # bob's events are not NAME's
    assert [e["event"] for e in audit.events(store, participant="bob")] == ["accepted"]


def test_withdrawing_one_scope_keeps_chatting(store, settings):
    records.accept(store, "ana", tz="Europe/Berlin")
    turn(store, "ana", "first message", settings=settings)
    st = records.withdraw_scope(store, "ana", "export")
    assert st.accepted and st.scopes == ("logging", "memory") and not st.allows("export")
    r = turn(store, "ana", "still here", settings=settings)
    assert not r.refused and r.shown == "You said: still here"
    assert len(messages.read(store, "ana", 100)) == 4
    # withdrawing logging takes the research traces with it, the conversation stays
    assert len(traces.list_(store, participant="ana")) == 2
    st = records.withdraw_scope(store, "ana", "logging")
    assert st.scopes == ("memory",)
    assert traces.list_(store, participant="ana") == [] and len(messages.read(store, "ana", 100)) == 4
    hist = store.conn.execute("SELECT scopes, withdrawn_at FROM consent_records WHERE participant='ana' "
                              "ORDER BY id").fetchall()
    assert [json.loads(h[0]) for h in hist] == [["logging", "memory", "export"], ["logging", "memory"], ["memory"]]
    assert [h[1] is None for h in hist] == [False, False, True]
    with pytest.raises(StoreError, match="has not consented to 'export'"):
        records.withdraw_scope(store, "ana", "export")
    with pytest.raises(StoreError, match="unknown consent scope 'telepathy'"):
        records.withdraw_scope(store, "ana", "telepathy")


def test_a_new_consent_version_asks_again(store, settings, tmp_path, monkeypatch):
    records.accept(store, "ana", tz="Europe/Berlin")
    turn(store, "ana", "under version one", settings=settings)
    texts = tmp_path / "texts"
    texts.mkdir()
    v1 = records._texts_dir().joinpath("v1.md").read_text(encoding="utf-8")
    (texts / "v1.md").write_text(v1, encoding="utf-8")
    (texts / "v2.md").write_text("---\nversion: 2\nscopes: logging, memory, export\n---\n# Changed text\n",
                                 encoding="utf-8")
    monkeypatch.setattr(records, "_texts_dir", lambda: texts)
    assert records.current().version == "2"
    st = records.status(store, "ana")
    assert st.needs_reconsent and not st.accepted and st.version == "1"
    r = turn(store, "ana", "under version two?", settings=settings)
    assert r.refused and "you accepted version 1, the current one is 2" in r.shown
    assert len(messages.read(store, "ana", 100)) == 2  # nothing stored
    with pytest.raises(StoreError, match="not the current one"):
        records.accept(store, "ana", version="1")
    st = records.accept(store, "ana")
    assert st.accepted and st.version == "2" and not st.needs_reconsent
    assert not turn(store, "ana", "under version two", settings=settings).refused
    ev = audit.events(store, participant="ana")[-1]
    assert ev["event"] == "accepted" and ev["detail"] == {"previous_version": "1", "reconsent": True}


def test_withdraw_unknown_participant_is_refused(store):
    with pytest.raises(StoreError, match="unknown participant 'nobody'"):
        records.withdraw(store, "nobody")


def test_cli_withdraw_reports_counts_and_scope(home):
    run = lambda *a: CliRunner().invoke(main, list(a), catch_exceptions=False)  # noqa: E731
    assert run("consent", "accept", "-p", "ana").exit_code == 0
    CliRunner().invoke(main, ["chat", "-p", "ana", "--model", "echo"], input="hello there\n")
    r = run("consent", "withdraw", "-p", "ana", "--scope", "export")
    assert r.exit_code == 0 and "remaining scopes: logging, memory" in r.output
    assert "ana" in run("consent", "list").output and "logging,memory" in run("consent", "list").output
    r = run("consent", "withdraw", "-p", "ana", "--json", "--yes")
    rep = json.loads(r.output)
    assert rep["counts"]["messages"] == 2 and rep["counts"]["traces"] == 1 and rep["vacuumed"]
    assert rep["wal_truncated"] == (rep["engine"] == "sqlite")  # PostgreSQL: no WAL of ours (docs/SECURITY.md)
    lines = [json.loads(x) for x in run("consent", "audit").output.splitlines()]
    assert [e["event"] for e in lines] == ["accepted", "scope_withdrawn", "withdrawn", "erased"]
    assert "ana" not in run("consent", "audit").output.replace('"scope_withdrawn"', "")
    assert run("consent", "withdraw", "-p", "ana").exit_code == 2
