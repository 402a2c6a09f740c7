"""Crash safety: scripted turns in a child, SIGKILLed many times at seeded points of its work.

The child (tests/crash_child.py) is a zygote: it imports the turn once and forks a worker
per run; each worker runs turns (echo model) for two participants and acknowledges each
turn after `turn` returned. Where each worker dies is drawn from the seed, in terms of its
progress, never of time (`crash_child.plan`): a turn, and a site in it (inside the user
message's, the reply's, the vector's or the deletion's transaction before its J-th statement or
its COMMIT; during a COMMIT; just after a commit; after the acknowledgement). The worker stops
there and the zygote SIGKILLs it. `CRASH_KILLS` (env) sets the number of kills (default 50);
`CRASH_SEED` the seed (default 1). Kills, acknowledged turns and deletions are therefore exact
numbers, the same on an idle or a loaded machine, and asserted as such.

The third turn of each run deletes its reply (logging TRYDEL before, DEL after). What is truly
guaranteed, and asserted here:
- every acknowledged turn's message is stored, exactly once, under the acknowledged dayid, with
  the acknowledged text, and so is its reply unless a delete of it was attempted; the turn's
  trace is stored with them;
- the turn a kill cut short is stored whole up to its last commit and not at all after it: a
  kill before a COMMIT leaves nothing of that transaction, a kill after it leaves all of it;
- a key is assigned in the same transaction as its message, so a killed transaction leaves
  neither: per participant, the ordinals missing from 1..next_ordinal-1 are exactly as many as
  the positions missing from each day's 1..last_j (`day_counters`), and every missing key is
  one whose deletion was attempted; an acknowledged deletion's key is never stored again;
- a reply is stored with its trace (same transaction) and directly follows the user message it
  answers; a trace without its reply is one whose reply was deleted; an unacknowledged user
  message may be stored without a reply;
- `PRAGMA integrity_check` is ok; `message_vectors` has no row without its message, lacks
  only replies whose vector (stored just after the turn was acknowledged) a kill cut off, and
  has one row per message once the index has loaded (which stores what was missing);
  BM25 and dense search over a freshly opened store see exactly the stored messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from memory import keys
from memory.store import Store
from memory.tokens import tokenize
from memory.embeddings import HashEmbedder
from tests import crash_child
from tests.crash_child import LEFT, PARTICIPANTS, text_for

ROOT = Path(__file__).resolve().parent.parent
KILLS = int(os.environ.get("CRASH_KILLS", "50"))
SEED = int(os.environ.get("CRASH_SEED", "1"))
PLAN = crash_child.plan(SEED, KILLS)
# sites where the dying turn's reply is stored but its vector is not (yet)
NO_VECTOR = {"reply-race", "reply-committed", "acked", "trydel", "delete", "vector"}


class Log:
    def __init__(self, path: Path):
        self.acks: list[tuple[str, str, str, str]] = []
        self.tried: set[tuple[str, str]] = set()  # deletion attempted (maybe killed before or after)
        self.deleted: set[tuple[str, str]] = set()  # deletion acknowledged
        self.halts: list[tuple[int, int, str, int]] = []  # (run, k, site, J) where each worker died
        for line in path.read_text(encoding="utf-8").splitlines():
            assert not line.startswith("FAULT"), f"an echo turn reported a model fault: {line}"
            tag, rest = line.split(" ", 1)
            if tag == "ACK":
                p, dayid, reply_dayid, text = rest.split(" ", 3)
                self.acks.append((p, dayid, reply_dayid, text))
            elif tag == "TRYDEL":
                self.tried.add(tuple(rest.split(" ")))
            elif tag == "DEL":
                self.deleted.add(tuple(rest.split(" ")))
            elif tag == "HALT":
                run, k, site, j, _where = rest.split(" ")
                self.halts.append((int(run), int(k), site, int(j)))
            else:
                raise AssertionError(f"unexpected line {line!r}")
        assert self.deleted <= self.tried


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    work = tmp_path_factory.mktemp("crash")
    data, acks = work / "data", work / "acks.log"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tests.crash_child", str(data), str(acks), "--kills", str(KILLS),
         "--seed", str(SEED)],
        cwd=ROOT, capture_output=True, text=True, timeout=3600,  # a safety net, not a measure
    )
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    print(f"\ncrash harness (seed {SEED}): {summary}, wall {elapsed:.1f} s")
    return data, Log(acks), summary


def test_kills_really_happened_at_the_planned_sites_and_the_counts_are_exact(crashed):
    _, log, summary = crashed
    fields = summary.split()
    got = dict(zip(fields[0:8:2], map(int, fields[1:8:2])))
    # every worker died where the plan put it, one kill each, in order
    assert log.halts == [(run, k, site, j) for run, (k, site, j) in enumerate(PLAN)]
    want = crash_child.expected(PLAN)
    assert got == want, f"child counted {got}, the plan makes {want}"
    assert (len(log.acks), len(log.tried), len(log.deleted)) == (want["ACKS"], want["TRIED"], want["DELS"])
    if KILLS >= len(crash_child.pairs()):  # each block of 35 runs visits every (turn, site) pair
        assert {(k, s) for _, k, s, _ in log.halts} == set(crash_child.pairs())
        assert want["DELS"] > 0 and want["ACKS"] >= KILLS


def test_a_turn_cut_short_is_stored_up_to_its_last_commit_and_no_further(crashed):
    data, log, _ = crashed
    store = Store(data)
    try:
        conn = store.conn
        for run, k, site, _ in log.halts:
            if site not in LEFT:  # killed after its acknowledgement: the ACK tests cover it
                continue
            p = PARTICIPANTS[k % 2]
            text = text_for(run, k, p)
            users = conn.execute("SELECT count(*) FROM messages WHERE participant=? AND sender='user' AND text=?",
                                 (p, text)).fetchone()[0]
            replies = conn.execute("SELECT count(*) FROM messages WHERE participant=? AND sender='companion' "
                                   "AND substr(text, 1, ?) = ?", (p, len(text) + 10, f"You said: {text}")).fetchone()[0]
            user_left, reply_left = LEFT[site]
            assert users in ((0, 1) if user_left is None else (int(user_left),)), (run, k, site, users)
            assert replies in ((0, 1) if reply_left is None else (int(reply_left),)), (run, k, site, replies)
            assert replies <= users
    finally:
        store.close()


def test_database_is_intact_and_keys_have_no_gap_or_duplicate(crashed):
    data, log, _ = crashed
    store = Store(data)  # reopening runs WAL recovery after the last kill
    try:
        conn = store.conn
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        for p in PARTICIPANTS:
            rows = conn.execute("SELECT * FROM messages WHERE participant=? ORDER BY ordinal", (p,)).fetchall()
            nxt = conn.execute("SELECT next_ordinal FROM participants WHERE participant=?", (p,)).fetchone()[0]
            ordinals = [r["ordinal"] for r in rows]
            assert ordinals == sorted(set(ordinals)) and ordinals[-1] < nxt
            missing_ordinals = set(range(ordinals[0], nxt)) - set(ordinals)
            dayids = [r["dayid"] for r in rows]
            assert len(set(dayids)) == len(dayids), "a dayid was assigned twice"
            by_day = defaultdict(set)
            for r in rows:
                assert keys.parse_dayid(r["dayid"]) == (r["day_n"], r["day_j"])
                by_day[r["day_n"]].add(r["day_j"])
            counters = dict(conn.execute("SELECT day_n, last_j FROM day_counters WHERE participant=?", (p,)).fetchall())
            assert set(by_day) <= set(counters)
            missing_keys = {keys.format_dayid(n, j) for n, last in counters.items() for j in range(1, last + 1)
                            if j not in by_day.get(n, set())}
            tried = {d for q, d in log.tried if q == p}
            assert missing_keys <= tried, f"{p}: keys {sorted(missing_keys - tried)} skipped"
            assert len(missing_keys) == len(missing_ordinals), f"{p}: ordinals and keys disagree"
            assert not ({d for q, d in log.deleted if q == p} & set(dayids)), "a deleted key is stored"
            # a reply directly follows the user message it answers (ordinal - 1)
            by_ord = {r["ordinal"]: r for r in rows}
            for r in rows:
                if r["sender"] == "companion":
                    prev = by_ord.get(r["ordinal"] - 1)
                    assert prev is not None and prev["sender"] == "user"
                    assert r["text"].startswith(f"You said: {prev['text']}")
            # replies and traces land together; a trace outlives only a deleted reply
            traced = {(t["dayid"], json.loads(t["data"]).get("reply_dayid"))
                      for t in conn.execute("SELECT dayid, data FROM traces WHERE participant=?", (p,))}
            replied = {(by_ord[r["ordinal"] - 1]["dayid"], r["dayid"]) for r in rows if r["sender"] == "companion"}
            assert replied <= traced
            assert {rd for _, rd in traced - replied} <= tried
            # no user text stored twice (a turn is never replayed)
            user_texts = [r["text"] for r in rows if r["sender"] == "user"]
            assert len(set(user_texts)) == len(user_texts)
            print(f"{p}: {len(rows)} messages, {len(traced)} traces, {len(missing_keys)} keys deleted, "
                  f"{sum(1 for r in rows if r['sender'] == 'user') - len(traced)} messages stored unanswered")
    finally:
        store.close()


def test_every_acknowledged_turn_is_stored_exactly_once(crashed):
    data, log, _ = crashed
    store = Store(data)
    try:
        conn = store.conn
        for p, dayid, reply_dayid, text in log.acks:
            got = conn.execute("SELECT dayid, sender FROM messages WHERE participant=? AND text=?", (p, text)).fetchall()
            assert [(r["dayid"], r["sender"]) for r in got] == [(dayid, "user")], f"acknowledged {dayid} of {p}"
            assert conn.execute("SELECT count(*) FROM traces WHERE participant=? AND dayid=?",
                                (p, dayid)).fetchone()[0] == 1
            if (p, reply_dayid) in log.tried:
                continue
            reply = conn.execute("SELECT sender, text FROM messages WHERE participant=? AND dayid=?",
                                 (p, reply_dayid)).fetchone()
            assert reply is not None and reply["sender"] == "companion"
            assert reply["text"].startswith(f"You said: {text}")
    finally:
        store.close()


def test_indexes_agree_with_the_messages(crashed):
    data, log, _ = crashed
    acks = log.acks
    store = Store(data)
    store.vectors.embedder = HashEmbedder()  # the vectors the child stored were made by it
    try:
        conn = store.conn
        for p in PARTICIPANTS:
            msgs = conn.execute("SELECT id, ordinal, text FROM messages WHERE participant=? ORDER BY ordinal",
                                (p,)).fetchall()
            vec_ids = [r[0] for r in conn.execute(
                "SELECT rowid FROM message_vectors WHERE participant=? ORDER BY rowid", (p,))]
            ids = sorted(m["id"] for m in msgs)
            # no vector without its message; a message may lack one only if it is the stored reply
            # of a turn killed after its reply committed and before its vector did (a later run's
            # index load stores most of those again)
            assert set(vec_ids) <= set(ids), "message_vectors holds a row whose message is gone"
            unindexed = set(ids) - set(vec_ids)
            cut_off = {m["id"] for run, k, site, _ in log.halts if site in NO_VECTOR and PARTICIPANTS[k % 2] == p
                       for m in conn.execute("SELECT id FROM messages WHERE participant=? AND sender='companion' "
                                             "AND text LIKE ?", (p, f"You said: {text_for(run, k, p)}%"))}
            assert unindexed <= cut_off, f"{p}: vectors missing that no kill cut off"
            store.vectors.synced(p)  # loading the index embeds and stores what is missing
            vec_ids = [r[0] for r in conn.execute(
                "SELECT rowid FROM message_vectors WHERE participant=? ORDER BY rowid", (p,))]
            assert vec_ids == ids, "message_vectors disagrees with messages after the index loaded"
            as_of = msgs[-1]["ordinal"] + 1
            _, bm25_ordinals, _ = store.bm25.scores(p, "note", as_of)
            _, dense_ordinals = store.vectors.similarities(p, np.zeros(384, dtype=np.float32), as_of)
            assert list(bm25_ordinals) == list(dense_ordinals) == [m["ordinal"] for m in msgs]
            # each acknowledged message is found by its own unique tag and by its own vector
            mine = [a for a in acks if a[0] == p]
            for _, dayid, _, text in mine[:: max(1, len(mine) // 25)]:
                own = conn.execute("SELECT ordinal FROM messages WHERE participant=? AND dayid=?",
                                   (p, dayid)).fetchone()[0]
                tag = text.split()[-1]
                scores, ords, _ = store.bm25.scores(p, tag, as_of)
                expect = {m["ordinal"] for m in msgs if set(tokenize(tag)) <= set(tokenize(m["text"]))}
                assert set(ords[scores > 0].tolist()) == expect and own in expect
                sims, ords = store.vectors.similarities(p, HashEmbedder().encode_one(text), as_of)
                assert ords[int(np.argmax(sims))] == own
    finally:
        store.close()


def test_the_product_store_commits_durably_and_names_a_bad_mode(home):
    from memory.store import Store, StoreError

    s = Store(home)
    try:  # FULL: an acknowledged message survives power loss too, not only a killed process
        assert s.conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        s.close()
    with pytest.raises(StoreError, match="synchronous must be one of"):
        Store(home, synchronous="OFF")
