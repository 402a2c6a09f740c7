"""Learned fusion: earlier messages ranked by a linear model over features of (query, message).

Candidates are the union of BM25's and the dense index's top `depth` over every message before the
bound (the arrays the gate already computed for this turn, through ctx.bm25 / ctx.dense); each
candidate gets the features below, all cheap and all as of the turn:

- `bm25`, `dense`: BM25 relative to the query's reference score (the query without recall cues),
  dense cosine clipped at 0; `bm25_logrank`, `dense_logrank`: log(1 + rank) in each list (depth + 1
  when outside it), so how a message ranks counts beside how it scores;
- `nb_dense`, `nb_bm25`: the best of the two neighbouring messages' scores ("haha yes, that one"
  is about what was said just before), and `nb_dense_short` the same for short messages only;
  `log_length`: log(1 + words);
- `companion`: sent by the other side; `self_match`: a first-person question and the participant's
  own message, or "you ..." and the companion's; `speaker_named`, `other_named`: for corpora that
  store "Name: text" (LoCoMo), the query names this message's speaker, or names a speaker who is not
  this one ("what did Caroline ..." is mostly answered by Caroline);
- `when_time`: a question about when, and a message holding a time expression ("yesterday",
  "last week", a month, a year); `date_match`: the query names a period (an explicit month or year,
  or "last week" resolved against the turn's time) and the message was sent in it;
- `session_open`: the first message after a silence of 30 minutes (news comes there);
  `is_question`: the message asks something (answers live in statements).

The model is data (memory/data/ranker-v1.json, written by `python -m eval.ranktrain`): feature
names, means, scales, coefficients. Messages outside the candidates are not ranked.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path

import numpy as np

from memory import features as F
from memory.context import TurnContext
from memory.tokens import WORD

FEATURES = [
    "bm25", "dense", "bm25_logrank", "dense_logrank", "nb_dense", "nb_bm25", "nb_dense_short", "log_length",
    "companion", "self_match", "speaker_named", "other_named", "when_time", "date_match", "session_open",
    "is_question",
]
SHIPPED = Path(__file__).parent / "data" / "ranker-v1.json"
DEPTH = 50
SESSION_GAP = timedelta(minutes=30)
SHORT = 6  # words at most: a short turn leans on its neighbours

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]
_MONTH = {m: i + 1 for i, m in enumerate(MONTHS)} | {m[:3]: i + 1 for i, m in enumerate(MONTHS) if m != "may"}
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_NUM = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|several)"
TIME_EXPR = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|recently|the other day|"
    r"(?:last|this|next|past) (?:week|weekend|month|year|night|morning|evening|summer|winter|spring|fall|autumn|"
    + "|".join(WEEKDAYS) + r")|"
    + _NUM + r" (?:days?|weeks?|months?|years?) (?:ago|back)|"
    r"(?:on|last|this|next) (?:" + "|".join(WEEKDAYS) + r")|"
    + "|".join(m for m in MONTHS if m != "may") + r"|(?:in|of|since|early|late|mid|last|this|next) may|may \d|"
    r"(?:19|20)\d\d)\b"
)
WHEN_Q = re.compile(r"^\W*when\b|\b(?:what|which) (?:date|day|year|month|week|time)\b|\bhow long ago\b")
FIRST = frozenset("i me my mine myself i'm i've i'd we our us".split())
SECOND = frozenset("you your yours yourself you've you're".split())
SPEAKER = re.compile(r"^([A-Z][\w'-]*(?: [A-Z][\w'-]*)?): ")
_REL = {"yesterday": (1, 1), "last week": (14, 0), "last weekend": (9, 0), "last month": (62, 0),
        "last night": (1, 0), "last year": (730, 0), "recently": (30, 0), "the other day": (7, 0)}


class RankerError(RuntimeError):
    pass


@lru_cache(maxsize=8)
def load(path: str | None = None) -> dict:
    p = Path(path) if path else SHIPPED
    try:
        model = json.loads(p.read_text())
        unknown = sorted(set(model["features"]) - set(FEATURES))
        if len(model["coef"]) != len(model["features"]):
            raise ValueError("coef and features differ in length")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RankerError(f"{p} is not a ranker weights file: {e}") from e
    if unknown:
        raise RankerError(f"{p} uses features this version does not compute: {', '.join(unknown)}")
    return model


# ---------------------------------------------------------------- the query


def _periods(low: str, now: datetime | None) -> list[tuple[datetime, datetime]]:
    """Time spans the query names: 'in May 2023', 'in 2022', 'last week' (against the turn's time)."""
    out = []
    years = [int(y) for y in re.findall(r"\b((?:19|20)\d\d)\b", low)]
    months = [_MONTH[w] for w in WORD.findall(low) if w in _MONTH and w != "may"]
    if re.search(r"\b(?:in|of|since|early|late|mid|last|this|next) may\b|\bmay \d", low):  # the month, not "may I"
        months.append(5)
    for mo in months:
        for y in years or ([now.year, now.year - 1] if now else []):
            start = datetime(y, mo, 1, tzinfo=timezone.utc)
            end = datetime(y + (mo == 12), mo % 12 + 1, 1, tzinfo=timezone.utc)
            out.append((start, end))
    if years and not months:
        out += [(datetime(y, 1, 1, tzinfo=timezone.utc), datetime(y + 1, 1, 1, tzinfo=timezone.utc)) for y in years]
    if now is not None:
        for phrase, (back, _) in _REL.items():
            if phrase in low:
                out.append((now - timedelta(days=back), now))
    return out


def query_info(query: str, now: datetime | None = None) -> dict:
    low = query.lower()
    words = set(WORD.findall(low))
    names = {w.lower() for w in re.findall(r"\b[A-Z][a-z][\w'-]*", query)}
    return {"when": bool(WHEN_Q.search(low)), "periods": _periods(low, now), "names": names,
            "first": bool(words & FIRST), "second": bool(words & SECOND)}


# ---------------------------------------------------------------- candidates and features


def _rank_positions(values: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the `depth` best values (best first) and their 1-based ranks."""
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    d = min(depth, n)
    pick = np.argpartition(-values, d - 1)[:d]
    pick = pick[np.lexsort((-pick, -values[pick]))]
    return pick, np.arange(1, d + 1)


def _rows(ctx: TurnContext, ordinals: list[int]) -> dict[int, tuple[str, str, str, str]]:
    """(sender, text, ts, dayid) by ordinal, one query per 500 (portable SQL)."""
    out: dict[int, tuple[str, str, str, str]] = {}
    for i in range(0, len(ordinals), 500):
        chunk = [o for o in ordinals[i:i + 500] if o < ctx.as_of]
        if not chunk:
            continue
        marks = ",".join("?" * len(chunk))
        for r in ctx.store.conn.execute(
                f"SELECT ordinal, sender, text, ts, dayid FROM messages WHERE participant=? AND ordinal IN ({marks})",
                (ctx.participant, *chunk)):
            out[r[0]] = (r[1], r[2], r[3], r[4])
    return out


def _ts(s: str) -> datetime:
    t = datetime.fromisoformat(s)
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def candidate_features(ctx: TurnContext, query: str, depth: int = DEPTH, rewrite: bool = True):
    """(ordinals, X, rows) for the candidates of `query`: X has one row per candidate, columns FEATURES.

    `rows` maps ordinal -> (sender, text, ts, dayid) for the candidates (the retriever builds hits from it).
    """
    lexical = F.rewrite_for_lexical(query) if rewrite else query
    scores, ordinals, ref = ctx.bm25(lexical)
    sims, dord = ctx.dense(query)
    n = len(ordinals)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, len(FEATURES))), {}
    if len(dord) != n or not np.array_equal(dord, ordinals):  # a delete between the two reads: align on BM25's
        pos = np.searchsorted(dord, ordinals)
        ok = (pos < len(dord)) & (dord[np.minimum(pos, len(dord) - 1)] == ordinals)
        aligned = np.zeros(n, dtype=np.float32)
        aligned[ok] = sims[pos[ok]]
        sims = aligned
    bm = scores / ref if ref > 0 else scores
    dn = np.clip(sims, 0.0, None)
    bpos, brank = _rank_positions(np.where(bm > 0, bm, -1.0), depth)
    bkeep = bm[bpos] > 0
    bpos, brank = bpos[bkeep], brank[bkeep]
    dpos, drank = _rank_positions(dn, depth)
    cand = np.unique(np.concatenate([bpos, dpos]))
    rank_b = np.full(n, depth + 1, dtype=np.int64)
    rank_b[bpos] = brank
    rank_d = np.full(n, depth + 1, dtype=np.int64)
    rank_d[dpos] = drank
    before, after = np.maximum(cand - 1, 0), np.minimum(cand + 1, n - 1)
    has_b, has_a = cand > 0, cand < n - 1
    nb_d = np.maximum(np.where(has_b, dn[before], 0.0), np.where(has_a, dn[after], 0.0))
    nb_b = np.maximum(np.where(has_b, bm[before], 0.0), np.where(has_a, bm[after], 0.0))
    cord = ordinals[cand]
    prev_ord = ordinals[before]
    rows = _rows(ctx, sorted(set(cord.tolist()) | set(prev_ord[has_b].tolist())))
    now = ctx.time.local if ctx.time is not None else None
    q = query_info(query, now)
    X = np.zeros((len(cand), len(FEATURES)))
    col = {f: i for i, f in enumerate(FEATURES)}
    X[:, col["bm25"]] = bm[cand]
    X[:, col["dense"]] = dn[cand]
    X[:, col["bm25_logrank"]] = np.log1p(rank_b[cand])
    X[:, col["dense_logrank"]] = np.log1p(rank_d[cand])
    X[:, col["nb_dense"]] = nb_d
    X[:, col["nb_bm25"]] = nb_b
    keep, said_by = [], []
    for i, o in enumerate(cord.tolist()):
        row = rows.get(o)
        if row is None:  # deleted meanwhile
            continue
        keep.append(i)
        m = SPEAKER.match(row[1])
        said_by.append(m)
    named = q["names"] & {m.group(1).lower() for m in said_by if m}
    c_len, c_short, c_comp, c_self = col["log_length"], col["nb_dense_short"], col["companion"], col["self_match"]
    c_named, c_other, c_when, c_date = col["speaker_named"], col["other_named"], col["when_time"], col["date_match"]
    c_open, c_q = col["session_open"], col["is_question"]
    first, second, when, periods = q["first"], q["second"], q["when"], q["periods"]
    for i, m in zip(keep, said_by):
        sender, text, ts, _ = rows[int(cord[i])]
        body = text[m.end():] if m else text
        length = body.count(" ") + 1
        X[i, c_len] = math.log1p(length)
        if length <= SHORT:
            X[i, c_short] = nb_d[i]
        X[i, c_comp] = sender == "companion"
        X[i, c_self] = (first and sender == "user") or (second and sender == "companion")
        if m and named:
            mine = m.group(1).lower() in named
            X[i, c_named], X[i, c_other] = mine, not mine
        if when:
            X[i, c_when] = TIME_EXPR.search(body.lower()) is not None
        stamp = _ts(ts)
        if periods:
            X[i, c_date] = any(a <= stamp < b for a, b in periods)
        prev = rows.get(int(prev_ord[i])) if has_b[i] else None
        X[i, c_open] = prev is None or stamp - _ts(prev[2]) >= SESSION_GAP
        X[i, c_q] = body.rstrip().endswith("?")
    keep = np.asarray(keep, dtype=np.int64)
    return cord[keep], X[keep], rows


def scores(model: dict, X: np.ndarray, names: list[str] = FEATURES) -> np.ndarray:
    """The model's linear score of each row of X (columns `names`)."""
    col = {f: i for i, f in enumerate(names)}
    Z = X[:, [col[f] for f in model["features"]]]
    return ((Z - np.asarray(model["mean"])) / np.asarray(model["scale"])) @ np.asarray(model["coef"]) \
        + float(model.get("intercept", 0.0))


def rank(ctx: TurnContext, query: str, k: int, model: dict, depth: int = DEPTH):
    """The k best (ordinal, score, (sender, text, ts, dayid)) by the model, best first; ties newer first."""
    cord, X, rows = candidate_features(ctx, query, depth, rewrite=model.get("rewrite", True))
    if len(cord) == 0:
        return []
    s = scores(model, X)
    order = np.lexsort((-cord, -s))[:k]
    return [(int(cord[i]), float(s[i]), rows[int(cord[i])]) for i in order]
