"""Scheduled jobs of the app, kept in the app's own database (table `scheduler_jobs`).

APScheduler 3.x with `DbJobStore` as its default job store: jobs live in `companion.db`
beside everything else (one file to back up, copy or erase), so a reminder scheduled for
next week survives a restart, and one that fell due while the app was down runs when it
starts (`add_date_job` sets no misfire grace time).

A stored job names its function by reference ("module:function") and carries only
picklable arguments (ids, dates, the data directory), never a live `Store`: a job run opens
the store of its data directory with `store_for`, which hands back the app's own open
store when the app registered it (`build` does), so jobs share its connections and caches.
"""

from __future__ import annotations

import contextlib
import pickle
import weakref
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from apscheduler.job import Job
from apscheduler.jobstores.base import BaseJobStore, ConflictingIdError, JobLookupError, TransientJobError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.util import datetime_to_utc_timestamp, utc_timestamp_to_datetime

from memory.store import Store

CONSOLIDATE_ID = "consolidate"
OUTREACH_ID = "outreach-plan"

# Stores the app has open, by data directory: jobs use them instead of opening a second one.
_open: weakref.WeakValueDictionary[str, Store] = weakref.WeakValueDictionary()


def _key(data_dir: Path | str) -> str:
    return str(Path(data_dir).expanduser().resolve())


# Schedulers the app runs, by data directory: the outreach check adds date jobs to its own.
_schedulers: weakref.WeakValueDictionary[str, BackgroundScheduler] = weakref.WeakValueDictionary()


def scheduler_for(data_dir: Path | str) -> BackgroundScheduler | None:
    return _schedulers.get(_key(data_dir))


def register(store: Store) -> None:
    """Let jobs of this data directory use `store` (the app's) rather than open their own."""
    _open[_key(store.data_dir)] = store


@contextlib.contextmanager
def store_for(data_dir: Path | str) -> Iterator[Store]:
    """The registered store of `data_dir`, or a store opened for this job run and closed after."""
    store = _open.get(_key(data_dir))
    if store is not None:
        yield store
        return
    store = Store(data_dir)
    try:
        yield store
    finally:
        store.close()


class DbJobStore(BaseJobStore):
    """An APScheduler 3.x job store over `scheduler_jobs` in the app's SQLite file.

    Modelled on APScheduler's SQLAlchemyJobStore: one row per job, `next_run_time` as a UTC
    timestamp (NULL: paused), the job's state pickled. A row that cannot be restored (its
    function was renamed, say) is logged and dropped, as SQLAlchemyJobStore does.
    """

    def __init__(self, store: Store, pickle_protocol: int = pickle.HIGHEST_PROTOCOL):
        super().__init__()
        self.store = store
        self.pickle_protocol = pickle_protocol

    def lookup_job(self, job_id):
        r = self.store.conn.execute("SELECT job_state FROM scheduler_jobs WHERE id=?", (job_id,)).fetchone()
        if r is None:
            return None
        try:
            return self._restore(r["job_state"])
        except BaseException:  # e.g. a job stored by an older version under a moved function: placed again
            self._logger.exception('Unable to restore job "%s" -- removing it', job_id)
            with self.store.transaction() as conn:
                conn.execute("DELETE FROM scheduler_jobs WHERE id=?", (job_id,))
            return None

    def get_due_jobs(self, now):
        return self._jobs("WHERE next_run_time <= ?", (datetime_to_utc_timestamp(now),))

    def get_next_run_time(self):
        r = self.store.conn.execute(
            "SELECT MIN(next_run_time) FROM scheduler_jobs WHERE next_run_time IS NOT NULL").fetchone()
        return utc_timestamp_to_datetime(r[0])

    def get_all_jobs(self):
        jobs = self._jobs()
        self._fix_paused_jobs_sorting(jobs)
        return jobs

    def add_job(self, job):
        if not job.func_ref:
            raise TransientJobError(job.id)
        with self.store.transaction() as conn:
            if conn.execute("SELECT 1 FROM scheduler_jobs WHERE id=?", (job.id,)).fetchone():
                raise ConflictingIdError(job.id)
            conn.execute("INSERT INTO scheduler_jobs (id, next_run_time, job_state) VALUES (?,?,?)",
                         (job.id, datetime_to_utc_timestamp(job.next_run_time), self._state(job)))

    def update_job(self, job):
        with self.store.transaction() as conn:
            cur = conn.execute("UPDATE scheduler_jobs SET next_run_time=?, job_state=? WHERE id=?",
                               (datetime_to_utc_timestamp(job.next_run_time), self._state(job), job.id))
            if cur.rowcount == 0:
                raise JobLookupError(job.id)

    def remove_job(self, job_id):
        with self.store.transaction() as conn:
            if conn.execute("DELETE FROM scheduler_jobs WHERE id=?", (job_id,)).rowcount == 0:
                raise JobLookupError(job_id)

    def remove_all_jobs(self):
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM scheduler_jobs")

    def _state(self, job) -> bytes:
        return pickle.dumps(job.__getstate__(), self.pickle_protocol)

    def _restore(self, blob: bytes) -> Job:
        state = pickle.loads(blob)
        state["jobstore"] = self
        job = Job.__new__(Job)
        job.__setstate__(state)
        job._scheduler = self._scheduler
        job._jobstore_alias = self._alias
        return job

    def _jobs(self, where: str = "", args: tuple = ()) -> list[Job]:
        rows = self.store.conn.execute(
            f"SELECT id, job_state FROM scheduler_jobs {where} ORDER BY next_run_time, id", args).fetchall()
        jobs, failed = [], []
        for r in rows:
            try:
                jobs.append(self._restore(r["job_state"]))
            except BaseException:
                self._logger.exception('Unable to restore job "%s" -- removing it', r["id"])
                failed.append(r["id"])
        if failed:
            with self.store.transaction() as conn:
                conn.executemany("DELETE FROM scheduler_jobs WHERE id=?", [(i,) for i in failed])
        return jobs

    def __repr__(self):
        return f"<{self.__class__.__name__} ({self.store.path})>"


def due_for_consolidation(store: Store, participant: str, idle_minutes: float, every: int,
                          now: datetime | None = None) -> bool:
    """New messages wait for extraction until the participant falls silent for `idle_minutes`
    or `every` of them have piled up: never on the reply's path, never far behind."""
    from memory import derived

    done = derived.processed_ordinal(store, participant)
    r = store.conn.execute("SELECT COUNT(*) AS n, MAX(ts) AS last FROM messages WHERE participant=? AND ordinal>?",
                           (participant, done)).fetchone()
    if not r["n"]:
        return False
    if r["n"] >= every:
        return True
    now = now or datetime.now(timezone.utc)
    return (now - datetime.fromisoformat(r["last"])).total_seconds() >= idle_minutes * 60


def extractor_for(model: str | None, capable: bool, timeout: float = 120.0):
    """The rules alone, or the rules and the model when it is marked capable (never the
    embedded demo model, local/...)."""
    from companion.settings import CAPABLE_EXTRACTOR, DEFAULT_EXTRACTOR
    from memory import extract

    if not (capable and model) or model.startswith("local/"):
        return extract.build(DEFAULT_EXTRACTOR)
    from companion import gateway

    return extract.build(CAPABLE_EXTRACTOR,
                         lambda msgs: gateway.complete(model, msgs, timeout=timeout, max_tokens=600).text)


def consolidate_all(store: Store, idle_minutes: float | None = None, every: int | None = None,
                    model: str | None = None, capable: bool = False) -> dict[str, int]:
    """Derive memory from new messages of every participant who consented to memory (with
    `idle_minutes` and `every`: only of those due, see `due_for_consolidation`)."""
    from consent import records as consent
    from memory import extract, participants

    done = {}
    for p in participants.names(store):
        if not consent.status(store, p).allows("memory"):
            continue
        if idle_minutes is not None and every is not None and not due_for_consolidation(store, p, idle_minutes, every):
            continue
        done[p] = extract.consolidate(store, p, extractor_for(model, capable)).messages
    return done


def consolidate(data_dir: str, idle_minutes: float | None = None, every: int | None = None,
                model: str | None = None, capable: bool = False) -> dict[str, int]:
    """The scheduled consolidation: every consenting participant of the data directory who is due."""
    with store_for(data_dir) as store:
        return consolidate_all(store, idle_minutes, every, model, capable)


def build(settings, store: Store) -> BackgroundScheduler:
    """The app's scheduler (not started): jobs in `store`'s database, the fixed jobs (re)placed.

    Fixed jobs: every `settings.consolidate_minutes` a check that consolidates the participants
    who fell silent for `settings.consolidate_idle_minutes` or have `settings.consolidate_every`
    new messages, a check every 30 s that gives new reminders and check-ins their date jobs and, if
    `settings.retention_days` is set, the daily retention sweep. Jobs other code added
    (reminders, check-ins) are already in the table and are kept.
    """
    from consent import retention

    register(store)
    jobs = DbJobStore(store)
    scheduler = BackgroundScheduler(daemon=True, jobstores={"default": jobs})
    scheduler.add_job(f"{__name__}:consolidate", "interval",
                      args=[str(store.data_dir), settings.consolidate_idle_minutes, settings.consolidate_every,
                            settings.model, settings.model_capable],
                      minutes=settings.consolidate_minutes, max_instances=1, coalesce=True,
                      id=CONSOLIDATE_ID, replace_existing=True)
    _schedulers[_key(store.data_dir)] = scheduler
    scheduler.add_job(f"{__name__}:plan_for", "interval", args=[str(store.data_dir)], seconds=30,
                      max_instances=1, coalesce=True, id=OUTREACH_ID, replace_existing=True)
    if settings.retention_days:
        retention.schedule(scheduler, store.data_dir, settings.retention_days)
    else:  # switched off since the last start: the stored sweep must not keep running
        with contextlib.suppress(JobLookupError):
            jobs.remove_job(retention.JOB_ID)
    return scheduler


def add_date_job(scheduler, func_ref: str, run_date: datetime, args: list | tuple, job_id: str) -> Job:
    """Run `func_ref` ("module:function") once at `run_date` (timezone-aware), with `args`.

    Replaces a job of the same id. No misfire grace time: a job that fell due while the app
    was down runs as soon as the scheduler starts. `args` must pickle (ids, not live objects).
    """
    if not isinstance(func_ref, str) or ":" not in func_ref:
        raise ValueError(f"func_ref must be a 'module:function' reference, got {func_ref!r}")
    if run_date.tzinfo is None:
        raise ValueError(f"run_date must be timezone-aware, got {run_date!r}")
    return scheduler.add_job(func_ref, "date", run_date=run_date, args=list(args), id=job_id,
                             replace_existing=True, misfire_grace_time=None)


# ---------------------------------------------------------------- reminders and check-ins at their time
#
# A reminder or check-in that runs is stored `scheduled` with its `due_at`. The scheduler holds
# one date job per scheduled action; `plan` adds the jobs for actions scheduled since its last
# call (a turn in the CLI has no running scheduler, so the row is the record and the job
# follows), and `deliver` is the job: it writes the message and marks the action delivered,
# once. An action erased by a withdrawal is gone from the table, and its job then does nothing.

ACTION_JOB_PREFIX = "action-"


def reminder_text(a) -> str:
    if a.kind == "set_reminder":
        return f"Reminder: {a.payload.get('text') or 'you asked me to remind you'}."
    topic = a.payload.get("topic")
    return f"Checking in{' about ' + topic if topic else ''}: how did it go?"


class _NotDue(Exception):
    pass


def deliver_now(store: Store, action_id: int) -> bool:
    """Write the reminder or check-in message and mark the action delivered, in one transaction.
    False when the action is gone (withdrawn, erased) or was already delivered."""
    from memory import actions, messages

    who = actions.owner(store, action_id)
    if who is None:
        return False
    a = actions.get(store.conn, who, action_id)

    def mark(conn, stored):
        if not actions.mark_delivered(conn, a, stored[0].dayid):
            raise _NotDue  # delivered meanwhile, or gone: the message is rolled back with it

    try:
        messages.append_many(store, a.participant, [dict(sender="companion", text=reminder_text(a),
                                                         context=a.context)], also=mark)
    except _NotDue:
        return False
    return True


def deliver(data_dir: str, action_id: int) -> bool:
    """The scheduled job (module-level, picklable arguments)."""
    with store_for(data_dir) as store:
        return deliver_now(store, action_id)


def due(store: Store, now: datetime | None = None) -> list[int]:
    from memory import actions

    now = now or datetime.now(timezone.utc)
    return [i for i, at in actions.scheduled(store) if datetime.fromisoformat(at) <= now]


def plan(scheduler, store: Store) -> int:
    """Give every scheduled action a date job (idempotent: job ids are the action ids). A job
    stored by an older version under a function that moved (wrapper.outreach:deliver) cannot be
    restored; the job store drops it and it is placed again here."""
    from memory import actions

    added, ref = 0, f"{__name__}:deliver"
    for action_id, at in actions.scheduled(store):
        job_id = f"{ACTION_JOB_PREFIX}{action_id}"
        if scheduler.get_job(job_id) is None:
            add_date_job(scheduler, ref, datetime.fromisoformat(at), [str(store.data_dir), action_id], job_id)
            added += 1
    return added


def plan_for(data_dir: str) -> int:
    """The app's periodic check (a job): date jobs for actions scheduled since the last one."""
    scheduler = scheduler_for(data_dir)
    if scheduler is None:
        return 0
    with store_for(data_dir) as store:
        return plan(scheduler, store)
