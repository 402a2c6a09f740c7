"""The action rules: reminders, check-ins, notes, calendar entries, drafts, messages to contacts.

Pure rules, no store: execution control (`decide`) says whether an action runs now, is held for
approval, waits for missing facts, or is dropped; `describe` and `line` are how an action reads
to the participant. The rows and their append-only events live in `memory.actions`; the app
(`companion.actions`) applies these rules and writes there. Running never leaves the machine:
notes and calendar entries are rows, drafts and messages land in a local outbox (`status =
done`, never sent), reminders and check-ins become a companion message at their time.
"""

from __future__ import annotations

from datetime import datetime

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
