"""Which gate, retriever and policy a turn runs: its arm.

For now every turn runs the arm named in the settings; per-participant assignment and
seeded per-turn randomization arrive with live trials.
"""

from __future__ import annotations

from dataclasses import dataclass

from companion.settings import Settings
from memory.store import Store


@dataclass(frozen=True)
class Arm:
    gate: str
    retriever: str
    policy: str
    assignment: str = "settings"
    seed: int | None = None

    @property
    def name(self) -> str:
        return f"{self.gate}/{self.retriever}/{self.policy}"

    def describe(self) -> dict:
        return {"name": self.name, "gate": self.gate, "retriever": self.retriever,
                "policy": self.policy, "assignment": self.assignment, "seed": self.seed}


def arm_for(store: Store, participant: str, settings: Settings, turn_key: str) -> Arm:
    return Arm(settings.gate, settings.retriever, settings.policy)
