"""Abstention gates: each turn, decide whether to reach into the past.

A gate is a small class registered by name (entry point group `companion.gates`) with
`decide(ctx) -> Decision`. Its name, version and params go into every trace.
"""

from __future__ import annotations

from pydantic import BaseModel

from memory.context import TurnContext


class Decision(BaseModel):
    retrieve: bool
    score: float
    threshold: float
    reason: str


class Gate:
    name = "gate"
    version = "1"

    def __init__(self, **params):
        self.params = params

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version, "params": self.params}

    def decide(self, ctx: TurnContext) -> Decision:  # pragma: no cover - interface
        raise NotImplementedError


class Never(Gate):
    name = "never"

    def decide(self, ctx):
        return Decision(retrieve=False, score=0.0, threshold=1.0, reason="the never gate always abstains")


class Always(Gate):
    name = "always"

    def decide(self, ctx):
        return Decision(retrieve=True, score=1.0, threshold=0.0, reason="the always gate always retrieves")
