"""Persona: how the person thinks, feels and decides, with provenance, validity and history.

Items live in `memory_persona` (migration m008_persona), one row per value a slot held:

    kind         slot                          value            facet
    big_five     big_five:extraversion         high | low       social (the description it feeds)
    description  decision_making:speed         fast | slow ...  decision_making
    description  work_style:conditions:<text>  <text>           work_style   (open-ended: no rival)
    quirk        quirk:<text>                  <text>           None

A new value for a slot supersedes the current one: the old row stays, closed at the new one's
ordinal, pointing at its successor, so at every bound exactly one value of a slot is current
(timing rules: memory.derived). The same value again adds its evidence. Each source keeps the
clause it was stated in (third person, e.g. "Always plans everything ahead"), so the prose
is built from what was said, and an as-of read shows only clauses said before the bound.

Strength (`strength`): the number of distinct participant messages supporting the current
value, visible at the bound: 1 = weak, 2 = moderate, 3+ = strong. A statement with an
intensifier ("a *real* introvert", "*so* disorganised"; memory.persona_rules.INTENSIFIERS)
raises it one step (one intensified statement = moderate), never above strong. One message,
however emphatic, is not strong evidence alone. A contradicting statement starts the count
again: the superseding value has only its own evidence.

`persona()` returns persona.json (docs/FORMAT.md): `big_five`, `slots` (demographics, read from
the profile claims as before: occupation, age, residence ...), `descriptions` (one per facet,
its text the clauses of the facet's current items joined in the order they were said; each
also carries `strength`, an extra field docs/FORMAT.md readers keep and ignore) and `quirks`
(`[{"text", "strength", "evidence"}]`: not in docs/FORMAT.md's example; readers keep it and
ignore it too).

Deletion (`delete`) works like claims.delete: the row and its log go, and (dayid, value) and
(dayid, slot) are tombstoned, so the same messages never yield that slot again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from memory import claims, derived
from memory.persona_rules import FACETS, TRAIT_VALUES, TRAITS
from memory.store import Store, StoreError

SLOTS = ("occupation", "age", "residence", "origin", "name", "diet", "birthday")
_PREFIX = ("works as an ", "works as a ", "is called ", "lives in ", "has their birthday on ", "is from ", "is ")
KINDS = ("big_five", "description", "quirk")
STRENGTHS = ("weak", "moderate", "strong")
VERDICTS = ("supported", "repairable")


# ---------------------------------------------------------------- slots and their values

def kind_of(slot: str) -> str:
    if slot.startswith("big_five:"):
        return "big_five"
    if slot.startswith("quirk:"):
        return "quirk"
    return "description"


def check(slot: str, value: str, facet: str | None) -> str:
    """Validate a persona item; returns its kind. Bad input raises StoreError naming the field."""
    if not isinstance(slot, str) or not slot or not isinstance(value, str) or not value.strip():
        raise StoreError(f"a persona item needs a slot and a value, got slot={slot!r} value={value!r}")
    kind = kind_of(slot)
    if kind == "big_five":
        trait = slot.split(":", 1)[1]
        if trait not in TRAITS:
            raise StoreError(f"unknown Big Five trait {trait!r}; traits: {list(TRAITS)}")
        if value not in TRAIT_VALUES:
            raise StoreError(f"a Big Five value is one of {list(TRAIT_VALUES)}, got {value!r}")
    elif kind == "quirk":
        if not slot[len("quirk:"):].strip():
            raise StoreError("a quirk slot names its text: 'quirk:<text>'")
    else:
        head = slot.split(":", 1)
        if len(head) != 2 or not head[1]:
            raise StoreError(f"a description slot is '<facet>:<aspect>', got {slot!r}")
        if head[0] not in FACETS:
            raise StoreError(f"unknown facet {head[0]!r}; facets: {list(FACETS)}")
        if facet is not None and facet != head[0]:
            raise StoreError(f"slot {slot!r} belongs to facet {head[0]!r}, not {facet!r}")
    if facet is not None and facet not in FACETS:
        raise StoreError(f"unknown facet {facet!r}; facets: {list(FACETS)}")
    return kind


def key_text(slot: str, value: str) -> str:
    """What tombstones and the event log key an item by."""
    return f"persona:{slot}={value}"


def slot_key(slot: str) -> str:
    """Tombstone key for any value of the slot (a model may word it differently)."""
    return f"persona-slot:{slot}"


def strength(n_messages: int, intensified: bool) -> str:
    """See the module docstring: 1 / 2 / 3+ messages, one step up for an intensifier."""
    if n_messages < 1:
        raise ValueError("strength needs at least one supporting message")
    level = min(n_messages, 3) + (1 if intensified else 0)
    return STRENGTHS[min(level, 3) - 1]


# ---------------------------------------------------------------- items

@dataclass(frozen=True, kw_only=True)
class Item(derived.Item):
    kind: str
    slot: str
    facet: str | None
    value: str
    clauses: list[str]
    strength: str

    @property
    def text(self) -> str:
        return _sentence(self.clauses)

    def public(self) -> dict:
        return {**asdict(self), "text": self.text}


def _row(r, as_of: int | None = None) -> Item:
    src = derived.sources_as_of(r["sources"], as_of)
    dayids = list(dict.fromkeys(s[0] for s in src))
    clauses = list(dict.fromkeys(s[3] for s in src if s[3]))
    return Item(**derived.provenance(r, as_of, dayids), kind=r["kind"], slot=r["slot"], facet=r["facet"],
                value=r["value"], clauses=clauses,
                strength=strength(len(dayids), any(s[2] for s in src)) if dayids else "weak")


ITEMS = derived.Items("memory_persona", "persona", "persona item", _row)


def add(store: Store, participant: str, *, slot: str, value: str, clause: str, sources: list[tuple[str, int]],
        facet: str | None = None, intensified: bool = False, verdict: str = "supported",
        origin: str = "manual") -> tuple[Item, str]:
    """Merge one persona statement. Returns (item, action): added | duplicate | superseded."""
    kind = check(slot, value, facet)
    if verdict not in VERDICTS:
        raise StoreError(f"persona verdict must be one of {VERDICTS}, got {verdict!r}")
    if not sources:
        raise StoreError("a persona item needs at least one source (dayid, ordinal)")
    clause = (clause or "").strip()
    if not clause:
        raise StoreError("a persona item needs the clause it was stated in")
    sources = sorted({(d, int(o)) for d, o in sources}, key=lambda s: s[1])
    entries = [[d, o, 1 if intensified else 0, clause] for d, o in sources]
    at = sources[-1][1] if origin != "manual" else max(sources[-1][1], derived.effective_ordinal(store, participant))
    kt = key_text(slot, value)
    with store.transaction() as conn:
        old = conn.execute("SELECT * FROM memory_persona WHERE participant=? AND slot=? AND status='current'",
                           (participant, slot)).fetchone()
        if old is not None and old["value"] == value:
            merged = json.loads(old["sources"])
            known = {(e[0], e[3]) for e in merged}
            merged += [e for e in entries if (e[0], e[3]) not in known]
            merged.sort(key=lambda e: e[1])
            new_verdict = "supported" if "supported" in (old["verdict"], verdict) else old["verdict"]
            conn.execute("UPDATE memory_persona SET sources=?, verdict=? WHERE id=?",
                         (json.dumps(merged, ensure_ascii=False), new_verdict, old["id"]))
            derived.log(conn, participant, "persona", old["id"], "restated",
                        {"sources": [d for d, _ in sources], "clause": clause}, kt)
            return _row(conn.execute("SELECT * FROM memory_persona WHERE id=?", (old["id"],)).fetchone()), "duplicate"
        if old is not None:
            at = max(at, old["valid_from"])
        cur = conn.execute(
            "INSERT INTO memory_persona (participant, kind, slot, facet, value, sources, valid_from, valid_to, "
            "from_dayid, to_dayid, status, verdict, superseded_by, origin, created_at) "
            "VALUES (?,?,?,?,?,?,?,NULL,?,NULL,'current',?,NULL,?,?)",
            (participant, kind, slot, facet, value, json.dumps(entries, ensure_ascii=False), at, sources[-1][0],
             verdict, origin, derived.now()))
        new_id = cur.lastrowid
        derived.log(conn, participant, "persona", new_id, "added",
                    {"slot": slot, "value": value, "clause": clause, "sources": [d for d, _ in sources],
                     "origin": origin, "verdict": verdict}, kt)
        action = "added"
        if old is not None:
            derived.supersede(conn, "memory_persona", "persona", participant, old["id"], new_id, at, sources[-1][0],
                              {"value": old["value"]}, key_text(slot, old["value"]), {"old_value": old["value"]}, kt)
            action = "superseded"
        r = conn.execute("SELECT * FROM memory_persona WHERE id=?", (new_id,)).fetchone()
    return _row(r), action


current, all_, get = ITEMS.current, ITEMS.all_, ITEMS.get


def history(store: Store, participant: str, item_id: int) -> dict:
    """The item, every value its slot held, and its event log."""
    return ITEMS.history(store, participant, item_id, lambda it, x: x.slot == it.slot, "item")


def delete(store: Store, participant: str, item_id: int) -> None:
    """Gone: the row and its log; tombstoned by (source dayid, value) and (source dayid, slot),
    so the same messages never yield this slot again (by consolidation or rebuild)."""
    with store.transaction() as conn:
        r = ITEMS.stored(conn, participant, item_id)
        dayids = list(dict.fromkeys(s[0] for s in json.loads(r["sources"])))
        derived.tombstone(conn, participant, dayids, key_text(r["slot"], r["value"]))
        derived.tombstone(conn, participant, dayids, slot_key(r["slot"]))
        derived.forget_text(conn, participant, key_text(r["slot"], r["value"]))
        ITEMS.drop(conn, participant, item_id)


# ---------------------------------------------------------------- persona.json

def _value(slot: str, text: str) -> str:
    t = text
    for p in _PREFIX:
        if t.lower().startswith(p):
            t = t[len(p):]
            break
    if slot == "age" and t.endswith(" years old"):
        t = t[: -len(" years old")]
    return t


def _sentence(clauses: list[str]) -> str:
    parts = [c[:1].lower() + c[1:] if i else c for i, c in enumerate(clauses)]
    return "; ".join(parts)


def _entries(store: Store, item_id: int, as_of: int | None) -> list[list]:
    r = store.conn.execute("SELECT sources FROM memory_persona WHERE id=?", (item_id,)).fetchone()
    return derived.sources_as_of(r["sources"], as_of)


def persona(store: Store, participant: str, as_of: int | None = None) -> dict:
    """persona.json (docs/FORMAT.md) as of a bound (None: now). Demographic slots are stated facts
    read from the profile claims: strong when the claim is supported (as before), weak otherwise."""
    slots = {}
    for c in claims.current(store, participant, as_of=as_of):
        if c.slot in SLOTS:
            s = "strong" if c.verdict == "supported" else "weak"
            slots[c.slot] = {"value": _value(c.slot, c.text), "strength": s, "evidence": c.source_dayids}
    items = [it for it in current(store, participant, as_of=as_of) if it.source_dayids]
    big_five = {}
    for trait in TRAITS:
        for it in items:
            if it.slot == f"big_five:{trait}":
                big_five[trait] = {"value": it.value, "strength": it.strength, "evidence": it.source_dayids}
    # Descriptions: per facet, the clauses of its current items in the order they were said.
    order: dict[str, int] = {}  # dayid -> ordinal, from the stored sources (messages may be gone)
    facets: dict[str, list[Item]] = {}
    for it in items:
        if it.facet:
            facets.setdefault(it.facet, []).append(it)
    descriptions = []
    for facet, its in facets.items():
        said: list[tuple[int, str]] = []
        evidence: list[str] = []
        intensified = False
        for it in its:
            for d, o, inten, clause in _entries(store, it.id, as_of):
                order.setdefault(d, o)
                said.append((o, clause))
                evidence.append(d)
                intensified = intensified or bool(inten)
        clauses = list(dict.fromkeys(c for _, c in sorted(said, key=lambda x: x[0])))
        evidence = sorted(set(evidence), key=lambda d: order[d])
        descriptions.append({"facet": facet, "text": _sentence(clauses), "evidence": evidence,
                             "strength": strength(len(evidence), intensified)})
    descriptions.sort(key=lambda x: order[x["evidence"][0]])
    quirks = [{"text": it.text, "strength": it.strength, "evidence": it.source_dayids}
              for it in items if it.kind == "quirk"]
    return {"big_five": big_five, "slots": slots, "descriptions": descriptions, "quirks": quirks}
