"""The gate sets' cases: a participant's rows and the probes asked as of a point in them (shared by
eval.gatesets and eval.gatecallbacks, which builds cases of its own)."""

from __future__ import annotations

from dataclasses import dataclass, field

WINDOW = 3


@dataclass
class Probe:
    text: str
    needs: bool
    as_of: int  # sees ordinals < as_of
    gold: list[int] = field(default_factory=list)  # ordinals of the messages that answer it
    kind: str = ""


@dataclass
class Case:
    pid: str
    rows: list[tuple[str, str]]  # (sender, text) in order; ordinal = position + 1
    probes: list[Probe]
    source: str
    window: int = WINDOW  # the release's recent window; held-out cases use the live default (6)
