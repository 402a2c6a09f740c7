"""Precision and recall of preference extraction on a labelled message set (the held-out test set
eval/data/prefs-heldout-v1.json by default).

    python -m eval.prefheldout [--set PATH ...] [--road both|rules] [--json] [--show-errors]
    python -m eval.prefheldout --chat locomo10.json [--count 1000]   # false readings on held-out LoCoMo turns
    python -m eval.prefheldout --set dev.json --threshold 0.4        # another abstention threshold (dev only)

Each set given (prefs-heldout-v1 shape: {"items": [{"kind", "text", "said_in", "expect", "forbid"}]})
is scored on its own and printed per set, never pooled.

A unit is a (context, attribute, setting) a message states. Precision: share of stored units
that are right; recall: share of stated units that were stored. "Opposites": messages where a
setting the item forbids (a negated, quoted or reported statement read the wrong way) was
stored. "False readings": messages stating none (chat, look-alikes) where anything was stored, per
100 such messages with a Wilson 95% interval: on a new participant each is a cell added, so a reply
acknowledging a preference that was never stated. `--chat` scores the LoCoMo turns training never
saw (those after memory.pref_train's seeded draw of 1500) as messages stating none. `--road rules` reads with the exact phrases alone, sentence by sentence, as the product
did before the classifier (its baseline).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

DEFAULT_SET = Path(__file__).resolve().parent / "data" / "prefs-heldout-v1.json"


def _rules_only(text: str, said_in: str) -> set[tuple[str, str, str]]:
    from memory.extract import preference_phrases

    out = set()
    for sentence in re.split(r"(?<=[.!?;])\s+", re.sub(r"\"[^\"]*\"", " ", text)):
        if not sentence.strip() or sentence.strip().endswith("?"):
            continue
        contexts, found = preference_phrases(sentence, said_in)
        out |= {(c, a, s) for a, s, _ in found for c in contexts}
    return out


def _both(text: str, said_in: str) -> set[tuple[str, str, str]]:
    from memory import extract, preferences

    return {(c, f.attribute, f.setting) for f in preferences.find(text, said_in, rules=extract.preference_phrases)
            for c in f.contexts}


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    """The Wilson 95% interval of a proportion k / n."""
    import math

    if not n:
        return [0.0, 1.0]
    p = k / n
    d = 1 + z * z / n
    c = p + z * z / (2 * n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [round((c - h) / d, 3), round((c + h) / d, 3)]


def chat_items(path: str, count: int, skip: int = 0) -> list[dict]:
    """LoCoMo turns memory.pref_train never trained on, as messages stating none (`skip`: after
    the first `skip` of them; 1000 gives the tuning slice, never the reported one)."""
    from memory.pref_train import corpus_none

    return [{"kind": "locomo", "text": t, "said_in": "personal", "expect": [], "forbid": []}
            for t in corpus_none(path, 1500, 7, held_out=skip + count)[skip:]]


def score(items: list[dict], road: str = "both") -> dict:
    read = _both if road == "both" else _rules_only
    tp = stored = wanted = 0
    opposite, exact = [], 0
    none_msgs = false_read = 0
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # tp, stored, wanted, exact
    errors = []
    for it in items:
        gold = {(c, e["attribute"], e["setting"]) for e in it["expect"] for c in e["contexts"]}
        got = read(it["text"], it["said_in"])
        hit = len(gold & got)
        tp, stored, wanted = tp + hit, stored + len(got), wanted + len(gold)
        k = by_kind[it["kind"]]
        k[0], k[1], k[2], k[3] = k[0] + hit, k[1] + len(got), k[2] + len(gold), k[3] + (got == gold)
        exact += got == gold
        forbid = {(f["attribute"], f["setting"]) for f in it.get("forbid", [])}
        if any((a, s) in forbid for _, a, s in got):
            opposite.append(it["text"])
        if not gold:
            none_msgs += 1
            false_read += bool(got)
        if got != gold:
            errors.append({"text": it["text"], "kind": it["kind"], "want": sorted(gold), "got": sorted(got)})

    def pr(t, s, w):
        return {"precision": round(t / s, 3) if s else None, "recall": round(t / w, 3) if w else None}

    return {"road": road, "messages": len(items), "units": wanted, "stored": stored, **pr(tp, stored, wanted),
            "exact_messages": round(exact / len(items), 3), "opposites": len(opposite), "opposite_texts": opposite,
            "none_messages": none_msgs, "false_readings": false_read,
            "false_per_100": round(100 * false_read / none_msgs, 1) if none_msgs else None,
            "false_per_100_ci": [round(100 * x, 1) for x in wilson(false_read, none_msgs)] if none_msgs else None,
            "precision_ci": wilson(tp, stored), "recall_ci": wilson(tp, wanted), "exact_ci": wilson(exact, len(items)),
            "by_kind": {k: {**pr(v[0], v[1], v[2]), "stored": v[1], "units": v[2],
                            "exact": v[3]} for k, v in sorted(by_kind.items())},
            "errors": errors}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.prefheldout", description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=None, help="a labelled set (repeat for several; default: the shipped held-out set)")
    ap.add_argument("--road", choices=("both", "rules"), default="both")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show-errors", action="store_true")
    ap.add_argument("--chat", default=None, help="a LoCoMo file: score its held-out turns as messages stating none")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--skip", type=int, default=0, help="with --chat: leave out the first N held-out turns (1000: the tuning slice)")
    ap.add_argument("--threshold", type=float, default=None,
                    help="read with this abstention threshold instead of the shipped one (to choose it on dev sets only)")
    ap.add_argument("--thresholds", default=None,
                    help="comma-separated thresholds: score the sets (and --chat) at each, reading every message once per "
                         "threshold in one pass (choosing the threshold: dev sets and the --skip 1000 tuning slice only)")
    a = ap.parse_args(argv)
    if a.thresholds:
        return _sweep(a)
    if a.threshold is not None:
        if not 0.0 < a.threshold < 1.0:
            print(f"--threshold must be between 0 and 1, got {a.threshold}", file=sys.stderr)
            return 2
        from memory import preferences

        preferences.model().threshold = a.threshold
    if a.chat:
        return _report(score(chat_items(a.chat, a.count, a.skip), a.road), f"{a.chat} (held-out turns {a.skip}-{a.skip + a.count})", a)
    for path in a.set or [str(DEFAULT_SET)]:
        code = _one(path, a)
        if code:
            return code
    return 0


def _sweep(a) -> int:
    from memory import preferences

    try:
        ths = [float(x) for x in a.thresholds.split(",")]
    except ValueError:
        print(f"--thresholds must be numbers separated by commas, got {a.thresholds!r}", file=sys.stderr)
        return 2
    sets = [(p, json.loads(Path(p).read_text())["items"]) for p in (a.set or [])]
    if a.chat:
        sets.append((f"{a.chat} (held-out turns {a.skip}-{a.skip + a.count})", chat_items(a.chat, a.count, a.skip)))
    m = preferences.model()
    shipped = m.threshold
    for path, items in sets:
        got = {}
        for i, it in enumerate(items):
            for th in ths:
                m.threshold = th
                got[(th, it["text"], it["said_in"])] = _both(it["text"], it["said_in"])
        m.threshold = shipped
        for th in ths:
            r = _score_with(items, lambda t, c, th=th: got[(th, t, c)])
            print(f"{path} threshold {th:.2f}: precision {r['precision']} {r['precision_ci']} recall {r['recall']} "
                  f"{r['recall_ci']} stored {r['stored']} opposites {r['opposites']} false per 100 {r['false_per_100']}")
    return 0


def _score_with(items, read):
    global _both
    saved = _both
    _both = read
    try:
        return score(items, "both")
    finally:
        _both = saved


def _one(path: str, a) -> int:
    try:
        items = json.loads(Path(path).read_text())["items"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"cannot read the test set {path}: {e}", file=sys.stderr)
        return 2
    return _report(score(items, a.road), path, a)


def _report(r: dict, path: str, a) -> int:
    r["set"] = path
    if not a.show_errors:
        r.pop("errors")
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    print(f"{path} ({r['messages']} messages, {r['units']} stated units), road {r['road']}: "
          f"precision {r['precision']} recall {r['recall']} (stored {r['stored']}); exact messages "
          f"{r['exact_messages']}; opposites stored {r['opposites']}")
    print(f"  95% intervals: precision {r['precision_ci']} recall {r['recall_ci']} exact {r['exact_ci']}")
    if r["none_messages"]:
        print(f"  false readings on the {r['none_messages']} messages stating none: {r['false_readings']} "
              f"({r['false_per_100']} per 100, 95% {r['false_per_100_ci']})")
    for k, v in r["by_kind"].items():
        print(f"  {k:16s} precision {v['precision']} recall {v['recall']} stored {v['stored']} units {v['units']} "
              f"exact {v['exact']}")
    for t in r["opposite_texts"]:
        print(f"  OPPOSITE: {t}")
    for e in r.get("errors", []):
        print(f"  {e['kind']}: {e['text']!r} want {e['want']} got {e['got']}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
