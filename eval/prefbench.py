"""How long reading preferences from one participant message takes (one core; prints numbers).

    python -m eval.prefbench [--messages 200] [--json]

Messages: the neutral and correction texts of the shipped suite (eval/data/prefsuite-v1.json),
one at a time, as the turn sees them. Three timings per message, medians and 95th percentiles:
`parse` (spaCy), `cold` (the whole read with an empty embedding cache) and `warm` (the whole read
when the message's own text was just embedded, as the turn does when it stores the message: a
one-clause message then costs no embedding). And `reply_path`: the turn's own `learn` lap (the
preference read with its verification and merge, step 2b of companion.turn) over the same
messages said through `turn` with the echo model in a throw-away store, read from each trace.
The goal is a p50 of 25 ms or less; CPU time is printed beside wall clock (a loaded machine
inflates wall clock), and ratios are within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")


def _texts(n: int) -> list[str]:
    from eval import prefsuite

    suite, _ = prefsuite.load()
    texts = [t for by in suite.probe.values() for t in by.values()]
    texts += [t for by in suite.voice.values() for ps in by.values() for t in ps]
    for p in suite.personas:
        texts += [t.text for i in p.timeline if isinstance(i, prefsuite.Session) for t in i.turns]
    return (texts * (n // len(texts) + 1))[:n]


def _stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"median_ms": round(1000 * xs[len(xs) // 2], 1), "p95_ms": round(1000 * xs[int(0.95 * (len(xs) - 1))], 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.prefbench", description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from memory import embeddings, extract, nlp, preferences

    texts = _texts(a.messages)
    emb = embeddings.default()
    preferences.find("Keep it short.", "work", rules=extract.preference_phrases)  # load everything once
    times: dict[str, list[float]] = {k: [] for k in ("parse", "cold", "warm", "parse_cpu", "cold_cpu", "warm_cpu")}

    def timed(key, fn):
        w, c = time.perf_counter(), time.process_time()
        fn()
        times[key].append(time.perf_counter() - w)
        times[key + "_cpu"].append(time.process_time() - c)

    for t in texts:
        timed("parse", lambda: nlp.parse(t))
        preferences._doc.cache_clear()
        emb.clear_cache()
        timed("cold", lambda: preferences.find(t, "work", rules=extract.preference_phrases))
        preferences._doc.cache_clear()
        emb.clear_cache()
        emb.encode([t.strip()])
        timed("warm", lambda: preferences.find(t, "work", rules=extract.preference_phrases))
    out = {"messages": len(texts), **{k: _stats(v) for k, v in times.items()}, "torch_threads": torch.get_num_threads()}
    out["reply_path"] = _reply_path(texts)
    if a.json:
        print(json.dumps(out))
    else:
        print(f"{out['messages']} messages, 1 thread. Wall clock: parse {out['parse']}, whole read cold {out['cold']}, "
              f"warm (message already embedded by the turn) {out['warm']}. CPU time of this process (what the "
              f"work costs when it is not waiting for a core): parse {out['parse_cpu']}, cold {out['cold_cpu']}, "
              f"warm {out['warm_cpu']}")
        print(f"reply path (the turn's 'learn' lap, {out['reply_path']['turns']} turns, echo model): "
              f"{out['reply_path']['learn']} (goal: median <= 25 ms)")
    return 0


def _reply_path(texts: list[str]) -> dict:
    import tempfile
    from datetime import datetime, timedelta, timezone

    from companion.settings import Settings
    from companion.turn import turn
    from consent import records
    from memory.store import Store

    with tempfile.TemporaryDirectory() as home:
        store = Store(home)
        try:
            records.accept(store, "bench", tz="UTC")
            settings = Settings(home=home, model="echo")
            t0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
            laps = []
            for i, t in enumerate(texts):
                r = turn(store, "bench", t, "work" if i % 2 else "personal", settings, at=t0 + timedelta(minutes=i))
                laps.append(r.trace.latency_ms["learn"] / 1000)
        finally:
            store.close()
    return {"turns": len(laps), "learn": _stats(laps)}


if __name__ == "__main__":
    sys.exit(main())
