"""Rate limits in the store: a withdrawn participant's counts go with the rest of them, in the
erasure's transaction; on PostgreSQL a limit's check-and-record is atomic per key (a lost
update would let two connections both slip under it) and takes no lock that stops anyone else."""

from __future__ import annotations

import threading

import pytest

from companion.auth import SignInGuard
from consent import erasure
from consent import records as consent
from memory import limits
from memory.store import Store

RATINGS = [limits.Limit(3, 60.0)]


def _rows(store) -> set[str]:
    return {r[0] for r in store.conn.execute("SELECT key FROM rate_events")}


def _counts(store):
    guard = SignInGuard(store, "participant")
    page = SignInGuard(store, "researcher-page")
    for who in ("ana", "ben"):
        consent.accept(store, who, tz="UTC")
        for address in ("10.0.0.1", "2001:db8::7"):
            guard.failed(who, address)
        assert limits.take(store, f"rating:{who}", RATINGS, subject=who) == 0.0
    page.failed("ana", "10.0.0.1")  # the researcher page's count is not a participant's
    return guard, page


@pytest.mark.both_backends
def test_withdrawal_erases_every_rate_limit_key_of_the_participant_and_no_other(store, backend):
    guard, page = _counts(store)
    before = _rows(store)
    assert len(before) == 2 * (2 + 1 + 1) + 2  # per participant: 2 addresses, the name, ratings; page: 2
    assert guard.blocked_for("ana", "10.0.0.1") == 0.0 and limits.wait(
        store, "rating:ana", RATINGS[0], subject="ana") == 0.0
    assert not any("ana" in k or "10.0.0.1" in k for k in before)  # digests only, no name or address in clear

    gone = erasure.erase(store, "ana")

    assert gone.counts["rate_events"] == 5  # 2 addresses, the name twice (one per address), 1 rating
    after = _rows(store)
    assert len(after) == len(before) - 4
    mine = {limits.stored_key(k, "ana") for k in
            ("participant@:ana@10.0.0.1", "participant@:ana@2001:db8::7", "participant:ana", "rating:ana")}
    assert mine <= before and not (mine & after)
    # ben's counts and the researcher page's stand
    assert limits.stored_key("participant:ben", "ben") in after
    assert limits.stored_key("researcher-page@:ana@10.0.0.1") in after
    assert limits.stored_key("researcher-page:ana") in after


@pytest.mark.both_backends
def test_rate_limit_rows_go_in_the_erasures_transaction(store, backend, monkeypatch):
    _counts(store)
    before = _rows(store)

    def broken(conn, store, participant):  # a later hook fails: the whole erasure rolls back
        raise RuntimeError("hook failed")

    monkeypatch.setattr(erasure, "_HOOKS", erasure._HOOKS + [broken])
    with pytest.raises(RuntimeError):
        erasure.erase(store, "ana", vacuum=False)
    assert _rows(store) == before
    assert store.conn.execute("SELECT 1 FROM participants WHERE participant='ana'").fetchone() is not None


def _waiting(watch) -> bool:
    """Whether some connection of this database waits for a lock (seen from another one)."""
    return watch.conn.execute("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                              "WHERE NOT l.granted AND d.datname = current_database()").fetchone()[0] > 0


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_take_is_atomic_per_key_across_connections(home, backend, monkeypatch):
    """A reads the count (2 of 3), then holds until B has either finished its own take (a lost
    update: both record, 4 > 3) or is seen waiting for A's lock; only then A records and commits.
    With the key's lock B reads after A's commit and is refused."""
    a, b, watch = Store(home), Store(home), Store(home)
    try:
        consent.accept(a, "ana", tz="UTC")
        for _ in range(2):
            assert limits.take(a, "rating:ana", RATINGS, subject="ana") == 0.0
        real_wait = limits.wait
        a_read, b_done = threading.Event(), threading.Event()
        results: dict[str, float] = {}

        def paused_wait(store, *args, **kw):
            w = real_wait(store, *args, **kw)
            if store is a and not a_read.is_set():
                a_read.set()
                while not (b_done.is_set() or _waiting(watch)):
                    b_done.wait(0.01)
            return w

        monkeypatch.setattr(limits, "wait", paused_wait)

        def run_a():
            results["a"] = limits.take(a, "rating:ana", RATINGS, subject="ana")

        def run_b():
            a_read.wait()
            results["b"] = limits.take(b, "rating:ana", RATINGS, subject="ana")
            b_done.set()

        ta, tb = threading.Thread(target=run_a), threading.Thread(target=run_b)
        tb.start()
        ta.start()
        ta.join(120)
        tb.join(120)
        assert not ta.is_alive() and not tb.is_alive()
        stored = a.conn.execute("SELECT count(*) FROM rate_events WHERE key=?",
                                (limits.stored_key("rating:ana", "ana"),)).fetchone()[0]
        assert stored == 3, f"{stored} events recorded under a limit of 3 (a lost update)"
        assert results["a"] == 0.0 and results["b"] > 0  # B, second, was told to wait
    finally:
        for s in (a, b, watch):
            s.close()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_limit_takes_no_lock_that_stops_other_writers(home, backend):
    """While one key's take is held open and a participant's turn transaction is open, another
    key's take completes (the global writer lock is never taken exclusively by a limit)."""
    holder, turn, other, watch = Store(home), Store(home), Store(home), Store(home)
    try:
        consent.accept(holder, "ana", tz="UTC")
        consent.accept(holder, "ben", tz="UTC")
        release = threading.Event()
        held = threading.Event()

        def hold():
            with holder.transaction(key=limits.stored_key("rating:ana", "ana")):
                with turn.transaction(participant="ana") as c:
                    c.execute("UPDATE participants SET tz='UTC' WHERE participant='ana'")
                    held.set()
                    release.wait(120)

        t = threading.Thread(target=hold)
        t.start()
        held.wait(120)
        done = threading.Event()

        def take_other():
            limits.take(other, "rating:ben", RATINGS, subject="ben")
            done.set()

        o = threading.Thread(target=take_other)
        o.start()
        blocked = False
        while not done.is_set():
            if _waiting(watch):
                blocked = True
                break
            done.wait(0.01)
        release.set()
        t.join(120)
        o.join(120)
        assert not blocked, "a rate limit of one key waited for another key's lock or a turn"
        assert limits.wait(other, "rating:ben", limits.Limit(1, 60.0), subject="ben") > 0
    finally:
        for s in (holder, turn, other, watch):
            s.close()
