"""Features of a message and of the relationship, for the learned gate (and for analysis).

All are computed as of the turn: nothing at or after ctx.as_of is read.
"""

from __future__ import annotations

import math

import numpy as np

from memory import keys
from memory.context import TurnContext
from memory.tokens import WORD

TEMPORAL = frozenset("""yesterday ago last earlier before previously week weekend month since
again still anymore remember remembered recall back then once already""".split())
REFERENTIAL = frozenset("""that those it she he they her him them said told mentioned talked
discussed promised asked suggested you""".split())
WH = frozenset("what when where who whom which why how did do does was were is are can could would".split())

NAMES = [
    "log_days_since_start", "log_earlier_messages", "log_length", "question", "wh_start",
    "temporal_cues", "referential_cues", "bm25_outside", "dense_outside", "past_retrieval_rate",
]


def _positions(ordinals: np.ndarray, recent: set[int]) -> np.ndarray:
    """Where the recent ordinals sit in `ordinals` (ascending, as every index returns them)."""
    want = np.fromiter(recent, dtype=np.int64, count=len(recent))
    pos = np.searchsorted(ordinals, want)
    inside = pos < len(ordinals)
    pos = pos[inside]
    return pos[ordinals[pos] == want[inside]]


def _outside_max(scores: np.ndarray, ordinals: np.ndarray, recent: set[int]) -> float:
    if len(scores) == 0:
        return 0.0
    keep = ~np.isin(ordinals, np.fromiter(recent, dtype=np.int64)) if recent else slice(None)
    vals = scores[keep]
    vals = vals[np.isfinite(vals)]
    return float(vals.max()) if len(vals) else 0.0


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


def past_retrieval_rate(ctx: TurnContext) -> float:
    """Share of this participant's earlier live turns whose gate chose to retrieve."""
    r = ctx.store.conn.execute(
        "SELECT avg(t.decision) FROM traces t JOIN messages m "
        "ON m.participant=t.participant AND m.dayid=t.dayid "
        "WHERE t.participant=? AND m.ordinal<? AND t.decision IS NOT NULL",
        (ctx.participant, ctx.as_of),
    ).fetchone()
    return float(r[0]) if r and r[0] is not None else 0.0


def compute(ctx: TurnContext) -> dict[str, float]:
    words = WORD.findall(ctx.text.lower())
    latest = ctx.store.conn.execute(  # the turn's own message (or the newest before the bound)
        "SELECT dayid FROM messages WHERE participant=? AND ordinal<=? ORDER BY ordinal DESC LIMIT 1",
        (ctx.participant, ctx.as_of),
    ).fetchone()
    day = keys.parse_dayid(latest["dayid"])[0] if latest else 1
    earlier = ctx.store.conn.execute(
        "SELECT count(*) FROM messages WHERE participant=? AND ordinal<?", (ctx.participant, ctx.as_of)
    ).fetchone()[0]
    return {
        "log_days_since_start": math.log1p(day - 1),
        "log_earlier_messages": math.log1p(earlier),
        "log_length": math.log1p(len(words)),
        "question": float(ctx.text.rstrip().endswith("?")),
        "wh_start": float(bool(words) and words[0] in WH),
        "temporal_cues": float(sum(w in TEMPORAL for w in words)),
        "referential_cues": float(sum(w in REFERENTIAL for w in words)),
        "bm25_outside": bm25_outside(ctx)[0],
        "dense_outside": dense_outside(ctx)[0],
        "past_retrieval_rate": past_retrieval_rate(ctx),
    }
