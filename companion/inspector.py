"""The memory inspector ("What I remember"): everything derived about one participant, where
each item came from, and the participant's corrections.

Plain functions of (store, participant, ...); the app passes the signed-in participant from
its server-side session, never an id from the browser. Items are named by keys
"claim:<id>", "cell:<id>", "line:<id>" and "persona:<id>"; every lookup is scoped to the
participant, so a key of someone else's item is simply not found. Deletions go through the
same functions as `companion memory delete` (tombstones: not derived again from the same
messages); edits supersede (the old value stays in the item's history).
Everything that came from the participant's words is passed through `markup.text` in the
Markdown built here: shown as typed, never rendered as HTML or Markdown.
"""

from __future__ import annotations

import json
import re

from companion.markup import text
from memory import cells, claims, filememory, ix_attributes, messages, persona
from memory.store import StoreError

COLUMNS = ["item", "kind", "what", "context", "sources"]
KINDS = {"claim": "profile", "cell": "preference", "line": "file memory", "persona": "persona"}
_KEY = re.compile(r"^\s*(claim|cell|line|persona):(\d+)\s*$")


class Refused(Exception):
    """A request the inspector refuses; the message says what to do instead."""


def parse(key: str | None) -> tuple[str, int]:
    m = _KEY.match(key or "")
    if not m:
        raise Refused(f"Choose an item from the list (a key like claim:3), got {key!r}.")
    return m.group(1), int(m.group(2))



def rows(store, participant: str) -> list[list[str]]:
    """One row per current item: key, kind, what it says, context, source dayids."""
    out = []
    for c in claims.current(store, participant):
        out.append([f"claim:{c.id}", KINDS["claim"], c.text, c.context, ", ".join(c.source_dayids)])
    for c in cells.current(store, participant):
        out.append([f"cell:{c.id}", KINDS["cell"], f"{c.attribute} = {c.setting} ({c.text})", c.context,
                    ", ".join(c.source_dayids)])
    for line in filememory.lines(store, participant):
        out.append([f"line:{line.id}", KINDS["line"], line.text, line.scope, ", ".join(line.source_dayids)])
    for it in persona.current(store, participant):
        out.append([f"persona:{it.id}", f"{KINDS['persona']} ({it.kind})", f"{it.slot} = {it.value}: {it.text}",
                    it.facet or "", ", ".join(it.source_dayids)])
    return out


def choices(table: list[list[str]]) -> list[tuple[str, str]]:
    """Dropdown choices (label, key) for the rows of `rows`."""
    return [(f"{r[0]} · {r[2][:70]}", r[0]) for r in table]


def _evidence(x: dict) -> str:
    ev = x.get("evidence") or []
    return f" (evidence: {', '.join(ev)})" if ev else ""


def persona_markdown(store, participant: str) -> str:
    """The persona as `memory.persona.persona` returns it, each section that exists and holds anything."""
    p = persona.persona(store, participant)
    out = []
    if p.get("slots"):
        out.append("**About you**")
        out += [f"- {slot}: {text(v.get('value'))} · {v.get('strength', '')}{_evidence(v)}" for slot, v in p["slots"].items()]
    if p.get("big_five"):
        out.append("**Personality (Big Five)**")
        out += [f"- {trait}: {text(v.get('value'))} · {v.get('strength', '')}{_evidence(v)}" for trait, v in p["big_five"].items()]
    if p.get("descriptions"):
        out.append("**How you think and decide**")
        out += [f"- {d.get('facet', '')}: {text(d.get('text', ''))}{_evidence(d)}" for d in p["descriptions"]]
    if p.get("quirks"):
        out.append("**Quirks**")
        out += [f"- {text(q.get('text', ''))}{_evidence(q)}" for q in p["quirks"]]
    return "\n".join(out) or "_Nothing about your personality yet._"


def _small(doc: str) -> str:
    # the document's own headings (# Memory, ## personal) would dwarf the page around them;
    # its lines are the participant's words: literal text under a kept heading or bullet
    out = []
    for line in doc.splitlines():
        head = re.match(r"^(#+ |- |\* |)", line).group(1)
        out.append(("####" + head if head.startswith("#") else head) + text(line[len(head):]))
    return "\n".join(out)


def file_markdown(store, participant: str) -> str:
    if not filememory.lines(store, participant):
        return "_The memory document is empty._"
    return _small(filememory.render(store, participant))


def versions(store, participant: str) -> list[tuple[str, int]]:
    """File-memory versions, newest first, as dropdown choices (label, number)."""
    return [(f"v{v['version']} · {v['op']} · {v['n_lines']} lines · {v['created_at'][:16].replace('T', ' ')}",
             v["version"]) for v in reversed(filememory.versions(store, participant))]


def version_markdown(store, participant: str, version) -> str:
    return _small(filememory.version_text(store, participant, _version(version)))


def _version(version) -> int:
    try:
        return int(version)
    except (TypeError, ValueError):
        raise Refused(f"Choose a version from the list, got {version!r}.") from None


def _describe(store, participant: str, kind: str, item_id: int) -> tuple[str, list[str], list[str]]:
    """(what the item says, its source dayids, earlier values) for one of the participant's items."""
    if kind == "claim":
        c = claims.get(store, participant, item_id)
        before = [f"{x['text']} ({x['from_dayid']}..{x['to_dayid'] or ''})"
                  for x in claims.history(store, participant, item_id)["slot_history"] if x["id"] != item_id]
        return c.text, c.source_dayids, before
    if kind == "cell":
        c = cells.get(store, participant, item_id)
        before = [f"{x.setting} ({x.from_dayid}..{x.to_dayid or ''})"
                  for x in cells.history(store, participant, c.context, c.attribute) if x.id != item_id]
        return f"{c.context}: {c.attribute} = {c.setting} ({c.text})", c.source_dayids, before
    if kind == "line":
        line = _line(store, participant, item_id)
        return f"{line.scope}: {line.text}", line.source_dayids, []
    it = persona.get(store, participant, item_id)
    return f"{it.slot} = {it.value}: {it.text}", it.source_dayids, []


def _line(store, participant: str, line_id: int):
    for line in filememory.lines(store, participant):
        if line.id == line_id:
            return line
    raise StoreError(f"no current file-memory line {line_id} for participant {participant!r}")


def sources(store, participant: str, key: str) -> str:
    """The item and the messages it came from, with their text (Markdown)."""
    kind, item_id = parse(key)
    what, dayids, before = _describe(store, participant, kind, item_id)
    found = {m.dayid: m for m in messages.by_dayids(store, participant, dayids,
                                                     messages.next_ordinal(store, participant))}
    out = [f"**{text(key)}** ({KINDS[kind]}): {text(what)}", "", "From these messages:"]
    for d in dayids:
        m = found.get(d)
        if m is None:
            out.append(f"- **{d}**: _this message is no longer stored_")
        else:
            who = "you" if m.sender == "user" else "companion"
            out.append(f"- **{d}** ({who}, {m.context}, {m.ts[:16].replace('T', ' ')}): {text(m.text)}")
    if not dayids:
        out.append("- _none: written by hand_")
    if before:
        out += ["", "Earlier values:"] + [f"- {text(b)}" for b in before]
    return "\n".join(out)


def edit(store, participant: str, key: str, new: str) -> str:
    """A correction: new wording for a claim or a file-memory line, a new setting for a
    preference. Returns what was done, in words."""
    kind, item_id = parse(key)
    new = " ".join((new or "").split())
    if not new:
        raise Refused("Write the new wording (or, for a preference, the new setting) first.")
    if kind == "claim":
        c = claims.edit(store, participant, item_id, new)
        return f"Changed {key}: now “{c.text}” (claim:{c.id}; the old wording stays in its history)."
    if kind == "cell":
        return _set_cell(store, participant, item_id, new)
    if kind == "line":
        line = _line(store, participant, item_id)
        origin, _, of = line.origin.partition(":")
        if origin == "claim" and of.isdigit():  # the line says a claim: correct the claim, the line follows
            c = claims.edit(store, participant, int(of), new)
            return f"Changed {key} and the claim it states: now “{c.text}” (claim:{c.id})."
        if origin == "cell":
            raise Refused(f"{key} states a preference: change the setting of cell:{of} instead.")
        replaced = filememory.replace(store, participant, item_id, new)
        return f"Changed {key}: now “{replaced.text}” (line:{replaced.id}; earlier versions keep the old line)."
    return _set_persona(store, participant, item_id, new)


def _set_persona(store, participant: str, item_id: int, value: str) -> str:
    """A Big Five trait gets high or low, a description a new value; the old one stays in history.
    A quirk is its own wording: delete it instead."""
    it = persona.get(store, participant, item_id)
    if it.kind == "quirk":
        raise Refused(f"persona:{item_id} is a quirk, which is its own wording: delete it if it is wrong.")
    value = value.strip().lower() if it.kind == "big_five" else value.strip()
    found = messages.by_dayids(store, participant, it.source_dayids, messages.next_ordinal(store, participant))
    sources = [(m.dayid, m.ordinal) for m in found]
    if not sources:
        raise Refused(f"persona:{item_id} has no stored source message left to correct; delete it instead.")
    try:
        new_item, action = persona.add(store, participant, slot=it.slot, value=value, facet=it.facet,
                                       clause=f"Corrected by the participant: {it.slot} is {value}",
                                       sources=sources, origin="manual")
    except StoreError as e:
        raise Refused(str(e)) from None
    if action == "duplicate":
        return f"persona:{item_id} already says {it.slot} = {value}."
    return f"Changed persona:{item_id}: {it.slot} is now {new_item.value} (persona:{new_item.id}; the old value stays in its history)."


def _set_cell(store, participant: str, cell_id: int, setting: str) -> str:
    old = cells.get(store, participant, cell_id)
    if old.status != "current":
        raise Refused(f"cell:{cell_id} is no longer current; change its successor cell:{old.superseded_by}.")
    setting = setting.strip().lower().replace(" ", "_")
    try:
        ix_attributes.check(old.attribute, setting)
    except ValueError as e:
        raise Refused(str(e)) from None
    row = store.conn.execute("SELECT sources FROM memory_cells WHERE id=?", (cell_id,)).fetchone()
    src = [tuple(s) for s in json.loads(row["sources"])]
    new, action = cells.set_(store, participant, context=old.context, attribute=old.attribute, setting=setting,
                             sources=src, evidence="set by the participant in “What I remember”", origin="manual")
    if action == "duplicate":
        return f"cell:{cell_id} is already {setting}."
    line = filememory.line_for_origin(store, participant, f"cell:{cell_id}")
    try:  # the file memory says the new setting too (as claims.edit does for claims)
        if line is not None:
            filememory.replace(store, participant, line.id, new.text, origin=f"cell:{new.id}", at=new.valid_from)
        else:
            filememory.add(store, participant, new.context, new.text, sources=src, origin=f"cell:{new.id}",
                           at=new.valid_from)
    except filememory.MemoryFull:  # over budget: the cell holds; the document keeps its line (logged)
        pass
    return f"Changed {old.context} {old.attribute} from {old.setting} to {setting} (cell:{new.id})."


def delete(store, participant: str, key: str) -> str:
    """Gone everywhere, and not derived again from the same messages."""
    kind, item_id = parse(key)
    if kind == "claim":
        claims.delete(store, participant, item_id)
    elif kind == "cell":
        cells.delete(store, participant, item_id)
    elif kind == "line":
        filememory.delete_line(store, participant, item_id)
    else:
        persona.delete(store, participant, item_id)
    return f"Deleted {key} everywhere; it will not be learned again from the same messages."


def restore(store, participant: str, version) -> str:
    v = _version(version)
    new = filememory.restore(store, participant, v)
    return f"Restored version {v} of the memory document (now version {new})."
