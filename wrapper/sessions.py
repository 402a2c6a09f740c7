"""The wrapper's state between turns: sessions, declarations, deferred items, reactions.

A session is a run of turns in one context with no silence longer than
`Settings.session_gap_minutes`; a setting a model declared holds until the session ends.
Questions and topics deferred by delivery control wait in `ix_queue` for the next turn of the
same session. A participant's message is also a reaction: a stated preference updates the
preference cell of the current context at once, through the derived-memory pipeline (propose,
verify against the message, merge); a short yes/no resolves the newest held action; a reply to
"when should I ...?" completes the action waiting for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from memory import cells, extract, keys, participants
from memory.messages import Message
from memory.store import Store
from wrapper import actions, intents


def when(msg: Message, store: Store | None = None) -> datetime:
    """The message's time, in the participant's own zone when the store is given (so "tomorrow
    at 8am" means their 8am)."""
    ts = datetime.fromisoformat(msg.ts) if isinstance(msg.ts, str) else msg.ts
    if store is not None and (p := participants.get(store, msg.participant)) and p.get("tz"):
        ts = ts.astimezone(keys.zone(p["tz"]))
    return ts


@dataclass
class Session:
    id: int
    context: str
    new: bool
    declared: dict[str, str] = field(default_factory=dict)  # the model's declarations, this session
    carried: list[tuple[str, str]] = field(default_factory=list)  # deferred items due now
    carried_ids: list[int] = field(default_factory=list)


def load(store: Store, participant: str, context: str, msg: Message, gap_minutes: float) -> Session:
    row = store.conn.execute("SELECT * FROM ix_sessions WHERE participant = ?", (participant,)).fetchone()
    same = False
    if row is not None and row["context"] == context:
        same = when(msg) - datetime.fromisoformat(row["last_ts"]) <= timedelta(minutes=gap_minutes)
    if same:
        sess = Session(row["session"], context, False)
        for r in store.conn.execute("SELECT attribute, setting FROM ix_declarations WHERE participant = ? AND "
                                    "session = ? AND by = 'model' ORDER BY id", (participant, row["session"])):
            sess.declared[r["attribute"]] = r["setting"]
        for r in store.conn.execute("SELECT id, kind, text FROM ix_queue WHERE participant = ? AND context = ? "
                                    "AND delivered = 0 ORDER BY id", (participant, context)):
            sess.carried.append((r["kind"], r["text"]))
            sess.carried_ids.append(r["id"])
        return sess
    return Session((row["session"] + 1) if row is not None else 1, context, True)


def save(conn, participant: str, sess: Session, selected: dict, rendered, msg: Message) -> None:
    """Within the turn's closing transaction: the session, new model declarations, the queue."""
    conn.execute("INSERT INTO ix_sessions (participant, session, context, last_ts) VALUES (?,?,?,?) "
                 "ON CONFLICT(participant) DO UPDATE SET session = excluded.session, context = excluded.context, "
                 "last_ts = excluded.last_ts", (participant, sess.id, sess.context, when(msg).isoformat()))
    if sess.new:  # what an ended session deferred is not carried into a new one
        conn.execute("UPDATE ix_queue SET delivered = 1 WHERE participant = ? AND delivered = 0", (participant,))
    now = datetime.now().astimezone().isoformat()
    for attribute, d in selected.items():
        if d.by == "model" and d.source == "turn":
            conn.execute("INSERT INTO ix_declarations (participant, session, context, attribute, setting, by, source,"
                         " dayid, at) VALUES (?,?,?,?,?,?,?,?,?)",
                         (participant, sess.id, sess.context, attribute, d.setting, d.by, d.source, msg.dayid, now))
    if rendered is None:
        return
    consumed = [i for i, (kind, _) in zip(sess.carried_ids, sess.carried)
                if (kind, _) in rendered.consumed]
    for qid in consumed:
        conn.execute("UPDATE ix_queue SET delivered = 1 WHERE id = ?", (qid,))
    for kind, text in rendered.deferred:
        conn.execute("INSERT INTO ix_queue (participant, context, kind, text, dayid) VALUES (?,?,?,?,?)",
                     (participant, sess.context, kind, text, msg.dayid))


def learn(store: Store, participant: str, msg: Message) -> list[dict]:
    """A stated preference in this message updates the cell now (verified against the message)."""
    proposals = [p for p in extract.RuleExtractor(kinds=("preference",)).propose([msg])
                 if p.kind == "preference"]
    out = []
    for p in proposals:
        v = extract.verify(store, participant, p)
        if v.verdict not in ("supported", "repairable"):
            continue
        report = extract.Report(participant, "reaction")
        extract.merge(store, participant, p, v, report)
        for c in p.contexts or [msg.context]:
            out.append({"context": c, "attribute": p.attribute, "setting": p.setting, "cells": dict(report.cells)})
    return out


def accept(store: Store, participant: str, context: str, attribute: str, setting: str | None, msg: Message) -> None:
    """Acceptance is evidence too: approving an action that was held for approval says "asking me
    first is right here"; the cell of that context gains this message as a source (or starts)."""
    if setting:
        cells.set_(store, participant, context=context, attribute=attribute, setting=setting,
                   sources=[(msg.dayid, msg.ordinal)], evidence=f"approved a held action: {msg.text[:80]}",
                   origin="reaction")


def resolve_pending(store: Store, participant: str, context: str, msg: Message,
                    chosen: Callable[[], dict[str, str]], resolved: list[dict], learned: list | None = None) -> str | None:
    """The wrapper's own reply when the message answers a pending action; None otherwise.
    An approval accepts how the companion helped (see `accept`) unless the same message corrected it."""
    pend = actions.pending(store, participant)
    if not pend:
        return None
    held = [a for a in pend if a.status == "held" and a.context == context]  # a "yes" at home is not for work
    answer = intents.resolution(msg.text)
    if answer and held:
        targets = held if intents.applies_to_all(msg.text) else [held[-1]]
        lines = []
        for a in targets:
            if answer == "approve":
                row = actions.approve(store, participant, a.id, via="chat", dayid=msg.dayid)
                if a.reason.startswith("autonomy is") and not learned:
                    accept(store, participant, a.context, "autonomy", chosen().get("autonomy"), msg)
            else:
                row = actions.reject(store, participant, a.id, via="chat", dayid=msg.dayid)
            resolved.append(row.public())
            lines.append(actions.line(row.kind, row.status, row.summary))
        left = len(held) - len(targets)  # in this context; the app's panel lists them all
        if left:
            lines.append(f"{left} more action{'s' if left > 1 else ''} still wait{'' if left > 1 else 's'} "
                         "for your approval.")
        return "\n".join(lines)
    # Only the question just asked is answered: the action must come from the participant's
    # previous message, so a reminder left waiting last week does not swallow today's message.
    prev = store.conn.execute("SELECT dayid FROM messages WHERE participant = ? AND sender = 'user' AND ordinal < ? "
                              "ORDER BY ordinal DESC LIMIT 1", (participant, msg.ordinal)).fetchone()
    waiting = [a for a in pend if a.status == "awaiting_facts" and a.context == context
               and prev is not None and a.dayid == prev["dayid"]]
    if not waiting or answer:
        return None
    a = waiting[-1]
    gaps = actions.missing(a.kind, a.payload)
    facts: dict = {}
    if "when" in gaps and (stated := intents.parse_when(msg.text, when(msg, store))):
        facts["when"] = stated.isoformat()
    text_gaps = [g for g in gaps if g != "when"]
    if len(gaps) == 1 and text_gaps:
        facts[text_gaps[0]] = msg.text.strip()
    if not facts:
        return None
    row, _ = actions.supply_facts(store, participant, a.id, facts, chosen(), msg.dayid)
    resolved.append(row.public())
    if row.status == "awaiting_facts":
        return f"Thanks. I still need: {', '.join(actions.missing(row.kind, row.payload))}."
    return "Thanks. " + actions.line(row.kind, row.status, row.summary)
