"""Implicit outcome signals: what a participant's next message says about the reply before it.

Three rules, kept as versioned data in `memory/data/signals.json` (regexes, matched
case-insensitively; a rule fires when one `fire` pattern matches and no `unless` pattern does):

    restate     "I told you...", "as I said"           -> the reply missed something (a miss)
    correct     "no, her name is...", "I never said"    -> the reply got something wrong
    irrelevant  "why bring that up?", "not relevant"    -> the reply used memory that did not fit (misuse)

A signal in participant message m refers to the companion reply just before m in the same
participant's log (none if m follows another participant message or opens the log). Signals
are computed from the log when asked (trial report, the adaptive gate), never stored: a new
rule version re-reads the whole history the same way, and erasing the messages erases them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memory import messages
from memory.store import Store

DATA = Path(__file__).parent / "data" / "signals.json"
RULES = ("restate", "correct", "irrelevant")


@dataclass(frozen=True)
class Signal:
    rule: str
    dayid: str  # the participant message that carries it
    reply_dayid: str  # the companion reply it is about
    ordinal: int  # the carrying message's ordinal: visible to turns with as_of > ordinal


@lru_cache(maxsize=4)
def rules(path: str | None = None) -> dict:
    data = json.loads(Path(path or DATA).read_text(encoding="utf-8"))
    compiled = {}
    for name, r in data["rules"].items():
        compiled[name] = {
            "means": r["means"],
            "fire": [re.compile(p, re.IGNORECASE) for p in r["fire"]],
            "unless": [re.compile(p, re.IGNORECASE) for p in r.get("unless", [])],
        }
    return {"version": data["version"], "rules": compiled}


def version() -> str:
    return rules()["version"]


def _normal(text: str) -> str:
    # Phones type curly apostrophes; the patterns are written with straight ones.
    return text.replace("\u2019", "'").replace("\u2018", "'").strip()


def detect(text: str) -> list[str]:
    """The rules that fire on one participant message, in RULES order."""
    t = _normal(text)
    out = []
    for name, r in rules()["rules"].items():
        if any(p.search(t) for p in r["fire"]) and not any(p.search(t) for p in r["unless"]):
            out.append(name)
    return out


def from_messages(msgs: list[messages.Message]) -> list[Signal]:
    """Signals of a participant's log (oldest first), each tied to the reply before it."""
    out, last_reply = [], None
    for m in msgs:
        if m.sender != "user":
            last_reply = m
            continue
        if last_reply is not None:
            out += [Signal(rule, m.dayid, last_reply.dayid, m.ordinal) for rule in detect(m.text)]
        last_reply = None
    return out


def of(store: Store, participant: str, as_of: int | None = None) -> list[Signal]:
    """Signals visible before `as_of` (every one when None)."""
    bound = messages.next_ordinal(store, participant) if as_of is None else as_of
    return from_messages(messages.read(store, participant, bound))
