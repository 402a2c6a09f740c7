"""Concurrency benchmark: many participants chatting at once through the served app's HTTP API.

    python -m eval.loadtest --participants 20 --turns 5 [--fast-embedder] [--json]

Starts the Gradio app on loopback (a fresh temporary data directory, the `echo` model, the
queue set up as `companion serve` sets it up), then each simulated participant, in its own
thread with its own gradio_client session, signs in as a new name, accepts consent and sends
its turns as fast as replies come back; all start together. It checks:

- no call failed;
- no reply crossing: every reply (and the memory line under it) contains the participant's own
  words and no other participant's;
- no memory crossing: each participant's stored messages are theirs alone, all of them
  (2 per turn, with dayids day1-1 .. day1-2T when the run stays within one day);

and prints per-turn latency (p50, p95, max) as the client sees it (send to final reply).
Exit status 1 if a check failed. The test suite runs a small version (tests/test_reliability_load.py).
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


import companion  # noqa: F401  (no-telemetry environment first)



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def name_of(i: int) -> str:
    return f"p{i:02d}"


def tag_of(i: int) -> str:
    return f"zq{i:02d}x"  # one word no other participant says (and nothing else contains)


TAG = re.compile(r"zq\d\dx")


def text_of(i: int, k: int) -> str:
    return f"turn {k} from {tag_of(i)} about my plan number {k} with {tag_of(i)}"


def _texts(chat) -> list[str]:
    out = []
    for m in chat or []:
        c = m.get("content") if isinstance(m, dict) else m
        if isinstance(c, list):
            out += [str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in c]
        else:
            out.append(str(c))
        md = m.get("metadata") if isinstance(m, dict) else None
        if md and md.get("title"):
            out.append(str(md["title"]))
    return out


def _participant(url: str, i: int, turns: int, start: threading.Barrier, out: dict) -> None:
    from gradio_client import Client

    me, tag = name_of(i), tag_of(i)
    errors, crossings, lat = [], [], []
    try:
        c = Client(url, verbose=False)
        start.wait(timeout=120)
        c.predict(me, f"{me}-passphrase", api_name="/sign_in")  # a new name: the consent stage
        c.predict(api_name="/accept")
        chat: list = []
        for k in range(turns):
            text = text_of(i, k)
            t0 = time.perf_counter()
            try:
                chat = c.predict(text, "personal", chat, api_name="/respond")[0]
            except Exception as e:  # noqa: BLE001  (a failed call is what we count)
                errors.append(f"{me} turn {k}: {type(e).__name__}: {e}")
                continue
            lat.append(time.perf_counter() - t0)
            said = _texts(chat[-3:])  # this turn: message, reply, memory line
            reply = next((t for t in said if t.startswith("You said: ")), None)
            if reply is None or not reply.startswith(f"You said: {text}"):
                errors.append(f"{me} turn {k}: no echo of the message in {said!r}")
            others = {t for s in _texts(chat) for t in TAG.findall(s)} - {tag}
            if others:
                crossings.append(f"{me} turn {k}: saw {sorted(others)}")
            if any("could not be taken" in s or "went wrong" in s for s in said):
                errors.append(f"{me} turn {k}: {said!r}")
    except Exception as e:  # noqa: BLE001
        errors.append(f"{me}: {type(e).__name__}: {e}")
    out[i] = {"errors": errors, "crossings": crossings, "latencies": lat}


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100 * len(xs) + 0.5)) - 1))]


def run(participants: int = 20, turns: int = 5, fast_embedder: bool = False, data_dir: str | None = None,
        concurrency_limit: int = 8, progress=None) -> dict:
    from companion import app
    from companion.settings import Settings
    from memory import embeddings, messages, traces
    from memory.store import Store

    tmp = None
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="companion-load-")
        data_dir = tmp.name
    settings = Settings(home=Path(data_dir), model="echo", retries=0)
    store = Store(settings.data_dir)
    if fast_embedder:
        store.vectors.embedder = embeddings.HashEmbedder()
    t0 = time.perf_counter()
    store.vectors.embedder.encode(["warm up"])  # as `companion serve` does before the first turn
    # One turn outside the measurement (a participant not among the simulated ones): litellm's
    # first completion imports and sets up ~1 s of machinery, once per process.
    from companion.turn import turn
    from consent import records as consent

    consent.accept(store, "warmup", tz="UTC")
    turn(store, "warmup", "warm up", settings=settings)
    warm = time.perf_counter() - t0
    demo = app.build(settings, store)
    demo.queue(default_concurrency_limit=concurrency_limit)  # as app.serve sets it
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                ssr_mode=False, mcp_server=False)
    url = f"http://127.0.0.1:{port}/"
    results: dict[int, dict] = {}
    try:
        start = threading.Barrier(participants)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=participants) as pool:
            for i in range(participants):
                pool.submit(_participant, url, i, turns, start, results)
        wall = time.perf_counter() - t0
        # memory crossing, from the store: each participant's rows are theirs, all of them
        stored_problems = []
        server_ms: list[float] = []  # the turn itself, as its trace timed it (no HTTP, no streaming)
        for i in range(participants):
            me = name_of(i)
            server_ms += [t.latency_ms.get("total", float("nan")) for t in traces.list_(store, participant=me)]
            try:
                rows = messages.read(store, me, messages.next_ordinal(store, me))
            except Exception as e:  # noqa: BLE001
                stored_problems.append(f"{me}: {e}")
                continue
            tags = {t for m in rows for t in TAG.findall(m.text)}
            if tags - {tag_of(i)}:
                stored_problems.append(f"{me}: stored words of {sorted(tags - {tag_of(i)})}")
            users = [m.text for m in rows if m.sender == "user"]
            if users != [text_of(i, k) for k in range(turns)]:
                stored_problems.append(f"{me}: stored user messages {users!r}")
            if len(rows) != 2 * turns or len({m.dayid for m in rows}) != len(rows):
                stored_problems.append(f"{me}: {len(rows)} rows, dayids {[m.dayid for m in rows]}")
    finally:
        demo.close()
        store.close()
        if tmp is not None:
            tmp.cleanup()
    lat = [x for r in results.values() for x in r["latencies"]]
    errors = [e for r in results.values() for e in r["errors"]]
    if len(results) != participants:
        errors.append(f"only {len(results)} of {participants} participants finished")
    crossings = [c for r in results.values() for c in r["crossings"]] + stored_problems
    return {
        "participants": participants, "turns_per_participant": turns, "turns": len(lat),
        "embedder": "hash (--fast-embedder)" if fast_embedder else "all-MiniLM-L6-v2",
        "concurrency_limit": concurrency_limit,
        "errors": errors, "crossings": crossings,
        "latency_s": {"p50": statistics.median(lat) if lat else float("nan"), "p95": _pct(lat, 95),
                      "max": max(lat) if lat else float("nan"), "mean": statistics.fmean(lat) if lat else float("nan")},
        "server_turn_ms": {"p50": statistics.median(server_ms) if server_ms else float("nan"),
                           "p95": _pct(server_ms, 95)},
        "wall_s": wall, "warm_up_s": warm, "turns_per_s": len(lat) / wall if wall else float("nan"),
        "ok": not errors and not crossings and len(lat) == participants * turns,
    }


def render(r: dict) -> str:
    L = r["latency_s"]
    lines = [
        f"{r['participants']} participants x {r['turns_per_participant']} turns through the HTTP API "
        f"(echo model, embedder {r['embedder']}, queue concurrency {r['concurrency_limit']})",
        f"turns completed: {r['turns']} in {r['wall_s']:.1f} s ({r['turns_per_s']:.1f} turns/s)",
        f"per-turn latency: p50 {L['p50'] * 1000:.0f} ms, p95 {L['p95'] * 1000:.0f} ms, "
        f"max {L['max'] * 1000:.0f} ms, mean {L['mean'] * 1000:.0f} ms",
        f"the turn itself (its trace, no HTTP/streaming): p50 {r['server_turn_ms']['p50']:.0f} ms, "
        f"p95 {r['server_turn_ms']['p95']:.0f} ms",
        f"errors: {len(r['errors'])}; crossings: {len(r['crossings'])}; {'OK' if r['ok'] else 'FAILED'}",
    ]
    lines += [f"  error: {e}" for e in r["errors"][:20]] + [f"  crossing: {c}" for c in r["crossings"][:20]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--participants", type=int, default=20)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--fast-embedder", action="store_true",
                    help="hash vectors instead of all-MiniLM-L6-v2 (measures the app without the model)")
    ap.add_argument("--concurrency-limit", type=int, default=8, help="Gradio queue workers (serve uses 8)")
    ap.add_argument("--data-dir", default=None, help="default: a temporary directory, removed after")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    r = run(a.participants, a.turns, fast_embedder=a.fast_embedder, data_dir=a.data_dir,
            concurrency_limit=a.concurrency_limit)
    print(json.dumps(r) if a.json else render(r))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
