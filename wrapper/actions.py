"""The action rules: reminders, check-ins, notes, calendar entries, drafts, messages to contacts.

Pure rules, no store: execution control (`decide`) says whether an action runs now, is held for
approval, waits for missing facts, or is dropped; `describe` and `line` are how an action reads
to the participant. The rows and their append-only events live in `memory.actions`; the app
(`companion.actions`) applies these rules and writes there. Running never leaves the machine:
notes and calendar entries are rows, drafts and messages land in a local outbox (`status =
done`, never sent), reminders and check-ins become a companion message at their time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from wrapper import intents, inventory

PENDING = ("held", "awaiting_facts")
DETECTOR_HELD = "read as a request by the request detector, not by the rules: waits for your confirmation at any autonomy"
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
           ceiling: str | None = None, origin: str = "intent") -> tuple[str, str]:
    """Execution control: (run | held | awaiting_facts | dropped, reason) from the declared settings.

    The wrapper sees only the declared settings, never the participant's true preference.
    `ceiling` is the participant's own autonomy (their cells or the default, never a model's
    declaration): an external action is never run with more autonomy than that. An action the
    message did not ask for runs only when the companion derived it from the participant's own
    words (a check-in offered for an exam they mentioned, under their outreach and expansion
    settings); one a model proposed (from a retrieved memory, say) is held, external or not.
    `origin`: model (a tool call), intent (the participant's request), outreach, expansion.
    """
    action = inventory.load().action(kind)
    autonomy = settings.get("autonomy", "suggest")
    if origin == "detector":
        # The learned request detector (wrapper.request_model) read the message as a request the
        # rules did not parse: what it proposes waits for the participant's confirmation at every
        # autonomy, external or not, and never runs on a default time.
        gaps = missing(kind, payload)
        if gaps:
            return "awaiting_facts", "read as a request by the request detector; missing " + ", ".join(gaps)
        return "held", DETECTOR_HELD
    if action.external:
        autonomy = lower_autonomy(autonomy, ceiling)
    if not requested:
        if action.external:
            # Memory is data: an external action nobody asked for in this message (a retrieved
            # text told the model to, say) is held for the participant to see, at any level.
            return "held", "external action not asked for in this message: waits for approval"
        if origin == "model":
            # The same for an internal one: a reminder a retrieved text told the model to set is
            # shown, held, never run (one that lacks facts is dropped: nobody is asked for them).
            if missing(kind, payload):
                return "dropped", "not asked for in this message, and incomplete: a model's proposal is dropped"
            return "held", "not asked for in this message: a model's proposal waits for approval"
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


def default_when(now: datetime) -> str:
    """The time assumed for a reminder or check-in when none was given (Elicitation: infer)."""
    nxt = now + timedelta(days=1)
    return nxt.replace(hour=9, minute=0, second=0, microsecond=0).isoformat()


def _when(value: str | None, now: datetime) -> str | None:
    """A model's `when` argument as a time: ISO as given, or read from words ("tomorrow at 9")."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value).isoformat()
    except ValueError:
        found = intents.parse_when(value, now)
        return found.isoformat() if found else None


def propose(text: str, path: str, model_actions: list[tuple[str, dict]], read: list[intents.Intent],
            settings: dict[str, str], now: datetime, ceiling: str | None = None,
            detected: dict | None = None) -> list[dict]:
    """The actions proposed this turn, each decided and marked whether the message (`text`, read
    as `read`: every action it names, each a request or not) asked for that very action.

    On the model path they are the model's tool calls, each requested only when it is the very
    action a request of the message asked for (intents.asks_for); and a request no call of the
    model matches is proposed by the rules (origin `intent`): a model that calls no tool, or
    calls it with other words, never drops what was asked. On the selector path: the
    participant's own requests, a check-in offered at 18:00 when the message mentions something
    upcoming (Proactive Outreach decides), and a reminder for a calendar entry with a time (Task
    Expansion decides). What the message only mentions (a question, a negation, a quote ...)
    is never proposed by the rules.

    `detected` ({"kind", "args", "detection"}: the learned request detector's reading, see
    `companion.actions.detect`) is proposed, origin `detector`, only when nothing else acts on the
    message: no request the rules read and no action the model called (on either path). It is
    held for confirmation whatever the autonomy (`decide`)."""
    asked = [i for i in read if i.requested]
    asked_kinds = {i.kind for i in asked}
    out = []
    if path == "model":
        claimed: set[int] = set()  # a request is made once, however many calls repeat it
        for kind, args in model_actions:
            args = {**args, **({"when": _when(args.get("when"), now)} if "when" in args else {})}
            match = next((n for n, i in enumerate(asked) if n not in claimed and intents.same_action(kind, args, i)), None)
            if match is not None:  # it runs with the words as dictated, not as the model spelled them
                claimed.add(match)
                args = {**args, **{k: v for k, v in asked[match].args.items() if v}}
            out.append({"kind": kind, "args": args, "origin": "model", "requested": match is not None})
        covered = [p for p in out if p["requested"]]
        out += [{"kind": i.kind, "args": dict(i.args), "requested": True, "origin": "intent"} for i in asked
                if not any(intents.same_action(p["kind"], p["args"], i) for p in covered)]
    else:
        out += [{"kind": i.kind, "args": dict(i.args), "requested": True, "origin": "intent"} for i in asked]
        if intents.mentions_upcoming(text) and "schedule_checkin" not in asked_kinds:
            when = intents.parse_when(text, now)
            out.append({"kind": "schedule_checkin", "requested": False, "origin": "outreach",
                        "args": {"when": (when or now + timedelta(days=1)).replace(
                                     hour=18, minute=0, second=0, microsecond=0).isoformat(),
                                 "topic": intents.topic_of(text)}})
        for i in asked:
            if i.kind == "add_calendar_entry" and i.args.get("when"):
                out.append({"kind": "set_reminder", "requested": False, "origin": "expansion",
                            "args": {"text": i.args.get("title"), "when": i.args["when"]}})
    if detected and not asked and not model_actions:
        out.append({"kind": detected["kind"], "args": dict(detected["args"]), "requested": False,
                    "origin": "detector", "detection": detected.get("detection")})
    for p in out:
        p["status"], p["reason"] = decide(p["kind"], {k: v for k, v in p["args"].items() if v},
                                          p["requested"], settings, ceiling, p["origin"])
        if p["status"] == "run":
            p["status"] = run_status(p["kind"])
    return out


def acted_by(proposals: list[dict]) -> str | None:
    """Which path made the participant's requests this turn: "model" (its tool calls were the
    requested actions), "rules" (the rule-based reading proposed them), "both", "detector" (the
    learned detector proposed one, held for confirmation, because nothing else did), or None."""
    if any(p["origin"] == "detector" and p["status"] != "dropped" for p in proposals):
        return "detector"
    origins = {"model" if p["origin"] == "model" else "rules" for p in proposals
               if p["requested"] and p["status"] != "dropped"}
    return "both" if len(origins) == 2 else next(iter(origins), None)
