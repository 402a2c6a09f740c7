"""Interaction-preference cells: (participant, context, attribute) -> setting.

A new setting for a cell supersedes the current one (kept, closed at the new one's ordinal);
the same setting again only adds its source. Contexts are independent: a correction made in
`work` leaves `personal` alone unless it is written for both. Attributes and settings are
those of memory.ix_attributes (data the IX inventory can adopt). Timing: memory.derived.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from memory import derived, ix_attributes
from memory.store import Store, StoreError


@dataclass(frozen=True, kw_only=True)
class Cell(derived.Item):
    context: str
    attribute: str
    setting: str
    evidence: str

    @property
    def text(self) -> str:
        return ix_attributes.describe(self.attribute, self.setting)


def _row(r, as_of: int | None = None) -> Cell:
    src = derived.sources_as_of(r["sources"], as_of)
    return Cell(**derived.provenance(r, as_of, [s[0] for s in src]), context=r["context"],
                attribute=r["attribute"], setting=r["setting"], evidence=r["evidence"])


ITEMS = derived.Items("memory_cells", "cell", "preference cell", _row, order="context, attribute, valid_from, id")


@lru_cache(maxsize=1)
def scales() -> dict:
    """Ordered attributes, acknowledgement lines (memory/data/prefs/scales-v1.json)."""
    d = json.loads(resources.files("memory").joinpath("data/prefs/scales-v1.json").read_text(encoding="utf-8"))
    d["restating_re"] = re.compile(d["restating"])
    return d


def stepped(attribute: str, asked: str, in_force: str, clause: str) -> str:
    """What a message asking for `asked` sets when `in_force` already holds: on an ordered
    attribute, one step further the way `asked` leans ("keep it short" while replies are already
    brief -> terse; already terse stays terse); a clause that only says what the speaker likes
    restates and moves nothing. On a monotone attribute a request never moves against its lean
    ("keep it short" while terse stays terse). Otherwise `asked`."""
    lean = scales()["scales"].get(attribute, {})
    order = ix_attributes.ATTRIBUTES[attribute]["settings"]
    if not lean.get(asked) or in_force not in order:
        return asked
    if asked != in_force:
        beyond = (order.index(in_force) - order.index(asked)) * lean[asked] > 0
        return in_force if beyond and attribute in scales().get("monotone", []) else asked
    if scales()["restating_re"].search(derived.norm(clause)):
        return asked
    from memory import preferences  # a take-back returns to a setting, it asks for no more of it

    if preferences.takes_back(clause):
        return asked
    i = order.index(asked) + lean[asked]
    return order[i] if 0 <= i < len(order) else asked


def in_force(store: Store, participant: str, context: str, attribute: str, as_of: int | None = None) -> str:
    """The cell's setting at the bound (None: now), else the context's default."""
    for c in current(store, participant, context, as_of):
        if c.attribute == attribute:
            return c.setting
    return ix_attributes.ATTRIBUTES[attribute]["default"].get(context, ix_attributes.ATTRIBUTES[attribute]["settings"][0])


def acknowledgement(learned: list[dict], said_in: str) -> str | None:
    """One short line saying what a message changed ("Got it: shorter replies from now on."):
    for the cells it added or superseded, not for a restatement."""
    d = scales()
    lines = []
    for x in learned:
        if not ({"added", "superseded"} & set(x.get("cells", {}))):
            continue
        line = d["acknowledgements"].get(x["attribute"], {}).get(x["setting"])
        if not line:
            continue
        if x["context"] != said_in:
            line = line.rstrip(".") + f" ({d['in_context'][x['context']]})."
        if line not in lines:
            lines.append(line)
    return " ".join(lines[:2]) or None


def key_text(context: str, attribute: str, setting: str) -> str:
    """What tombstones and the event log key a cell by."""
    return f"{context}:{attribute}={setting}"


def attribute_key(context: str, attribute: str) -> str:
    """The tombstone of an attribute, whatever setting a message asks for (a deleted cell)."""
    return f"{context}:{attribute}"


def set_(store: Store, participant: str, *, context: str, attribute: str, setting: str,
         sources: list[tuple[str, int]], evidence: str = "", verdict: str = "supported",
         origin: str = "manual") -> tuple[Cell, str]:
    """Merge one setting into one context's cell. Returns (cell, added | duplicate | superseded)."""
    ix_attributes.check(attribute, setting)
    if not sources:
        raise StoreError("a preference cell needs at least one source (dayid, ordinal)")
    sources = sorted({(d, int(o)) for d, o in sources}, key=lambda s: s[1])
    at = sources[-1][1] if origin != "manual" else max(sources[-1][1], derived.effective_ordinal(store, participant))
    kt = key_text(context, attribute, setting)
    with store.transaction() as conn:
        old = conn.execute(
            "SELECT * FROM memory_cells WHERE participant=? AND context=? AND attribute=? AND status='current'",
            (participant, context, attribute)).fetchone()
        if old is not None and old["setting"] == setting:
            merged = json.loads(old["sources"])
            known = {d for d, _ in merged}
            merged += [[d, o] for d, o in sources if d not in known]
            merged.sort(key=lambda s: s[1])
            conn.execute("UPDATE memory_cells SET sources=? WHERE id=?", (json.dumps(merged), old["id"]))
            derived.log(conn, participant, "cell", old["id"], "restated", {"sources": [d for d, _ in sources]}, kt)
            return _row(conn.execute("SELECT * FROM memory_cells WHERE id=?", (old["id"],)).fetchone()), "duplicate"
        if old is not None:
            at = max(at, old["valid_from"])
        cur = conn.execute(
            "INSERT INTO memory_cells (participant, context, attribute, setting, evidence, sources, valid_from, "
            "valid_to, from_dayid, to_dayid, status, verdict, superseded_by, origin, created_at) "
            "VALUES (?,?,?,?,?,?,?,NULL,?,NULL,'current',?,NULL,?,?)",
            (participant, context, attribute, setting, evidence, json.dumps([list(s) for s in sources]), at,
             sources[-1][0], verdict, origin, derived.now()))
        new_id = cur.lastrowid
        derived.log(conn, participant, "cell", new_id, "added",
                    {"context": context, "attribute": attribute, "setting": setting,
                     "sources": [d for d, _ in sources], "origin": origin}, kt)
        action = "added"
        if old is not None:
            derived.supersede(conn, "memory_cells", "cell", participant, old["id"], new_id, at, sources[-1][0],
                              {}, key_text(context, attribute, old["setting"]))
            action = "superseded"
        r = conn.execute("SELECT * FROM memory_cells WHERE id=?", (new_id,)).fetchone()
    return _row(r), action


def current(store: Store, participant: str, context: str | None = None, as_of: int | None = None) -> list[Cell]:
    """Cells holding at the bound (None: now), for one context or all."""
    sql = "SELECT * FROM memory_cells WHERE participant=?"
    args: list = [participant]
    if context is not None:
        sql += " AND context=?"
        args.append(context)
    if as_of is None:
        sql += " AND status='current'"
    else:
        sql += f" AND {derived.current_sql()}"
        args += [as_of, as_of]
    rows = store.conn.execute(sql + " ORDER BY context, attribute", args).fetchall()
    return [_row(r, as_of) for r in rows]


def settings_for(store: Store, participant: str, context: str, as_of: int | None = None) -> dict[str, str]:
    """{attribute: setting} for one context: what the IX wrapper would start a session with."""
    return {c.attribute: c.setting for c in current(store, participant, context, as_of)}


all_, get = ITEMS.all_, ITEMS.get


def history(store: Store, participant: str, context: str, attribute: str) -> list[Cell]:
    return [c for c in all_(store, participant) if c.context == context and c.attribute == attribute]


def delete(store: Store, participant: str, cell_id: int) -> None:
    """Gone everywhere, tombstoned by (source dayid, attribute=setting)."""
    with store.transaction() as conn:
        r = ITEMS.stored(conn, participant, cell_id)
        kt = key_text(r["context"], r["attribute"], r["setting"])
        sources = [s[0] for s in json.loads(r["sources"])]
        derived.tombstone(conn, participant, sources, kt)
        derived.tombstone(conn, participant, sources, attribute_key(r["context"], r["attribute"]))
        derived.item_deleted(conn, participant, f"cell:{cell_id}")
        ITEMS.drop(conn, participant, cell_id)
