"""Action rows: every action the wrapper saw, and the append-only log of its changes of state.

Storage only. Whether an action runs, waits or is dropped is the wrapper's rule
(`wrapper.actions.decide`); the app (`companion.actions`) applies the rule and writes here.
An `approved` event always precedes the `run` of an action that was held (`violations` checks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from memory.store import Store

PENDING = ("held", "awaiting_facts")


class ActionError(ValueError):
    pass


@dataclass(frozen=True)
class ActionRow:
    id: int
    participant: str
    context: str
    kind: str
    external: bool
    payload: dict
    status: str
    reason: str
    requested: bool
    origin: str
    dayid: str | None
    due_at: str | None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _row(r) -> ActionRow:
    return ActionRow(r["id"], r["participant"], r["context"], r["kind"], bool(r["external"]),
                     json.loads(r["payload"]), r["status"], r["reason"], bool(r["requested"]), r["origin"],
                     r["dayid"], r["due_at"])


def log_event(conn, participant: str, action_id: int, event: str, via: str, dayid: str | None, detail: str = "") -> None:
    conn.execute("INSERT INTO action_events (participant, action_id, event, via, dayid, at, detail) "
                 "VALUES (?,?,?,?,?,?,?)", (participant, action_id, event, via, dayid, _now(), detail))


def insert(conn, participant: str, context: str, kind: str, external: bool, payload: dict, status: str,
           reason: str, requested: bool, origin: str, dayid: str | None) -> ActionRow:
    """A proposed action, with its `proposed` event."""
    cur = conn.execute(
        "INSERT INTO actions (participant, context, kind, external, payload, status, reason, requested, origin,"
        " dayid, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (participant, context, kind, int(external), json.dumps(payload), status, reason, int(requested),
         origin, dayid, _now()))
    log_event(conn, participant, cur.lastrowid, "proposed", "turn", dayid, origin)
    return get(conn, participant, cur.lastrowid)


def update(conn, a: ActionRow, *, payload: dict | None = None, status: str | None = None,
           reason: str | None = None) -> None:
    conn.execute("UPDATE actions SET payload = ?, status = ?, reason = ? WHERE id = ?",
                 (json.dumps(a.payload if payload is None else payload), status or a.status,
                  a.reason if reason is None else reason, a.id))


def mark_run(conn, a: ActionRow, status: str, via: str, dayid: str | None, detail: str = "") -> None:
    """The action ran (never leaving the machine): `scheduled` ones keep their time as `due_at`."""
    conn.execute("UPDATE actions SET status = ?, due_at = ?, resolved_at = ? WHERE id = ?",
                 (status, a.payload.get("when") if status == "scheduled" else None, _now(), a.id))
    log_event(conn, a.participant, a.id, "run", via, dayid, detail)


def mark_rejected(conn, a: ActionRow, via: str, dayid: str | None) -> None:
    conn.execute("UPDATE actions SET status = 'rejected', resolved_at = ? WHERE id = ?", (_now(), a.id))
    log_event(conn, a.participant, a.id, "rejected", via, dayid)


def get(conn, participant: str, action_id: int) -> ActionRow:
    r = conn.execute("SELECT * FROM actions WHERE id = ? AND participant = ?", (action_id, participant)).fetchone()
    if r is None:
        raise ActionError(f"no action {action_id} for this participant")
    return _row(r)


def owner(store: Store, action_id: int) -> str | None:
    r = store.conn.execute("SELECT participant FROM actions WHERE id = ?", (action_id,)).fetchone()
    return None if r is None else r["participant"]


def pending(store: Store, participant: str, context: str | None = None) -> list[ActionRow]:
    sql = f"SELECT * FROM actions WHERE participant = ? AND status IN {PENDING}"
    args: list = [participant]
    if context:
        sql += " AND context = ?"
        args.append(context)
    return [_row(r) for r in store.conn.execute(sql + " ORDER BY id", args)]


def history(store: Store, participant: str) -> list[ActionRow]:
    return [_row(r) for r in store.conn.execute(
        "SELECT * FROM actions WHERE participant = ? ORDER BY id DESC", (participant,))]


def events(store: Store, participant: str, action_id: int | None = None) -> list[dict]:
    sql, args = "SELECT * FROM action_events WHERE participant = ?", [participant]
    if action_id is not None:
        sql += " AND action_id = ?"
        args.append(action_id)
    return [dict(r) for r in store.conn.execute(sql + " ORDER BY id", args)]


def held_in(store: Store, participant: str, dayid: str) -> set[int]:
    """Actions the reply to this message asked approval for: held in its turn, or asked about
    again (`asked`: proposed again while waiting, or the companion asked about it explicitly)."""
    return {r["action_id"] for r in store.conn.execute(
        "SELECT action_id FROM action_events WHERE participant = ? AND event IN ('held', 'asked') AND dayid = ?",
        (participant, dayid))}


def same_pending(conn, participant: str, context: str, kind: str, payload: dict) -> ActionRow | None:
    """A pending action of this kind with exactly this payload, if one is waiting already."""
    text = json.dumps(payload)
    for r in conn.execute(f"SELECT * FROM actions WHERE participant = ? AND context = ? AND kind = ? AND status IN "
                          f"{PENDING} ORDER BY id", (participant, context, kind)):
        if json.loads(r["payload"]) == json.loads(text):
            return _row(r)
    return None


def scheduled(store: Store) -> list[tuple[int, str]]:
    """(id, due_at) of every action waiting for its time, all participants."""
    return [(r["id"], r["due_at"]) for r in store.conn.execute(
        "SELECT id, due_at FROM actions WHERE status = 'scheduled' AND due_at IS NOT NULL")]


def mark_delivered(conn, a: ActionRow, dayid: str) -> bool:
    """False when it was delivered meanwhile or is gone."""
    if conn.execute("UPDATE actions SET status = 'delivered' WHERE id = ? AND status = 'scheduled'",
                    (a.id,)).rowcount != 1:
        return False
    log_event(conn, a.participant, a.id, "delivered", "scheduler", dayid)
    return True


def violations(store: Store, participant: str) -> list[str]:
    """Held actions that ran without an approval event in between (must always be empty)."""
    out, state = [], {}
    for e in events(store, participant):
        s = state.setdefault(e["action_id"], {"held": False, "approved": False})
        if e["event"] == "held":  # awaiting facts is released by the facts, then decided again
            s["held"] = True
        elif e["event"] == "approved":
            s["approved"] = True
        elif e["event"] == "run" and s["held"] and not s["approved"]:
            out.append(f"action {e['action_id']} ran while held, without approval")
    return out
