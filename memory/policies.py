"""Application policies: how retrieved items enter the prompt.

The recent window is always present. Retrieved items are deduplicated against it, put in
time order, cut to a token budget and placed under a heading. The heading is a policy
parameter and is recorded in the trace: "earlier turns" and "retrieved memories" shift how
much a model leans on memory, so it is a controlled variable of an experiment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.messages import Message
from memory.retrievers import Hit


def count_tokens(text: str) -> int:
    # A model-agnostic estimate (about 4 characters a token for English); the real count
    # of what was sent comes back from the model and is traced beside it.
    return max(1, (len(text) + 3) // 4)


@dataclass
class Applied:
    heading: str
    items: list[Hit] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # dayids cut by the budget
    duplicates: list[str] = field(default_factory=list)  # dayids already in the recent window
    tokens: int = 0
    file_memory: str = ""  # the participant's file memory as of the turn, read whole
    file_lines: list[str] = field(default_factory=list)

    def describe(self, policy: dict) -> dict:
        return {
            **policy,
            "heading": self.heading,
            "items": [h.dayid for h in self.items],
            "dropped_for_budget": self.dropped,
            "deduplicated": self.duplicates,
            "tokens": self.tokens,
            "file_memory_lines": len(self.file_lines),
        }


class Policy:
    name = "policy"
    version = "1"
    heading = "Earlier turns"

    def __init__(self, budget_tokens: int = 400, heading: str | None = None, **params):
        self.budget_tokens = int(budget_tokens)
        if heading:
            self.heading = heading
        self.params = {"budget_tokens": self.budget_tokens, "heading": self.heading, **params}

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version, "params": self.params}

    def apply(self, recent: list[Message], hits: list[Hit]) -> Applied:
        out = Applied(heading=self.heading)
        on_screen = {m.ordinal for m in recent}
        seen: set[int] = set()
        for h in hits:  # hits come best first: the budget keeps the best
            if h.ordinal in on_screen:
                out.duplicates.append(h.dayid)
                continue
            if h.ordinal in seen:
                continue
            seen.add(h.ordinal)
            cost = count_tokens(h.text)
            if out.tokens + cost > self.budget_tokens:
                out.dropped.append(h.dayid)
                continue
            out.items.append(h)
            out.tokens += cost
        out.items.sort(key=lambda h: h.ordinal)  # shown in the order they were said
        return out


class EarlierTurns(Policy):
    """Retrieved messages under the heading "Earlier turns"."""

    name = "earlier_turns"
    heading = "Earlier turns"


class RetrievedMemories(Policy):
    """Retrieved messages under the heading "Retrieved memories"."""

    name = "retrieved_memories"
    heading = "Retrieved memories"
