"""`companion bench chat`: a scripted conversation through the real turn, on the default model.

It measures what a participant notices on the embedded model: replies that loop, replies cut
mid-sentence, reply length per verbosity setting, whether a recall answer names the fact that
was retrieved, and the cost: time to first token, tokens/s and resident memory after N turns.

The checks here are deliberately independent of the generation code they judge (their own
sentence splitting and n-gram counting), so a fix cannot pass by sharing a blind spot with them.
The script is data: eval/data/benchchat-v1.json.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

_SENT_END = re.compile(r"[.!?\u2026][\"')\]\u201d\u2019*_]*$")
_SENT_SPLIT = re.compile(r"(?<=[.!?\u2026])\s+")
_EMOJI_TAIL = re.compile(r"[\s\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]+$")


def load_script(name: str = "benchchat-v1.json") -> dict:
    return json.loads(resources.files("eval").joinpath("data", name).read_text(encoding="utf-8"))


def words(text: str) -> int:
    return len(re.findall(r"[\w'’-]+", text))


def _norm(s: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", s.lower()))


def loops(text: str) -> bool:
    """A reply loops when one sentence comes back, or one 6-word run occurs three or more times."""
    sents = [_norm(s) for s in _SENT_SPLIT.split(text) if len(_norm(s).split()) >= 3]
    if len(sents) != len(set(sents)):
        return True
    toks = _norm(text).split()
    grams: dict[tuple, int] = {}
    for i in range(len(toks) - 5):
        g = tuple(toks[i:i + 6])
        grams[g] = grams.get(g, 0) + 1
        if grams[g] >= 3:
            return True
    return False


def cut_mid_sentence(text: str) -> bool:
    """A paragraph stops without ending its sentence (emoji and closing quotes after the stop are
    fine). Every paragraph is checked, not just the last: the wrapper may append a line of its
    own (an action, a check-in) after a reply the model left cut off."""
    for para in re.split(r"\n\s*\n|\n(?=\S)", text.strip()):
        tail = _EMOJI_TAIL.sub("", para.strip())
        if not tail or re.match(r"^([-*\u2022]|\d+[.)])\s", tail) or tail.endswith(":"):
            continue  # list items and headings need no full stop
        if not _SENT_END.search(tail):
            return True
    return False


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class TurnRow:
    i: int
    text: str
    reply: str
    verbosity: str | None
    words: int
    loops: bool
    cut: bool
    ttft_s: float | None
    total_s: float
    generate_s: float
    completion_tokens: int | None
    tokens_per_s: float | None
    rss_mb: float
    recall_fact: str | None = None
    retrieved_fact: bool | None = None
    named_fact: bool | None = None


def run(model: str | None = None, data_dir: str | None = None, script: str = "benchchat-v1.json",
        progress=None) -> dict:
    from companion import settings as settings_mod
    from companion.turn import turn
    from consent import records
    from memory.store import Store

    spec = load_script(script)
    tmp = None
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="companion-benchchat-")
        data_dir = tmp.name
    overrides = {"home": Path(data_dir)}
    if model:
        overrides["model"] = model
    s = settings_mod.load(**overrides)
    store = Store(s.data_dir)
    participant = spec["participant"]
    records.accept(store, participant, tz=spec.get("tz", "UTC"))
    rss_start = _rss_mb()
    rows: list[TurnRow] = []
    try:
        for i, step in enumerate(spec["turns"], 1):
            t0 = time.perf_counter()
            first: list[float] = []

            def on_token(piece: str) -> None:
                if not first:
                    first.append(time.perf_counter() - t0)

            res = turn(store, participant, step["text"], context=spec.get("context", "personal"),
                       settings=s, on_token=on_token)
            total = time.perf_counter() - t0
            tr = res.trace
            settings_seen = (tr.interaction or {}).get("settings", {}) if tr else {}
            verb = (settings_seen.get("verbosity") or {}).get("setting")
            ctoks = (tr.tokens or {}).get("completion") if tr else None
            gen_s = (tr.latency_ms or {}).get("generate", 0) / 1000 if tr else 0
            # Over the whole generate step (prompt processing included): the first token shown is not
            # the first one made when the backend releases whole sentences, so timing from it would
            # overstate the rate.
            tps = round(ctoks / gen_s, 1) if ctoks and gen_s > 0 else None
            reply = res.shown
            row = TurnRow(i=i, text=step["text"], reply=reply, verbosity=verb, words=words(reply),
                          loops=loops(reply), cut=cut_mid_sentence(reply),
                          ttft_s=round(first[0], 2) if first else None, total_s=round(total, 2), generate_s=round(gen_s, 2),
                          completion_tokens=ctoks, tokens_per_s=tps, rss_mb=round(_rss_mb(), 1))
            fact = step.get("recall")
            if fact:
                hit_text = " ".join(h.get("text", "") for h in (tr.hits if tr else []))
                row.recall_fact = fact
                row.retrieved_fact = fact.lower() in hit_text.lower()
                row.named_fact = fact.lower() in reply.lower()
            rows.append(row)
            if progress:
                progress(f"turn {i}: {row.words} words, verbosity {verb}, ttft {row.ttft_s}s, "
                         f"total {row.total_s}s, rss {row.rss_mb} MB")
    finally:
        store.close()
        if tmp is not None:
            tmp.cleanup()
    return summarise(rows, s.model, rss_start)


def summarise(rows: list[TurnRow], model: str, rss_start: float) -> dict:
    by_verb: dict[str, list[int]] = {}
    for r in rows:
        by_verb.setdefault(r.verbosity or "unknown", []).append(r.words)
    recall = [r for r in rows if r.recall_fact]
    ttfts = [r.ttft_s for r in rows if r.ttft_s is not None]
    later = [r.ttft_s for r in rows[1:] if r.ttft_s is not None]  # turn 1 also loads every model
    tps = [r.tokens_per_s for r in rows if r.tokens_per_s]
    return {
        "model": model,
        "turns": len(rows),
        "looping": sum(r.loops for r in rows),
        "loop_rate": round(sum(r.loops for r in rows) / max(1, len(rows)), 3),
        "cut_mid_sentence": sum(r.cut for r in rows),
        "words_by_verbosity": {k: {"n": len(v), "mean": round(statistics.mean(v), 1), "max": max(v)}
                               for k, v in by_verb.items()},
        "recall": {"asked": len(recall), "retrieved": sum(bool(r.retrieved_fact) for r in recall),
                   "named": sum(bool(r.named_fact) for r in recall),
                   "named_when_retrieved": sum(bool(r.named_fact and r.retrieved_fact) for r in recall)},
        "ttft_s": {"first_turn": rows[0].ttft_s if rows else None,
                   "median_after_first": round(statistics.median(later), 2) if later else None,
                   "max_after_first": max(later) if later else None} if ttfts else None,
        "tokens_per_s": {"median": round(statistics.median(tps), 1)} if tps else None,
        "rss_mb": {"start": round(rss_start, 1), "end": rows[-1].rss_mb if rows else None,
                   "max": max(r.rss_mb for r in rows) if rows else None},
        "rows": [r.__dict__ for r in rows],
    }


def render(r: dict) -> str:
    out = [f"bench chat on {r['model']}: {r['turns']} turns"]
    for row in r["rows"]:
        flags = ",".join(f for f, on in (("LOOP", row["loops"]), ("CUT", row["cut"])) if on)
        out.append(f"  {row['i']:>2} [{row['verbosity'] or '-'}] {row['words']:>3} words "
                   f"ttft {row['ttft_s']}s total {row['total_s']}s {flags}")
        out.append(f"     > {row['text']}")
        out.append(f"     < {row['reply'].replace(chr(10), ' / ')[:400]}")
    out.append(f"looping replies: {r['looping']} of {r['turns']} (rate {r['loop_rate']})")
    out.append(f"cut mid-sentence: {r['cut_mid_sentence']}")
    for k, v in r["words_by_verbosity"].items():
        out.append(f"words per reply, verbosity {k}: mean {v['mean']} max {v['max']} (n={v['n']})")
    rc = r["recall"]
    out.append(f"recall: {rc['asked']} asked, fact retrieved {rc['retrieved']}, named in the answer {rc['named']}"
               f" (named when retrieved {rc['named_when_retrieved']})")
    out.append(f"time to first token: {r['ttft_s']}")
    out.append(f"tokens/s (whole generate step): {r['tokens_per_s']}")
    out.append(f"RSS MB: {r['rss_mb']}")
    return "\n".join(out)


def _command():
    import click

    @click.command("chat")
    @click.option("--model", default=None, help="Model to talk to (default: the configured one, the embedded SmolLM2).")
    @click.option("--script", default="benchchat-v1.json", show_default=True, help="Conversation script in eval/data.")
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
    @click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
                  help="Where the bench database goes (default: a temporary directory, removed after).")
    def bench_chat(model, script, as_json, data_dir):
        """A scripted conversation: loops, cut replies, words by verbosity, recall, TTFT, tokens/s, RSS."""
        def progress(line: str) -> None:
            click.echo(line, err=True)

        result = run(model=model, data_dir=data_dir, script=script, progress=progress)
        click.echo(json.dumps(result) if as_json else render(result))

    return bench_chat


bench_chat = _command()
