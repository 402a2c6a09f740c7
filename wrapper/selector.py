"""Which interaction settings hold this turn, and who declared them.

Precedence per attribute: a model's IX tool call this turn > the model's declaration earlier in
the session > the selector's source > the inventory default for the context. Models without
tool calling (the embedded default) never declare, so the selector decides from its source,
chosen by name (`Settings.ix_source`):

- `none`: the inventory defaults only (what the companion does knowing nothing);
- `cells`: the participant's preference cells for this context, as of the turn;
- `file`: the preference lines of the file memory (scope = this context);
- `retrieval`: participant messages the hybrid retriever finds for a preference query, read by
  the rule-based preference phrases, later statements winning;
- `oracle`: the target given with the turn (eval only: `extra["ix_target"]`).

The result is traced the same way on both paths: {attribute: {setting, by, source}}.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory import cells, extract, filememory, ix_attributes
from wrapper import inventory

SOURCES = ("none", "cells", "file", "retrieval", "oracle")
PREFERENCE_QUERY = ("how I like you to help me: ask me first, just do it, short or detailed answers, "
                    "one question at a time, options, formal or casual, check in, explain your reasoning")


class SelectorError(ValueError):
    pass


@dataclass(frozen=True)
class Declared:
    setting: str
    by: str  # model | selector
    source: str  # turn | session | cells | file | retrieval | oracle | default

    def public(self) -> dict:
        return {"setting": self.setting, "by": self.by, "source": self.source}


def _from_phrases(texts_with_context: list[tuple[str, str]], context: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for text, said_in in texts_with_context:  # oldest first: later statements win
        for sentence in re.split(r"(?<=[.!?;])\s+", text):
            contexts, found = extract.preference_phrases(sentence, said_in)
            if context in contexts:
                out.update({attribute: setting for attribute, setting, _ in found})
    return out


def _described() -> dict[str, tuple[str, str]]:
    return {ix_attributes.describe(a, s).lower(): (a, s)
            for a, attr in inventory.load().attributes.items() for s in attr.settings}


def source_settings(source: str, ctx) -> dict[str, str]:
    """What the named source says about this context, as of the turn."""
    if source not in SOURCES:
        raise SelectorError(f"unknown interaction-setting source {source!r}; known: {list(SOURCES)}")
    if source == "none":
        return {}
    if source == "cells":  # the turn's own message counts: "one question at a time" applies to this reply
        return cells.settings_for(ctx.store, ctx.participant, ctx.context, ctx.as_of + 1)
    if source == "oracle":
        target = ctx.extra.get("ix_target")
        if not isinstance(target, dict):
            raise SelectorError("the oracle source needs the target settings in extra['ix_target']")
        return dict(target)
    if source == "file":
        described = _described()
        out = {}
        for line in filememory.lines(ctx.store, ctx.participant, ctx.as_of):
            if line.scope == ctx.context and (hit := described.get(line.text.strip().lower())):
                out[hit[0]] = hit[1]
        return out
    from memory import registry  # retrieval: the hybrid retriever, as of the turn

    hits = registry.create("retriever", "hybrid").search(ctx, PREFERENCE_QUERY, 10)
    said = sorted((h for h in hits if h.sender == "user"), key=lambda h: h.ordinal)
    if not said:
        return {}
    marks = ",".join("?" * len(said))
    where = dict(ctx.store.conn.execute(f"SELECT ordinal, context FROM messages WHERE participant = ? "
                                        f"AND ordinal IN ({marks})", [ctx.participant, *[h.ordinal for h in said]]))
    return _from_phrases([(h.text, where.get(h.ordinal, ctx.context)) for h in said], ctx.context)


def select(context: str, source: str, found: dict[str, str], session: dict[str, str],
           declared_now: dict[str, str]) -> dict[str, Declared]:
    inv = inventory.load()
    out = {}
    for name, attr in inv.attributes.items():
        if name in declared_now:
            out[name] = Declared(attr.check(declared_now[name]), "model", "turn")
        elif name in session:
            out[name] = Declared(attr.check(session[name]), "model", "session")
        elif name in found and found[name] in attr.settings:
            out[name] = Declared(found[name], "selector", source)
        else:
            out[name] = Declared(attr.default[context], "selector", "default")
    return out


def plain(selected: dict[str, Declared]) -> dict[str, str]:
    return {a: d.setting for a, d in selected.items()}
