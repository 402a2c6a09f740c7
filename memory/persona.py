"""Persona, partially: demographic slots read from the profile claims, as of a bound.

Only slots that explicit statements support are filled (occupation, age, residence, origin,
name, diet, birthday), each with value, strength and evidence dayids. It is a view over
`memory_claims`, so it inherits their validity, supersession, as-of reads and deletions.
Not implemented: Big Five traits, quirks and prose descriptions by facet. They need a
model-based judgement over many messages; `big_five` and `descriptions` stay empty rather
than guessed.
"""

from __future__ import annotations

from memory import claims
from memory.store import Store

SLOTS = ("occupation", "age", "residence", "origin", "name", "diet", "birthday")
_PREFIX = ("works as an ", "works as a ", "is called ", "lives in ", "has their birthday on ", "is from ", "is ")


def _value(slot: str, text: str) -> str:
    t = text
    for p in _PREFIX:
        if t.lower().startswith(p):
            t = t[len(p):]
            break
    if slot == "age" and t.endswith(" years old"):
        t = t[: -len(" years old")]
    return t


def persona(store: Store, participant: str, as_of: int | None = None) -> dict:
    """persona.json (FORMATS.md) as far as it is implemented."""
    slots = {}
    for c in claims.current(store, participant, as_of=as_of):
        if c.slot in SLOTS:
            strength = "strong" if c.verdict == "supported" else "weak"
            slots[c.slot] = {"value": _value(c.slot, c.text), "strength": strength, "evidence": c.source_dayids}
    return {"big_five": {}, "slots": slots, "descriptions": []}
