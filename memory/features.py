"""Features of a message and of the relationship, for the learned gate (and for analysis).

All are computed as of the turn: nothing at or after ctx.as_of is read. Phrase banks (back-reference
cues, time cues, small talk, personal nouns) are versioned data in memory/data/gate-cues-v3.json.
Every feature is cheap: regexes over the message, the BM25 and dense scores the retriever shares
through ctx.cache, and a handful of rows read by ordinal (no parse: live chat is often lowercase,
where a tagger's proper-noun guesses fail, and a parse costs more than the rest of the gate).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from memory import keys
from memory.context import TurnContext
from memory.tokens import STOPWORDS, WORD, tokenize

CUES_FILE = Path(__file__).parent / "data" / "gate-cues-v3.json"

TEMPORAL = frozenset("""yesterday ago last earlier before previously week weekend month since
again still anymore remember remembered recall back then once already""".split())
REFERENTIAL = frozenset("""that those it she he they her him them said told mentioned talked
discussed promised asked suggested you""".split())
WH = frozenset("what when where who whom which why how did do does was were is are can could would".split())

# The original ten (kept: weights trained on them still load) and the issue #15 evidence.
BASE = [
    "log_days_since_start", "log_earlier_messages", "log_length", "question", "wh_start",
    "temporal_cues", "referential_cues", "bm25_outside", "dense_outside", "past_retrieval_rate",
]
EVIDENCE = [
    "backref_cues", "time_cues", "own_life_question", "personal_nouns", "entity_novelty",
    "smalltalk", "phatic_repeat", "general_request", "bm25_outside_user", "dense_outside_user",
    "best_match_companion",
]
# Issue 24: real chat. What the recent window already answers (thread evidence), the turn's place
# in the conversation, and callbacks to the other side: what the companion asked, suggested or
# planned, and names only the companion used.
THREAD = ["dense_recent", "bm25_recent", "answers_question", "log_gap_hours"]
OTHER = ["other_ref", "companion_callback", "companion_novelty", "unseen_reference", "news_cues"]
# Callbacks to the companion's own past (issue 24, second round): what the participant answers, reports
# back on or asks about of the companion's earlier questions, suggestions and plans (its own messages
# as stored), and a request for an action, which is not a question about the past.
COMPANION_PAST = ["companion_anaphora", "answer_opening", "unprompted_answer", "prompt_bm25", "prompt_margin",
                  "action_request"]
# "the festival", "that community meeting", "your other dog", "our hike": a determiner or possessive and
# a word the recent window does not hold but the conversation before it does.
DETERMINED = re.compile(r"\b(?:the|that|those|this|these|your|our|his|her|their)\s+((?:\w+\s+){0,2}\w+)")
# Issue 24, third round: what the message presupposes that the window does not hold. An answer with no
# question on screen, a report back ("so I tried it", "it went great") whose words the window never said,
# the companion's questions, suggestions and plans reached deeper than the ten best matches, a "that X" /
# "your X" whose X only the companion said before the window, and the need the companion's own newest
# message carries (the reply to "how did the race go?" needs the race, which is off screen).
ANTECEDENT = ["window_overlap", "orphan_answer", "orphan_report", "prompt_dense_deep", "prompt_deep_margin",
              "companion_definite", "reply_to_callback", "reply_to_far"]
NAMES = BASE + EVIDENCE + THREAD + OTHER + COMPANION_PAST + ANTECEDENT
PROMPT_DEPTH = 40  # how many of the best dense matches outside the window are read for the companion's prompts
PROMPT_SIMILAR = 0.3  # a companion prompt this close in meaning is named in the reason before the best lexical one
USER_DEPTH = 10  # how many of the best matches outside the window are read to find the participant's own


@lru_cache(maxsize=1)
def cues() -> dict:
    data = json.loads(CUES_FILE.read_text())

    def rx(entries, whole=False):
        body = "|".join(f"(?:{e})" for e in entries)
        return re.compile(rf"^\W*(?:{body})(?:\W+(?:{body}))*\W*$" if whole else rf"(?<!\w)(?:{body})(?!\w)")

    return {
        "version": data["version"],
        "backref": rx(data["backref"]),
        "time": rx(data["time"]),
        "smalltalk": rx(data["smalltalk"], whole=True),
        "general_request": rx(data["general_request"]),
        "personal_nouns": rx(data["personal_nouns"]),
        "personal_words": frozenset(w for e in data["personal_nouns"] for w in WORD.findall(e) if w.isalpha()),
        "possessive": rx(data["first_person_possessive"]),
        "first_person_past": rx(data["first_person_past"]),
        "other_ref": rx(data.get("other_ref", [])) if data.get("other_ref") else None,
        "prompting": rx(data.get("prompting", [])) if data.get("prompting") else None,
        "news": rx(data.get("news", [])) if data.get("news") else None,
        "companion_anaphora": rx(data["companion_anaphora"]) if data.get("companion_anaphora") else None,
        "answer_opening": rx(data["answer_opening"]) if data.get("answer_opening") else None,
        "action_request": rx(data["action_request"]) if data.get("action_request") else None,
        "asked_back": rx(data["asked_back"]) if data.get("asked_back") else None,
    }


def _norm(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


def _positions(ordinals: np.ndarray, recent: set[int]) -> np.ndarray:
    """Where the recent ordinals sit in `ordinals` (ascending, as every index returns them)."""
    want = np.fromiter(recent, dtype=np.int64, count=len(recent))
    pos = np.searchsorted(ordinals, want)
    inside = pos < len(ordinals)
    pos = pos[inside]
    return pos[ordinals[pos] == want[inside]]


def bm25_outside(ctx: TurnContext) -> tuple[float, int | None]:
    """Best BM25 score outside the recent window, relative to the query's reference score."""
    scores, ordinals, best = ctx.bm25(ctx.text)
    if best <= 0 or len(scores) == 0:
        return 0.0, None
    s = scores
    if ctx.recent:
        s = scores.copy()
        s[_positions(ordinals, ctx.recent_ordinals)] = 0.0
    i = int(np.argmax(s))
    return float(s[i] / best), (int(ordinals[i]) if s[i] > 0 else None)


def dense_outside(ctx: TurnContext) -> tuple[float, int | None]:
    sims, ordinals = ctx.dense(ctx.text)
    if len(sims) == 0:
        return 0.0, None
    s = sims
    if ctx.recent:
        s = sims.copy()
        s[_positions(ordinals, ctx.recent_ordinals)] = -np.inf
    i = int(np.argmax(s))
    return (float(s[i]), int(ordinals[i])) if np.isfinite(s[i]) else (0.0, None)


def _top_outside(ctx: TurnContext, scores: np.ndarray, ordinals: np.ndarray, floor: float) -> list[tuple[int, float]]:
    """The USER_DEPTH best (ordinal, score) outside the recent window, best first."""
    if len(scores) == 0:
        return []
    s = scores
    if ctx.recent:
        s = scores.copy()
        s[_positions(ordinals, ctx.recent_ordinals)] = floor
    k = min(USER_DEPTH, len(s))
    pick = np.argpartition(-s, k - 1)[:k]
    pick = pick[np.argsort(-s[pick], kind="stable")]
    return [(int(ordinals[i]), float(s[i])) for i in pick if s[i] > floor]


def _senders(ctx: TurnContext, ordinals: list[int]) -> dict[int, tuple[str, str]]:
    """(sender, text) of a few ordinals, memoized for the turn."""
    memo = ctx.cache.setdefault(("rows", ctx.as_of), {})
    want = [o for o in ordinals if o not in memo]
    if want:
        marks = ",".join("?" * len(want))
        for r in ctx.store.conn.execute(
            f"SELECT ordinal, sender, text FROM messages WHERE participant=? AND ordinal IN ({marks}) AND ordinal<?",
            (ctx.participant, *want, ctx.as_of),
        ):
            memo[r[0]] = (r[1], r[2])
    return {o: memo[o] for o in ordinals if o in memo}


def speaker_aware(ctx: TurnContext) -> dict:
    """Best matches outside the window among the participant's own messages, and whether the best
    overall was the companion's (a companion paraphrase of a fact is weaker evidence than the fact)."""
    scores, ordinals, ref = ctx.bm25(ctx.text)
    lex = _top_outside(ctx, scores, ordinals, 0.0) if ref > 0 else []
    sims, dord = ctx.dense(ctx.text)
    den = _top_outside(ctx, sims, dord, -np.inf)
    rows = _senders(ctx, [o for o, _ in lex] + [o for o, _ in den])
    lex_user = next(((o, s) for o, s in lex if rows.get(o, ("",))[0] == "user"), (None, 0.0))
    den_user = next(((o, s) for o, s in den if rows.get(o, ("",))[0] == "user"), (None, 0.0))
    best = lex[0][0] if lex else (den[0][0] if den else None)
    asked = [(o, s) for o, s in den if _prompts(rows.get(o, ("", "")))]
    asked_lex = [(o, s) for o, s in lex if _prompts(rows.get(o, ("", "")))]
    return {
        "companion_callback": max(asked[0][1], 0.0) if asked else 0.0,
        "prompt_bm25": asked_lex[0][1] / ref if asked_lex and ref > 0 else 0.0,
        # the companion's question, suggestion or plan the message matches best (for the reason)
        "prompt_best": (asked[0][0] if asked and asked[0][1] >= PROMPT_SIMILAR
                        else (asked_lex[0][0] if asked_lex else None)),
        "bm25_outside_user": lex_user[1] / ref if ref > 0 else 0.0,
        "bm25_user_best": lex_user[0],
        "dense_outside_user": max(den_user[1], 0.0),
        "dense_user_best": den_user[0],
        "best_match_companion": float(best is not None and rows.get(best, ("",))[0] == "companion"),
        "lex": lex,
        "rows": rows,
    }


def _prompts(row: tuple[str, str]) -> bool:
    """A companion message a later one can answer or report back on: a question, a suggestion, a plan."""
    sender, text = row
    if sender != "companion":
        return False
    prompting = cues()["prompting"]
    return "?" in text or (prompting is not None and bool(prompting.search(text.lower())))


def companion_past(ctx: TurnContext, sp: dict, f: dict) -> dict[str, float]:
    """Evidence of a callback to the companion's own past, beside the cue counts of `f`: how much better
    the message matches one of the companion's questions, suggestions or plans before the window than
    anything the companion said in it (`prompt_margin`), and a message that opens as an answer when the
    newest message on screen asks nothing (`unprompted_answer`: it answers something older)."""
    best_in = 0.0
    if ctx.recent:
        sims, dord = ctx.dense(ctx.text)
        pos = _positions(dord, {m.ordinal for m in ctx.recent if m.sender == "companion"})
        if len(pos):
            best_in = max(float(sims[pos].max()), 0.0)
    last = ctx.recent[-1] if ctx.recent else None
    asked_now = last is not None and last.sender == "companion" and "?" in last.text
    return {"prompt_margin": max(sp["companion_callback"] - best_in, 0.0),
            "unprompted_answer": float(f["answer_opening"] > 0 and not asked_now)}


def phatic_repeat(ctx: TurnContext, sp: dict) -> float:
    """1 when the message repeats, near word for word, one of the participant's earlier lines that
    needed nothing then either (small talk said again is not a callback)."""
    mine = set(tokenize(ctx.text))
    words = _norm(ctx.text)
    for o, _ in sp["lex"][:3]:
        sender, text = sp["rows"].get(o, ("", ""))
        if sender != "user":
            continue
        theirs = set(tokenize(text))
        if _norm(text) == words or (mine and len(mine & theirs) * 2 / (len(mine) + len(theirs)) >= 0.8):
            return 1.0
    return 0.0


def _occurrences(ctx: TurnContext, term: str, limit: int = 4) -> list[int]:
    """The newest ordinals before as_of, outside the recent window, whose text has `term`."""
    key = ("lexical index", ctx.participant)
    if key not in ctx.cache:  # synced once a turn, not once a word
        ctx.cache[key] = ctx.store.bm25.synced(ctx.participant)
    idx = ctx.cache[key]
    with idx.lock:
        ords = idx.ordinals.view
        n = int(np.searchsorted(ords, ctx.as_of))
        docs, _ = idx.arrays(term)
        c = int(np.searchsorted(docs, n))
        found = ords[docs[max(0, c - limit - len(ctx.recent)):c]].tolist()
    recent = ctx.recent_ordinals
    return [o for o in reversed(found) if o not in recent][:limit]


def _novel(ctx: TurnContext) -> dict[str, list[str]]:
    """Names and personal nouns of the message that each side ("user", "companion") used before the
    recent window and that the window does not hold (memoized for the turn)."""
    key = ("novel", ctx.as_of, ctx.text)
    if key in ctx.cache:
        return ctx.cache[key]
    c = cues()
    words = WORD.findall(ctx.text)
    recent_words = {w for m in ctx.recent for w in tokenize(m.text)}
    candidates: dict[str, bool] = {}  # word -> written as a name in this message
    for i, w in enumerate(words):
        lw = w.lower()
        if len(lw) < 3 or not w.isalpha() or lw in STOPWORDS or lw in recent_words:
            continue
        candidates[lw] = candidates.get(lw, False) or (i > 0 and w[0].isupper())
    novel: dict[str, list[str]] = {"user": [], "companion": []}
    for lw, as_name in candidates.items():
        occ = _occurrences(ctx, lw)
        if not occ:
            continue
        rows = _senders(ctx, occ)
        pat = re.compile(rf"(?<!^)(?<![.!?]\s)\b{re.escape(lw)}\b", re.IGNORECASE)
        for side, found in novel.items():
            for o in occ:
                sender, t = rows.get(o, ("", ""))
                if sender != side:
                    continue
                said_as_name = any(m.group(0)[0].isupper() for m in pat.finditer(t))
                if as_name or lw in c["personal_words"] or said_as_name:
                    found.append(lw)
                    break
    ctx.cache[key] = novel
    return novel


def entity_novelty(ctx: TurnContext) -> tuple[float, list[str]]:
    """Names and personal nouns of the message that the participant used before the recent window
    and that the window does not hold: what a callback by name looks like."""
    novel = _novel(ctx)["user"]
    return float(len(novel)), novel


def unseen_reference(ctx: TurnContext) -> tuple[float, list[str]]:
    """Phrases that point at something by determiner or possessive ("that event", "your other dog")
    whose words the recent window does not hold and the conversation before it does: a reference to
    what is off screen. Counted once per phrase."""
    recent = {w for m in ctx.recent for w in tokenize(m.text)}
    found = []
    for m in DETERMINED.finditer(ctx.text.lower()):
        heads = [w for w in tokenize(m.group(1)) if len(w) >= 3 and w not in recent]
        if any(_occurrences(ctx, h, limit=1) for h in heads):
            found.append(m.group(0))
    return float(len(found)), found


def companion_novelty(ctx: TurnContext) -> tuple[float, list[str]]:
    """The same for names only the companion said before the window ("how is Coco doing?" after the
    companion told of its new puppy Coco): a callback to the other side."""
    mine = set(_novel(ctx)["user"])
    novel = [w for w in _novel(ctx)["companion"] if w not in mine]
    return float(len(novel)), novel


def in_window(ctx: TurnContext) -> dict[str, float]:
    """How well the recent window already answers the message: the best dense and BM25 match among
    the window's messages, whether the newest of them is a question from the companion (the message
    most likely answers it), and the hours since the previous message (a message after a silence
    opens a new session, where callbacks come)."""
    out = {"dense_recent": 0.0, "bm25_recent": 0.0, "answers_question": 0.0, "log_gap_hours": 0.0}
    if not ctx.recent:
        return out
    sims, dord = ctx.dense(ctx.text)
    pos = _positions(dord, ctx.recent_ordinals)
    if len(pos):
        out["dense_recent"] = max(float(sims[pos].max()), 0.0)
    scores, ordinals, ref = ctx.bm25(ctx.text)
    pos = _positions(ordinals, ctx.recent_ordinals)
    if len(pos) and ref > 0:
        out["bm25_recent"] = float(scores[pos].max() / ref)
    last = ctx.recent[-1]
    out["answers_question"] = float(last.sender == "companion" and "?" in last.text)
    if ctx.time is not None:
        from datetime import datetime, timezone

        prev = datetime.fromisoformat(last.ts)
        prev = prev if prev.tzinfo else prev.replace(tzinfo=timezone.utc)
        out["log_gap_hours"] = math.log1p(max((ctx.time.instant - prev).total_seconds(), 0.0) / 3600)
    return out


def _content(text: str) -> set[str]:
    return {w for w in tokenize(text) if len(w) >= 3 and w.isalpha()}


def _stored_similarities(ctx: TurnContext, ordinal: int) -> np.ndarray | None:
    """Cosine of the stored vector of message `ordinal` to every message before as_of (None when the
    index does not hold it): what an earlier message points at, with no new embedding."""
    idx = ctx.store.vectors.synced(ctx.participant)
    with idx.lock:
        ords = idx.ordinals.view
        i = int(np.searchsorted(ords, ordinal))
        if i >= len(ords) or ords[i] != ordinal or i >= idx.vectors.n:
            return None
        vec = idx.vectors.row(i)
    return ctx.store.vectors.similarities(ctx.participant, vec, ctx.as_of)[0]


def antecedents(ctx: TurnContext) -> dict[str, float]:
    """What the message presupposes that the recent window does not hold (ANTECEDENT):

    - `window_overlap`: the share of the message's content words that the window says;
    - `orphan_answer`: it opens as an answer ("yes", "not yet", "it went ...", "thanks for asking")
      and no companion message on screen asks anything: it answers an older question;
    - `orphan_report`: it reports back or points back ("so I tried it", "I did", "it went great", "that
      book you recommended") scaled by the share of its words the window does not hold;
    - `prompt_dense_deep`: the nearest (cosine) of the companion's questions, suggestions and plans
      before the window, among the PROMPT_DEPTH best matches outside it; `prompt_deep_margin`: how much
      nearer that is than anything the companion said on screen;
    - `companion_definite`: "the/that/your/our X" phrases whose X the window does not hold and that the
      companion, not the participant, said before the window;
    - `reply_to_callback`: the newest message on screen is the companion's and itself points back ("how
      did your race go?", "did you ever try ..."): the reply needs what that question needs;
      `reply_to_far`: how near that companion message's own stored vector comes to a message before the
      window (its best cosine there), 0 when the newest message on screen is not the companion's.
    """
    c = cues()
    low = ctx.text.lower().replace("\u2019", "'")
    mine = _content(ctx.text)
    window_words: set[str] = set()
    for m in ctx.recent:
        window_words |= _content(m.text)
    overlap = len(mine & window_words) / len(mine) if mine else 0.0
    asked_on_screen = any(m.sender == "companion" and "?" in m.text for m in ctx.recent)
    opening = c["answer_opening"] is not None and bool(c["answer_opening"].search(low))
    asked_back = c["asked_back"] is not None and bool(c["asked_back"].search(low))
    pointing = c["companion_anaphora"] is not None and bool(c["companion_anaphora"].search(low))
    report = opening or asked_back or pointing or bool(c["first_person_past"].search(low))
    out = {"window_overlap": overlap,
           "orphan_answer": float((opening or asked_back) and not asked_on_screen),
           "orphan_report": float(report) * (1.0 - overlap) if mine else float(report)}
    # the companion's prompts, deeper than the ten best matches
    sims, dord = ctx.dense(ctx.text)
    deep, best_in = 0.0, 0.0
    if len(sims):
        s = sims
        if ctx.recent:
            s = sims.copy()
            s[_positions(dord, ctx.recent_ordinals)] = -np.inf
            pos = _positions(dord, {m.ordinal for m in ctx.recent if m.sender == "companion"})
            if len(pos):
                best_in = max(float(sims[pos].max()), 0.0)
        k = min(PROMPT_DEPTH, len(s))
        pick = np.argpartition(-s, k - 1)[:k]
        top = [(int(dord[i]), float(s[i])) for i in pick if np.isfinite(s[i])]
        rows = _senders(ctx, [o for o, _ in top])
        asked = [v for o, v in top if _prompts(rows.get(o, ("", "")))]
        deep = max(max(asked), 0.0) if asked else 0.0
    out["prompt_dense_deep"] = deep
    out["prompt_deep_margin"] = max(deep - best_in, 0.0)
    # "that book", "your idea": a head word only the companion said before the window
    found = 0
    for m in DETERMINED.finditer(low):
        heads = [w for w in tokenize(m.group(1)) if len(w) >= 3 and w not in window_words]
        for h in heads:
            occ = _occurrences(ctx, h, limit=3)
            senders = {v[0] for v in _senders(ctx, occ).values()}
            if "companion" in senders and "user" not in senders:
                found += 1
                break
    out["companion_definite"] = float(found)
    # the need the companion's newest message carries
    last = ctx.recent[-1] if ctx.recent else None
    out["reply_to_callback"] = out["reply_to_far"] = 0.0
    if last is not None and last.sender == "companion":
        lt = last.text.lower().replace("\u2019", "'")
        n = sum(len(c[k].findall(lt)) for k in ("backref", "other_ref", "companion_anaphora") if c.get(k) is not None)
        out["reply_to_callback"] = float(n > 0)
        far = _stored_similarities(ctx, last.ordinal)
        if far is not None and len(far):
            first = min(m.ordinal for m in ctx.recent)
            upto = int(np.searchsorted(dord, first)) if len(dord) else 0
            if upto > 0:
                out["reply_to_far"] = max(float(far[:upto].max()), 0.0)
    return out


def rewrite_for_lexical(text: str) -> str:
    """The query BM25 should see: back-reference cues and small talk dropped ("do you remember",
    "again", "i told you" match every message that says them), names and content words kept.
    Returns `text` itself when nothing is dropped, so the turn's cached scores are reused."""
    c = cues()
    out = c["backref"].sub(" ", text.lower())
    if c["smalltalk"].match(out):
        return text
    out = " ".join(out.split())
    if not tokenize(out) or set(tokenize(out)) == set(tokenize(text)):
        return text
    return out


def cue_features(text: str) -> dict[str, float]:
    """The message-only evidence (no store): cue counts, question shape, small talk."""
    c = cues()
    low = text.lower().strip().replace("\u2019", "'")
    words = WORD.findall(low)
    question = low.endswith("?") or bool(words and words[0] in WH)
    mine = bool(c["possessive"].search(low)) or bool(c["first_person_past"].search(low))
    personal = len(c["personal_nouns"].findall(low))
    # A request that the companion do something ("can you remind me to call my mum?") asks nothing of
    # the past: its "remind me" is no back-reference and its "my mum" no question about their life.
    request = c["action_request"] is not None and bool(c["action_request"].search(low))
    past = c["action_request"].sub(" ", low) if request else low

    def count(name):
        return float(len(c[name].findall(low))) if c.get(name) is not None else 0.0

    return {
        "other_ref": count("other_ref"),
        "news_cues": count("news"),
        "companion_anaphora": count("companion_anaphora"),
        "answer_opening": float(count("answer_opening") > 0),
        "action_request": float(request),
        "backref_cues": float(len(c["backref"].findall(past))),
        "time_cues": float(len(c["time"].findall(low))),
        "own_life_question": float(question and (mine or personal > 0) and not request),
        "personal_nouns": float(personal),
        "smalltalk": float(bool(c["smalltalk"].match(low))) if len(words) <= 8 else 0.0,
        "general_request": float(bool(c["general_request"].search(low)) and not mine),
    }


def past_retrieval_rate(ctx: TurnContext) -> float:
    """Share of this participant's earlier live turns whose gate chose to retrieve."""
    r = ctx.store.conn.execute(
        "SELECT avg(t.decision) FROM traces t JOIN messages m "
        "ON m.participant=t.participant AND m.dayid=t.dayid "
        "WHERE t.participant=? AND m.ordinal<? AND t.decision IS NOT NULL",
        (ctx.participant, ctx.as_of),
    ).fetchone()
    return float(r[0]) if r and r[0] is not None else 0.0


def compute(ctx: TurnContext, names=None) -> dict[str, float]:
    """Feature values by name (all of NAMES, or only what `names` asks for, skipping the rest's cost)."""
    want = set(NAMES if names is None else names)
    words = WORD.findall(ctx.text.lower())
    out: dict[str, float] = {}
    if want & {"log_days_since_start"}:
        latest = ctx.store.conn.execute(  # the turn's own message (or the newest before the bound)
            "SELECT dayid FROM messages WHERE participant=? AND ordinal<=? ORDER BY ordinal DESC LIMIT 1",
            (ctx.participant, ctx.as_of),
        ).fetchone()
        day = keys.parse_dayid(latest["dayid"])[0] if latest else 1
        out["log_days_since_start"] = math.log1p(day - 1)
    if "log_earlier_messages" in want:
        out["log_earlier_messages"] = math.log1p(max(ctx.as_of - 1, 0))  # ordinals count from 1
    out["log_length"] = math.log1p(len(words))
    out["question"] = float(ctx.text.rstrip().endswith("?"))
    out["wh_start"] = float(bool(words) and words[0] in WH)
    out["temporal_cues"] = float(sum(w in TEMPORAL for w in words))
    out["referential_cues"] = float(sum(w in REFERENTIAL for w in words))
    if "bm25_outside" in want:
        out["bm25_outside"] = bm25_outside(ctx)[0]
    if "dense_outside" in want:
        out["dense_outside"] = dense_outside(ctx)[0]
    if "past_retrieval_rate" in want:
        out["past_retrieval_rate"] = past_retrieval_rate(ctx)
    out.update(cue_features(ctx.text))
    if want & {"bm25_outside_user", "dense_outside_user", "best_match_companion", "phatic_repeat",
               "companion_callback", "prompt_bm25", "prompt_margin", "unprompted_answer"}:
        sp = speaker_aware(ctx)
        out.update({k: sp[k] for k in ("bm25_outside_user", "dense_outside_user", "best_match_companion",
                                       "companion_callback", "prompt_bm25")})
        out["phatic_repeat"] = phatic_repeat(ctx, sp)
        out.update(companion_past(ctx, sp, out))
        # For the decision's reason: the participant's own nearest message, not a companion reply, and
        # the companion's earlier question, suggestion or plan the message matches best
        ctx.cache["evidence"] = {"own_best": sp["bm25_user_best"] or sp["dense_user_best"],
                                 "prompt_best": sp["prompt_best"]}
    if "entity_novelty" in want:
        out["entity_novelty"], novel = entity_novelty(ctx)
        ctx.cache.setdefault("evidence", {})["names"] = novel
    if "companion_novelty" in want:
        out["companion_novelty"], novel = companion_novelty(ctx)
        ctx.cache.setdefault("evidence", {})["their_names"] = novel
    if "unseen_reference" in want:
        out["unseen_reference"], refs = unseen_reference(ctx)
        ctx.cache.setdefault("evidence", {})["references"] = refs
    if want & set(THREAD):
        out.update(in_window(ctx))
    if want & set(ANTECEDENT):
        out.update(antecedents(ctx))
    return out
