"""`companion bench chat`: a scripted conversation through the real turn, on the default model.

It measures what a participant notices on the embedded model: replies that loop, replies cut
mid-sentence, reply length per verbosity setting, whether a recall answer names the fact that
was retrieved, and the cost: time to first token, tokens/s and resident memory after N turns.

The checks here are deliberately independent of the generation code they judge (their own
sentence splitting and n-gram counting), so a fix cannot pass by sharing a blind spot with them.
The script is data: eval/data/benchchat-v1.json.
"""

from __future__ import annotations

import difflib
import json
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

_SENT_END = re.compile(r"[.!?\u2026][\"')\]\u201d\u2019*_]*$")
_SENT_SPLIT = re.compile(r"(?<=[.!?\u2026])\s+")
_EMOJI_TAIL = re.compile(r"[\s\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]+$")


class ScriptError(ValueError):
    """A conversation script that cannot be replayed; the message names the file and what is wrong."""


def load_script(name: str = "benchchat-v1.json") -> dict:
    """A script by name in eval/data, or by path (a week written by someone else, same format:
    version, why, participant, tz, context, turns [{at, text, recall?, unknown? | never_told?, action?, note?}])."""
    path = Path(name)
    if not path.is_file():
        found = resources.files("eval").joinpath("data", name)
        if not found.is_file():
            raise ScriptError(f"{name}: no such file, nor a script of that name in eval/data")
        path = Path(str(found))
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ScriptError(f"{name}: not a JSON file ({e})") from None
    return validate_script(spec, name)


# the fields a turn's scoring reads; a field spelled like one of them is refused by name rather
# than silently ignored
# ("never_told": true is the same marker as "unknown": "<what was never told>")
_TURN_KEYS = frozenset({"at", "text", "recall", "unknown", "never_told", "action", "note"})


def validate_script(spec, name: str = "script") -> dict:
    """The script's own fields checked before anything runs, each error naming the field (and turn)."""
    from zoneinfo import ZoneInfo

    if not isinstance(spec, dict):
        raise ScriptError(f"{name}: the top level must be an object with 'participant' and 'turns'")
    for key in ("participant",):
        if not isinstance(spec.get(key), str) or not spec[key].strip():
            raise ScriptError(f"{name}: '{key}' must be a non-empty string")
    for key in ("version", "why", "tz", "context"):
        if key in spec and not isinstance(spec[key], str):
            raise ScriptError(f"{name}: '{key}' must be a string")
    try:
        ZoneInfo(spec.get("tz", "UTC"))
    except (ValueError, KeyError, OSError):
        raise ScriptError(f"{name}: 'tz' {spec.get('tz')!r} is not a time zone name (e.g. Europe/London)") from None
    turns = spec.get("turns")
    if not isinstance(turns, list) or not turns:
        raise ScriptError(f"{name}: 'turns' must be a non-empty list")
    for i, t in enumerate(turns, 1):
        where = f"{name}: turn {i}"
        if not isinstance(t, dict):
            raise ScriptError(f"{where}: must be an object with 'text'")
        if not isinstance(t.get("text"), str) or not t["text"].strip():
            raise ScriptError(f"{where}: 'text' must be a non-empty string")
        if t.get("at") is not None:
            from datetime import datetime

            try:
                datetime.fromisoformat(t["at"])
            except (TypeError, ValueError):
                raise ScriptError(f"{where}: 'at' {t['at']!r} is not an ISO time (2026-03-02T08:05)") from None
        r = t.get("recall")
        if r is not None and not (isinstance(r, str) and r.strip() or
                                  isinstance(r, list) and r and all(isinstance(x, str) and x.strip() for x in r)):
            raise ScriptError(f"{where}: 'recall' must be the fact (a string) or a list of alternatives")
        for key in ("unknown", "action"):
            if t.get(key) is not None and not isinstance(t[key], str):
                raise ScriptError(f"{where}: '{key}' must be a string")
        # other fields are the script's own notes (a generator's 'fact', 'slot', 'family') and are
        # left alone; one spelled like a marker ('nevertold', 'unknwon') would be silently lost
        near = {k: difflib.get_close_matches(k.lower().replace("-", "_"), _TURN_KEYS, n=1, cutoff=0.75)
                for k in set(t) - _TURN_KEYS}
        near = {k: m[0] for k, m in near.items() if m}
        if near:
            raise ScriptError(f"{where}: unknown field(s) " + ", ".join(f"{k!r} (did you mean {m!r}?)"
                                                                   for k, m in sorted(near.items())))
        nt = t.get("never_told")
        if nt is not None and not isinstance(nt, (bool, str)):
            raise ScriptError(f"{where}: 'never_told' must be true/false or what was never told (a string)")
        if nt and not t.get("unknown"):
            # the other spelling of the marker: what the participant never said, asked about here
            t["unknown"] = nt if isinstance(nt, str) else "never told"
    return spec


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
    recall_right: bool | None = None
    recall_unquoted: bool | None = None  # named outside any quotation of theirs
    unknown: str | None = None
    unknown_right: bool | None = None
    inventions: list = field(default_factory=list)
    quoted_questions: list = field(default_factory=list)
    quoted_nonanswers: list = field(default_factory=list)
    action: str | None = None
    action_made: bool | None = None
    path: str | None = None
    policy: dict | None = None
    alone_ttft_s: float | None = None
    alone_tokens_per_s: float | None = None
    alone_first_sentence_s: float | None = None  # llama.cpp alone, to its first whole sentence
    prompt_tokens: int | None = None
    prompt_evaluated: int | None = None  # embedded model: prompt tokens llama.cpp evaluated (not from its cache)
    prefetch_evaluated: int | None = None  # ... and after the turn, evaluating the next turn's opening
    latency_ms: dict = field(default_factory=dict)


def _expected(step: dict) -> list[str] | None:
    r = step.get("recall")
    if r is None:
        return None
    return [r] if isinstance(r, str) else list(r)


class Alone:
    """llama.cpp alone on the same model file, in this process: the participant's message as the
    only prompt, streamed raw (no turn, no shaping). Called right after each product turn, so both
    arms see the same machine load."""

    def __init__(self, model: str):
        from companion.backends import local

        key = local._model_key(model)
        self.engine = local._Engine(key, local._model_file(key), n_ctx=local.N_CTX, n_threads=local.N_THREADS)
        self.sampling = local.sampling(key)

    def first_token(self, text: str, max_tokens: int = 60) -> tuple[float | None, float | None, float | None]:
        """(time to the first token, tokens/s over the request, time to the first whole sentence)."""
        t0 = time.perf_counter()
        first: list[float] = []
        sentence: list[float] = []
        seen: list[str] = []

        def on_text(piece: str) -> None:
            if not first:
                first.append(time.perf_counter() - t0)
            seen.append(piece)
            if not sentence and re.search(r"[.!?\u2026]\s|\n", "".join(seen)):
                sentence.append(time.perf_counter() - t0)

        request = {**self.sampling, "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens,
                   "stream": True, "stream_options": {"include_usage": True}}
        with self.engine._lock:
            res, _, _ = self.engine._run(request, on_text, None, None)
        total = time.perf_counter() - t0
        tps = round(res.completion_tokens / total, 1) if res.completion_tokens and total > 0 else None
        return (round(first[0], 3) if first else None), tps, round(sentence[0] if sentence else total, 3)

    def close(self) -> None:
        self.engine.close()


def _at(step: dict, tz: str):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    if not step.get("at"):
        return None
    t = datetime.fromisoformat(step["at"])
    return t if t.tzinfo else t.replace(tzinfo=ZoneInfo(tz))


def run(model: str | None = None, data_dir: str | None = None, script: str = "benchchat-v1.json",
        progress=None, alone: bool | None = None, overrides: dict | None = None) -> dict:
    """Replay `script` (a name in eval/data, or a path) through the real turn. `alone`: also time
    llama.cpp alone on the same file after every turn (default: when the model is the embedded one)."""
    from companion import gateway, settings as settings_mod
    from companion.scheduler import due_for_consolidation, extractor_for
    from companion.turn import turn
    from consent import records
    from eval import chatcheck
    from memory import extract
    from memory.store import Store

    spec = load_script(script)
    tmp = None
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="companion-benchchat-")
        data_dir = tmp.name
    opts = {"home": Path(data_dir), **(overrides or {})}
    if model:
        opts["model"] = model
    s = settings_mod.load(**opts)
    resolved = gateway.resolve(s.model)
    if alone is None:
        alone = resolved.startswith("local/")
    store = Store(s.data_dir)
    participant = spec["participant"]
    tz = spec.get("tz", "UTC")
    records.accept(store, participant, tz=tz)
    rss_start = _rss_mb()
    rows: list[TurnRow] = []
    known = chatcheck.Known()
    baseline = Alone(resolved) if alone else None
    engine = prefetch_before = None
    if resolved.startswith("local/"):
        from companion.backends import local

        engine = local._get_engine(resolved)  # the turn's own engine (loaded now, as turn 1 would)
    try:
        for i, step in enumerate(spec["turns"], 1):
            at = _at(step, tz)
            if at is not None and due_for_consolidation(store, participant, s.consolidate_idle_minutes,
                                                        s.consolidate_every, now=at):
                # what the app's background job would have done during the silence before this turn
                extract.consolidate(store, participant, extractor_for(s.model, s.model_capable))
            t0 = time.perf_counter()
            first: list[float] = []

            def on_token(piece: str) -> None:
                if not first:
                    first.append(time.perf_counter() - t0)

            timings_before = engine.last_timings if engine is not None else None
            res = turn(store, participant, step["text"], context=spec.get("context", "personal"),
                       settings=s, on_token=on_token, at=at)
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
            known.add(step["text"])
            row = TurnRow(i=i, text=step["text"], reply=reply, verbosity=verb, words=words(reply),
                          loops=loops(reply), cut=cut_mid_sentence(reply),
                          ttft_s=round(first[0], 2) if first else None, total_s=round(total, 2), generate_s=round(gen_s, 2),
                          completion_tokens=ctoks, tokens_per_s=tps, rss_mb=round(_rss_mb(), 1),
                          path=(tr.interaction or {}).get("path") if tr else None,
                          prompt_tokens=(tr.tokens or {}).get("prompt") if tr else None,
                          latency_ms=dict(tr.latency_ms) if tr else {},
                          policy=(tr.interaction or {}).get("recall_answer") if tr else None)
            if engine is not None and row.prompt_tokens and engine.last_timings is not timings_before:
                row.prompt_evaluated = engine.last_timings.get("prompt_n")
            if engine is not None:
                prefetched = engine._prefetch
                engine.wait_prefetch()  # the next turn's opening, evaluated while they read: never timed against alone
                if prefetched is not None and prefetched is not prefetch_before:
                    row.prefetch_evaluated = engine.prefetch_timings.get("prompt_n")
                prefetch_before = prefetched
            check(row, step, known, tr)
            if baseline is not None:
                row.alone_ttft_s, row.alone_tokens_per_s, row.alone_first_sentence_s = baseline.first_token(step["text"])
            rows.append(row)
            if progress:
                progress(f"turn {i}: {row.words} words, verbosity {verb}, ttft {row.ttft_s}s"
                         + (f" (alone {row.alone_ttft_s}s)" if baseline is not None else "")
                         + f", total {row.total_s}s, rss {row.rss_mb} MB")
    finally:
        if baseline is not None:
            baseline.close()
        store.close()
        if tmp is not None:
            tmp.cleanup()
    return summarise(rows, s.model, rss_start, spec.get("version", script))


def check(row: TurnRow, step: dict, known, trace=None) -> TurnRow:
    """Apply the checks of eval/chatcheck.py to one turn (`known` already holds its message)."""
    from eval import chatcheck

    reply = row.reply
    row.inventions = chatcheck.inventions(reply, known)
    expected = _expected(step)
    q = chatcheck.quotes(reply, known, expected if not step.get("unknown") else None)
    row.quoted_questions = q["questions"]
    if expected:
        row.recall_fact = expected[0]
        if trace is not None:
            hit_text = " ".join(h.get("text", "") for h in trace.hits)
            row.retrieved_fact = any(chatcheck.contains(hit_text, e) for e in expected)
        row.named_fact = any(chatcheck.contains(reply, e) for e in expected)
        row.recall_right = chatcheck.recall_right(reply, expected, known)
        row.recall_unquoted = any(chatcheck.contains(chatcheck.without_quotes(reply, known), e) for e in expected)
        row.quoted_nonanswers = q["nonanswers"]
    if step.get("unknown"):
        row.unknown = step["unknown"]
        row.quoted_nonanswers = q["nonanswers"]
        row.unknown_right = not row.inventions and not q["quoted"]
    if step.get("action") and trace is not None:
        row.action = step["action"]
        row.action_made = any(a.get("kind") == step["action"] for a in trace.actions_run + trace.actions_held)
    return row


def rescore(result: dict, script: str) -> dict:
    """A saved run (`--json`) checked again with the current checks (actions and retrieval as recorded)."""
    from eval import chatcheck

    spec = load_script(script)
    known = chatcheck.Known()
    rows = []
    for step, saved in zip(spec["turns"], result["rows"]):
        known.add(step["text"])
        rows.append(check(TurnRow(**saved), step, known))
    return summarise(rows, result["model"], result["rss_mb"]["start"], spec.get("version", script))


def _ratio(a: list[float], b: list[float]) -> float | None:
    if not a or not b:
        return None
    mb = statistics.median(b)
    return round(statistics.median(a) / mb, 2) if mb > 0 else None


def summarise(rows: list[TurnRow], model: str, rss_start: float, script: str = "") -> dict:
    by_verb: dict[str, list[int]] = {}
    for r in rows:
        by_verb.setdefault(r.verbosity or "unknown", []).append(r.words)
    recall = [r for r in rows if r.recall_fact]
    unknown = [r for r in rows if r.unknown]
    acts = [r for r in rows if r.action]
    ttfts = [r.ttft_s for r in rows if r.ttft_s is not None]
    later = [r.ttft_s for r in rows[1:] if r.ttft_s is not None]  # turn 1 also loads every model
    alone_later = [r.alone_ttft_s for r in rows[1:] if r.alone_ttft_s is not None]
    alone_sentence = [r.alone_first_sentence_s for r in rows[1:] if r.alone_first_sentence_s is not None]
    model_turns = [r for r in rows[1:] if r.ttft_s is not None and r.completion_tokens]
    tps = [r.tokens_per_s for r in rows if r.tokens_per_s]
    evaluated = [r.prompt_evaluated for r in rows[1:] if r.prompt_evaluated is not None]
    prefetched = [r.prefetch_evaluated for r in rows if r.prefetch_evaluated is not None]
    prompts_sent = [r.prompt_tokens for r in rows[1:] if r.prompt_tokens]
    alone_tps = [r.alone_tokens_per_s for r in rows if r.alone_tokens_per_s]
    return {
        "model": model,
        "script": script,
        "turns": len(rows),
        "looping": sum(r.loops for r in rows),
        "loop_rate": round(sum(r.loops for r in rows) / max(1, len(rows)), 3),
        "cut_mid_sentence": sum(r.cut for r in rows),
        "words_by_verbosity": {k: {"n": len(v), "mean": round(statistics.mean(v), 1), "max": max(v)}
                               for k, v in by_verb.items()},
        "invented": sum(bool(r.inventions) for r in rows),
        "recall": {"asked": len(recall), "retrieved": sum(bool(r.retrieved_fact) for r in recall),
                   "named": sum(bool(r.named_fact) for r in recall),
                   "named_when_retrieved": sum(bool(r.named_fact and r.retrieved_fact) for r in recall),
                   "right": sum(bool(r.recall_right) for r in recall),
                   "right_inventing_nothing": sum(bool(r.recall_right and not r.inventions) for r in recall),
                   "right_without_quote": sum(bool(r.recall_unquoted) for r in recall)},
        "never_told": {"asked": len(unknown), "right": sum(bool(r.unknown_right) for r in unknown)},
        "quoted_questions": sum(len(r.quoted_questions) for r in rows),
        "quoted_nonanswers": sum(len(r.quoted_nonanswers) for r in rows),
        "actions": {"requested": len(acts), "made": sum(bool(r.action_made) for r in acts)},
        "ttft_s": {"first_turn": rows[0].ttft_s if rows else None,
                   "median_after_first": round(statistics.median(later), 2) if later else None,
                   "max_after_first": max(later) if later else None,
                   "alone_median_after_first": round(statistics.median(alone_later), 3) if alone_later else None,
                   "ratio": _ratio(later, alone_later),
                   "ratio_to_alone_first_sentence": _ratio(later, alone_sentence),
                   "ratio_model_turns": _ratio([r.ttft_s for r in model_turns],
                                               [r.alone_ttft_s for r in model_turns if r.alone_ttft_s is not None]),
                   "mean_ratio": round(statistics.mean(later) / statistics.mean(alone_later), 2)
                   if later and alone_later else None} if ttfts else None,
        "tokens_per_s": {"median": round(statistics.median(tps), 1),
                         "alone_median": round(statistics.median(alone_tps), 1) if alone_tps else None,
                         "ratio": _ratio(tps, alone_tps)} if tps else None,
        "prompt_tokens": {"turns": len(prompts_sent),
                          "median": statistics.median(prompts_sent) if prompts_sent else None,
                          "max": max(prompts_sent) if prompts_sent else None,
                          "evaluated_median": statistics.median(evaluated) if evaluated else None,
                          "evaluated_max": max(evaluated) if evaluated else None,
                          "prefetched": {"turns": len(prefetched),
                                         "evaluated_median": statistics.median(prefetched) if prefetched else None}},
        "rss_mb": {"start": round(rss_start, 1), "end": rows[-1].rss_mb if rows else None,
                   "max": max(r.rss_mb for r in rows) if rows else None},
        "rows": [r.__dict__ for r in rows],
    }


def render(r: dict) -> str:
    out = [f"bench chat on {r['model']}: {r.get('script', '')}, {r['turns']} turns"]
    for row in r["rows"]:
        flags = ",".join(f for f, on in (("LOOP", row["loops"]), ("CUT", row["cut"]),
                                         ("INVENTS", row.get("inventions")),
                                         ("RECALL-RIGHT", row.get("recall_right")),
                                         ("RECALL-WRONG", row.get("recall_right") is False),
                                         ("NEVER-TOLD-RIGHT", row.get("unknown_right")),
                                         ("NEVER-TOLD-WRONG", row.get("unknown_right") is False),
                                         ("QUOTES-QUESTION", row.get("quoted_questions")),
                                         ("QUOTES-NON-ANSWER", row.get("quoted_nonanswers")),
                                         ("ACTION-MADE", row.get("action_made")),
                                         ("NO-ACTION", row.get("action_made") is False)) if on)
        alone = f" (alone {row['alone_ttft_s']}s)" if row.get("alone_ttft_s") is not None else ""
        out.append(f"  {row['i']:>2} [{row['verbosity'] or '-'}] {row['words']:>3} words "
                   f"ttft {row['ttft_s']}s{alone} total {row['total_s']}s {flags}")
        out.append(f"     > {row['text']}")
        out.append(f"     < {row['reply'].replace(chr(10), ' / ')[:400]}")
        for f in row.get("inventions") or []:
            out.append(f"       invented ({f['rule']}): {f['term']}")
    out.append(f"looping replies: {r['looping']} of {r['turns']} (rate {r['loop_rate']})")
    out.append(f"cut mid-sentence: {r['cut_mid_sentence']}")
    for k, v in r["words_by_verbosity"].items():
        out.append(f"words per reply, verbosity {k}: mean {v['mean']} max {v['max']} (n={v['n']})")
    out.append(f"replies inventing a participant fact: {r['invented']} of {r['turns']}")
    rc = r["recall"]
    out.append(f"recall: {rc['asked']} asked, answered right {rc['right']} (of which inventing nothing "
               f"{rc.get('right_inventing_nothing')}; named outside a quote of theirs {rc.get('right_without_quote')}), "
               f"fact retrieved {rc['retrieved']}")
    nt = r["never_told"]
    if nt["asked"]:
        out.append(f"never told: {nt['asked']} asked, answered without inventing or quoting {nt['right']}")
    out.append(f"questions quoted as facts: {r['quoted_questions']}; quoted statements that do not answer: "
               f"{r['quoted_nonanswers']}")
    if r["actions"]["requested"]:
        out.append(f"action requests: {r['actions']['requested']}, action made (run or held) {r['actions']['made']}")
    out.append(f"time to first shown text: {r['ttft_s']}")
    if r["ttft_s"] and r["ttft_s"].get("ratio") is not None:
        t = r["ttft_s"]
        out.append(f"TTFT product / llama.cpp alone (medians, turns 2-{r['turns']}): {t['ratio']}x "
                   f"(means {t.get('mean_ratio')}x; turns the model answered {t.get('ratio_model_turns')}x; "
                   f"against llama.cpp alone's first whole sentence {t.get('ratio_to_alone_first_sentence')}x)")
    if r.get("prompt_tokens"):
        out.append(f"prompt tokens (turns 2-{r['turns']} that called the model): {r['prompt_tokens']}")
    out.append(f"tokens/s (whole generate step): {r['tokens_per_s']}")
    out.append(f"RSS MB: {r['rss_mb']}")
    return "\n".join(out)


def _command():
    import click

    @click.command("chat")
    @click.option("--model", default=None, help="Model to talk to (default: the configured one, the embedded SmolLM2).")
    @click.option("--script", default="benchchat-v1.json", show_default=True,
                  help="Conversation script: a name in eval/data (benchchat-week-v1.json: the week) or a path.")
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
    @click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
                  help="Where the bench database goes (default: a temporary directory, removed after).")
    @click.option("--alone/--no-alone", default=None,
                  help="Also time llama.cpp alone on the same file after each turn (default: on the embedded model).")
    @click.option("--tools", type=click.Choice(["auto", "on", "off"]), default=None,
                  help="COMPANION_TOOLS for this run.")
    @click.option("--rescore", "rescore_file", type=click.Path(exists=True, dir_okay=False), default=None,
                  help="Check a saved --json run of --script again with the current checks (no model run).")
    def bench_chat(model, script, as_json, data_dir, alone, tools, rescore_file):
        """A scripted conversation: invented facts, recall, loops, cut replies, words, TTFT against llama.cpp alone, RSS."""
        def progress(line: str) -> None:
            click.echo(line, err=True)

        try:
            load_script(script)
        except ScriptError as e:
            raise click.ClickException(str(e)) from None
        if rescore_file:
            result = rescore(json.loads(Path(rescore_file).read_text(encoding="utf-8")), script)
            click.echo(json.dumps(result) if as_json else render(result))
            return
        result = run(model=model, data_dir=data_dir, script=script, progress=progress, alone=alone,
                     overrides={"tools": tools} if tools else None)
        click.echo(json.dumps(result) if as_json else render(result))

    return bench_chat


bench_chat = _command()
