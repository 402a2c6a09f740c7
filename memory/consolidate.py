"""Merge and consolidate: verified proposals become claims, preference cells and persona items
(with their file-memory lines); `consolidate` runs the pipeline over new messages, `rebuild` over
the whole history (see memory.extract)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from memory import cells, claims, derived, filememory, persona
from memory.extract_rules import RuleExtractor
from memory.messages import _row as _message_row
from memory.proposal import Proposal
from memory.store import Store, StoreError
from memory.verify import Verdict, verify


@dataclass
class Report:
    participant: str
    extractor: str
    messages: int = 0
    proposals: int = 0
    verdicts: dict = field(default_factory=dict)
    tombstoned: int = 0
    claims: dict = field(default_factory=dict)  # added / duplicate / superseded
    cells: dict = field(default_factory=dict)
    persona: dict = field(default_factory=dict)  # added / duplicate / superseded
    lines_added: int = 0
    lines_refused: dict = field(default_factory=dict)  # budget / recapture / duplicate
    processed_ordinal: int = 0
    regenerating: frozenset = field(default_factory=frozenset, repr=False)  # rebuild: lines that stood before

    def public(self) -> dict:
        out = asdict(self)
        out.pop("regenerating")
        return out


def _count(d: dict, key: str) -> None:
    d[key] = d.get(key, 0) + 1


def _line(store, participant, report, *, origin, old_origin, scope, text, sources, at, budget_chars):
    """Give a new item its file-memory line: replace its predecessor's line, or add one."""
    try:
        old = filememory.line_for_origin(store, participant, old_origin) if old_origin else None
        if old is not None:
            filememory.replace(store, participant, old.id, text, sources=sources, origin=origin, at=at,
                               budget_chars=budget_chars, regenerating=report.regenerating)
        else:
            filememory.add(store, participant, scope, text, sources=sources, origin=origin, at=at,
                           budget_chars=budget_chars, regenerating=report.regenerating)
        report.lines_added += 1
    except filememory.MemoryFull:
        _count(report.lines_refused, "budget")
    except filememory.Recapture:
        _count(report.lines_refused, "recapture")
    except StoreError:
        _count(report.lines_refused, "duplicate")


def _merge_persona(store: Store, participant: str, p: Proposal, v: Verdict, report: Report) -> None:
    keys = (persona.key_text(p.slot, p.value), persona.slot_key(p.slot))
    sources = [(d, o) for d, o in v.sources if not any(derived.tombstoned(store.conn, participant, d, k) for k in keys)]
    if not sources:
        report.tombstoned += 1
        return
    _, action = persona.add(store, participant, slot=p.slot, value=p.value, clause=p.text, sources=sources,
                            facet=p.facet, intensified=p.intensified, verdict=v.verdict, origin=p.extractor)
    _count(report.persona, action)


def merge(store: Store, participant: str, p: Proposal, v: Verdict, report: Report,
          budget_chars: int = filememory.DEFAULT_BUDGET_CHARS) -> None:
    if p.kind == "persona":
        return _merge_persona(store, participant, p, v, report)
    if p.kind == "claim":
        key_texts = {None: p.text}
    else:
        key_texts = {c: cells.key_text(c, p.attribute, p.setting) for c in (p.contexts or [v.context])}
    for ctx, key_text in key_texts.items():
        # a deleted cell also tombstones its attribute for the messages it came from: the message
        # may ask for a setting the step rule turns into another one (brief while brief -> terse)
        slot_key = (f"slot:{p.slot}" if p.slot else None) if p.kind == "claim" else cells.attribute_key(ctx, p.attribute)
        sources = [(d, o) for d, o in v.sources if not derived.tombstoned(store.conn, participant, d, key_text)
                   and not (slot_key and derived.tombstoned(store.conn, participant, d, slot_key))]
        if not sources:
            report.tombstoned += 1
            continue
        at = sources[-1][1]
        confidence = p.confidence if v.verdict == "supported" else round(p.confidence * 0.6, 3)
        if p.kind == "claim":
            slot = claims.ended_slot(store, participant, p.slot, p.ends) if p.ends else p.slot
            prev = store.conn.execute(
                "SELECT id FROM memory_claims WHERE participant=? AND slot=? AND status='current'",
                (participant, slot)).fetchone() if slot else None
            claim, action = claims.add(store, participant, text=p.text, category=p.category, sources=sources,
                                       context=v.context or "personal", slot=slot, confidence=confidence,
                                       verdict=v.verdict, origin=p.extractor)
            _count(report.claims, action)
            if p.ends and action != "duplicate":
                for old_id in claims.end_named(store, participant, p.ends, claim):
                    _count(report.claims, "ended")
                    old_line = filememory.line_for_origin(store, participant, f"claim:{old_id}")
                    if old_line is not None:
                        filememory.remove(store, participant, old_line.id)
            if action != "duplicate":
                _line(store, participant, report, origin=f"claim:{claim.id}",
                      old_origin=f"claim:{prev['id']}" if prev and action == "superseded" else None,
                      scope=claim.context, text=claim.text, sources=sources, at=at, budget_chars=budget_chars)
        else:
            prev = store.conn.execute(
                "SELECT id, sources FROM memory_cells WHERE participant=? AND context=? AND attribute=? AND "
                "status='current'", (participant, ctx, p.attribute)).fetchone()
            if prev is not None and {d for d, _ in json.loads(prev["sources"])} & set(p.source_dayids):
                _count(report.cells, "duplicate")  # this message set the cell already (in its turn)
                continue
            setting = cells.stepped(p.attribute, p.setting, cells.in_force(store, participant, ctx, p.attribute, at),
                                    p.evidence)
            if setting != p.setting:
                _count(report.cells, "stepped")
            cell, action = cells.set_(store, participant, context=ctx, attribute=p.attribute, setting=setting,
                                      sources=sources, evidence=p.evidence, verdict=v.verdict, origin=p.extractor)
            _count(report.cells, action)
            if action != "duplicate":
                _line(store, participant, report, origin=f"cell:{cell.id}",
                      old_origin=f"cell:{prev['id']}" if prev and action == "superseded" else None,
                      scope=ctx, text=cell.text, sources=sources, at=at, budget_chars=budget_chars)


def consolidate(store: Store, participant: str, extractor=None, upto: int | None = None,
                budget_chars: int = filememory.DEFAULT_BUDGET_CHARS, batch: int = 200,
                regenerating: frozenset = frozenset()) -> Report:
    """Run extraction over the messages not yet processed (ordinal above the high-water mark,
    below `upto`), verify, merge, and advance the mark. Safe to run again: merging is idempotent."""
    extractor = extractor or RuleExtractor()
    report = Report(participant, f"{extractor.name}:{extractor.version}")
    report.regenerating = regenerating
    start = derived.processed_ordinal(store, participant)
    end = upto if upto is not None else derived.effective_ordinal(store, participant) + 1
    report.processed_ordinal = start
    while True:
        rows = store.conn.execute(
            "SELECT * FROM messages WHERE participant=? AND ordinal>? AND ordinal<? ORDER BY ordinal LIMIT ?",
            (participant, report.processed_ordinal, end, batch)).fetchall()
        if not rows:
            break
        msgs = [_message_row(r) for r in rows]
        report.messages += len(msgs)
        proposals = extractor.propose(msgs)
        report.proposals += len(proposals)
        order = {m.dayid: m.ordinal for m in msgs}
        proposals.sort(key=lambda p: max((order.get(d, 0) for d in p.source_dayids), default=0))
        for p in proposals:
            v = verify(store, participant, p)
            _count(report.verdicts, v.verdict)
            with store.transaction() as conn:
                derived.log(conn, participant, "proposal", None, v.verdict,
                            {"text": p.text, "kind": p.kind, "sources": p.source_dayids, "reason": v.reason,
                             "extractor": p.extractor}, p.text)
            if v.verdict in ("supported", "repairable"):
                merge(store, participant, p, v, report, budget_chars)
        report.processed_ordinal = msgs[-1].ordinal
        with store.transaction() as conn:
            derived.set_processed(conn, participant, report.processed_ordinal)
    return report


def rebuild(store: Store, participant: str, extractor=None,
            budget_chars: int = filememory.DEFAULT_BUDGET_CHARS) -> Report:
    """Derive claims, cells and persona items again from the full history. Kept: tombstones
    (deleted items stay deleted), hand-written file lines, file-memory versions, persona items
    entered by hand (applied again on top). Derived lines are regenerated."""
    with store.transaction() as conn:
        if conn.execute("SELECT 1 FROM participants WHERE participant=?", (participant,)).fetchone() is None:
            raise StoreError(f"unknown participant {participant!r}")
        corrections = [dict(r) for r in conn.execute(
            "SELECT * FROM memory_claims WHERE participant=? AND origin='manual' AND status='current' ORDER BY id",
            (participant,))]
        # Lines that stand now may come back although they were injected into prompts since:
        # the rebuild re-derives them from the participant's own words, it does not re-capture them.
        regenerating = frozenset(r["norm"] for r in conn.execute(
            "SELECT norm FROM memory_file_lines WHERE participant=? AND status='current' AND "
            "(origin LIKE 'claim:%' OR origin LIKE 'cell:%')", (participant,)))
        conn.execute("DELETE FROM memory_file_lines WHERE participant=? AND (origin LIKE 'claim:%' OR origin LIKE 'cell:%')",
                     (participant,))
        manual_persona = [dict(r) for r in conn.execute(
            "SELECT * FROM memory_persona WHERE participant=? AND origin='manual' AND status='current' ORDER BY id",
            (participant,))]
        conn.execute("DELETE FROM memory_claims WHERE participant=?", (participant,))
        conn.execute("DELETE FROM memory_cells WHERE participant=?", (participant,))
        conn.execute("DELETE FROM memory_persona WHERE participant=?", (participant,))
        conn.execute("DELETE FROM memory_events WHERE participant=? AND kind IN ('claim', 'cell', 'persona', 'proposal')",
                     (participant,))
        derived.set_processed(conn, participant, 0)
    report = consolidate(store, participant, extractor, budget_chars=budget_chars, regenerating=regenerating)
    # The participant's own corrections are not derivable: apply them again on top (they take
    # effect now, at the newest message, not at the time they were first made).
    for r in corrections:
        prev = store.conn.execute("SELECT id FROM memory_claims WHERE participant=? AND slot=? AND status='current'",
                                  (participant, r["slot"])).fetchone() if r["slot"] else None
        c, action = claims.add(store, participant, text=r["text"], category=r["category"],
                               sources=[tuple(x) for x in json.loads(r["sources"])], context=r["context"],
                               slot=r["slot"], confidence=r["confidence"], verdict=r["verdict"], origin="manual")
        if action != "duplicate":
            _line(store, participant, report, origin=f"claim:{c.id}", old_origin=f"claim:{prev['id']}" if prev else None,
                  scope=c.context, text=c.text, sources=[], at=c.valid_from, budget_chars=budget_chars)
    for r in manual_persona:
        for d, o, inten, clause in json.loads(r["sources"]):
            persona.add(store, participant, slot=r["slot"], value=r["value"], clause=clause, sources=[(d, o)],
                        facet=r["facet"], intensified=bool(inten), verdict=r["verdict"], origin="manual")
    return report
