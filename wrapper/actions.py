"""The action layer: reminders, check-ins, notes, calendar entries, drafts, messages to contacts.

Every action the wrapper sees is a row in `actions`, and every change of state an event in the
append-only `action_events`. Execution control (`decide`) says whether an action runs now, is
held for approval, waits for missing facts, or is dropped; nothing held runs without an
`approved` event. Running never leaves the machine: notes and calendar entries are rows, drafts
and messages land in a local outbox (`status = done`, never sent), reminders and check-ins
become a companion message at their time (`wrapper.outreach`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from memory.store import Store
from wrapper import inventory

PENDING = ("held", "awaiting_facts")
OUTBOX = ("draft_message", "send_message")  # written into the local outbox when they run
TIMED = ("set_reminder", "schedule_checkin")  # delivered later, as a companion message


def run_status(kind: str) -> str:
    """What an action is once it has run: scheduled (delivered at its time) or done."""
    return "scheduled" if kind in TIMED else "done"


def line(kind: str, status: str, summary: str) -> str:
    """The participant-facing sentence for an action in this state (one wording everywhere)."""
    if status == "held":
        return f"Waiting for your approval: {summary}. Reply \u201cyes\u201d to go ahead or \u201cno\u201d to cancel."
    if status == "rejected":
        return f"Cancelled: {summary}."
    verb = "In your outbox (not sent)" if kind in OUTBOX else "Scheduled" if status == "scheduled" else "Done"
    return f"{verb}: {summary}."


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

    @property
    def title(self) -> str:
        return inventory.load().action(self.kind).title

    @property
    def summary(self) -> str:
        return describe(self.kind, self.payload)

    def public(self) -> dict:
        return {"id": self.id, "kind": self.kind, "external": self.external, "payload": self.payload,
                "status": self.status, "reason": self.reason, "requested": self.requested,
                "origin": self.origin, "dayid": self.dayid, "summary": self.summary}


def describe(kind: str, p: dict) -> str:
    """One line a participant reads: what the action does."""
    what = {
        "set_reminder": lambda: f"remind you: {p.get('text') or '?'}",
        "schedule_checkin": lambda: "check in with you" + (f" about {p['topic']}" if p.get("topic") else ""),
        "add_note": lambda: f"note: {p.get('text') or '?'}",
        "add_calendar_entry": lambda: f"calendar: {p.get('title') or '?'}",
        "draft_message": lambda: f"draft to {p.get('to') or '?'}: \u201c{p.get('text') or '?'}\u201d",
        "send_message": lambda: f"message to {p.get('to') or '?'}: \u201c{p.get('text') or '?'}\u201d",
    }.get(kind, lambda: kind)()
    when = p.get("when")
    return what + (f" ({_human(when)})" if when else "")


def _human(iso: str) -> str:
    try:
        return datetime.fromisoformat(iso).strftime("%a %d %b, %H:%M")
    except ValueError:
        return iso


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _row(r) -> ActionRow:
    return ActionRow(r["id"], r["participant"], r["context"], r["kind"], bool(r["external"]),
                     json.loads(r["payload"]), r["status"], r["reason"], bool(r["requested"]), r["origin"],
                     r["dayid"], r["due_at"])


def missing(kind: str, payload: dict) -> list[str]:
    return [f for f in inventory.load().action(kind).required if not payload.get(f)]


def lower_autonomy(a: str, b: str | None) -> str:
    """The more cautious of two autonomy settings (the inventory lists them from least autonomy)."""
    order = list(inventory.load().attributes["autonomy"].settings)
    return a if b is None or b not in order or (a in order and order.index(a) <= order.index(b)) else b


def decide(kind: str, payload: dict, requested: bool, settings: dict[str, str],
           ceiling: str | None = None) -> tuple[str, str]:
    """Execution control: (run | held | awaiting_facts | dropped, reason) from the declared settings.

    The wrapper sees only the declared settings, never the participant's true preference.
    `ceiling` is the participant's own autonomy (their cells or the default, never a model's
    declaration): an external action is never run with more autonomy than that.
    """
    action = inventory.load().action(kind)
    autonomy = settings.get("autonomy", "suggest")
    if action.external:
        autonomy = lower_autonomy(autonomy, ceiling)
    if not requested:
        if action.external:
            # Memory is data: an external action nobody asked for in this message (a retrieved
            # text told the model to, say) is held for the participant to see, at any level.
            return "held", "external action not asked for in this message: waits for approval"
        if action.outreach and settings.get("proactive_outreach") != "high":
            return "dropped", "proactive outreach is low: nothing is scheduled unprompted"
        if not action.outreach and settings.get("task_expansion") != "adjacent":
            return "dropped", "task expansion is as-asked: only what was asked is done"
        if autonomy == "reactive":
            return "dropped", "autonomy is reactive: nothing starts unprompted"
    gaps = missing(kind, payload)
    if gaps:
        if settings.get("elicitation") == "infer" and gaps == ["when"]:
            return "run", "elicitation is infer: went on with a default time"
        return "awaiting_facts", "missing " + ", ".join(gaps)
    if autonomy in ("reactive", "suggest"):
        return "held", f"autonomy is {autonomy}: waits for approval"
    if autonomy == "self_directed" and action.external:
        return "held", "autonomy is self-directed: external actions are confirmed first"
    return "run", f"autonomy is {autonomy}"


def log_event(conn, participant: str, action_id: int, event: str, via: str, dayid: str | None, detail: str = "") -> None:
    conn.execute("INSERT INTO action_events (participant, action_id, event, via, dayid, at, detail) "
                 "VALUES (?,?,?,?,?,?,?)", (participant, action_id, event, via, dayid, _now(), detail))


def _execute(conn, a: ActionRow, via: str, dayid: str | None) -> str:
    """Run one action (never leaves the machine). Returns its new status."""
    status = run_status(a.kind)
    conn.execute("UPDATE actions SET status = ?, due_at = ?, resolved_at = ? WHERE id = ?",
                 (status, a.payload.get("when") if status == "scheduled" else None, _now(), a.id))
    log_event(conn, a.participant, a.id, "run", via, dayid,
           "into the local outbox, not sent" if a.kind in OUTBOX else "")
    return status


def record(conn, participant: str, context: str, kind: str, payload: dict, *, requested: bool, origin: str,
           dayid: str | None, settings: dict[str, str], default_when: str | None = None,
           ceiling: str | None = None) -> tuple[ActionRow, str]:
    """Store one proposed action and apply execution control. Returns (row, reason)."""
    action = inventory.load().action(kind)
    payload = {k: v for k, v in payload.items() if v not in (None, "")}
    verdict, reason = decide(kind, payload, requested, settings, ceiling)
    if verdict == "run" and "when" in action.required and not payload.get("when"):
        payload["when"] = default_when  # infer: the assumed time is recorded in the payload
    status = "held" if verdict == "run" else verdict  # a run is stored, then run below, in one transaction
    cur = conn.execute(
        "INSERT INTO actions (participant, context, kind, external, payload, status, reason, requested, origin,"
        " dayid, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (participant, context, kind, int(action.external), json.dumps(payload), status, reason, int(requested),
         origin, dayid, _now()))
    aid = cur.lastrowid
    log_event(conn, participant, aid, "proposed", "turn", dayid, origin)
    row = _row(conn.execute("SELECT * FROM actions WHERE id = ?", (aid,)).fetchone())
    if verdict == "run":
        _execute(conn, row, "turn", dayid)
    else:
        log_event(conn, participant, aid, verdict, "turn", dayid, reason)
    return get(conn, participant, aid), reason


def get(conn, participant: str, action_id: int) -> ActionRow:
    r = conn.execute("SELECT * FROM actions WHERE id = ? AND participant = ?", (action_id, participant)).fetchone()
    if r is None:
        raise ActionError(f"no action {action_id} for this participant")
    return _row(r)


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


def outbox(store: Store, participant: str) -> list[ActionRow]:
    """Drafts and messages written (never sent)."""
    return [a for a in history(store, participant)
            if a.kind in OUTBOX and a.status == "done"]


def events(store: Store, participant: str, action_id: int | None = None) -> list[dict]:
    sql, args = "SELECT * FROM action_events WHERE participant = ?", [participant]
    if action_id is not None:
        sql += " AND action_id = ?"
        args.append(action_id)
    return [dict(r) for r in store.conn.execute(sql + " ORDER BY id", args)]


def _resolve(store: Store, participant: str, action_id: int, approve: bool, via: str, dayid: str | None,
             facts: dict | None = None) -> ActionRow:
    with store.transaction() as conn:
        a = get(conn, participant, action_id)
        if a.status not in PENDING:
            raise ActionError(f"action {action_id} is not waiting for approval (it is {a.status})")
        if not approve:
            conn.execute("UPDATE actions SET status = 'rejected', resolved_at = ? WHERE id = ?", (_now(), a.id))
            log_event(conn, participant, a.id, "rejected", via, dayid)
            return get(conn, participant, a.id)
        payload = {**a.payload, **(facts or {})}
        gaps = missing(a.kind, payload)
        if gaps:
            raise ActionError(f"action {action_id} still lacks {', '.join(gaps)}: give them before approving")
        conn.execute("UPDATE actions SET payload = ? WHERE id = ?", (json.dumps(payload), a.id))
        log_event(conn, participant, a.id, "approved", via, dayid)
        _execute(conn, get(conn, participant, a.id), via, dayid)
        return get(conn, participant, a.id)


def approve(store: Store, participant: str, action_id: int, via: str = "ui", dayid: str | None = None,
            facts: dict | None = None) -> ActionRow:
    """Approve a held action (and run it). Raises ActionError for another participant's or a resolved one."""
    return _resolve(store, participant, action_id, True, via, dayid, facts)


def reject(store: Store, participant: str, action_id: int, via: str = "ui", dayid: str | None = None) -> ActionRow:
    return _resolve(store, participant, action_id, False, via, dayid)


def supply_facts(store: Store, participant: str, action_id: int, facts: dict, settings: dict[str, str],
                 dayid: str | None, ceiling: str | None = None) -> tuple[ActionRow, str]:
    """Missing facts arrived: fill them in and apply execution control again."""
    with store.transaction() as conn:
        a = get(conn, participant, action_id)
        if a.status != "awaiting_facts":
            raise ActionError(f"action {action_id} is not waiting for facts (it is {a.status})")
        payload = {**a.payload, **{k: v for k, v in facts.items() if v}}
        verdict, reason = decide(a.kind, payload, a.requested, settings, ceiling)
        conn.execute("UPDATE actions SET payload = ?, reason = ?, status = ? WHERE id = ?",
                     (json.dumps(payload), reason, "held" if verdict == "run" else verdict, a.id))
        log_event(conn, participant, a.id, "facts", "chat", dayid, json.dumps(facts))
        if verdict == "run":
            _execute(conn, get(conn, participant, a.id), "turn", dayid)
        elif verdict != "awaiting_facts":
            log_event(conn, participant, a.id, verdict, "turn", dayid, reason)
        return get(conn, participant, a.id), reason


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
