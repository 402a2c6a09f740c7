"""Retrievers over derived memory (registered as `profile`, `file`, `preferences`).

Each reads as of ctx.as_of: nothing learned at or after the bound is returned. Hits point at
the item's first source message (`dayid`, `ordinal`); `text` is the item itself; `sender` is
'memory' so a prompt can label it as remembered, not said.
"""

from __future__ import annotations

from memory import cells, claims, filememory
from memory import derived

_STOP = set("i me my mine we our you your a an the is am are was were be been to of in on at for and or but so "
            "with as by it its that this do does did not no just what where who when how which why about "
            "tell remember know their they he she".split())


def words(text: str) -> set[str]:
    """Content words, lightly stemmed (lives / living / live -> liv)."""
    out = set()
    for w in derived.norm(text).split():
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        if len(w) > 5 and w.endswith("ing"):
            w = w[:-3]
        elif len(w) > 4 and w.endswith("ed"):
            w = w[:-2]
        if len(w) > 3 and w.endswith("e"):
            w = w[:-1]
        out.add(w)
    return out
from memory.retrievers import Hit, Retriever

SENDER = "memory"


def _first_ordinal(store, participant, dayid: str | None, fallback: int) -> int:
    if not dayid:
        return fallback
    r = store.conn.execute("SELECT ordinal FROM messages WHERE participant=? AND dayid=?",
                           (participant, dayid)).fetchone()
    return r["ordinal"] if r else fallback


class Profile(Retriever):
    """Current claims sharing content words with the query, best overlap first (ties: newer).
    With `all_if_none=True`, every current claim when none overlaps (a small profile read whole)."""

    name = "profile"
    derived = True  # reads derived memory: empty until consolidation has run

    def __init__(self, all_if_none: bool = False, **params):
        super().__init__(all_if_none=all_if_none, **params)
        self.all_if_none = all_if_none

    def search(self, ctx, query, k):
        current = claims.current(ctx.store, ctx.participant, as_of=ctx.as_of)
        q = words(query)
        scored = []
        for c in current:
            cw = words(c.text)
            overlap = len(q & cw) / (len(cw) or 1)
            scored.append((overlap * c.confidence, c))
        hits = [(s, c) for s, c in scored if s > 0] or ([(0.01 * c.confidence, c) for _, c in scored]
                                                        if self.all_if_none else [])
        hits.sort(key=lambda sc: (-sc[0], -sc[1].valid_from))
        out = []
        for s, c in hits[:k]:
            dayid = c.source_dayids[0] if c.source_dayids else c.from_dayid
            out.append(Hit(_first_ordinal(ctx.store, ctx.participant, dayid, c.valid_from), dayid, SENDER, c.text, float(s)))
        return out


class File(Retriever):
    """The whole file memory as of the bound, one hit per line in document order (k ignored:
    the file has its own budget)."""

    name = "file"
    derived = True

    def search(self, ctx, query, k):
        ls = filememory.lines(ctx.store, ctx.participant, as_of=ctx.as_of)
        order = {s: i for i, s in enumerate(filememory.SCOPE_ORDER)}
        ls.sort(key=lambda line: (order.get(line.scope, 99), line.id))
        return [Hit(_first_ordinal(ctx.store, ctx.participant, line.since_dayid, line.valid_from),
                    line.since_dayid or "", SENDER, f"[{line.scope}] {line.text}", 1.0) for line in ls]


class Preferences(Retriever):
    """The preference cells of ctx.context as of the bound."""

    name = "preferences"
    derived = True

    def search(self, ctx, query, k):
        out = []
        for c in cells.current(ctx.store, ctx.participant, ctx.context, as_of=ctx.as_of):
            dayid = c.source_dayids[0] if c.source_dayids else c.from_dayid
            out.append(Hit(_first_ordinal(ctx.store, ctx.participant, dayid, c.valid_from), dayid, SENDER,
                           f"{c.attribute}: {c.setting} ({c.text})", 1.0))
        return out[:k] if k else out
