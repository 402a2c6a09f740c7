"""Step 7 of the turn: turn the model's reply into what is shown, by the declared settings.

The four kinds of processing, per attribute of the inventory:
- pass-through: the model's own wording is shown (verbosity, tone attributes: the setting
  reaches the model as an instruction, the wrapper does not rewrite it);
- selective rendering: a payload field is shown or kept from view (rationale under Reasoning
  Visibility, progress notes under Process Visibility, the uncertainty note);
- delivery control: questions together, one per turn or none (Elicitation); topics in the
  participant's order, grouped, or one per turn (Topic Management); one option or all (Solution
  Breadth); the companion's own faults reported or not (Error Reporting); outreach is decided
  with the actions;
- execution control: actions run, held for approval or waiting for facts (wrapper.actions).

Questions are the `questions` payload of an IX call plus any sentence of the reply ending in
"?": a model without tools asks in its text, and Elicitation governs those too. What the
wrapper cannot see it cannot correct: it acts on the declared settings only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wrapper.actions import line as action_line

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Rendered:
    shown: str
    mode: str = "pass-through"
    interaction: dict = field(default_factory=dict)  # what was rendered, hidden, deferred
    actions_run: list[dict] = field(default_factory=list)
    actions_held: list[dict] = field(default_factory=list)
    deferred: list[tuple[str, str]] = field(default_factory=list)  # (question | topic, text) for later turns
    consumed: list[tuple[str, str]] = field(default_factory=list)  # carried items shown (or dropped) now


def split_questions(text: str) -> tuple[str, list[str]]:
    """(the reply without its question sentences, the questions in order)."""
    keep, asked = [], []
    for part in _SENTENCE.split(text.strip()):
        (asked if part.rstrip().endswith("?") else keep).append(part)
    return " ".join(keep).strip(), [q.strip() for q in asked if q.strip()]


def _topic(t) -> tuple[str, str]:
    if isinstance(t, dict):
        return str(t.get("title") or "").strip(), str(t.get("text") or "").strip()
    return "", str(t).strip()


def render(reply: str, settings: dict[str, str] | None = None, payload: dict | None = None, *,
           actions: list[dict] | None = None, faults: list[str] | None = None,
           carried: list[tuple[str, str]] | None = None) -> Rendered:
    """Build what the participant sees.

    settings: attribute -> setting (declared); payload: merged IX payload fields; actions: each
    {"summary", "status", "requested", "missing"} after execution control; faults: problems on
    the companion's side (malformed tool calls); carried: questions/topics deferred by an
    earlier turn, delivered now.
    """
    s = settings or {}
    p = payload or {}
    info: dict = {"rendered": [], "hidden": [], "deferred": []}
    out = Rendered(shown="", interaction=info)
    body, in_text = split_questions(reply)
    asked = [str(q) for q in p.get("questions", [])]
    for a in actions or []:
        for gap in a.get("missing", []):
            asked.append(_MISSING_Q.get(gap, "What is missing for {s}?").format(s=a["summary"]))
    el = s.get("elicitation", "structured")
    carried_q = [t for kind, t in (carried or []) if kind == "question"]
    if el != "infer" and len(in_text) + len(asked) + len(carried_q) <= 1:
        body = reply.strip()  # a single question stays where the model put it
    else:
        asked = in_text + asked
    blocks: list[str] = []

    # selective rendering: progress notes
    notes = [str(n) for n in p.get("progress", [])]
    pv = s.get("process_visibility", "silent")
    shown_notes = [] if pv == "silent" else notes if pv == "full_narration" else \
        (notes[:1] + notes[-1:] if len(notes) > 1 else notes)
    if notes:
        info["rendered" if shown_notes else "hidden"].append(f"progress:{len(shown_notes)}/{len(notes)}")
    blocks += [f"\u00b7 {n}" for n in shown_notes]

    # delivery control: topics
    topics = [_topic(t) for t in p.get("topics", [])]
    carried_topics = [t for kind, t in (carried or []) if kind == "topic"]
    if carried_topics:
        blocks.append(carried_topics[0])
        out.consumed.append(("topic", carried_topics[0]))
        info["rendered"].append("topic:carried")
    if topics:
        tm = s.get("topic_management", "follow")
        if tm == "organize":
            body = "\n\n".join(filter(None, [body] + [f"**{t or 'Topic'}**\n{x}" for t, x in topics]))
        elif tm == "one_at_a_time":
            first, rest = topics[0], topics[1:]
            body = "\n\n".join(filter(None, [body, first[1]]))
            for t, x in rest:
                out.deferred.append(("topic", f"**{t}**\n{x}" if t else x))
            if rest:
                body += "\n\nNext, when you are ready: " + ", ".join(t or "another topic" for t, _ in rest) + "."
                info["deferred"].append(f"topics:{len(rest)}")
        else:
            body = "\n\n".join(filter(None, [body] + [x for _, x in topics]))
        info["rendered"].append(f"topics:{tm}")
    blocks.append(body)

    # delivery control: options
    options = [str(o) for o in p.get("options", [])]
    if options:
        if s.get("solution_breadth") == "high" and len(options) > 1:
            blocks.append("Options:\n" + "\n".join(f"{i}. {o}" for i, o in enumerate(options, 1)))
        else:
            blocks.append(f"Recommended: {options[0]}")
            if len(options) > 1:
                info["hidden"].append(f"options:{len(options) - 1}")

    # selective rendering: rationale and uncertainty
    for fld, attr, on, label in (("rationale", "reasoning_visibility", "show", "Why"),
                                 ("uncertainty", "uncertainty_disclosure", "explicit", "Unsure")):
        if p.get(fld):
            if s.get(attr) == on:
                blocks.append(f"{label}: {p[fld]}")
                info["rendered"].append(fld)
            else:
                info["hidden"].append(fld)

    # execution control, as reported
    for a in actions or []:
        if a["status"] in ("done", "scheduled", "held"):
            blocks.append(action_line(a["kind"], a["status"], a["summary"]))
            (out.actions_held if a["status"] == "held" else out.actions_run).append(a)
        elif a["status"] == "awaiting_facts":
            out.actions_held.append(a)

    # delivery control: questions
    if el == "infer":
        out.consumed += [("question", q) for q in carried_q]
        if asked or carried_q:
            info["hidden"].append(f"questions:{len(asked) + len(carried_q)}")
            blocks.append("I went on with my best guesses.")
    elif el == "iterative":
        queue = carried_q + asked
        if queue:
            blocks.append(queue[0])
            if carried_q:
                out.consumed.append(("question", carried_q[0]))
            out.deferred += [("question", q) for q in asked[(0 if carried_q else 1):]]
            if len(queue) > 1:
                info["deferred"].append(f"questions:{len(queue) - 1}")
            info["rendered"].append("questions:1")
    else:
        queue = carried_q + asked
        out.consumed += [("question", q) for q in carried_q]
        if len(queue) == 1:
            blocks.append(queue[0])
        elif queue:
            blocks.append("To go on I need to know:\n" + "\n".join(f"{i}. {q}" for i, q in enumerate(queue, 1)))
        if queue:
            info["rendered"].append(f"questions:{len(queue)}")

    # delivery control: the companion's own faults
    if faults:
        if s.get("error_reporting") == "explicit":
            blocks.append(f"(On my side, {len(faults)} malformed request{'s' if len(faults) > 1 else ''} "
                          "to my tools went wrong; nothing was done from "
                          f"{'them' if len(faults) > 1 else 'it'}.)")
            info["rendered"].append("faults")
        else:
            info["hidden"].append("faults")

    out.shown = "\n\n".join(b for b in blocks if b and b.strip()).strip()
    kinds = {"pass-through"}
    if info["hidden"] or any(x.startswith(("progress", "rationale", "uncertainty")) for x in info["rendered"]):
        kinds.add("selective_rendering")
    if asked or topics or options or carried or faults:
        kinds.add("delivery_control")
    if actions:
        kinds.add("execution_control")
    out.mode = "+".join(k for k in ("pass-through", "selective_rendering", "delivery_control", "execution_control")
                        if k in kinds)
    return out


_MISSING_Q = {
    "when": "When should I {s}?",
    "to": "Who should get this: {s}?",
    "text": "What should it say ({s})?",
    "title": "What should the calendar entry be called?",
}
