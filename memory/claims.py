"""Profile claims: what the participant stated, with provenance, validity and history.

A claim has a `slot` when a newer statement can contradict it (residence, age, occupation,
"sister:ana:residence" ...). Adding a claim whose slot already has a current value with other
text supersedes that value: the old row stays, closed at the new claim's ordinal, pointing at
its successor. The same text again only adds its source. Claims without a slot deduplicate
by normalized text. Timing rules: see memory.derived.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from memory import derived
from memory.store import Store, StoreError

VERDICTS = ("supported", "repairable", "unsupported", "pending", "pruned_supported", "undetermined")


@dataclass(frozen=True, kw_only=True)
class Claim(derived.Item):
    slot: str | None
    text: str
    category: str
    confidence: float
    context: str


def _row(r, as_of: int | None = None) -> Claim:
    src = derived.sources_as_of(r["sources"], as_of)
    return Claim(**derived.provenance(r, as_of, [s[0] for s in src]), slot=r["slot"], text=r["text"],
                 category=r["category"], confidence=r["confidence"], context=r["context"])


ITEMS = derived.Items("memory_claims", "claim", "claim", _row)


def add(store: Store, participant: str, *, text: str, category: str, sources: list[tuple[str, int]],
        context: str, slot: str | None = None, confidence: float = 0.9, verdict: str = "supported",
        origin: str = "manual") -> tuple[Claim, str]:
    """Merge one claim into the profile. Returns (claim, action): added | duplicate | superseded."""
    if not sources:
        raise StoreError("a claim needs at least one source (dayid, ordinal)")
    if verdict not in VERDICTS:
        raise StoreError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    sources = sorted({(d, int(o)) for d, o in sources}, key=lambda s: s[1])
    n = derived.norm(text)
    at = sources[-1][1] if origin != "manual" else max(sources[-1][1], derived.effective_ordinal(store, participant))
    with store.transaction() as conn:
        if slot:
            old = conn.execute(
                "SELECT * FROM memory_claims WHERE participant=? AND slot=? AND status='current'",
                (participant, slot)).fetchone()
        else:
            old = conn.execute(
                "SELECT * FROM memory_claims WHERE participant=? AND norm=? AND status='current'",
                (participant, n)).fetchone()
        if old is not None and old["norm"] == n:
            merged = json.loads(old["sources"])
            known = {d for d, _ in merged}
            merged += [[d, o] for d, o in sources if d not in known]
            merged.sort(key=lambda s: s[1])
            conn.execute("UPDATE memory_claims SET sources=?, confidence=MAX(confidence, ?) WHERE id=?",
                         (json.dumps(merged), confidence, old["id"]))
            derived.log(conn, participant, "claim", old["id"], "restated",
                        {"sources": [d for d, _ in sources]}, text)
            r = conn.execute("SELECT * FROM memory_claims WHERE id=?", (old["id"],)).fetchone()
            return _row(r), "duplicate"
        if old is not None:
            at = max(at, old["valid_from"])
        cur = conn.execute(
            "INSERT INTO memory_claims (participant, slot, text, norm, category, confidence, context, sources, "
            "valid_from, valid_to, from_dayid, to_dayid, status, verdict, superseded_by, origin, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,NULL,?,NULL,'current',?,NULL,?,?)",
            (participant, slot, text, n, category, confidence, context, json.dumps([list(s) for s in sources]),
             at, sources[-1][0],
             verdict, origin, derived.now()))
        new_id = cur.lastrowid
        derived.log(conn, participant, "claim", new_id, "added",
                    {"text": text, "verdict": verdict, "sources": [d for d, _ in sources], "origin": origin}, text)
        action = "added"
        if old is not None:
            derived.supersede(conn, "memory_claims", "claim", participant, old["id"], new_id, at, sources[-1][0],
                              {"text": old["text"]}, old["text"], {"old_text": old["text"]}, text)
            action = "superseded"
        r = conn.execute("SELECT * FROM memory_claims WHERE id=?", (new_id,)).fetchone()
    return _row(r), action


current, all_, get = ITEMS.current, ITEMS.all_, ITEMS.get

_NAMED = re.compile(r"^has (?:an?|two|three|\d+) [\w-]+ called (\w+)(?: and (\w+))?$")


def ended_slot(store: Store, participant: str, slot: str | None, ends: list[str]) -> str | None:
    """The slot a past state ("No longer lives in London", "Used to live in Madrid") fills: the
    slot of the claim it ends when that claim names what ended (its current value closes,
    keeping its end), else none: a past state of another value leaves the current one alone."""
    if not slot:
        return None
    r = store.conn.execute("SELECT norm FROM memory_claims WHERE participant=? AND slot=? AND status='current'",
                           (participant, slot)).fetchone()
    return slot if r is not None and set(r["norm"].split()) & {e.lower() for e in ends} else None


def end_named(store: Store, participant: str, ends: list[str], by: Claim) -> list[int]:
    """"I'm not with Dan anymore": close the current "Has a boyfriend called Dan" claims (kept,
    with their end at the past state's ordinal, pointing at it). Returns the closed ids."""
    names = {e.lower() for e in ends}
    closed = []
    with store.transaction() as conn:
        for r in conn.execute("SELECT id, norm, text FROM memory_claims WHERE participant=? AND status='current' "
                              "AND id<>?", (participant, by.id)).fetchall():
            m = _NAMED.match(r["norm"])
            if m and names & {g for g in m.groups() if g}:
                derived.supersede(conn, "memory_claims", "claim", participant, r["id"], by.id, by.valid_from,
                                  by.from_dayid, {"text": r["text"], "ended": True}, r["text"])
                closed.append(r["id"])
    return closed


def history(store: Store, participant: str, claim_id: int) -> dict:
    """The claim, the values its slot held before and after it, and its event log."""
    return ITEMS.history(store, participant, claim_id, lambda c, x: bool(c.slot) and x.slot == c.slot, "claim")


def edit(store: Store, participant: str, claim_id: int, text: str) -> Claim:
    """A correction by the participant: supersedes the claim with their wording (kept in history)."""
    c = get(store, participant, claim_id)
    if c.status != "current":
        raise StoreError(f"claim {claim_id} is not current; edit its successor")
    r = store.conn.execute("SELECT sources FROM memory_claims WHERE id=?", (claim_id,)).fetchone()
    src = [tuple(s) for s in json.loads(r["sources"])]
    slot = c.slot or f"edited:{claim_id}"
    if not c.slot:
        with store.transaction() as conn:
            conn.execute("UPDATE memory_claims SET slot=? WHERE id=?", (slot, claim_id))
    new, _ = add(store, participant, text=text, category=c.category, sources=src, context=c.context,
                 slot=slot, confidence=1.0, verdict="supported", origin="manual")
    derived.item_edited(store, participant, f"claim:{claim_id}", f"claim:{new.id}", c.context, text, src,
                        new.valid_from)
    return new


def delete(store: Store, participant: str, claim_id: int) -> None:
    """Gone everywhere: the row, its file-memory lines (in every version), its log; tombstoned
    by (source dayid, normalized text) so the same messages never yield it again."""
    with store.transaction() as conn:
        r = ITEMS.stored(conn, participant, claim_id)
        dayids = [s[0] for s in json.loads(r["sources"])]
        derived.tombstone(conn, participant, dayids, r["text"])
        if r["slot"]:  # any wording of this slot from these messages (a model may rephrase)
            derived.tombstone(conn, participant, dayids, f"slot:{r['slot']}")
        derived.item_deleted(conn, participant, f"claim:{claim_id}")  # file memory drops its lines
        derived.forget_text(conn, participant, r["text"])
        ITEMS.drop(conn, participant, claim_id)


def profile_rows(store: Store, participant: str) -> list[dict]:
    """profile.jsonl rows (docs/FORMAT.md), superseded claims included with their valid_to."""
    out = []
    for c in all_(store, participant):
        out.append({"id": f"c{c.id:04d}", "text": c.text, "category": c.category, "confidence": c.confidence,
                    "valid_from": c.from_dayid, "valid_to": c.to_dayid, "source_dayids": c.source_dayids,
                    "verdict": c.verdict})
    return out
