"""Profile claims: what the participant stated, with provenance, validity and history.

A claim has a `slot` when a newer statement can contradict it (residence, age, occupation,
"sister:ana:residence" ...). Adding a claim whose slot already has a current value with other
text supersedes that value: the old row stays, closed at the new claim's ordinal, pointing at
its successor. The same text again only adds its source. Claims without a slot deduplicate
by normalized text. Timing rules: see memory.derived.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from memory import derived
from memory.store import Store, StoreError

VERDICTS = ("supported", "repairable", "unsupported", "pending", "pruned_supported", "undetermined")


@dataclass(frozen=True)
class Claim:
    id: int
    slot: str | None
    text: str
    category: str
    confidence: float
    context: str
    source_dayids: list[str]
    valid_from: int
    valid_to: int | None
    from_dayid: str
    to_dayid: str | None
    status: str
    verdict: str
    superseded_by: int | None
    origin: str

    def public(self) -> dict:
        return asdict(self)


def _row(r, as_of: int | None = None) -> Claim:
    src = derived.sources_as_of(r["sources"], as_of)
    current_then = as_of is not None and (r["valid_to"] is None or as_of <= r["valid_to"])
    return Claim(
        r["id"], r["slot"], r["text"], r["category"], r["confidence"], r["context"], [s[0] for s in src],
        r["valid_from"],
        None if current_then else r["valid_to"],
        r["from_dayid"],
        None if current_then else r["to_dayid"],
        "current" if current_then else r["status"],
        r["verdict"],
        None if current_then else r["superseded_by"],
        r["origin"],
    )


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


def current(store: Store, participant: str, as_of: int | None = None) -> list[Claim]:
    """Claims that hold at the bound (None: now), oldest first."""
    return [_row(r, as_of) for r in derived.current_rows(store, "memory_claims", participant, as_of)]


def all_(store: Store, participant: str, as_of: int | None = None) -> list[Claim]:
    """Every claim, superseded ones too (as of a bound: only those that existed before it)."""
    return [_row(r, as_of) for r in derived.all_rows(store, "memory_claims", participant, as_of)]


def get(store: Store, participant: str, claim_id: int) -> Claim:
    r = store.conn.execute("SELECT * FROM memory_claims WHERE participant=? AND id=?",
                           (participant, claim_id)).fetchone()
    if r is None:
        raise StoreError(f"no claim {claim_id} for participant {participant!r}")
    return _row(r)


def history(store: Store, participant: str, claim_id: int) -> dict:
    """The claim, the values its slot held before and after it, and its event log."""
    c = get(store, participant, claim_id)
    chain = [x for x in all_(store, participant) if (c.slot and x.slot == c.slot) or x.id == c.id]
    return {"claim": c.public(), "slot_history": [x.public() for x in chain],
            "events": derived.events(store, participant, "claim", claim_id)}


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
        r = conn.execute("SELECT * FROM memory_claims WHERE participant=? AND id=?",
                         (participant, claim_id)).fetchone()
        if r is None:
            raise StoreError(f"no claim {claim_id} for participant {participant!r}")
        dayids = [s[0] for s in json.loads(r["sources"])]
        derived.tombstone(conn, participant, dayids, r["text"])
        if r["slot"]:  # any wording of this slot from these messages (a model may rephrase)
            derived.tombstone(conn, participant, dayids, f"slot:{r['slot']}")
        derived.item_deleted(conn, participant, f"claim:{claim_id}")
        derived.forget_text(conn, participant, r["text"])
        conn.execute("DELETE FROM memory_events WHERE participant=? AND kind='claim' AND item_id=?",
                     (participant, claim_id))
        conn.execute("UPDATE memory_claims SET superseded_by=NULL WHERE participant=? AND superseded_by=?",
                     (participant, claim_id))
        conn.execute("DELETE FROM memory_claims WHERE id=?", (claim_id,))
