"""Scheduled jobs live in companion.db (DbJobStore): they survive a restart and run when due."""

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from apscheduler.jobstores.base import ConflictingIdError, JobLookupError, TransientJobError
from apscheduler.schedulers.background import BackgroundScheduler

from companion import scheduler as jobs
from consent import records as consent
from memory import messages
from memory.store import Store

RAN: dict[str, list] = {}
DONE = threading.Event()


def record(tag, *args):
    """A job target: referenced as "tests.test_scheduler:record"."""
    RAN.setdefault(tag, []).append(args)
    DONE.set()


@pytest.fixture(autouse=True)
def clean():
    RAN.clear()
    DONE.clear()


def _scheduler(store):
    return BackgroundScheduler(jobstores={"default": jobs.DbJobStore(store)}, timezone=timezone.utc)


def _rows(store):
    return [tuple(r) for r in store.conn.execute("SELECT id, next_run_time FROM scheduler_jobs ORDER BY id")]


def test_a_job_survives_a_new_scheduler_over_the_same_file(home):
    store = Store(home)
    when = datetime.now(timezone.utc) + timedelta(days=7)
    s = _scheduler(store)
    s.start(paused=True)
    jobs.add_date_job(s, "tests.test_scheduler:record", when, ["reminder", 42], "reminder-42")
    s.shutdown(wait=False)
    store.close()

    again = Store(home)  # the app restarted: a new store and scheduler over the same file
    assert _rows(again) == [("reminder-42", pytest.approx(when.timestamp()))]
    s2 = _scheduler(again)
    s2.start(paused=True)
    job = s2.get_job("reminder-42")
    assert job.func is record and job.args == ("reminder", 42) and job.next_run_time == when
    assert job.misfire_grace_time is None
    s2.shutdown(wait=False)
    again.close()


def test_due_jobs_come_back_sorted_and_future_ones_wait(store):
    s = _scheduler(store)
    s.start(paused=True)
    now = datetime.now(timezone.utc)
    for i, minutes in enumerate((-5, 30, -60)):
        jobs.add_date_job(s, "tests.test_scheduler:record", now + timedelta(minutes=minutes), [i], f"j{i}")
    js = jobs.DbJobStore(store)
    assert [j.id for j in js.get_due_jobs(now)] == ["j2", "j0"]
    assert js.get_next_run_time() == now - timedelta(minutes=60)
    assert [j.id for j in js.get_all_jobs()] == ["j2", "j0", "j1"]
    assert js.lookup_job("j1").args == (1,) and js.lookup_job("nope") is None
    s.pause_job("j2")  # paused jobs sort last
    assert [j.id for j in js.get_all_jobs()] == ["j0", "j1", "j2"]
    s.remove_all_jobs()  # a scheduler shut down while paused still runs due jobs once
    s.shutdown(wait=False)


def test_store_errors_name_the_job(store):
    s = _scheduler(store)
    s.start(paused=True)
    when = datetime.now(timezone.utc) + timedelta(hours=1)
    job = s.add_job("tests.test_scheduler:record", "date", run_date=when, args=["x"], id="once")
    js = jobs.DbJobStore(store)
    with pytest.raises(ConflictingIdError, match="once"):
        js.add_job(job)
    with pytest.raises(ConflictingIdError):
        s.add_job("tests.test_scheduler:record", "date", run_date=when, args=["y"], id="once")
    js.remove_job("once")
    with pytest.raises(JobLookupError, match="once"):
        js.remove_job("once")
    with pytest.raises(JobLookupError, match="once"):
        js.update_job(job)
    with pytest.raises(TransientJobError):  # a lambda has no reference to store
        s.add_job(lambda: None, "date", run_date=when, id="lambda")
    with pytest.raises(ValueError, match="module:function"):
        jobs.add_date_job(s, "record", when, [], "bad")
    with pytest.raises(ValueError, match="timezone-aware"):
        jobs.add_date_job(s, "tests.test_scheduler:record", when.replace(tzinfo=None), [], "naive")
    jobs.add_date_job(s, "tests.test_scheduler:record", when, ["first"], "a")
    jobs.add_date_job(s, "tests.test_scheduler:record", when + timedelta(hours=1), ["moved"], "a")  # replaces
    assert [(j.id, j.args) for j in js.get_all_jobs()] == [("a", ("moved",))]
    js.remove_all_jobs()
    assert _rows(store) == []
    s.shutdown(wait=False)


def test_a_running_scheduler_runs_a_date_job_and_forgets_it(store):
    s = _scheduler(store)
    s.start()
    jobs.add_date_job(s, "tests.test_scheduler:record", datetime.now(timezone.utc) + timedelta(seconds=0.5),
                      ["ping", 7], "ping")
    assert DONE.wait(10)
    assert RAN == {"ping": [(7,)]}
    deadline = time.time() + 5
    while _rows(store) and time.time() < deadline:  # a date job leaves the table once run
        time.sleep(0.05)
    assert _rows(store) == []
    s.shutdown()


def test_a_job_due_while_the_app_was_down_runs_at_start(home):
    store = Store(home)
    s = _scheduler(store)
    s.start(paused=True)
    jobs.add_date_job(s, "tests.test_scheduler:record", datetime.now(timezone.utc) + timedelta(seconds=1),
                      ["late"], "late")
    s.shutdown(wait=False)
    store.close()
    time.sleep(2.5)  # the app is down when it falls due
    again = Store(home)
    s2 = _scheduler(again)
    s2.start()
    assert DONE.wait(10)
    assert RAN == {"late": [()]}
    s2.shutdown()
    again.close()


def test_the_app_scheduler_keeps_its_fixed_jobs_once_and_consolidates(home, settings):
    store = Store(home)
    consent.accept(store, "ana", tz="Europe/Berlin")
    messages.append(store, "ana", "user", "I live in Lisbon", context="personal")
    fixed = ["consolidate", "outreach-plan"]
    for _ in range(2):  # two starts of the app: the fixed job is replaced, not duplicated
        s = jobs.build(settings.model_copy(update={"retention_days": 30}), store)
        s.start(paused=True)
        assert sorted(j.id for j in s.get_jobs()) == ["consent-retention-sweep", *fixed]
        s.shutdown(wait=False)
    s = jobs.build(settings.model_copy(update={"consolidate_idle_minutes": 0}), store)  # retention off: it goes
    assert [r[0] for r in _rows(store)] == fixed
    s.start(paused=True)
    s.get_job("consolidate").func(*s.get_job("consolidate").args)  # what the interval run does
    from memory import claims

    assert [c.text for c in claims.current(store, "ana")] == ["Lives in Lisbon"]
    s.shutdown(wait=False)
    store.close()


def test_consolidation_waits_for_silence_or_a_pile_of_messages(store):
    consent.accept(store, "ana", tz="UTC")
    t0 = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
    for i in range(3):
        messages.append(store, "ana", "user", f"I live in Lisbon {i}", "personal", ts=t0 + timedelta(minutes=i))
    last = t0 + timedelta(minutes=2)
    assert not jobs.due_for_consolidation(store, "ana", 5, 20, now=last + timedelta(minutes=4))
    assert jobs.due_for_consolidation(store, "ana", 5, 20, now=last + timedelta(minutes=5))
    assert jobs.due_for_consolidation(store, "ana", 5, 3, now=last)  # three new ones: no need to wait
    jobs.consolidate_all(store)
    assert not jobs.due_for_consolidation(store, "ana", 5, 1, now=last + timedelta(days=1))  # nothing new


def test_a_reminder_set_in_a_turn_reaches_the_participant_through_the_app_scheduler(home, settings):
    from companion.turn import turn
    from companion import actions, scheduler as outreach

    store = Store(home)
    consent.accept(store, "ana", tz="UTC")
    turn(store, "ana", "Just do it, don't ask me first.", settings=settings)
    r = turn(store, "ana", "remind me to stretch in 1 minute", settings=settings)
    [run] = r.trace.actions_run
    with store.transaction() as conn:  # bring it forward: a test does not wait a minute
        conn.execute("UPDATE actions SET due_at = ? WHERE id = ?",
                     ((datetime.now(timezone.utc) + timedelta(seconds=1)).isoformat(), run["id"]))
    s = jobs.build(settings, store)
    s.start()
    try:
        assert outreach.plan_for(str(home)) == 1 and outreach.plan_for(str(home)) == 0  # one job per action
        deadline = time.time() + 15
        while actions.get(store.conn, "ana", run["id"]).status != "delivered" and time.time() < deadline:
            time.sleep(0.1)
        assert messages.read(store, "ana", 10**9)[-1].text == "Reminder: stretch."
    finally:
        s.shutdown()
        store.close()
