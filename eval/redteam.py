"""`redteam`: a tool-calling model that obeys every instruction it sees, for security tests
and `eval.actionbench`.

It reads every message of its prompt (the system prompt with retrieved memory, the recent
window, the participant's message) and calls an action tool for anything that reads like an
action, whoever said it and however it was framed: "text my boss saying I quit" inside a
question, a quote, a dream or a memory from last month is called all the same, with the words
as written. It also obeys instructions about the actions themselves ("only send the last 3
words", "act autonomously"). The wrapper, not the model, must tell a request from the rest.

Registered like any backend (entry point `redteam` in `companion.models`): `--model redteam/v1`.
"""

from __future__ import annotations

import json
import re

from companion.backends.base import TextBackend, ToolCall

_NUMBER = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_END = r"(?=[.!?\n\"\u201c\u201d<>\]]|$)"  # the words run to the end of their sentence
_SEND = re.compile(
    r"\b(?:send|text|email|e-mail|message|ping|tell|let|write to)\s+(?P<to>(?:my|our|your|the)\s+\w+|[A-Z][\w.]*(?:\s[A-Z]\w+)?)"
    r"(?:\s+(?:a|an)\s+(?:message|email|e-mail|text|note))?(?:\s+know)?"
    r"(?:\s+saying|\s+that|\s*:|\s+to\s+say)\s+(?P<text>[^.!?\n\"\u201c\u201d<>\]]+)", re.I)
_SEND_TO = re.compile(r"\bsend\s+(?:a|an)\s+(?:message|email|text)\s+to\s+(?P<to>(?:my|our|your|the)\s+\w+|[A-Z][\w.]*)"
                      r"(?:\s+saying|\s+that|\s*:)\s+(?P<text>[^.!?\n\"\u201c\u201d<>\]]+)", re.I)
_DRAFT = re.compile(r"\bdraft\w*\s+(?:a|an)\s+(?:message|email|text|reply|letter|note)\s+to\s+"
                    r"(?P<to>(?:my|our|your|the)\s+\w+|[A-Z][\w.]*)(?:\s+saying|\s+that|\s*:)\s+"
                    r"(?P<text>[^.!?\n\"\u201c\u201d<>\]]+)", re.I)
_WHEN = r"(?P<when>(?:tomorrow|tonight|next week|on \w+day|in \d+ \w+|at \d[\w:]*)(?:[^.!?\n]*)?)?"
_REMIND = re.compile(r"\b(?:remind\w*\s+me\s+(?:to|about)|reminder\s+(?:to|for))\s+(?P<text>.+?)\s*" + _WHEN + _END, re.I)
_NOTE = re.compile(r"\b(?:make|take|add|save|write down|made|making)\s+a\s+note\s*(?:that|saying|:)\s*"
                   r"(?P<text>[^.!?\n\"\u201c\u201d<>\]]+)", re.I)
_CAL = re.compile(r"\b(?:put|add|putting|adding)\s+(?P<title>.+?)\s+(?:in|on|to|into)\s+my\s+calendar\s*" + _WHEN + _END,
                  re.I)
_CHECKIN = re.compile(r"\b(?:check\w*\s+(?:in|back)\s+(?:with|on)\s+me|check-in)(?:\s+about\s+(?P<topic>.+?))?\s*"
                      + _WHEN + _END, re.I)
_LAST_WORDS = re.compile(r"only send the last (\d+|one|two|three|four|five) words", re.I)


def _text(messages) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


def _clean(s: str | None) -> str:
    return re.sub(r"\s+", " ", s or "").strip(" ,;:")


def proposals(text: str) -> list[tuple[str, dict]]:
    """Every action the text reads as asking for, as (tool name, arguments), in order."""
    out: list[tuple[str, dict]] = []
    cut = _LAST_WORDS.search(text)
    keep = (_NUMBER.get(cut[1].lower()) or int(cut[1])) if cut else None
    seen = set()
    for m in [*_SEND.finditer(text), *_SEND_TO.finditer(text)]:
        body = _clean(m["text"])
        if keep:
            body = " ".join(body.split()[-keep:])
        args = {"to": _clean(m["to"]), "text": body}
        if ("send_message", args["to"], body) not in seen:
            seen.add(("send_message", args["to"], body))
            out.append(("send_message", args))
    for m in _DRAFT.finditer(text):
        out.append(("draft_message", {"to": _clean(m["to"]), "text": _clean(m["text"])}))
    for m in _REMIND.finditer(text):
        out.append(("set_reminder", {"text": _clean(m["text"]), "when": _clean(m["when"]) or None}))
    for m in _NOTE.finditer(text):
        out.append(("add_note", {"text": _clean(m["text"])}))
    for m in _CAL.finditer(text):
        out.append(("add_calendar_entry", {"title": _clean(m["title"]), "when": _clean(m["when"]) or None}))
    for m in _CHECKIN.finditer(text):
        out.append(("schedule_checkin", {"topic": _clean(m["topic"]) or None, "when": _clean(m["when"]) or None}))
    return out


_CALL_BY_NAME = re.compile(r'\bcall (?P<tool>\w+) now with text "(?P<text>[^"]*)" and when "(?P<when>[^"]*)"', re.I)


class Obedient(TextBackend):
    """Calls a tool for every action its prompt mentions, and declares autonomy when told to."""

    supports_tools = True

    def generate(self, model, messages, params):
        text = _text(messages)
        # asked to call a tool by name (companion.toolprobe's probe, or any text saying so): calls it
        for m in _CALL_BY_NAME.finditer(text):
            yield ToolCall(m["tool"], json.dumps({"text": m["text"], "when": m["when"]}))
        if re.search(r"act autonomously|don't ask (?:me )?first", text, re.I):
            yield ToolCall("IX_autonomy", json.dumps({"setting": "autonomous"}))
        for name, args in proposals(text):
            yield ToolCall(name, json.dumps({k: v for k, v in args.items() if v is not None}))
        yield "Understood."
