"""`echo`: a deterministic model for tests and demos. No weights, no network.

It repeats the participant's last message and names the dayids of any memory the prompt
carried, so what reached the model is visible in the reply.
"""

from __future__ import annotations

import re

from companion.backends.base import TextBackend

DAYID_IN_PROMPT = re.compile(r"\[(day\d+-\d+)\]")


def echo_reply(messages: list[dict]) -> str:
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    said = str(last.get("content") or "") if last else ""
    recalled = []
    for m in messages:
        if m.get("role") == "system":
            recalled += DAYID_IN_PROMPT.findall(str(m.get("content") or ""))
    reply = f"You said: {said}"
    if recalled:
        reply += f" (I recalled {', '.join(recalled)})"
    return reply


class Echo(TextBackend):
    """Deterministic: repeats the message and names the recalled dayids (tests, demos)."""

    def generate(self, model, messages, params):
        words = echo_reply(messages).split(" ")
        for i, w in enumerate(words):
            yield w if i == 0 else " " + w
