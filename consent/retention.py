"""Retention: messages and traces older than the retention period are removed on a schedule.

`sweep(store, older_than_days)` is the whole job: messages go through the deletion path that
keeps the indexes in step (`memory.messages.delete`: the log row, its vector, the participant's
index epoch so every cache rebuilds), traces of those turns and older traces go too, then the
database is compacted (VACUUM + WAL truncate) so the bytes are gone. Day counters stay: they
hold no content and keep deleted dayids from being handed out again. One audit line per sweep
(counts only).

The app schedules it with APScheduler: `schedule(scheduler, data_dir, older_than_days)` adds an
interval job running `job(data_dir, older_than_days)` (a plain module-level function, so any job
store can keep it).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from consent import audit, erasure
from memory.store import Store

JOB_ID = "consent-retention-sweep"


def _aware(ts: str) -> datetime:
    t = datetime.fromisoformat(ts)
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def sweep(store: Store, older_than_days: float, now: datetime | None = None, compact: bool = True) -> dict:
    """Delete messages and traces older than `older_than_days`; returns counts per participant."""
    if older_than_days < 0:
        raise ValueError(f"older_than_days must be >= 0, got {older_than_days}")
    now = now or datetime.now(timezone.utc)
    cutoff = now - timedelta(days=older_than_days)
    counts: dict[str, dict[str, int]] = {}
    with store.transaction() as c:
        old: dict[str, list[str]] = {}
        for r in c.execute("SELECT participant, dayid, ts FROM messages ORDER BY participant, ordinal"):
            if _aware(r["ts"]) < cutoff:
                old.setdefault(r["participant"], []).append(r["dayid"])
        for p, dayids in old.items():
            erasure.delete_messages(store, p, dayids)
            counts.setdefault(p, {})["messages"] = len(dayids)
        doomed = [(r["id"], r["participant"]) for r in c.execute("SELECT id, participant, created_at FROM traces")
                  if _aware(r["created_at"]) < cutoff]
        c.executemany("DELETE FROM traces WHERE id=?", [(i,) for i, _ in doomed])
        for _, p in doomed:
            counts.setdefault(p, {}).setdefault("traces", 0)
            counts[p]["traces"] += 1
        total = {k: sum(x.get(k, 0) for x in counts.values()) for k in ("messages", "traces")}
        audit.record(c, "retention_sweep", None, cutoff=cutoff.isoformat(), older_than_days=older_than_days,
                     participants=len(counts), **total)
    for p in counts:
        store.bm25.forget(p)
        store.vectors.forget(p)
    if compact and any(total.values()):
        erasure.compact(store)
    return {"cutoff": cutoff.isoformat(), "total": total, "participants": counts}


def job(data_dir: str, older_than_days: float) -> dict:
    """The scheduled job: open the data directory's store, sweep, close."""
    store = Store(data_dir)
    try:
        return sweep(store, older_than_days)
    finally:
        store.close()


def schedule(scheduler, data_dir, older_than_days: float, every_hours: float = 24.0):
    """Add (or replace) the sweep as an interval job on an APScheduler 3.x scheduler."""
    return scheduler.add_job(job, "interval", hours=every_hours, args=[str(data_dir), older_than_days],
                             id=JOB_ID, replace_existing=True, coalesce=True, max_instances=1,
                             next_run_time=datetime.now(timezone.utc))
