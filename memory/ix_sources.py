"""Where the selector learns a participant's interaction settings: a registered plugin kind
(entry-point group `companion.ix_sources`, built-ins registered in pyproject.toml like gates).

A source is a class whose `settings(ctx)` returns {attribute: setting} for `ctx.context`, as of
the turn (`ctx.as_of`):

- `none`: nothing (the inventory defaults hold: what the companion does knowing nothing);
- `cells`: the participant's preference cells for this context;
- `file`: the preference lines of the file memory (scope = this context);
- `retrieval`: participant messages the hybrid retriever finds for a preference query, read by
  the rule-based preference phrases, later statements winning;
- `oracle`: the target given with the turn (eval only: `extra["ix_target"]`).
"""

from __future__ import annotations

import re

from memory import cells, extract, filememory, ix_attributes

PREFERENCE_QUERY = ("how I like you to help me: ask me first, just do it, short or detailed answers, "
                    "one question at a time, options, formal or casual, check in, explain your reasoning")


class SourceError(ValueError):
    pass


class Source:
    name = "source"

    def settings(self, ctx) -> dict[str, str]:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"name": self.name}


class Nothing(Source):
    name = "none"

    def settings(self, ctx) -> dict[str, str]:
        return {}


class Cells(Source):
    name = "cells"

    def settings(self, ctx) -> dict[str, str]:
        # the turn's own message counts: "one question at a time" applies to this reply
        return cells.settings_for(ctx.store, ctx.participant, ctx.context, ctx.as_of + 1)


class Oracle(Source):
    name = "oracle"

    def settings(self, ctx) -> dict[str, str]:
        target = ctx.extra.get("ix_target")
        if not isinstance(target, dict):
            raise SourceError("the oracle source needs the target settings in extra['ix_target']")
        return dict(target)


class File(Source):
    name = "file"

    def settings(self, ctx) -> dict[str, str]:
        described = {ix_attributes.describe(a, s).lower(): (a, s)
                     for a, attr in ix_attributes.ATTRIBUTES.items() for s in attr["settings"]}
        out = {}
        for line in filememory.lines(ctx.store, ctx.participant, ctx.as_of):
            if line.scope == ctx.context and (hit := described.get(line.text.strip().lower())):
                out[hit[0]] = hit[1]
        return out


def from_phrases(texts_with_context: list[tuple[str, str]], context: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for text, said_in in texts_with_context:  # oldest first: later statements win
        for sentence in re.split(r"(?<=[.!?;])\s+", text):
            contexts, found = extract.preference_phrases(sentence, said_in)
            if context in contexts:
                out.update({attribute: setting for attribute, setting, _ in found})
    return out


class Retrieval(Source):
    name = "retrieval"

    def settings(self, ctx) -> dict[str, str]:
        from memory import registry  # the hybrid retriever, as of the turn

        hits = registry.create("retriever", "hybrid").search(ctx, PREFERENCE_QUERY, 10)
        said = sorted((h for h in hits if h.sender == "user"), key=lambda h: h.ordinal)
        if not said:
            return {}
        marks = ",".join("?" * len(said))
        where = dict(ctx.store.conn.execute(f"SELECT ordinal, context FROM messages WHERE participant = ? "
                                            f"AND ordinal IN ({marks})", [ctx.participant, *[h.ordinal for h in said]]))
        return from_phrases([(h.text, where.get(h.ordinal, ctx.context)) for h in said], ctx.context)
