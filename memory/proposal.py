"""What an extractor proposes (`Proposal`), and how messages are cut into sentences: shared
by the extractors (memory.extract_rules, memory.extract_model) and by verification
(memory.verify)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field


@dataclass
class Proposal:
    kind: str  # claim | preference | persona
    text: str  # claim text, the preference description, or the persona clause (third person)
    source_dayids: list[str]
    evidence: str  # the span of the source message that states it
    category: str = "other"
    slot: str | None = None
    confidence: float = 0.9
    attribute: str | None = None
    setting: str | None = None
    contexts: list[str] = field(default_factory=list)  # preference: the contexts it is stated for
    extractor: str = "rule"
    value: str | None = None  # persona: the slot's value (high / low, fast / slow, the clause ...)
    facet: str | None = None  # persona: the description facet the clause feeds
    intensified: bool = False  # persona: stated with an intensifier ("a real introvert")
    ends: list[str] = field(default_factory=list)  # claim: a past state, the words of what ended

    def public(self) -> dict:
        return asdict(self)


# Sentences, and quoted text (someone else's words) that neither extraction nor verification reads
# as the participant's own; words that ask or suppose rather than state.
SENTENCE = re.compile(r"[^.!?;\n]+[.!?;]*")
QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d")
HYPOTHETICAL = re.compile(r"\b(if|imagine|pretend|suppose|what if|would|wish|hypothetically)\b", re.I)
