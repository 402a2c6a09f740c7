"""Interaction-preference probe suites: the format, its checks, and the simulated participants.

The format is documented in docs/PREFERENCES.md. In short, a suite (JSON, format
`ix-prefsuite-v1`) holds personas; each persona has a target matrix (14 attributes x 2 contexts,
the IX inventory's vocabulary) and a timeline, in time order, of

- accumulation sessions: a context, a start time, a goal, and scripted participant turns, each a
  decision point naming the attributes at stake there (`stakes`);
- change events: a fixed transcript (participant messages replayed identically under every
  condition) and the cells whose target it changes.

Probes are not written per persona: a checkpoint just before each change probes the cells it
changes, and a final checkpoint after the timeline probes every cell. A probe is one participant
message (the suite's `probe[attribute][context]`), a decision point for that attribute.

Two simulated participants react during accumulation sessions only (never to change events,
never to probes): `Scripted` reads the declared settings from the turn's trace and corrects, in
the persona's own words, every attribute at stake whose setting differs from its current
target; `ModelSimulator` sees only the public behaviour (what was shown and done) and is asked,
through the gateway, whether it matches what the persona wants.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, Field, ValidationError

from companion.actions import requested
from wrapper import inventory

FORMAT = "ix-prefsuite-v1"
DEFAULT_SUITE = Path(__file__).resolve().parent / "data" / "prefsuite-v1.json"


class SuiteError(ValueError):
    """A suite the replay refuses; the message names the persona, item and field."""


# ---------------------------------------------------------------- the format


class Turn(BaseModel):
    text: str = Field(min_length=1)
    stakes: list[str] = Field(default_factory=list)  # attributes whose setting matters at this decision point


class Session(BaseModel):
    kind: Literal["session"]
    id: str
    context: str
    at: datetime
    goal: str = ""
    turns: list[Turn] = Field(min_length=1)


class SetCell(BaseModel):
    context: str
    attribute: str
    setting: str


class Change(BaseModel):
    kind: Literal["change"]
    id: str
    context: str  # where the transcript is said
    at: datetime
    set: list[SetCell] = Field(min_length=1)  # the targets from this point on
    transcript: list[str] = Field(min_length=1)


Item = Annotated[Union[Session, Change], Field(discriminator="kind")]


class Persona(BaseModel):
    id: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    description: str
    tz: str = "UTC"
    targets: dict[str, dict[str, str]]  # context -> attribute -> setting (the start of the timeline)
    voice: dict[str, dict[str, list[str]]] = Field(default_factory=dict)  # attribute -> setting -> phrasings
    ack: list[str] | None = None  # neutral acknowledgements (None: the suite's)
    timeline: list[Item] = Field(min_length=1)


class Suite(BaseModel):
    format: str
    name: str
    version: str
    inventory: str
    description: str = ""
    step_minutes: float = Field(default=1.0, gt=0)  # time between two messages of a session
    session_gap_minutes: float = Field(default=30.0, gt=0)  # the gap the timeline leaves between sessions
    probe: dict[str, dict[str, str]]  # attribute -> context -> probe message
    voice: dict[str, dict[str, list[str]]]  # the default phrasings of a correction
    ack: list[str] = Field(default_factory=list)
    personas: list[Persona] = Field(min_length=1)

    # --- derived views ------------------------------------------------------------------------

    def persona(self, pid: str) -> Persona:
        for p in self.personas:
            if p.id == pid:
                return p
        raise SuiteError(f"no persona {pid!r}; personas: {[p.id for p in self.personas]}")

    def phrasings(self, persona: Persona, attribute: str, setting: str) -> list[str]:
        return persona.voice.get(attribute, {}).get(setting) or self.voice[attribute][setting]

    def acks(self, persona: Persona) -> list[str]:
        return self.ack if persona.ack is None else persona.ack


def targets_at(persona: Persona, index: int) -> dict[str, dict[str, str]]:
    """The target matrix in force before timeline item `index` (changes before it applied)."""
    t = {c: dict(v) for c, v in persona.targets.items()}
    for item in persona.timeline[:index]:
        if isinstance(item, Change):
            for s in item.set:
                t[s.context][s.attribute] = s.setting
    return t


def final_targets(persona: Persona) -> dict[str, dict[str, str]]:
    return targets_at(persona, len(persona.timeline))


@dataclass
class Checkpoint:
    """Where probes run: just before a change (its cells) or after the timeline (every cell)."""

    id: str
    kind: str  # before_change | final
    index: int  # probes run before timeline item `index` (len(timeline) for the final one)
    at: datetime
    cells: list[tuple[str, str]]  # (context, attribute)
    targets: dict[str, dict[str, str]]
    change: str | None = None


def session_span(suite: Suite, s: Session) -> timedelta:
    """Longest a session can last: each turn may draw a correction, plus a closing acknowledgement."""
    return timedelta(minutes=suite.step_minutes * (2 * len(s.turns) + 1))


def item_end(suite: Suite, item) -> datetime:
    if isinstance(item, Session):
        return item.at + session_span(suite, item)
    return item.at + timedelta(minutes=suite.step_minutes * len(item.transcript))


def checkpoints(suite: Suite, persona: Persona) -> list[Checkpoint]:
    inv = inventory.load()
    out = []
    for i, item in enumerate(persona.timeline):
        if isinstance(item, Change):
            cells = list(dict.fromkeys((s.context, s.attribute) for s in item.set))
            out.append(Checkpoint(f"before:{item.id}", "before_change", i,
                                  item.at - timedelta(minutes=suite.step_minutes), cells, targets_at(persona, i),
                                  item.id))
    end = item_end(suite, persona.timeline[-1]) + timedelta(days=1)
    out.append(Checkpoint("final", "final", len(persona.timeline), end,
                          [(c, a) for c in inv.contexts for a in inv.attributes], final_targets(persona)))
    return out


# ---------------------------------------------------------------- loading and checks


def load(path: Path | str | None = None) -> tuple[Suite, str]:
    """Read and check a suite; returns it with the sha256 of its bytes."""
    path = Path(path) if path else DEFAULT_SUITE
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise SuiteError(f"{path}: cannot read ({e})") from None
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise SuiteError(f"{path}: not JSON ({e})") from None
    return parse(data, str(path)), hashlib.sha256(raw).hexdigest()


def parse(data: dict, where: str = "suite") -> Suite:
    try:
        suite = Suite.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise SuiteError(f"{where}: {loc}: {first['msg']} ({len(e.errors())} problem(s) in all)") from None
    check(suite, where)
    return suite


def check(suite: Suite, where: str = "suite") -> None:
    """Structural checks: the replay cannot run a suite that fails them."""
    inv = inventory.load()
    if suite.format != FORMAT:
        raise SuiteError(f"{where}: format must be {FORMAT!r}, got {suite.format!r}")
    if suite.inventory != inv.version:
        raise SuiteError(f"{where}: written for inventory {suite.inventory!r}, this companion has {inv.version!r}")

    def setting(loc: str, attribute: str, value: str) -> None:
        if attribute not in inv.attributes:
            raise SuiteError(f"{where}: {loc}: unknown attribute {attribute!r}")
        if value not in inv.attributes[attribute].settings:
            raise SuiteError(f"{where}: {loc}: {value!r} is not a setting of {attribute} "
                             f"({list(inv.attributes[attribute].settings)})")

    def context(loc: str, c: str) -> None:
        if c not in inv.contexts:
            raise SuiteError(f"{where}: {loc}: unknown context {c!r}; contexts: {list(inv.contexts)}")

    for a in inv.attributes:
        for c in inv.contexts:
            if not suite.probe.get(a, {}).get(c):
                raise SuiteError(f"{where}: probe: no probe message for {a} in {c}")
        for s in inv.attributes[a].settings:
            if not suite.voice.get(a, {}).get(s):
                raise SuiteError(f"{where}: voice: no phrasing of a correction to {a}={s}")
    ids = set()
    for p in suite.personas:
        loc = f"persona {p.id}"
        if p.id in ids:
            raise SuiteError(f"{where}: {loc}: duplicate persona id")
        ids.add(p.id)
        for c in inv.contexts:
            missing = sorted(set(inv.attributes) - set(p.targets.get(c, {})))
            if missing:
                raise SuiteError(f"{where}: {loc}: targets.{c} lacks {missing}")
        for c, row in p.targets.items():
            context(f"{loc}: targets", c)
            for a, s in row.items():
                setting(f"{loc}: targets.{c}", a, s)
        for a, by in p.voice.items():
            for s in by:
                setting(f"{loc}: voice", a, s)
        seen, prev_end = set(), None
        for i, item in enumerate(p.timeline):
            iloc = f"{loc}: timeline[{i}] ({item.id})"
            if item.id in seen:
                raise SuiteError(f"{where}: {iloc}: duplicate item id")
            seen.add(item.id)
            context(iloc, item.context)
            if item.at.tzinfo is None:
                raise SuiteError(f"{where}: {iloc}: 'at' needs a time zone offset")
            if prev_end is not None and item.at - prev_end < timedelta(minutes=suite.session_gap_minutes + 2 * suite.step_minutes):
                raise SuiteError(f"{where}: {iloc}: starts {item.at.isoformat()}, less than the session gap "
                                 f"({suite.session_gap_minutes:g} min) after the previous item can end "
                                 f"({prev_end.isoformat()}): probes and sessions must not run into each other")
            prev_end = item_end(suite, item)
            if isinstance(item, Session):
                for j, t in enumerate(item.turns):
                    for a in t.stakes:
                        if a not in inv.attributes:
                            raise SuiteError(f"{where}: {iloc}: turns[{j}]: unknown attribute at stake {a!r}")
            else:
                before = targets_at(p, i)
                for s in item.set:
                    context(f"{iloc}: set", s.context)
                    setting(f"{iloc}: set", s.attribute, s.setting)
                    if before[s.context][s.attribute] == s.setting:
                        raise SuiteError(f"{where}: {iloc}: {s.context}/{s.attribute} is already {s.setting}: "
                                         "a change event must change its target")


@dataclass
class Lint:
    """Structural problems (they make a suite unfit to run) and a coverage report of the words
    (what the extractor reads of them: informative, never required of a suite)."""

    problems: list[str] = field(default_factory=list)
    coverage: dict = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)  # corrections and changes the extractor misses or misreads
    leaks: list[str] = field(default_factory=list)  # neutral texts the extractor reads as a preference

    @property
    def ok(self) -> bool:
        return not self.problems


def stated(text: str, context: str) -> set[tuple[str, str, str]]:
    """(context, attribute, setting) the companion's extractor reads in one participant message."""
    from memory.extract import RuleExtractor
    from memory.messages import Message

    msg = Message(0, "lint", 1, "day1-1", "user", text, "", context)
    return {(c, p.attribute, p.setting) for p in RuleExtractor().propose([msg]) if p.kind == "preference"
            for c in (p.contexts or [context])}


def lint(suite: Suite) -> Lint:
    """Problems: a reaction or transcript that reads as a request for an action (the wrapper would
    act on it), and a cell whose target differs from the default but is never at stake in its
    context (no decision point could teach it). Coverage (not problems: a suite measures learning,
    so it need not be written in words the extractor reads): the share of correction phrasings
    read as exactly their setting in each context, change transcripts read as their new settings,
    and probe, goal-turn and acknowledgement texts read as stating a preference (leaks)."""
    inv = inventory.load()
    out = Lint()
    # Reactions and transcripts must not read as requests for an action: the wrapper would act on
    # them (and an action left waiting for a fact would take a later probe's words as that fact).
    now = datetime(2026, 1, 5, 9, 0).astimezone()
    voices = [("suite", suite.voice)] + [(f"persona {p.id}", p.voice) for p in suite.personas]
    requests = [("suite ack", t) for t in suite.ack]
    requests += [(f"{who} correction", t) for who, voice in voices for by in voice.values()
                 for ps in by.values() for t in ps]
    for p in suite.personas:
        requests += [(f"persona {p.id} ack", t) for t in (p.ack or [])]
        requests += [(f"persona {p.id}: change {i.id}", t) for i in p.timeline if isinstance(i, Change)
                     for t in i.transcript]
    for who, text in requests:
        if asked := requested(text, now):
            out.problems.append(f"{who} {text!r} reads as a request for {[a.kind for a in asked]}")
    for a, by in suite.probe.items():
        for c, text in by.items():
            if got := stated(text, c):
                out.leaks.append(f"probe {a}/{c} states a preference: {sorted(got)}")
    read = total = 0
    for who, voice in voices:
        for a, by in voice.items():
            for s, phrases in by.items():
                for text in phrases:
                    for c in inv.contexts:
                        total += 1
                        got = stated(text, c)
                        if got == {(c, a, s)}:
                            read += 1
                        else:
                            out.unread.append(f"{who}: correction {text!r} for {a}={s} said in {c} is read as {sorted(got)}")
    changes_read = changes = 0
    for p in suite.personas:
        for text in suite.acks(p):
            for c in inv.contexts:
                if got := stated(text, c):
                    out.leaks.append(f"persona {p.id}: acknowledgement {text!r} states {sorted(got)}")
        at_stake: dict[tuple[str, str], int] = {}
        points = 0
        for i, item in enumerate(p.timeline):
            if isinstance(item, Session):
                points += sum(1 for t in item.turns if t.stakes)
                for t in item.turns:
                    if got := stated(t.text, item.context):
                        out.leaks.append(f"persona {p.id}: {item.id}: turn {t.text!r} states {sorted(got)}")
                    for a in t.stakes:
                        at_stake[(item.context, a)] = at_stake.get((item.context, a), 0) + 1
            else:
                changes += 1
                said = set().union(*(stated(t, item.context) for t in item.transcript))
                want = {(s.context, s.attribute, s.setting) for s in item.set}
                others = {x for x in said if (x[0], x[1]) not in {(w[0], w[1]) for w in want}}
                if want <= said and not others:
                    changes_read += 1
                else:
                    out.unread.append(f"persona {p.id}: change {item.id}: wants {sorted(want)}, reads {sorted(said)}")
        need = {(c, a) for c in inv.contexts for a in inv.attributes
                if any(targets_at(p, i)[c][a] != inv.attributes[a].default[c] for i in range(len(p.timeline) + 1))}
        uncovered = sorted(need - set(at_stake))
        if uncovered:
            out.problems.append(f"persona {p.id}: cells whose target differs from the default but never at stake: "
                                f"{uncovered}")
        out.coverage[p.id] = {"cells_off_default": len(need), "decision_points": points, "stakes": sum(at_stake.values()),
                              "cells_at_stake": len(at_stake)}
    out.coverage["words"] = {"corrections_read": read, "corrections": total, "changes_read": changes_read,
                             "changes": changes, "leaks": len(out.leaks)}
    return out


# ---------------------------------------------------------------- simulated participants


def public_behaviour(result) -> str:
    """What the participant saw and what was done: the reply and the actions (run or held)."""
    lines = [f"Reply shown: {result.shown}"]
    t = result.trace
    if t is not None:
        for label, acts in (("Done", t.actions_run), ("Held for your approval", t.actions_held)):
            for a in acts or []:
                lines.append(f"{label}: {a.get('summary') or a.get('kind')}")
    return "\n".join(lines)


def declared(result) -> dict[str, str]:
    """The settings the turn's trace says were in force ({} when the turn traced none)."""
    t = result.trace
    settings = (t.interaction or {}).get("settings") if t is not None else None
    return {a: d.get("setting") for a, d in (settings or {}).items() if isinstance(d, dict)}


class Scripted:
    """Deterministic: reads the declared settings from the trace; corrects each attribute at stake
    whose setting differs from the current target (the k-th correction to the same setting uses
    the persona's k-th phrasing, cycling); otherwise accepts: nothing, or a neutral
    acknowledgement at a session's last decision point."""

    name = "scripted"
    sees = "the declared settings in the turn's trace"

    def __init__(self, suite: Suite, persona: Persona):
        self.suite, self.persona = suite, persona
        self.said: dict[tuple[str, str], int] = {}
        self.acked = 0
        self.failures: list[str] = []

    def react(self, context: str, stakes: list[str], targets: dict[str, str], result, last: bool) -> str | None:
        got = declared(result)
        wrong = [a for a in stakes if got.get(a) != targets[a]]
        if wrong:
            parts = []
            for a in wrong:
                options = self.suite.phrasings(self.persona, a, targets[a])
                k = self.said.get((a, targets[a]), 0)
                self.said[(a, targets[a])] = k + 1
                parts.append(options[k % len(options)])
            return " ".join(parts)
        acks = self.suite.acks(self.persona)
        if last and acks:
            self.acked += 1
            return acks[(self.acked - 1) % len(acks)]
        return None

    def rate(self, attribute: str, setting: str, result) -> tuple[int | None, str | None]:
        return None, "the scripted participant reads the declared setting, not the behaviour: PRS needs --simulator MODEL"


_DIGIT = re.compile(r"\b([1-5])\b")


def _rating(text: str) -> int | None:
    m = _DIGIT.search(text or "")
    return int(m.group(1)) if m else None


def _wants(attribute: str, setting: str) -> str:
    a = inventory.load().attributes[attribute]
    return f"{a.title} ({a.definition}): {a.settings[setting]}"


class ModelSimulator:
    """A model plays the persona. It sees the public behaviour only, and what the persona wants
    for the attributes at stake (their target settings' definitions)."""

    sees = "the public behaviour (shown text and actions)"

    def __init__(self, suite: Suite, persona: Persona, model: str, timeout: float = 120.0):
        self.suite, self.persona, self.model, self.timeout = suite, persona, model, timeout
        self.name = f"model:{model}"
        self.failures: list[str] = []

    def _ask(self, system: str, user: str, max_tokens: int) -> str:
        from companion import gateway

        return gateway.complete(self.model, [{"role": "system", "content": system}, {"role": "user", "content": user}],
                                timeout=self.timeout, max_tokens=max_tokens, retries=1).text

    def react(self, context: str, stakes: list[str], targets: dict[str, str], result, last: bool) -> str | None:
        if not stakes:
            return None
        wants = "\n".join(f"- {_wants(a, targets[a])}" for a in stakes)
        system = (f"You play a person talking to their assistant, in the {context} part of their life. "
                  f"Who you are: {self.persona.description}\nWhat you want from the assistant here:\n{wants}\n"
                  "You will see what the assistant just showed and did. If it matches what you want, reply "
                  "with exactly ACCEPT. Otherwise reply with one or two short sentences, in your own words, "
                  "telling it how you want to be helped. State it plainly; do not ask a question.")
        try:
            text = self._ask(system, public_behaviour(result), 80).strip()
        except Exception as e:  # a failed simulator call says nothing; counted, not guessed at
            self.failures.append(f"{type(e).__name__}: {e}"[:200])
            return None
        if not text or text.upper().startswith("ACCEPT"):
            return None
        return text

    def rate(self, attribute: str, setting: str, result) -> tuple[int | None, str | None]:
        system = (f"You play this person: {self.persona.description}\nWhat you want from the assistant: "
                  f"{_wants(attribute, setting)}\nRate how well what it showed and did fits that, from 1 (not "
                  "at all) to 5 (exactly). Reply with the digit only.")
        try:
            r = _rating(self._ask(system, public_behaviour(result), 4))
        except Exception as e:  # a failed rating is missing, not a low score
            return None, f"simulator failed: {type(e).__name__}"
        return (r, None) if r else (None, "simulator gave no rating 1-5")


class Judge:
    """BRS: a judge model rates the public behaviour against the target setting's definition; it is
    not told which setting was declared."""

    def __init__(self, model: str, timeout: float = 120.0):
        self.model, self.timeout = model, timeout

    def rate(self, attribute: str, setting: str, result) -> tuple[int | None, str | None]:
        from companion import gateway

        system = ("You judge an assistant's behaviour against one interaction preference. "
                  f"Preference: {_wants(attribute, setting)}\nRate how well what the assistant showed and did "
                  "fits that preference, from 1 (not at all) to 5 (exactly). Reply with the digit only.")
        try:
            done = gateway.complete(self.model, [{"role": "system", "content": system},
                                                 {"role": "user", "content": public_behaviour(result)}],
                                    timeout=self.timeout, max_tokens=4, retries=1)
        except Exception as e:
            return None, f"judge failed: {type(e).__name__}"
        r = _rating(done.text)
        return (r, None) if r else (None, "judge gave no rating 1-5")
