"""The interaction wrapper's state between turns: sessions, model declarations, deferred items,
and what a message teaches about how to help.

A session is a run of turns in one context with no silence longer than the gap the app sets; a
setting a model declared holds until the session ends (`ix_declarations`, stamped with the
turn's time). Questions and topics deferred by delivery control wait in `ix_queue` for the next
turn of the same session. Storage only: what a declaration or a deferred item means is the
wrapper's business.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from memory import cells, extract
from memory.messages import Message
from memory.store import Store


@dataclass
class Session:
    id: int
    context: str
    new: bool
    declared: dict[str, str] = field(default_factory=dict)  # the model's declarations, this session
    carried: list[tuple[str, str]] = field(default_factory=list)  # deferred items due now
    carried_ids: list[int] = field(default_factory=list)


def load(store: Store, participant: str, context: str, instant: datetime, gap_minutes: float) -> Session:
    row = store.conn.execute("SELECT * FROM ix_sessions WHERE participant = ?", (participant,)).fetchone()
    same = False
    if row is not None and row["context"] == context:
        same = instant - datetime.fromisoformat(row["last_ts"]) <= timedelta(minutes=gap_minutes)
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


def save(conn, participant: str, sess: Session, declared: dict[str, str], consumed: list[tuple[str, str]],
         deferred: list[tuple[str, str]], msg: Message, instant: datetime) -> None:
    """Within the turn's closing transaction: the session, this turn's model declarations
    ({attribute: setting}), the deferred items delivered (`consumed`) and newly deferred."""
    conn.execute("INSERT INTO ix_sessions (participant, session, context, last_ts) VALUES (?,?,?,?) "
                 "ON CONFLICT(participant) DO UPDATE SET session = excluded.session, context = excluded.context, "
                 "last_ts = excluded.last_ts", (participant, sess.id, sess.context, instant.isoformat()))
    if sess.new:  # what an ended session deferred is not carried into a new one
        conn.execute("UPDATE ix_queue SET delivered = 1 WHERE participant = ? AND delivered = 0", (participant,))
    for attribute, setting in declared.items():
        conn.execute("INSERT INTO ix_declarations (participant, session, context, attribute, setting, by, source,"
                     " dayid, at) VALUES (?,?,?,?,?,?,?,?,?)",
                     (participant, sess.id, sess.context, attribute, setting, "model", "turn", msg.dayid,
                      instant.isoformat()))
    for qid, item in zip(sess.carried_ids, sess.carried):
        if item in consumed:
            conn.execute("UPDATE ix_queue SET delivered = 1 WHERE id = ?", (qid,))
    for kind, text in deferred:
        conn.execute("INSERT INTO ix_queue (participant, context, kind, text, dayid) VALUES (?,?,?,?,?)",
                     (participant, sess.context, kind, text, msg.dayid))


def learn(store: Store, participant: str, msg: Message, own_words: str | None = None) -> list[dict]:
    """A stated preference in this message updates the cell now (verified against the message).
    `own_words`: the part of the message that speaks for the participant (the caller leaves out
    quotes, reported speech and idioms); the whole message when None."""
    text = msg.text if own_words is None else own_words
    if not text.strip():
        return []
    proposals = [p for p in extract.RuleExtractor(kinds=("preference",)).propose([replace(msg, text=text)]) if p.kind == "preference"]
    out = []
    for p in proposals:
        v = extract.verify(store, participant, p)
        if v.verdict not in ("supported", "repairable"):
            continue
        report = extract.Report(participant, "reaction")
        extract.merge(store, participant, p, v, report)
        for c in p.contexts or [msg.context]:
            now = cells.in_force(store, participant, c, p.attribute)  # stepped on an ordered scale, maybe
            item = {"context": c, "attribute": p.attribute, "setting": now, "cells": dict(report.cells)}
            if now != p.setting:
                item["asked"] = p.setting
            out.append(item)
    return out


def acknowledgement(learned: list[dict], said_in: str) -> str | None:
    """The one line a reply opens with when the message changed how to help (memory.cells)."""
    return cells.acknowledgement(learned, said_in)
