"""What a gate, a retriever and a policy see of a turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from memory.messages import Message
from memory.store import Store


@dataclass
class TurnContext:
    store: Store
    participant: str
    text: str
    context: str
    as_of: int  # sees ordinals < as_of: the turn's own message and everything later are hidden
    recent: list[Message] = field(default_factory=list)  # the recent window, oldest first
    ask_model: Callable[[list[dict]], str] | None = None  # for model-judged gates
    extra: dict = field(default_factory=dict)  # eval-only facts (gold for oracle gates)
