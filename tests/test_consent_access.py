"""Access (download, researcher view) and the retention sweep."""

import json
from datetime import datetime, timedelta, timezone

from apscheduler.schedulers.background import BackgroundScheduler
from click.testing import CliRunner

from companion.cli import main
from companion.turn import turn
from consent import access, audit, records, retention
from memory import messages, traces
from memory.traces import Trace


def test_download_holds_everything_and_serializes(store, ana, settings):
    turn(store, ana, "my sister lives in Porto", settings=settings)
    data = access.download(store, ana)
    json.dumps(data)
    assert data["format"] == "companion-participant-data" and data["participant"] == "ana"
    assert [m["text"] for m in data["messages"]] == ["my sister lives in Porto", "You said: my sister lives in Porto"]
    assert data["messages"][0]["dayid"] == "day1-1"
    assert len(data["traces"]) == 1 and data["traces"][0]["dayid"] == "day1-1"
    assert data["consent"]["state"]["accepted"] and data["consent"]["records"][0]["scopes"] == ["logging", "memory", "export"]
    assert [e["event"] for e in data["consent"]["events"]] == ["accepted"]
    assert "pass_hash" not in data["account"] and data["account"]["tz"] == "Europe/Berlin"
    assert data["message_vectors"]["count"] == 2
    assert "day_counters" in data["other"]


def test_download_cli_writes_the_file(home, tmp_path):
    run = lambda *a, **k: CliRunner().invoke(main, list(a), catch_exceptions=False, **k)  # noqa: E731
    run("consent", "accept", "-p", "ana")
    run("chat", "-p", "ana", "--model", "echo", input="hello\n")
    out = tmp_path / "ana.json"
    r = run("consent", "download", "--participant", "ana", "--out", str(out))
    assert r.exit_code == 0
    data = json.loads(out.read_text())
    assert [m["text"] for m in data["messages"]] == ["hello", "You said: hello"]
    assert run("consent", "download", "-p", "nobody", "--out", str(out)).exit_code == 2


def test_researcher_view_lists_states(store, settings, tmp_path, monkeypatch):
    records.accept(store, "ana", tz="UTC")
    records.accept(store, "bob", tz="UTC", scopes=("logging",))
    turn(store, "ana", "hi", settings=settings)
    view = {r["participant"]: r for r in access.participants_view(store)}
    assert view["ana"]["consent"] == "accepted" and view["ana"]["messages"] == 2
    assert view["bob"]["scopes"] == ["logging"] and view["bob"]["messages"] == 0
    rows = access.participants_rows(store)
    assert rows[0][0] == "ana" and len(rows[0]) == len(access.COLUMNS)


def _old(store, participant, text, days_ago):
    ts = datetime.now(timezone.utc) - timedelta(days=days_ago)
    [m] = messages.append_many(store, participant, [dict(sender="user", text=text, context="personal", ts=ts)])
    with store.transaction() as conn:
        traces.save(store, Trace(participant=participant, dayid=m.dayid, created_at=ts.isoformat()), conn)
    return m


def test_retention_sweep_removes_old_rows_and_keeps_indexes_in_step(store, ana, home):
    _old(store, ana, "ancient-retention-canary words", 40)
    _old(store, ana, "recent words", 1)
    store.bm25.scores(ana, "ancient", as_of=100)  # a warm cache
    r = retention.sweep(store, older_than_days=30)
    assert r["total"] == {"messages": 1, "traces": 1} and r["participants"] == {ana: {"messages": 1, "traces": 1}}
    assert [m.text for m in messages.read(store, ana, 100)] == ["recent words"]
    assert store.bm25.scores(ana, "ancient", as_of=100)[0].sum() == 0
    assert store.conn.execute("SELECT count(*) FROM message_vectors WHERE participant=?", (ana,)).fetchone()[0] == 1
    assert len(traces.list_(store, participant=ana)) == 1
    for f in home.rglob("*"):
        if f.is_file():
            assert b"ancient-retention-canary" not in f.read_bytes(), f
    # the next message does not reuse a swept dayid
    nxt = messages.append(store, ana, "user", "new", "personal")
    assert nxt.dayid not in {"day1-1"}
    assert audit.events(store)[-1]["event"] == "retention_sweep"
    assert retention.sweep(store, older_than_days=30)["total"] == {"messages": 0, "traces": 0}


def test_retention_job_is_schedulable(home, store, ana):
    _old(store, ana, "old", 10)
    sched = BackgroundScheduler(timezone="UTC")
    job = retention.schedule(sched, home, older_than_days=5, every_hours=12)
    assert job.id == retention.JOB_ID and job.trigger.interval == timedelta(hours=12)
    assert job.func is retention.job and job.args == (str(home), 5)
    assert retention.job(str(home), 5)["total"]["messages"] == 1


def test_retention_sweep_takes_the_ratings_of_the_replies_it_removes(store, ana):
    from memory import feedback

    ts = datetime.now(timezone.utc) - timedelta(days=40)
    old_q, old_reply = messages.append_many(store, ana, [
        dict(sender="user", text="an old question", context="personal", ts=ts),
        dict(sender="companion", text="an old reply", context="personal", ts=ts + timedelta(seconds=5))])
    [new_reply] = messages.append_many(store, ana, [dict(sender="companion", text="a new reply", context="personal")])
    feedback.record(store, ana, old_reply.dayid, "down", tag="misfit")
    feedback.record(store, ana, new_reply.dayid, "up")
    retention.sweep(store, older_than_days=30)
    left = store.conn.execute("SELECT dayid FROM feedback WHERE participant=?", (ana,)).fetchall()
    assert [r[0] for r in left] == [new_reply.dayid]
