"""The Trace: one row per turn, everything needed to answer "why did it bring that up?"."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from pydantic import BaseModel, Field

from memory.store import Store


class TraceError(BaseModel):
    step: str
    type: str
    message: str


class Trace(BaseModel):
    participant: str
    dayid: str | None = None  # the participant's message
    reply_dayid: str | None = None  # the companion's reply
    context: str = "personal"
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat())
    arm: dict = Field(default_factory=dict)  # gate/retriever/policy, how assigned, seed
    gate: dict = Field(default_factory=dict)  # name, version, params
    decision: dict | None = None  # retrieve, score, threshold, reason
    retriever: dict = Field(default_factory=dict)  # name, params, k, as_of
    hits: list[dict] = Field(default_factory=list)  # dayid, score, sender, snippet
    applied: dict = Field(default_factory=dict)  # policy, heading, items, recent, tokens
    model: str | None = None
    tokens: dict = Field(default_factory=dict)  # prompt, completion
    interaction: dict = Field(default_factory=dict)  # settings declared and by whom, rendered, hidden
    actions_run: list[dict] = Field(default_factory=list)
    actions_held: list[dict] = Field(default_factory=list)  # held for approval or waiting for facts
    actions_dropped: list[dict] = Field(default_factory=list)  # not done: outreach low, as-asked, reactive
    actions_resolved: list[dict] = Field(default_factory=list)  # approved, rejected or completed this turn
    errors: list[TraceError] = Field(default_factory=list)
    fallbacks: list[str] = Field(default_factory=list)
    latency_ms: dict[str, float] = Field(default_factory=dict)  # per step, and total
    id: int | None = None

    def error(self, step: str, exc: BaseException | str) -> None:
        if isinstance(exc, BaseException):
            self.errors.append(TraceError(step=step, type=type(exc).__name__, message=str(exc)[:2000]))
        else:
            self.errors.append(TraceError(step=step, type="error", message=exc))


def save(store: Store, trace: Trace, conn=None) -> int:
    c = conn or store.conn
    decision = None if trace.decision is None else int(bool(trace.decision.get("retrieve")))
    cur = c.execute(
        "INSERT INTO traces (participant, dayid, created_at, arm, gate, decision, data) VALUES (?,?,?,?,?,?,?)",
        (
            trace.participant,
            trace.dayid,
            trace.created_at,
            trace.arm.get("name"),
            trace.gate.get("name"),
            decision,
            trace.model_dump_json(exclude={"id"}),
        ),
    )
    trace.id = cur.lastrowid
    return trace.id


def _load(r) -> Trace:
    t = Trace.model_validate_json(r["data"])
    t.id = r["id"]
    return t


def list_(
    store: Store,
    participant: str | None = None,
    arm: str | None = None,
    decision: bool | None = None,
    limit: int | None = None,
) -> list[Trace]:
    where, args = [], []
    if participant is not None:
        where.append("participant=?")
        args.append(participant)
    if arm is not None:
        where.append("arm=?")
        args.append(arm)
    if decision is not None:
        where.append("decision=?")
        args.append(int(decision))
    sql = "SELECT id, data FROM traces"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id"
    if limit:
        sql = f"SELECT * FROM ({sql} DESC LIMIT {int(limit)}) ORDER BY id"
    return [_load(r) for r in store.conn.execute(sql, args)]


def for_dayid(store: Store, participant: str, dayid: str) -> Trace | None:
    r = store.conn.execute(
        "SELECT id, data FROM traces WHERE participant=? AND (dayid=? OR json_extract(data,'$.reply_dayid')=?) ORDER BY id DESC LIMIT 1",
        (participant, dayid, dayid),
    ).fetchone()
    return _load(r) if r else None


def to_jsonl(traces: list[Trace]) -> str:
    return "".join(json.dumps(t.model_dump(), ensure_ascii=False) + "\n" for t in traces)
