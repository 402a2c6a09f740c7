"""The `adaptive` gate: a base gate's score, and a per-participant threshold learned online.

It wraps a base gate (param `base`, default `lexical`; its own threshold is ignored, only its
score is used) and keeps, for each participant, a Beta posterior over a grid of thresholds
(param `grid`, default 0.0, 0.1, ... 1.0). Each turn it draws one sample per threshold
(Thompson sampling, seeded by seed, participant and as_of, so a replay draws the same) and
retrieves when score >= the threshold whose sample is highest.

What it learns from (outcomes), all read as of the turn's `as_of`, so nothing said or rated
after the turn's message is visible (the eval replays it leak-free):
  - implicit signals in the participant's messages (memory.signals): restate = miss,
    irrelevant = misuse, correct = wrong;
  - explicit feedback (memory.feedback) given before as_of: a tag counts as what it means
    (forgot = miss, misfit = misuse, wrong = wrong), an untagged up = good, down = bad.
Every outcome is about one earlier turn, whose base score is recomputed as of that turn. A
threshold t "would retrieve" there when score >= t. Updates:
  miss      success for every t that would retrieve, failure for every t that would not
  misuse    the reverse
  good      success for every t that makes the decision that turn actually made (from its trace)
  bad/wrong failure for every t that makes the decision that turn actually made
An outcome of a turn run by any arm teaches it (off-policy: the counterfactual decision of each
threshold is known from the score). Its state is not stored: it is a function of the messages,
feedback and traces before as_of (`state`), so it is as-of-readable by construction and erased
with them on withdrawal. The trace's decision carries the learner (`learner`): the outcomes
counted by kind, the posterior means and the sampled threshold.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from memory import feedback, messages, registry, signals, traces
from memory.context import TurnContext
from memory.gates import Decision, Gate
from memory.store import Store

DEFAULT_GRID = [round(0.1 * i, 2) for i in range(11)]
SIGNAL_MEANS = {"restate": "miss", "irrelevant": "misuse", "correct": "wrong"}
_SCORES: dict[tuple, float] = {}  # (data dir, participant, ordinal, base, epoch) -> base score
_SCORES_MAX = 50_000


class AdaptiveDecision(Decision):
    learner: dict


@dataclass(frozen=True)
class Outcome:
    ordinal: int  # the rated turn's participant message
    kind: str  # miss | misuse | wrong | good | bad
    source: str  # signal:<rule> | feedback[:<tag>]
    score: float  # the base gate's score at that turn, as of it
    retrieved: bool | None  # what that turn decided (its trace), None without a trace


def _base(base: str, base_params: dict | None) -> Gate:
    if base == "adaptive":
        raise ValueError("the adaptive gate cannot wrap itself")
    return registry.create("gate", base, **(base_params or {}))


def _epoch(store: Store, participant: str) -> int:
    r = store.conn.execute("SELECT index_epoch FROM participants WHERE participant=?", (participant,)).fetchone()
    return r["index_epoch"] if r else -1


def base_score(store: Store, participant: str, turn_msg: messages.Message, gate: Gate, recent_window: int) -> float:
    """The base gate's score of an earlier turn, as of that turn (memoized per process)."""
    key = (str(store.data_dir), participant, turn_msg.ordinal, json.dumps(gate.describe(), sort_keys=True, default=str),
           _epoch(store, participant))
    if key not in _SCORES:
        ctx = TurnContext(store=store, participant=participant, text=turn_msg.text, context=turn_msg.context,
                          as_of=turn_msg.ordinal,
                          recent=messages.read(store, participant, turn_msg.ordinal, limit=recent_window))
        if len(_SCORES) > _SCORES_MAX:
            _SCORES.clear()
        _SCORES[key] = float(gate.decide(ctx).score)
    return _SCORES[key]


def outcomes(store: Store, participant: str, as_of: int, gate: Gate, recent_window: int = 6,
             unscored: list | None = None) -> list[Outcome]:
    """Every outcome visible before as_of, each tied to the turn it is about. Outcomes whose
    turn's base score cannot be recomputed go to `unscored` (as (source, error)) instead."""
    log = messages.read(store, participant, as_of)
    turn_of: dict[str, messages.Message] = {}  # reply dayid -> the participant message it answered
    prev = None
    for m in log:
        if m.sender == "companion" and prev is not None and prev.sender == "user":
            turn_of[m.dayid] = prev
        prev = m
    events: list[tuple[str, str, str]] = []  # (reply dayid, kind, source)
    for s in signals.from_messages(log):
        events.append((s.reply_dayid, SIGNAL_MEANS[s.rule], f"signal:{s.rule}"))
    for f in feedback.current(store, participant, as_of):
        kind = f.means or ("good" if f.rating > 0 else "bad")
        events.append((f.dayid, kind, "feedback" + (f":{f.tag}" if f.tag else "")))
    out = []
    for reply, kind, source in events:
        turn_msg = turn_of.get(reply)
        if turn_msg is None:  # a reminder or other message that answered no turn: no gate decided it
            continue
        t = traces.for_dayid(store, participant, reply)
        retrieved = None
        if t is not None and t.decision is not None:
            retrieved = bool(t.decision.get("retrieve"))
        try:
            score = base_score(store, participant, turn_msg, gate, recent_window)
        except Exception as e:  # e.g. a model-judged base gate without its model here: that outcome cannot teach
            if unscored is not None:
                unscored.append((source, f"{type(e).__name__}: {e}"[:200]))
            continue
        out.append(Outcome(turn_msg.ordinal, kind, source, score, retrieved))
    out.sort(key=lambda o: (o.ordinal, o.source))
    return out


def posterior(outs: list[Outcome], grid: list[float], prior: tuple[float, float] = (1.0, 1.0)) -> list[list[float]]:
    """[alpha, beta] per threshold of the grid after the outcomes (see the module doc)."""
    ab = [[prior[0], prior[1]] for _ in grid]
    for o in outs:
        for i, t in enumerate(grid):
            would = o.score >= t
            if o.kind == "miss":
                ab[i][0 if would else 1] += 1
            elif o.kind == "misuse":
                ab[i][1 if would else 0] += 1
            elif o.retrieved is not None and would == o.retrieved:
                ab[i][0 if o.kind == "good" else 1] += 1
    return ab


def state(store: Store, participant: str, as_of: int | None = None, base: str = "lexical",
          base_params: dict | None = None, grid: list[float] | None = None, recent_window: int = 6) -> dict:
    """The learner as of `as_of` (default: now): outcomes by kind and the posterior per threshold."""
    grid = [float(t) for t in (grid or DEFAULT_GRID)]
    bound = messages.next_ordinal(store, participant) if as_of is None else as_of
    unscored: list = []
    outs = outcomes(store, participant, bound, _base(base, base_params), recent_window, unscored)
    ab = posterior(outs, grid)
    kinds: dict[str, int] = {}
    for o in outs:
        kinds[o.kind] = kinds.get(o.kind, 0) + 1
    return {"as_of": bound, "base": base, "outcomes": len(outs), "by_kind": kinds, "unscored": unscored, "grid": grid,
            "alpha_beta": ab, "mean": [round(a / (a + b), 4) for a, b in ab],
            "signals_version": signals.version(), "feedback_version": feedback.version()}


class Adaptive(Gate):
    """Learns each participant's threshold over a base gate's score from outcomes (Thompson sampling)."""

    name = "adaptive"
    version = "1"

    def __init__(self, base: str = "lexical", grid: list[float] | None = None, seed: int = 0,
                 recent_window: int = 6, base_params: dict | None = None, threshold: float | None = None,
                 **params):
        self.base_name = base
        self.base = _base(base, base_params)
        self.grid = sorted(float(t) for t in (grid or DEFAULT_GRID))
        if not self.grid:
            raise ValueError("the adaptive gate needs a non-empty threshold grid")
        self.seed, self.recent_window = int(seed), int(recent_window)
        super().__init__(threshold=threshold, base=base, base_params=base_params or {}, grid=self.grid,
                         seed=self.seed, recent_window=self.recent_window, **params)

    def decide(self, ctx: TurnContext) -> AdaptiveDecision:
        base = self.base.decide(ctx)
        st = state(ctx.store, ctx.participant, ctx.as_of, self.base_name, self.params["base_params"],
                   self.grid, self.recent_window)
        rng = random.Random(f"{self.seed}:{ctx.participant}:{ctx.as_of}")
        draws = [rng.betavariate(a, b) for a, b in st["alpha_beta"]]
        pick = max(range(len(self.grid)), key=lambda i: draws[i])
        threshold = self.grid[pick]
        retrieve = base.score >= threshold
        rel = "≥" if retrieve else "<"
        learner = {**st, "sampled": threshold, "draws": [round(d, 4) for d in draws], "base_reason": base.reason}
        return AdaptiveDecision(
            retrieve=retrieve, score=base.score, threshold=threshold, learner=learner,
            reason=f"{self.base_name} score {base.score:.3f} {rel} threshold {threshold:.2f} sampled from "
                   f"{st['outcomes']} outcome(s) before this turn")
