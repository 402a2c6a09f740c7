"""Many processes, one database: two app processes on one PostgreSQL serve 8 participants at once
(50 turns each, through the HTTP API); one participant withdraws half way; one process is
SIGKILLed right after a given acknowledged turn and its participants sign in on the other.

Counted, never timed: every acknowledged message is stored once (with its reply), no dayid is
assigned twice, the withdrawn participant leaves no row in any table, and the surviving process
serves every remaining turn. A turn is acknowledged when its reply reached the client: the
reply's row is committed before the app returns it (companion/turn.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memory.store import Store, tables_with_column
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
N, TURNS = 8, 50
KILL_AT = (0, 20)  # participant 0 (on process A): the kill follows its 20th acknowledged turn
WITHDRAW_AT = (7, 25)  # participant 7 (on process B) withdraws after its 25th


def name(i: int) -> str:
    return f"mp{i}"


def start(home: Path):
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    err = open(home.parent / f"{home.name}.stderr", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "tests.serve_child", str(port), str(home)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=err, text=True, env=os.environ.copy())
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        proc.kill()
        proc.wait()
        err.seek(0)
        raise AssertionError(f"app process did not start: {line!r}\n{err.read()[-3000:]}")
    return proc, f"http://127.0.0.1:{port}/"


def _texts(chat) -> str:
    out = []
    for m in chat or []:
        c = m.get("content") if isinstance(m, dict) else m
        out.append(str(c))
    return "\n".join(out)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_two_app_processes_one_database_kill_and_withdrawal(home, tmp_path):
    from gradio_client import Client

    procs = [start(tmp_path / "a")]
    try:
        procs.append(start(tmp_path / "b"))
    except BaseException:
        procs[0][0].kill()
        procs[0][0].wait()
        raise
    killed = threading.Event()
    acks: dict[int, list[str]] = {i: [] for i in range(N)}
    moved: dict[int, int] = {}  # participant -> acknowledged turns served by B after A died
    errors: list[str] = []
    withdrawn = threading.Event()

    def client_on(p: int, i: int, new: bool) -> Client:
        c = Client(procs[p][1], verbose=False, httpx_kwargs={"timeout": 300})  # a loaded machine is slow, never wrong
        c.predict(name(i), f"{name(i)}-pass", api_name="/sign_in")
        if new:
            c.predict(api_name="/accept")
        return c

    def participant(i: int) -> None:
        p, c = i % 2, first[i]
        k = attempt = 0
        while k < TURNS:
            text = f"turn {k} try {attempt} from zq{i}x"
            try:
                chat = c.predict(text, "personal", [], api_name="/respond")[0]
            except Exception as e:  # noqa: BLE001  (the killed process: move to the other one)
                attempt += 1
                if p == 0 and killed.is_set():
                    p = 1
                    try:
                        c = client_on(1, i, new=False)
                    except Exception as e2:  # noqa: BLE001
                        errors.append(f"{name(i)} sign-in on B: {e2}")
                        return
                    continue
                errors.append(f"{name(i)} turn {k}: {type(e).__name__}: {e}")
                if attempt > 3:
                    return
                continue
            if f"You said: {text}" not in _texts(chat):
                errors.append(f"{name(i)} turn {k}: no echo in {_texts(chat)[-300:]!r}")
                return
            acks[i].append(text)
            if p == 1 and i % 2 == 0:
                moved[i] = moved.get(i, 0) + 1
            k, attempt = k + 1, 0
            if (i, k) == KILL_AT and p == 0:
                killed.set()  # before the signal: a turn in flight on A fails as soon as A dies
                procs[0][0].send_signal(signal.SIGKILL)
                procs[0][0].wait()
            if (i, k) == WITHDRAW_AT:
                c.predict(True, api_name="/withdraw")
                withdrawn.set()
                return

    try:
        first = {i: client_on(i % 2, i, new=True) for i in range(N)}  # sign-ups one by one; turns at once
        threads = [threading.Thread(target=participant, args=(i,)) for i in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=1800)
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    assert errors == []
    assert killed.is_set() and procs[0][0].returncode == -signal.SIGKILL
    assert withdrawn.is_set()
    gone = name(WITHDRAW_AT[0])

    store = Store(home)
    try:
        conn = store.conn
        lost = dup = 0
        for i in range(N):
            if i == WITHDRAW_AT[0]:
                continue
            for text in acks[i]:
                got = conn.execute("SELECT sender FROM messages WHERE participant=? AND text=?", (name(i), text)).fetchall()
                # the echo reply repeats the message, then may name what it recalled: " (I recalled ...)"
                said = f"You said: {text}"
                reply = sum(1 for (t,) in conn.execute(
                    "SELECT text FROM messages WHERE participant=? AND sender='companion' AND substr(text, 1, ?) = ?",
                    (name(i), len(said), said)) if t == said or t.startswith(said + " ("))
                lost += (len(got) != 1) + (reply != 1)
            dup += conn.execute("SELECT count(*) FROM (SELECT dayid FROM messages WHERE participant=? GROUP BY dayid "
                                "HAVING count(*) > 1) d", (name(i),)).fetchone()[0]
            # keys are dense: every j up to the day's counter is a message (no reply was deleted here)
            for n, last in conn.execute("SELECT day_n, last_j FROM day_counters WHERE participant=?", (name(i),)):
                have = conn.execute("SELECT count(*) FROM messages WHERE participant=? AND day_n=?", (name(i), n)).fetchone()[0]
                dup += have != last
        left = {t: conn.execute(f'SELECT count(*) FROM "{t}" WHERE participant=?', (gone,)).fetchone()[0]
                for t in tables_with_column(conn, "participant")}
        left = {t: n for t, n in left.items() if n}
        served = {i: len(acks[i]) for i in range(N)}
        print(f"\nmulti-process: acknowledged turns {served}; served by B after A's kill {moved}; "
              f"lost {lost}, duplicate or missing dayids {dup}, rows of {gone} left {left}")
        assert lost == 0 and dup == 0 and left == {}
        assert served == {i: (WITHDRAW_AT[1] if i == WITHDRAW_AT[0] else TURNS) for i in range(N)}
        # A's participants finished on B: the other process kept serving. How far the others had got
        # when A died depends on the machine's load; the one that triggered the kill is exact.
        assert moved.get(KILL_AT[0]) == TURNS - KILL_AT[1]
        assert all(moved.get(i, 0) >= 1 for i in range(0, N, 2))
    finally:
        store.close()
