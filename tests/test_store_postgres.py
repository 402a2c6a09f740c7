"""The PostgreSQL engine's own promises: the connection behaves like sqlite3's for the portable
SQL the code writes, and concurrent writers in several processes never share a key."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memory.storage.postgres import translate

ROOT = Path(__file__).resolve().parent.parent


def test_placeholders_and_percent_signs_are_translated_outside_quotes_only():
    assert translate("SELECT * FROM t WHERE a=? AND b LIKE 'x%' AND c='?'") == (
        "SELECT * FROM t WHERE a=%s AND b LIKE 'x%%' AND c='?'", False)
    assert translate('SELECT "we?ird" FROM t WHERE x = ?')[0] == 'SELECT "we?ird" FROM t WHERE x = %s'
    # an INSERT into a table with a generated id reports lastrowid through RETURNING id
    assert translate("INSERT INTO traces (participant) VALUES (?)") == (
        "INSERT INTO traces (participant) VALUES (%s) RETURNING id", True)
    assert translate("INSERT INTO day_counters VALUES (?, ?, ?)")[1] is False  # no id column
    assert translate("INSERT INTO feedback (x) VALUES (?) RETURNING id")[1] is False  # asked itself


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_the_connection_reads_and_writes_alike_on_both_engines(store, ana):
    conn = store.conn
    with store.transaction() as c:
        cur = c.execute("INSERT INTO traces (participant, created_at, decision, data) VALUES (?,?,?,?)",
                        (ana, datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc), True, "{}"))
        assert isinstance(cur.lastrowid, int) and cur.lastrowid > 0
        tid = cur.lastrowid
        assert c.execute("UPDATE traces SET arm=? WHERE participant=?", ("a%b", ana)).rowcount == 1
    r = conn.execute("SELECT id, participant, created_at, decision, arm FROM traces WHERE id=?", (tid,)).fetchone()
    assert r["id"] == r[0] == tid and r["participant"] == ana
    assert r["created_at"] == "2026-03-01 09:30:00+00:00"  # a datetime is stored as sqlite3 stores it
    assert r["decision"] == 1 and type(r["decision"]) is int  # a bool as 0/1
    assert dict(r)["arm"] == "a%b" and r.keys() == ["id", "participant", "created_at", "decision", "arm"]
    (n,) = conn.execute("SELECT count(*) FROM traces WHERE arm LIKE 'a%'").fetchone()
    assert n == 1
    assert type(conn.execute("SELECT SUM(decision) FROM traces").fetchone()[0]) is int
    assert tuple(conn.execute("SELECT MAX(3, ?), MIN(3, ?)", (5, 1)).fetchone()) == (5, 1)
    assert conn.execute("SELECT json_extract(?, '$.a')", (json.dumps({"a": "day1-2"}),)).fetchone()[0] == "day1-2"
    assert conn.execute("SELECT 1 WHERE 1 = 0").fetchone() is None
    assert not conn.in_transaction
    with pytest.raises(RuntimeError):
        with store.transaction() as c:
            c.execute("UPDATE traces SET arm='rolled back' WHERE id=?", (tid,))
            raise RuntimeError("abort")
    assert conn.execute("SELECT arm FROM traces WHERE id=?", (tid,)).fetchone()[0] == "a%b"


WRITER = """
import sys, threading
from memory import embeddings, messages
from memory.store import Store
store = Store(sys.argv[1])
store.vectors.embedder = embeddings.HashEmbedder()
tag = sys.argv[2]
def run(t):
    for k in range(25):
        messages.append(store, "ana", "user", f"{tag} thread {t} message {k}", "personal")
ts = [threading.Thread(target=run, args=(t,)) for t in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
store.close()
print("DONE")
"""


@pytest.mark.both_backends
def test_writers_in_two_processes_never_share_a_key(store, ana, home):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(home), tag], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for tag in ("one", "two")]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and "DONE" in out, err[-2000:]
    rows = store.conn.execute("SELECT ordinal, dayid, day_n, day_j, text FROM messages WHERE participant=? "
                              "ORDER BY ordinal", (ana,)).fetchall()
    assert len(rows) == 200 and len({r["text"] for r in rows}) == 200
    assert [r["ordinal"] for r in rows] == list(range(1, 201))  # none skipped, none twice
    assert len({r["dayid"] for r in rows}) == 200
    counters = dict(store.conn.execute("SELECT day_n, last_j FROM day_counters WHERE participant=?", (ana,)).fetchall())
    for n, last in counters.items():
        assert sorted(r["day_j"] for r in rows if r["day_n"] == n) == list(range(1, last + 1))
    vec = store.conn.execute("SELECT count(*) FROM message_vectors WHERE participant=?", (ana,)).fetchone()[0]
    assert vec == 200
