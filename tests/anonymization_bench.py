"""Measure export anonymization on the held-out sets in tests/data (not a pytest file).

    python tests/anonymization_bench.py [--scale N]

Recall: every planted identifier of tests/data/planted_identifiers.jsonl is looked for in the
exported conversation row of its message: `verbatim` survivors (the whole identifier,
case-insensitively) and `partial` ones (a distinctive token of it, e.g. a half-replaced street).
Precision: every message of tests/data/ordinary_messages.txt (no identifiers) is exported too;
each changed word is a false positive.
Speed: `--scale N` exports N copies of both sets (N * 102 messages) and prints the time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

DATA = Path(__file__).parent / "data"
# Words of an identifier that say nothing about the person (a surrogate address keeps "Road").
GENERIC = set("road lane ave avenue street st calle de del la dot at com gmail yahoo outlook protonmail n "
              "from on his badge the".split())


def load():
    planted = [json.loads(x) for x in (DATA / "planted_identifiers.jsonl").read_text(encoding="utf-8").splitlines()
               if x.strip()]
    ordinary = [x for x in (DATA / "ordinary_messages.txt").read_text(encoding="utf-8").splitlines()
                if x.strip() and not x.startswith("#")]
    return planted, ordinary


def _tokens(s: str) -> list[str]:
    return re.findall(r"\w+", s.casefold())


def run(scale: int = 1, out_json: bool = False) -> dict:
    from consent import export as exporter
    from consent import records
    from memory import messages
    from memory.store import Store

    planted, ordinary = load()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "home")
        by_p: dict[str, list[dict]] = {}
        for r in planted:
            by_p.setdefault(r["participant"], []).append(r)
        by_p["p0"] = [{"participant": "p0", "text": t, "identifiers": []} for t in ordinary]
        t0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
        total = 0
        for p, rows in by_p.items():
            records.accept(store, p, tz="UTC")
            # copies differ by a counter, so no scan is saved by repeated text
            msgs = [dict(sender="user", text=r["text"] + (f" ({i // len(rows)})" if i >= len(rows) else ""),
                         context="personal", ts=t0 + timedelta(minutes=7 * i))
                    for i, r in enumerate(rows * scale)]
            messages.append_many(store, p, msgs)
            total += len(msgs)
        start = time.perf_counter()
        try:
            exporter.export(store, Path(tmp) / "release", seed=1)
            refused = []
        except exporter.ReleaseRefused as e:
            # what the pseudonymizer left is still measured: the gate's verdict is reported apart
            refused = e.problems
            gate, exporter.check_release = exporter.check_release, lambda *a, **k: []
            try:
                exporter.export(store, Path(tmp) / "release", seed=1)
            finally:
                exporter.check_release = gate
        seconds = time.perf_counter() - start
        pid = dict(store.conn.execute("SELECT participant, pseudonym FROM export_members").fetchall())
        verbatim, partial, kinds = [], [], {}
        fp_words, fp_msgs, words = [], 0, 0
        for p, rows in by_p.items():
            conv = [json.loads(x) for x in (Path(tmp) / "release" / pid[p] / "conversation.jsonl")
                    .read_text(encoding="utf-8").splitlines()]
            for r, out in zip(rows, conv):
                got = out["text"].casefold()
                for ident, kind in r["identifiers"]:
                    kinds.setdefault(kind, [0, 0])[1] += 1
                    if ident.casefold() in got:
                        verbatim.append((kind, ident))
                        kinds[kind][0] += 1
                    else:
                        left = [w for w in _tokens(ident) if w not in GENERIC and len(w) >= 2
                                and re.search(rf"(?<!\w){re.escape(w)}(?!\w)", got)]
                        if left:
                            partial.append((kind, ident, left))
                if p == "p0":
                    a, b = _tokens(r["text"]), set(_tokens(out["text"]))
                    words += len(a)
                    lost = [w for w in a if w not in b]
                    fp_words += lost
                    fp_msgs += bool(lost)
        store.close()
    n = sum(len(r["identifiers"]) for r in planted)
    res = {"gate_refused": refused, "planted": n, "verbatim_survivors": len(verbatim), "partial_survivors": len(partial),
           "by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(kinds.items())},
           "survivors": [f"{k}: {i}" for k, i in verbatim] + [f"{k}: {i} (partly: {' '.join(w)})" for k, i, w in partial],
           "ordinary_messages": len(ordinary), "ordinary_messages_changed": fp_msgs,
           "ordinary_words": words, "ordinary_words_replaced": len(fp_words), "replaced": sorted(set(fp_words)),
           "messages_exported": total, "export_seconds": round(seconds, 2),
           "messages_per_second": round(total / seconds, 1)}
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=1)
    a = ap.parse_args()
    r = run(a.scale)
    if a.scale > 1:  # a copy of a message is not a new identifier: only speed is meaningful here
        r = {k: r[k] for k in ("messages_exported", "export_seconds", "messages_per_second")}
    json.dump(r, sys.stdout, indent=1, ensure_ascii=False)
    print()
