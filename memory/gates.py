"""Abstention gates: each turn, decide whether to reach into the past.

A gate is a small class registered by name (entry point group `companion.gates`) with
`decide(ctx) -> Decision`. Its name, version and params go into every trace. "Outside the
recent window" means among messages before as_of that are not already on screen.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from pydantic import BaseModel

from memory import features, messages
from memory.context import TurnContext


class Decision(BaseModel):
    retrieve: bool
    score: float
    threshold: float
    reason: str
    features: dict[str, float] | None = None  # the evidence a feature-based gate weighed (traced)


class Gate:
    name = "gate"
    version = "1"
    eval_only = False
    default_threshold = 0.5

    def __init__(self, threshold: float | None = None, **params):
        self.threshold = self.default_threshold if threshold is None else float(threshold)
        self.params = {"threshold": self.threshold, **params}

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version, "params": self.params}

    def decide(self, ctx: TurnContext) -> Decision:  # pragma: no cover - interface
        raise NotImplementedError

    def _decision(self, score: float, reason: str, features: dict[str, float] | None = None) -> Decision:
        retrieve = score >= self.threshold
        rel = "≥" if retrieve else "<"
        return Decision(retrieve=retrieve, score=score, threshold=self.threshold,
                        reason=f"{reason}: {score:.3f} {rel} {self.threshold:.3f}", features=features)


class Never(Gate):
    """Never looks back (the no-memory arm)."""

    name = "never"
    default_threshold = 1.0

    def decide(self, ctx):
        return Decision(retrieve=False, score=0.0, threshold=self.threshold, reason="the never gate always abstains")


class Always(Gate):
    """Always looks back."""

    name = "always"
    default_threshold = 0.0

    def decide(self, ctx):
        return Decision(retrieve=True, score=1.0, threshold=self.threshold, reason="the always gate always retrieves")


def _dayid(ctx: TurnContext, ordinal: int | None) -> str:
    if ordinal is None:
        return "none"
    m = messages.by_ordinals(ctx.store, ctx.participant, [ordinal], ctx.as_of).get(ordinal)
    return m.dayid if m else "?"


class Lexical(Gate):
    """BM25 evidence outside the recent window, relative to the query's reference score
    (every query term mentioned once in an average-length message = 1.0)."""

    name = "lexical"
    default_threshold = 0.35

    def decide(self, ctx):
        score, best = features.bm25_outside(ctx)
        return self._decision(score, f"best BM25 match outside the recent window ({_dayid(ctx, best)})")


class Dense(Gate):
    """Cosine similarity of the nearest message outside the recent window."""

    name = "dense"
    default_threshold = 0.5

    def decide(self, ctx):
        score, best = features.dense_outside(ctx)
        return self._decision(score, f"nearest message outside the recent window ({_dayid(ctx, best)})")


JUDGE_PROMPT = (
    "You decide whether a companion must look back into earlier conversation to answer well.\n"
    "Last messages on screen:\n{recent}\n\nNew message: {text}\n\n"
    "Does answering it need something said earlier than the messages on screen? "
    "Answer with one number from 0 (no) to 100 (certainly)."
)
NUMBER = re.compile(r"\b(100|[0-9]{1,2})\b")


class Model(Gate):
    """Asks the configured model, which answers with a 0-100 score."""

    name = "model"
    version = "1"

    def decide(self, ctx):
        if ctx.ask_model is None:
            raise RuntimeError("the model gate needs a model to ask (ctx.ask_model)")
        recent = "\n".join(f"- {m.sender}: {m.text[:200]}" for m in ctx.recent) or "(none)"
        answer = ctx.ask_model([{"role": "user", "content": JUDGE_PROMPT.format(recent=recent, text=ctx.text)}])
        m = NUMBER.search(answer or "")
        if not m:
            return Decision(retrieve=False, score=0.0, threshold=self.threshold,
                            reason=f"the model's answer had no score ({answer[:80]!r}): abstained")
        return self._decision(int(m.group(1)) / 100, "the model judged the need for the past")


SHIPPED_WEIGHTS = Path(__file__).parent / "data" / "gate-learned-v2.json"


class Learned(Gate):
    """Logistic regression over features of the message and of the relationship (memory/features.py),
    calibrated so the score is a probability that the message needs the past.

    Weights: `weights=PATH` if given; else <data dir>/gates/learned.json when `companion gates
    train` wrote one; else the weights shipped in the package (memory/data/gate-learned-v1.json,
    trained by `python -m eval.gatesets train`), so the default needs no training step.
    """

    name = "learned"
    version = "2"

    def __init__(self, weights: str | None = None, threshold: float | None = None, **params):
        self.weights_path = weights
        super().__init__(threshold=threshold, weights=weights, **params)
        self._model = None
        self._explicit_threshold = threshold is not None

    def _path(self, ctx) -> Path:
        if self.weights_path:
            return Path(self.weights_path)
        local = ctx.store.data_dir / "gates" / "learned.json"
        return local if local.exists() else SHIPPED_WEIGHTS

    def _load(self, ctx) -> dict:
        if self._model is None:
            path = self._path(ctx)
            if not path.exists():
                raise RuntimeError(f"the learned gate is not trained ({path} is missing): "
                                   "run `companion gates train --corpus DIR`")
            try:
                model = json.loads(path.read_text())
                used = set(model["features"]) | {n for part in model.get("parts", []) for n in part["features"]}
                unknown = sorted(used - set(features.NAMES))
            except (ValueError, KeyError, TypeError) as e:
                raise RuntimeError(f"{path} is not a learned-gate weights file: {e}") from e
            if unknown:
                raise RuntimeError(f"{path} uses features this version does not compute: {', '.join(unknown)}")
            self._model = model
            self.params["weights_file"] = str(path)
            if not self._explicit_threshold and "threshold" in model:
                self.threshold = self.params["threshold"] = float(model["threshold"])
        return self._model

    def evidence(self, ctx) -> tuple[float, dict[str, float], str]:
        """Calibrated probability, the feature values, and the feature that pushed it most.

        Weights are one logistic model (`features`, `coef`, `mean`, `scale`, `intercept`) or a mix of
        several (`parts`, each such a model with a `weight` and the `spread` its logit is divided by)."""
        m = self._load(ctx)
        f = features.compute(ctx, m["features"])
        parts: dict[str, float] = {}
        z = 0.0
        for part in m.get("parts") or [dict(m, weight=1.0, spread=1.0)]:
            k = part["weight"] / part["spread"]
            z += k * part["intercept"]
            for n, w, mu, sd in zip(part["features"], part["coef"], part["mean"], part["scale"]):
                parts[n] = parts.get(n, 0.0) + k * w * (f[n] - mu) / sd
        z += sum(parts.values())
        cal = m.get("calibration")  # Platt scaling fitted on held-back folds
        if cal:
            z = cal["a"] * z + cal["b"]
        score = 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))
        top = max(parts, key=lambda n: abs(parts[n]))
        return score, {n: round(float(f[n]), 4) for n in m["features"]}, f"{top} {parts[top]:+.2f}"

    def decide(self, ctx):
        score, f, top = self.evidence(ctx)
        ev = ctx.cache.get("evidence", {})
        why = f"learned model (strongest push: {top}"
        if ev.get("own_best") is not None:
            why += f"; nearest own message {_dayid(ctx, ev['own_best'])}"
        if ev.get("names"):
            why += f"; names from before the window: {', '.join(ev['names'])}"
        if ev.get("their_names"):
            why += f"; the companion's names from before the window: {', '.join(ev['their_names'])}"
        if ev.get("prompt_best") is not None and (f.get("prompt_margin", 0) > 0 or f.get("companion_anaphora", 0) > 0
                                                  or f.get("unprompted_answer", 0) > 0):
            why += f"; the companion's earlier question, suggestion or plan it matches: {_dayid(ctx, ev['prompt_best'])}"
        if ev.get("references"):
            why += f"; points at what is off screen: {', '.join(repr(r) for r in ev['references'][:3])}"
        return self._decision(score, why + ")", features=f)


class Oracle(Gate):
    """Eval only: retrieves exactly when the probe's gold reaches outside the recent window."""

    name = "oracle"
    eval_only = True

    def decide(self, ctx):
        if "gold" not in ctx.extra:
            raise RuntimeError("the oracle gate is eval-only: it needs the probe's gold")
        on_screen = {m.dayid for m in ctx.recent}
        outside = [d for d in ctx.extra["gold"] if d not in on_screen]
        score = 1.0 if outside else 0.0
        return Decision(retrieve=bool(outside), score=score, threshold=0.5,
                        reason=f"gold outside the recent window: {', '.join(outside) or 'none'}")
