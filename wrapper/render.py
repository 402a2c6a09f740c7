"""Step 7 of the turn: turn the model's reply into what is shown and what is done.

For now this is pass-through: the model's own wording is shown, no action runs and none is
held. The four modes (pass-through, selective rendering, delivery control, execution
control) arrive with the IX Wrapper.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Rendered:
    shown: str
    mode: str = "pass-through"
    interaction: dict = field(default_factory=dict)
    actions_run: list[dict] = field(default_factory=list)
    actions_held: list[dict] = field(default_factory=list)


def render(reply: str, interaction: dict | None = None, tool_calls: list | None = None) -> Rendered:
    return Rendered(shown=reply.strip(), interaction=dict(interaction or {}))
