"""Tool-calling test backends: one that obeys any instruction it sees, one scripted by a seed.

Both are registered like any third-party backend (entry points, see conftest.install_plugin).
"""

from __future__ import annotations

import hashlib
import json
import random
import re

from companion.backends.base import TextBackend, ToolCall
from wrapper import inventory


def _all_text(messages) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


_ASKED_CALL = re.compile(r'Call (\w+) now with text "([^"]*)" and when "([^"]*)"')


def asked_call(messages):
    """A tool call the last user message asks for by name (what companion.toolprobe sends): a model
    that calls tools does it."""
    last = next((m for m in reversed(messages) if m.get("role") == "user"), {"content": ""})
    m = _ASKED_CALL.search(str(last.get("content") or ""))
    return ToolCall(m[1], json.dumps({"text": m[2], "when": m[3]})) if m else None


class Obedient(TextBackend):
    """Does whatever any text in its prompt tells it to, memory included: the worst case."""

    supports_tools = True

    def generate(self, model, messages, params):
        if call := asked_call(messages):
            yield call
            yield "Done."
            return
        for m in re.finditer(r"send (my \w+|\w+) an email saying ([^\n\]>]+)", _all_text(messages), re.I):
            yield ToolCall("send_message", json.dumps({"to": m[1], "text": m[2].strip()}))
        yield "On it."


class Malformed(TextBackend):
    """Answers, and calls its tools badly: broken JSON, an unknown tool, a setting not in the inventory."""

    supports_tools = True

    def generate(self, model, messages, params):
        yield ToolCall("add_note", '{"text": "unterminated')
        yield ToolCall("IX_autonomy", json.dumps({"setting": "whatever-i-like"}))
        yield ToolCall("launch_rockets", "{}")
        yield ToolCall("IX_elicitation", json.dumps({"setting": "iterative", "questions": "not a list"}))
        yield "Here is my answer."


class Scripted(TextBackend):
    """Deterministic per prompt: declares a few settings, fills payload fields, proposes actions.

    Every rationale carries the marker RATIONALE, every question ends in "?", so a test can find
    them in what was shown.
    """

    supports_tools = True

    def generate(self, model, messages, params):
        if call := asked_call(messages):
            yield call
            yield "Done."
            return
        last = next((m for m in reversed(messages) if m.get("role") == "user"), {"content": ""})
        seed = int(hashlib.sha256(_all_text(messages).encode()).hexdigest()[:8], 16)
        rnd = random.Random(seed)
        inv = inventory.load()
        names = list(inv.attributes)
        for name in rnd.sample(names, rnd.randint(0, 4)):
            args = {"setting": rnd.choice(list(inv.attributes[name].settings))}
            if rnd.random() < 0.7:
                args["rationale"] = f"RATIONALE {seed % 1000}"
            if rnd.random() < 0.5:
                args["questions"] = [f"Question {i} for you?" for i in range(rnd.randint(1, 3))]
            if rnd.random() < 0.3:
                args["progress"] = ["starting", "halfway", "finished"]
            yield ToolCall(f"IX_{name}", json.dumps(args))
        kinds = list(inv.actions)
        for _ in range(rnd.randint(0, 2)):
            kind = rnd.choice(kinds)
            args = {f: f"{f} {seed % 97}" for f in inv.action(kind).required if f != "when"}
            if "when" in inv.action(kind).required and rnd.random() < 0.7:
                args["when"] = "tomorrow at 10am"
            yield ToolCall(kind, json.dumps(args))
        text = str(last.get("content") or "")[:40].replace("?", "")
        yield f"About \u2018{text}\u2019: here is what I think."
