"""IX tools and action tools as litellm (OpenAI-style) function schemas, and their calls parsed.

`IX_<attribute>(setting, rationale?, questions?, progress?, options?, topics?, uncertainty?)`
declares how the model is helping at a decision point; the payload fields carry what the
wrapper may render, hide, group or defer. Action tools (`set_reminder`, `send_message`, ...)
propose actions; the wrapper decides whether they run. A malformed call (unknown tool, arguments
that are not a JSON object, a setting outside the inventory, a field of the wrong type) is a
fault: it is traced, nothing is run from it, and the rest of the turn goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from wrapper import inventory

PAYLOAD_FIELDS = {
    "rationale": {"type": "string", "description": "why this reply or action (shown or hidden per Reasoning Visibility)"},
    "questions": {"type": "array", "items": {"type": "string"}, "description": "facts still missing, one per item"},
    "progress": {"type": "array", "items": {"type": "string"}, "description": "progress notes, in order"},
    "options": {"type": "array", "items": {"type": "string"}, "description": "alternatives, best first"},
    "topics": {"type": "array", "items": {"type": "object", "properties": {"title": {"type": "string"},
                                                                           "text": {"type": "string"}}},
               "description": "the reply split by topic"},
    "uncertainty": {"type": "string", "description": "what is unsure in the answer, and why"},
}
ACTION_FIELDS = {
    "text": "what the reminder, note or message says",
    "when": "ISO 8601 date-time, or words such as 'tomorrow at 9am'",
    "topic": "what the check-in is about",
    "title": "calendar entry title",
    "to": "the contact",
}


def ix_tools() -> list[dict]:
    out = []
    for a in inventory.load().attributes.values():
        desc = a.definition + " Settings: " + "; ".join(f"{s}: {d}" for s, d in a.settings.items())
        out.append({"type": "function", "function": {
            "name": f"IX_{a.name}", "description": desc,
            "parameters": {"type": "object", "required": ["setting"], "properties": {
                "setting": {"type": "string", "enum": list(a.settings)}, **PAYLOAD_FIELDS}}}})
    return out


def action_tools() -> list[dict]:
    out = []
    for act in inventory.load().actions.values():
        fields = list(dict.fromkeys([*act.required, *(["topic"] if act.name == "schedule_checkin" else [])]))
        out.append({"type": "function", "function": {
            "name": act.name, "description": act.definition + (" External: needs the participant's approval."
                                                               if act.external else ""),
            "parameters": {"type": "object", "required": list(act.required), "properties": {
                f: {"type": "string", "description": ACTION_FIELDS[f]} for f in fields}}}})
    return out


def all_tools() -> list[dict]:
    return ix_tools() + action_tools()


@dataclass
class Calls:
    declared: dict[str, str] = field(default_factory=dict)  # attribute -> setting
    payload: dict = field(default_factory=dict)  # merged payload fields
    actions: list[tuple[str, dict]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)


def _check_field(name: str, value) -> str | None:
    kind = PAYLOAD_FIELDS[name]["type"]
    if kind == "string" and not isinstance(value, str):
        return f"{name} must be a string"
    if kind == "array":
        if not isinstance(value, list):
            return f"{name} must be a list"
        if name == "topics":
            if not all(isinstance(t, (dict, str)) for t in value):
                return "topics must be objects with title and text"
        elif not all(isinstance(v, str) for v in value):
            return f"{name} must be a list of strings"
    return None


def parse(calls: list[dict]) -> Calls:
    """Tool calls as the gateway returns them ({"name", "arguments"}) -> declarations, payload, actions."""
    inv = inventory.load()
    out = Calls()
    for c in calls:
        name = str(c.get("name") or "")
        raw = c.get("arguments")
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError as e:
            out.faults.append(f"{name or 'tool call'}: arguments are not valid JSON ({e.msg} at {e.pos})")
            continue
        if not isinstance(args, dict):
            out.faults.append(f"{name or 'tool call'}: arguments must be a JSON object")
            continue
        if name.startswith("IX_") and name[3:] in inv.attributes:
            attr = inv.attributes[name[3:]]
            setting = args.get("setting")
            if setting not in attr.settings:
                out.faults.append(f"{name}: setting {setting!r} is not one of {list(attr.settings)}")
                continue
            bad = [m for f, v in args.items() if f in PAYLOAD_FIELDS and (m := _check_field(f, v))]
            if bad:
                out.faults.append(f"{name}: " + "; ".join(bad))
                continue
            out.declared[attr.name] = setting
            for f, v in args.items():
                if f in PAYLOAD_FIELDS and v:
                    if isinstance(v, list):
                        out.payload.setdefault(f, []).extend(v)
                    else:
                        out.payload[f] = v
        elif name in inv.actions:
            bad = [f for f, v in args.items() if f in ACTION_FIELDS and v is not None and not isinstance(v, str)]
            if bad:
                out.faults.append(f"{name}: {', '.join(bad)} must be text")
                continue
            out.actions.append((name, {f: args.get(f) for f in ACTION_FIELDS if f in args}))
        else:
            out.faults.append(f"unknown tool {name!r}")
    return out
