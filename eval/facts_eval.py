"""Score fact extraction on a labelled message set (tests/data/facts/*.jsonl) and time it.

Each row: {"id", "text", "claims": [{"kind", "must": [...]}], "optional": [[...]], "forbid": [[...]]}.
A `must` entry is a word stem, or stems joined by "|" (any of them). A claim text matches an item
when every entry has a word of the claim starting with one of its stems (lowercase).

    recall     gold claims matched by some claim extracted from the same message / gold claims
    precision  extracted claims matching a gold or optional item of their message / extracted claims
    opposite   extracted claims holding every stem of a `forbid` item with no negation or
               past-state word ("no longer", "used to"): a negated, supposed, asked or quoted
               statement stored as if it were said (goal: 0)

A claim may match more than one gold item of its message ("Sister Lena lives in Porto" states
both the sister and where she lives).

Rows may name a `persona` (an author's sets of several speakers): numbers are then also given
per persona. Every file given is scored on its own, never pooled with another.

    python -m eval.facts_eval tests/data/facts/dev.jsonl [OTHER.jsonl ...] [--verbose] [--road both|rules] [--no-timing]
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

_NEG = {"not", "never", "no", "doesn't", "don't", "isn't", "hasn't", "longer", "used", "anymore", "formerly"}


def load(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text.lower())


def matches(claim: str, must: list[str]) -> bool:
    words = _words(claim)
    return all(any(w.startswith(stem) for w in words for stem in entry.split("|")) for entry in must)


def score(rows: list[dict], predicted: list[list[str]], per_persona: bool = True) -> dict:
    gold = tp_gold = n_pred = tp_pred = opposite = 0
    by_kind: dict[str, list[int]] = {}
    misses, wrong, opposites = [], [], []
    for row, claims in zip(rows, predicted):
        items = [c["must"] for c in row["claims"]] + list(row.get("optional", []))
        for c in row["claims"]:
            hit = any(matches(p, c["must"]) for p in claims)
            gold += 1
            tp_gold += hit
            k = by_kind.setdefault(c["kind"], [0, 0])
            k[0] += hit
            k[1] += 1
            if not hit:
                misses.append((row["id"], c["must"]))
        for p in claims:
            n_pred += 1
            if any(matches(p, m) for m in items):
                tp_pred += 1
            else:
                wrong.append((row["id"], p))
            if any(matches(p, f) for f in row.get("forbid", [])) and not set(_words(p)) & _NEG:
                opposite += 1
                opposites.append((row["id"], p))
    out = {"messages": len(rows), "gold": gold, "extracted": n_pred,
           "recall": round(tp_gold / gold, 3) if gold else None,
           "precision": round(tp_pred / n_pred, 3) if n_pred else None,
           "opposite": opposite, "by_kind": {k: f"{a}/{b}" for k, (a, b) in sorted(by_kind.items())},
           "misses": misses, "wrong": wrong, "opposites": opposites}
    personas = sorted({r["persona"] for r in rows if r.get("persona")})
    if personas and per_persona:
        out["by_persona"] = {}
        for p in personas:
            sub = [(r, c) for r, c in zip(rows, predicted) if r.get("persona") == p]
            s = score([r for r, _ in sub], [c for _, c in sub], per_persona=False)
            out["by_persona"][p] = {k: s[k] for k in ("messages", "gold", "extracted", "recall", "precision", "opposite")}
    return out


def rule_claims(texts: list[str], road: str = "both") -> list[list[str]]:
    """Claims the product's extractor proposes for each message alone (road "rules": the parse
    rules without the learned road)."""
    from memory import extract
    from memory.messages import Message

    out = []
    for i, t in enumerate(texts):
        props = extract.RuleExtractor(learned=road != "rules").propose(
            [Message(i + 1, "p", i + 1, f"day1-{i + 1}", "user", t, "ts", "personal")])
        out.append([p.text for p in props if p.kind == "claim"])
    return out


def timing(texts: list[str], repeats: int = 3) -> dict:
    """Milliseconds per message: the parse-based fact reader alone, and the whole rule extractor
    (facts, preferences, persona) one message at a time and in one batch, after a warm-up."""
    from memory import extract
    from memory.messages import Message

    msgs = [Message(i + 1, "p", i + 1, f"day1-{i + 1}", "user", t, "ts", "personal") for i, t in enumerate(texts)]
    ex = extract.RuleExtractor()
    ex.propose(msgs[:2])
    per = []
    for _ in range(repeats):
        for m in msgs:
            t0 = time.perf_counter()
            ex.propose([m])
            per.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    ex.propose(msgs)
    batch = (time.perf_counter() - t0) * 1000 / len(msgs)
    per.sort()
    from memory import facts

    alone = []
    for m in msgs:
        t0 = time.perf_counter()
        facts.extract(m.text)
        alone.append((time.perf_counter() - t0) * 1000)
    return {"facts_only_ms_median": round(statistics.median(alone), 2),
            "ms_per_message_median": round(statistics.median(per), 2),
            "ms_per_message_p95": round(per[int(0.95 * (len(per) - 1))], 2),
            "ms_per_message_batch": round(batch, 2)}


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv
    road = "rules" if "--road=rules" in argv or ("--road" in argv and argv[argv.index("--road") + 1] == "rules") else "both"
    paths = [a for i, a in enumerate(argv) if not a.startswith("--") and not (i and argv[i - 1] == "--road")]
    for path in paths:
        try:
            rows = load(path)
        except (OSError, ValueError) as e:
            print(f"cannot read the fact set {path}: {e}", file=sys.stderr)
            sys.exit(2)
        result = score(rows, rule_claims([r["text"] for r in rows], road))
        result["road"] = road
        if "--no-timing" not in argv:
            result.update(timing([r["text"] for r in rows]))
        if not verbose:
            for k in ("misses", "wrong", "opposites"):
                result[k] = len(result[k])
        print(path)
        print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
