"""`companion bench store`: the store engines and the turn's fixed costs, as ratios in one run.

    companion bench store [--database postgresql://...] [--small 10000] [--large 100000] [--json]

Without --database a PostgreSQL is started from PyPI's pgserver in a temporary directory (and
stopped after). The conversation is bench recall's synthetic participant (eval/benchrecall.py).
Every ratio is measured in this one run, sides interleaved turn by turn (the machine is noisy);
a turn is timed until its reply is shown, and its work after the reply (the reply's vector) is
settled before the next side is timed, so no side pays for another's background work:

1. engine: echo turn p50 on PostgreSQL / on SQLite, same participant of `small` messages, each
   engine in a process of its own (nothing kept by text is shared: memory.nlp, the embedder's
   cache), the same question to each in turn, the order alternating.
2. many processes: turn p95 of 2 processes x 4 threads (8 participants at once) on one PostgreSQL
   / turn p95 of 1 process with 1 participant; back to back (every participant sends the next
   message the moment a reply arrives: 8 turns of CPU on 2 cores), then with each participant
   taking THINK_S seconds on average (seeded exponential) between a reply and their next message.
3. cold start at `large` messages (per engine): the first query after a restart (a new Store:
   both indexes load, then the decision path) / reading the participant's vectors as one array.
4. stalls at `large`: the slowest of N turns / their median (SQLite); then the same N questions
   again after what signing in reads ahead (memory.answers.prefetch), every cache dropped first;
   then again on the history as live turns leave it (every message's parse stored:
   memory.parses.store_all), after a restart and the read-ahead.
5. turn without generation: echo turn p50 / (the decision path's floor + one message embedding),
   at `small` messages, SQLite (the floor is bench recall's: query embedding, numpy top-10, BM25).
6. first turn after ready: a fresh process runs companion.warmup.warm (what `serve` does before
   "ready"), then its first turn / the median of its later turns; with its RSS at ready and after.

Stored vectors of the `large` participant are hash vectors (HashEmbedder: same size, 384 floats,
so the same bytes to read); the `small` participant's are all-MiniLM-L6-v2, as every query is.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from eval import benchrecall


THINK_S = 2.0  # phase 2's second run: mean seconds a participant takes between a reply and their next message


def _pct(xs, q):
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class _Table:
    """An embedder that answers stored texts from a table (vectors computed once, for both engines)."""

    def __init__(self, table: dict, fallback):
        self.table, self.fallback = table, fallback

    def encode(self, texts, batch_size: int = 64):
        out = np.zeros((len(texts), 384), dtype=np.float32)
        todo = [i for i, t in enumerate(texts) if t not in self.table]
        for i, t in enumerate(texts):
            if t in self.table:
                out[i] = self.table[t]
        if todo:
            out[todo] = self.fallback.encode([texts[i] for i in todo])
        return out

    def encode_one(self, text):
        return self.encode([text])[0]

    def clear_cache(self):
        self.fallback.clear_cache()


def _participant(store, name: str, rows: list[dict], embedder) -> None:
    from memory import messages, participants

    participants.create(store, name, tz="UTC")
    real = store.vectors.embedder
    store.vectors.embedder = embedder
    try:
        for i in range(0, len(rows), 1024):
            messages.append_many(store, name, [dict(r) for r in rows[i: i + 1024]])
    finally:
        store.vectors.embedder = real


def _turn_ms(store, participant, text, settings) -> float:
    from companion.turn import turn

    t = time.perf_counter()
    r = turn(store, participant, text, settings=settings)
    ms = (time.perf_counter() - t) * 1000
    assert r.reply is not None, r.shown
    return ms


def _settings(home):
    from companion.settings import Settings

    return Settings(home=home, model="echo")


def _consent(store, name):
    from consent import records

    records.accept(store, name, tz="UTC")


# ---------------------------------------------------------------- 1 and 5: one process per engine


def side_child(home: str, database: str) -> None:
    """Run in a child process: one store (`database`: "sqlite" or a URL) of the `small`
    participant, driven from stdin one JSON command a line ({"turn": text} or {"floor": text});
    each answered with one line "RESULT {...}" on stdout. Nothing is shared with the other side:
    its parses, readings and remembered vectors are its own, as in a process of its own."""
    from companion import warmup
    from memory.store import Store

    store = Store(home, database=database)
    settings = _settings(home)
    warmup.warm(settings)
    print("RESULT {}", flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if "turn" in cmd:
            ms = _turn_ms(store, "small", cmd["turn"], settings)
            store.settle()  # its reply's vector (off the reply path) is not timed against the next side
            out = {"ms": ms}
        else:
            text = cmd["floor"]
            as_of = store.conn.execute("SELECT next_ordinal FROM participants WHERE participant='small'").fetchone()[0]
            matrix = store.vectors.synced("small").vectors.view
            f = benchrecall.floor(store, "small", text + "  ", matrix, as_of)
            t = time.perf_counter()
            store.vectors.embedder.encode_one(text + "   ")  # a text not yet embedded: no remembered vector
            out = {"floor_ms": f["total"] * 1000, "embed_ms": (time.perf_counter() - t) * 1000}
        print("RESULT " + json.dumps(out), flush=True)
    store.close()


class _Side:
    def __init__(self, home, database):
        code = "import sys; from eval import benchstore as b; b.side_child(sys.argv[1], sys.argv[2])"
        self.p = subprocess.Popen([sys.executable, "-c", code, str(home), database], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        self._read()

    def _read(self) -> dict:
        for line in self.p.stdout:
            if line.startswith("RESULT "):
                return json.loads(line[7:])
        raise RuntimeError(f"a bench side exited ({self.p.wait()})")

    def ask(self, **cmd) -> dict:
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        return self._read()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=600)


# ---------------------------------------------------------------- 6: a fresh process


def first_turn_child(home: str, turns: int) -> dict:
    """Run in a fresh process: warm as `serve` does, then `turns` turns; times and RSS."""
    from companion import warmup
    from memory.store import Store

    store = Store(home)
    settings = _settings(home)
    t = time.perf_counter()
    warmup.warm(settings, store)
    ready_s = time.perf_counter() - t
    rss_ready = _rss_mb()
    _consent(store, "first")
    qs = benchrecall.queries(turns, 11, set())
    times = [_turn_ms(store, "first", q, settings) for q in qs]
    store.close()
    return {"warm_s": round(ready_s, 2), "first_ms": times[0], "later_median_ms": statistics.median(times[1:]),
            "rss_ready_mb": round(rss_ready, 1), "rss_after_mb": round(_rss_mb(), 1), "turns": turns}


# ---------------------------------------------------------------- 2: many processes


def load_child(url: str, home: str, names: list[str], turns: int, think_s: float = 0.0) -> dict:
    """Run in a child process: one thread per participant, `turns` echo turns each; between a
    reply and their next message each participant waits a seeded exponential time of mean
    `think_s` (0: back to back)."""
    import random
    import threading

    from memory import embeddings
    from memory.store import Store

    store = Store(home, database=url)
    store.vectors.embedder = embeddings.HashEmbedder()
    settings = _settings(home)
    _turn_ms(store, names[0], "warm up this process", settings)
    out: dict[str, list[float]] = {}
    start = threading.Barrier(len(names))

    def run(n):
        rng = random.Random(f"think:{n}")
        start.wait()
        out[n] = []
        for k in range(turns):
            if think_s and k:
                time.sleep(rng.expovariate(1.0 / think_s))
            out[n].append(_turn_ms(store, n, f"{n} says number {k} about the garden", settings))

    ts = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    store.close()
    return {"ms": [x for v in out.values() for x in v]}


def _child(fn: str, *args) -> dict:
    code = (f"import json, sys; from eval import benchstore as b; "
            f"print('RESULT ' + json.dumps(b.{fn}(*json.loads(sys.argv[1]))))")
    r = subprocess.run([sys.executable, "-c", code, json.dumps(list(args))], capture_output=True, text=True,
                       env=os.environ.copy(), timeout=3600)
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    if r.returncode != 0 or not line:
        raise RuntimeError(f"{fn} failed: {r.stderr[-2000:]}")
    return json.loads(line[-1][7:])


# ---------------------------------------------------------------- the run


def run(database: str | None, small: int, large: int, turns: int, progress=print) -> dict:
    from companion import warmup
    from memory import embeddings
    from memory.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="companion-bench-store-"))
    server = None
    if database is None:
        import pgserver
        import psycopg

        server = pgserver.get_server(tmp / "pg", cleanup_mode="stop")
        with psycopg.connect(server.get_uri(), autocommit=True) as c:
            c.execute("CREATE DATABASE bench")
        head, _, q = server.get_uri().partition("?")
        database = f"{head.rsplit('/', 1)[0]}/bench?{q}"
    out: dict = {"small": small, "large": large, "turns": turns, "load_average_start": list(os.getloadavg())}
    try:
        lite = Store(tmp / "lite", database="sqlite")
        pg = Store(tmp / "pg-home", database=database)
        settings = _settings(tmp / "lite")
        warmup.warm(settings)
        real = lite.vectors.embedder
        rows = benchrecall.conversation(small, seed=7)
        progress(f"embedding {small} messages once (for both engines)")
        vecs = real.encode([r["text"] for r in rows], batch_size=64)
        table = _Table({r["text"]: v for r, v in zip(rows, vecs)}, real)
        for s in (lite, pg):
            _participant(s, "small", rows, table)
            _consent(s, "small")
        qs = benchrecall.queries(turns + 5, 3, {r["text"] for r in rows})
        # 1 and 5: echo turns on both engines, each in a process of its own, interleaved turn by
        # turn; the floor on SQLite
        progress("1, 5: echo turns on SQLite and PostgreSQL at the small size, and the floor")
        lite.close()
        pg.close()
        sides = {"lite": _Side(tmp / "lite", "sqlite"), "pg": _Side(tmp / "pg-home", database)}
        lite_ms, pg_ms, floor_ms, embed_ms = [], [], [], []
        try:
            for i, q in enumerate(qs):
                order = ("lite", "pg") if i % 2 == 0 else ("pg", "lite")
                took = {k: sides[k].ask(turn=q)["ms"] for k in order}
                f = sides["lite"].ask(floor=q)
                if i >= 5:
                    lite_ms.append(took["lite"])
                    pg_ms.append(took["pg"])
                    floor_ms.append(f["floor_ms"])
                    embed_ms.append(f["embed_ms"])
        finally:
            for side in sides.values():
                side.close()
        lite = Store(tmp / "lite", database="sqlite")
        pg = Store(tmp / "pg-home", database=database)
        out["engine"] = {"sqlite_p50_ms": _pct(lite_ms, 50), "postgres_p50_ms": _pct(pg_ms, 50),
                         "ratio_p50": _pct(pg_ms, 50) / _pct(lite_ms, 50), "n": len(lite_ms)}
        base = _pct(floor_ms, 50) + _pct(embed_ms, 50)
        out["no_generation"] = {"turn_p50_ms": _pct(lite_ms, 50), "floor_p50_ms": _pct(floor_ms, 50),
                                "embed_p50_ms": _pct(embed_ms, 50), "ratio_p50": _pct(lite_ms, 50) / base,
                                "n": len(lite_ms)}
        # 2: many processes on one PostgreSQL
        progress("2: 2 processes x 4 participants vs 1 process x 1 participant on PostgreSQL")
        names = [f"load{i}" for i in range(8)]
        hashed = embeddings.HashEmbedder()
        for n in names:
            _participant(pg, n, benchrecall.conversation(1000, seed=hash(n) % 1000), hashed)
            _consent(pg, n)
        one = _child("load_child", database, str(tmp / "c0"), ["load0"], turns)
        for key, think in (("many_processes", 0.0), ("many_processes_thinking", THINK_S)):
            many = {}
            procs = [subprocess.Popen([sys.executable, "-c",
                                       "import json, sys; from eval import benchstore as b; "
                                       "print('RESULT ' + json.dumps(b.load_child(*json.loads(sys.argv[1]))))",
                                       json.dumps([database, str(tmp / f"c{k + 1}"), names[4 * k: 4 * k + 4], turns,
                                                   think])],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(2)]
            for k, p in enumerate(procs):
                so, se = p.communicate(timeout=3600)
                line = [x for x in so.splitlines() if x.startswith("RESULT ")]
                if not line:
                    raise RuntimeError(se[-2000:])
                many[k] = json.loads(line[-1][7:])["ms"]
            allm = many[0] + many[1]
            out[key] = {"one_p95_ms": _pct(one["ms"], 95), "many_p95_ms": _pct(allm, 95),
                        "ratio_p95": _pct(allm, 95) / _pct(one["ms"], 95), "think_s": think,
                        "n_one": len(one["ms"]), "n_many": len(allm)}
        # 3 and 4: the large participant, on both engines
        progress(f"3, 4: {large} messages per engine (hash vectors), cold start and stalls")
        big = benchrecall.conversation(large, seed=5)
        out["cold_start"] = {}
        for label, s, path in (("sqlite", lite, tmp / "lite"), ("postgresql", pg, tmp / "pg-home")):
            _participant(s, "large", big, hashed)
            _consent(s, "large")
            s.close()
            fresh = Store(path, database="sqlite" if label == "sqlite" else database)
            fresh.vectors.embedder = hashed
            t = time.perf_counter()
            fresh.read_vectors("large", 0)
            read_s = time.perf_counter() - t
            fresh.close()
            fresh = Store(path, database="sqlite" if label == "sqlite" else database)
            fresh.vectors.embedder = hashed
            t = time.perf_counter()
            benchrecall.decision_path(fresh, "large", "what did Ana say about the quarterly report?")
            first_s = time.perf_counter() - t
            out["cold_start"][label] = {"first_query_s": first_s, "read_vectors_s": read_s,
                                        "ratio": first_s / read_s}
            if label == "sqlite":
                from memory import answers, nlp

                quiet = settings.model_copy(update={"retries": 0})
                stall_qs = benchrecall.queries(turns, 9, set())
                stall = [_turn_ms(fresh, "large", q, quiet) for q in stall_qs]
                out["stalls"] = {"median_ms": statistics.median(stall), "max_ms": max(stall),
                                 "ratio_max_median": max(stall) / statistics.median(stall), "n": len(stall)}
                # the same questions again after what signing in reads ahead (companion.warmup.read_ahead),
                # every kept parse, reading and remembered vector dropped first
                nlp.forget()
                embeddings.default().clear_cache()
                t = time.perf_counter()
                answers.prefetch(fresh, "large")
                ahead_s = time.perf_counter() - t
                stall = [_turn_ms(fresh, "large", q, quiet) for q in stall_qs]
                out["stalls_signed_in"] = {"median_ms": statistics.median(stall), "max_ms": max(stall),
                                           "ratio_max_median": max(stall) / statistics.median(stall),
                                           "n": len(stall), "read_ahead_s": ahead_s}
                # and as if the history had been told turn by turn (each turn stores its message's
                # parse, memory.parses), after a restart and the read-ahead
                from memory import parses

                t = time.perf_counter()
                parses.store_all(fresh, "large")
                stored_s = time.perf_counter() - t
                fresh.close()
                fresh = Store(path, database="sqlite")
                fresh.vectors.embedder = hashed
                benchrecall.decision_path(fresh, "large", "what did Ana say about the quarterly report?")
                nlp.forget()
                embeddings.default().clear_cache()
                answers.prefetch(fresh, "large")
                stall = [_turn_ms(fresh, "large", q, quiet) for q in stall_qs]
                out["stalls_told"] = {"median_ms": statistics.median(stall), "max_ms": max(stall),
                                      "ratio_max_median": max(stall) / statistics.median(stall),
                                      "n": len(stall), "parse_and_store_s": stored_s}
            fresh.close()
        # 6: a fresh process
        progress("6: first turn after ready, in a fresh process")
        out["first_turn"] = _child("first_turn_child", str(tmp / "fresh"), max(10, turns // 2))
        out["first_turn"]["ratio"] = out["first_turn"]["first_ms"] / out["first_turn"]["later_median_ms"]
        out["load_average_end"] = list(os.getloadavg())
    finally:
        if server is not None:
            server.cleanup()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return out


def render(r: dict) -> str:
    e, g, m, f = r["engine"], r["no_generation"], r["many_processes"], r["first_turn"]
    lines = [f"store bench: small {r['small']} messages, large {r['large']}, {r['turns']} timed turns a side; "
             f"load average {r['load_average_start'][0]:.1f} -> {r['load_average_end'][0]:.1f} (2 cores)",
             f"1 engine: echo turn p50 PostgreSQL {e['postgres_p50_ms']:.1f} ms / SQLite {e['sqlite_p50_ms']:.1f} ms "
             f"= {e['ratio_p50']:.2f}x (goal <= 1.5, n={e['n']} each)",
             f"2 processes: p95 of 2 processes x 4 participants {m['many_p95_ms']:.1f} ms / 1 process x 1 participant "
             f"{m['one_p95_ms']:.1f} ms = {m['ratio_p95']:.2f}x (goal <= 2, n={m['n_many']} / {m['n_one']}; "
             f"back to back: 8 turns at once on 2 cores, so at least 4x when a turn is all CPU)"]
    if "many_processes_thinking" in r:
        t = r["many_processes_thinking"]
        lines.append(f"2 the same, each participant taking {t['think_s']:.0f} s on average (exponential) before the next "
                     f"message: p95 {t['many_p95_ms']:.1f} ms / {t['one_p95_ms']:.1f} ms = {t['ratio_p95']:.2f}x "
                     f"(n={t['n_many']} / {t['n_one']})")
    for label, c in r["cold_start"].items():
        lines.append(f"3 cold start {label}: first query {c['first_query_s']:.2f} s / vectors read as one array "
                     f"{c['read_vectors_s']:.2f} s = {c['ratio']:.2f}x (goal <= 2, at {r['large']} messages)")
    s = r["stalls"]
    lines += [f"4 stalls at {r['large']}: slowest turn {s['max_ms']:.1f} ms / median {s['median_ms']:.1f} ms = "
              f"{s['ratio_max_median']:.2f}x (goal <= 3, n={s['n']})"]
    if "stalls_signed_in" in r:
        a = r["stalls_signed_in"]
        lines.append(f"4 the same after reading ahead at sign-in ({a['read_ahead_s']:.1f} s, off any turn): slowest "
                     f"{a['max_ms']:.1f} ms / median {a['median_ms']:.1f} ms = {a['ratio_max_median']:.2f}x (n={a['n']})")
    if "stalls_told" in r:
        a = r["stalls_told"]
        lines.append(f"4 the same on a history told turn by turn (its parses stored, {a['parse_and_store_s']:.0f} s "
                     f"for the bulk import), after a restart and the read-ahead: slowest {a['max_ms']:.1f} ms / median "
                     f"{a['median_ms']:.1f} ms = {a['ratio_max_median']:.2f}x (n={a['n']})")
    lines += [
              f"5 no generation: echo turn p50 {g['turn_p50_ms']:.1f} ms / (floor {g['floor_p50_ms']:.1f} + one "
              f"embedding {g['embed_p50_ms']:.1f}) ms = {g['ratio_p50']:.2f}x (goal <= 1.3, n={g['n']})",
              f"6 first turn after ready: {f['first_ms']:.1f} ms / later median {f['later_median_ms']:.1f} ms = "
              f"{f['ratio']:.2f}x (goal <= 2; warm-up before ready {f['warm_s']:.1f} s)",
              f"  memory: RSS at ready {f['rss_ready_mb']:.0f} MB, after {f['turns']} turns {f['rss_after_mb']:.0f} MB"]
    return "\n".join(lines)


@click.command("store")
@click.option("--database", default=None, help="postgresql://... (default: a pgserver in a temp directory)")
@click.option("--small", type=click.IntRange(min=100), default=10000, show_default=True)
@click.option("--large", type=click.IntRange(min=100), default=100000, show_default=True)
@click.option("--turns", type=click.IntRange(min=10), default=40, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def bench_store(database, small, large, turns, as_json):
    """PostgreSQL against SQLite, many processes, cold start, stalls, fixed costs of a turn."""
    r = run(database, small, large, turns, progress=lambda s: print(s, file=sys.stderr, flush=True))
    click.echo(json.dumps(r) if as_json else render(r))
