"""Reminders and check-ins at their time: a companion message in the participant's log.

A reminder or check-in that runs is stored `scheduled` with its `due_at`. The app's scheduler
(APScheduler, jobs in the same database: companion.scheduler) holds one date job per scheduled
action; `plan` adds the jobs for actions scheduled since its last call (a turn in the CLI has
no running scheduler, so the row is the record and the job follows), and `deliver` is the job:
it writes the message and marks the action delivered, once. An action erased by a withdrawal
is gone from the table, and its job then does nothing.
"""

from __future__ import annotations

from datetime import datetime, timezone

from memory import messages
from memory.store import Store
from wrapper import actions

JOB_PREFIX = "action-"


def text_for(a: actions.ActionRow) -> str:
    if a.kind == "set_reminder":
        return f"Reminder: {a.payload.get('text') or 'you asked me to remind you'}."
    topic = a.payload.get("topic")
    return f"Checking in{' about ' + topic if topic else ''}: how did it go?"


class _NotDue(Exception):
    pass


def deliver_now(store: Store, action_id: int) -> bool:
    """Write the reminder or check-in message and mark the action delivered, in one transaction.
    False when the action is gone (withdrawn, erased) or was already delivered."""
    r = store.conn.execute("SELECT participant FROM actions WHERE id = ?", (action_id,)).fetchone()
    if r is None:
        return False
    a = actions.get(store.conn, r["participant"], action_id)

    def mark(conn, stored):
        if conn.execute("UPDATE actions SET status = 'delivered' WHERE id = ? AND status = 'scheduled'",
                        (action_id,)).rowcount != 1:
            raise _NotDue  # delivered meanwhile, or gone: the message is rolled back with it
        actions.log_event(conn, a.participant, a.id, "delivered", "scheduler", stored[0].dayid)

    try:
        messages.append_many(store, a.participant, [dict(sender="companion", text=text_for(a), context=a.context)],
                             also=mark)
    except _NotDue:
        return False
    return True


def deliver(data_dir: str, action_id: int) -> bool:
    """The scheduled job (module-level, picklable arguments)."""
    from companion.scheduler import store_for

    with store_for(data_dir) as store:
        return deliver_now(store, action_id)


def due(store: Store, now: datetime | None = None) -> list[int]:
    now = now or datetime.now(timezone.utc)
    rows = store.conn.execute("SELECT id, due_at FROM actions WHERE status = 'scheduled' AND due_at IS NOT NULL")
    return [r["id"] for r in rows if datetime.fromisoformat(r["due_at"]) <= now]


def plan(scheduler, store: Store) -> int:
    """Give every scheduled action a date job (idempotent: job ids are the action ids)."""
    from companion.scheduler import add_date_job

    added = 0
    for r in store.conn.execute("SELECT id, due_at FROM actions WHERE status = 'scheduled' AND due_at IS NOT NULL"):
        job_id = f"{JOB_PREFIX}{r['id']}"
        if scheduler.get_job(job_id) is None:
            add_date_job(scheduler, f"{__name__}:deliver", datetime.fromisoformat(r["due_at"]),
                         [str(store.data_dir), r["id"]], job_id)
            added += 1
    return added


def plan_for(data_dir: str) -> int:
    """The app's periodic check (a job): date jobs for actions scheduled since the last one."""
    from companion.scheduler import scheduler_for, store_for

    scheduler = scheduler_for(data_dir)
    if scheduler is None:
        return 0
    with store_for(data_dir) as store:
        return plan(scheduler, store)
