"""File memory: one Markdown document per participant, a section per context, read whole.

Lines are rows with a scope (context), since-dayid, source dayids and a validity window (see
memory.derived), so the document can be rendered as of any bound. Changes are single lines:
`add`, `replace`, `remove`; each change writes a numbered version (a snapshot of the current
lines) and any version can be `restore`d (itself a new version: nothing is rewritten).

Budget policy: the rendered document may not exceed `budget_chars` (DEFAULT_BUDGET_CHARS).
When an add (or a replacement that grows the document) would exceed it, the change is refused
with `MemoryFull` and an event is logged; nothing is evicted silently. The claim or cell behind
a refused line stays in its own store, so no fact is lost; a line must be removed or replaced
by a shorter one before another is added.

Re-capture guard: a line not written by hand (origin other than 'manual') is refused when its
text matches text that was injected into a prompt from memory (memory.derived.note_injected) and
is no longer a current line: memory text echoed back is never captured as a new memory.
Consolidation also reads only participant messages (see memory.extract).

Deletion (`purge_origin`, `delete_line`) removes a line from the rows and from every stored
version, so a restore cannot bring it back.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from memory import cells, claims, derived, persona
from memory.store import Store, StoreError

DEFAULT_BUDGET_CHARS = 4000
SCOPE_ORDER = ("work", "personal")


class Refused(StoreError):
    """A change the policy refuses; logged (after the refused transaction rolls back)."""

    event = "refused"

    def __init__(self, message: str, text: str, detail: dict | None = None, line_id: int | None = None):
        super().__init__(message)
        self.text, self.detail, self.line_id = text, detail or {}, line_id


class MemoryFull(Refused):
    """The change would take the document over its budget."""

    event = "refused_budget"


class Recapture(Refused):
    """The line is memory text the companion injected: it is not captured back."""

    event = "refused_recapture"


def _logged(fn):
    import functools

    @functools.wraps(fn)
    def wrapper(store, participant, *args, **kwargs):
        try:
            return fn(store, participant, *args, **kwargs)
        except Refused as e:
            with store.transaction() as conn:
                derived.log(conn, participant, "line", e.line_id, e.event, e.detail, e.text)
            raise

    return wrapper


@dataclass(frozen=True)
class Line:
    id: int
    scope: str
    text: str
    since_dayid: str | None
    source_dayids: list[str]
    valid_from: int
    valid_to: int | None
    status: str
    origin: str

    def public(self) -> dict:
        return asdict(self)

    def markdown(self) -> str:
        src = ", ".join(self.source_dayids) or "none"
        return f"- {self.text} _(scope: {self.scope}; since {self.since_dayid or 'unknown'}; sources: {src})_"


def _row(r, as_of: int | None = None) -> Line:
    src = derived.sources_as_of(r["sources"], as_of)
    return Line(r["id"], r["scope"], r["text"], r["since_dayid"], [s[0] for s in src], r["valid_from"],
                r["valid_to"] if as_of is None else None, r["status"] if as_of is None else "current", r["origin"])


def lines(store: Store, participant: str, as_of: int | None = None) -> list[Line]:
    if as_of is None:
        rows = store.conn.execute(
            "SELECT * FROM memory_file_lines WHERE participant=? AND status='current' ORDER BY pos, id",
            (participant,)).fetchall()
    else:
        rows = store.conn.execute(
            f"SELECT * FROM memory_file_lines WHERE participant=? AND {derived.current_sql()} ORDER BY pos, id",
            (participant, as_of, as_of)).fetchall()
    return [_row(r, as_of) for r in rows]


def render_lines(ls: list[Line], title: str = "Memory") -> str:
    scopes = list(SCOPE_ORDER) + sorted({line.scope for line in ls} - set(SCOPE_ORDER))
    out = [f"# {title}"]
    for scope in scopes:
        mine = [line for line in ls if line.scope == scope]
        if mine:
            out += ["", f"## {scope}"] + [line.markdown() for line in mine]
    return "\n".join(out) + "\n"


def render(store: Store, participant: str, as_of: int | None = None) -> str:
    """The whole document as of the bound (None: now)."""
    return render_lines(lines(store, participant, as_of))


def _snapshot(conn, participant: str, op: str, at: int) -> int:
    rows = _current_rows(conn, participant)
    snap = [{"id": r["id"], "scope": r["scope"], "text": r["text"], "since_dayid": r["since_dayid"],
             "sources": json.loads(r["sources"]), "origin": r["origin"], "pos": r["pos"]} for r in rows]
    last = conn.execute("SELECT MAX(version) FROM memory_file_versions WHERE participant=?", (participant,)).fetchone()[0]
    version = (last or 0) + 1
    conn.execute("INSERT INTO memory_file_versions (participant, version, created_at, op, at_ordinal, lines) "
                 "VALUES (?,?,?,?,?,?)", (participant, version, derived.now(), op, at, json.dumps(snap, ensure_ascii=False)))
    return version


def _current_rows(conn, participant: str):
    return conn.execute("SELECT * FROM memory_file_lines WHERE participant=? AND status='current' ORDER BY pos, id",
                        (participant,)).fetchall()


def _next_pos(conn, participant: str) -> int:
    r = conn.execute("SELECT MAX(pos) FROM memory_file_lines WHERE participant=?", (participant,)).fetchone()
    return (r[0] or 0) + 1


def _size_with(conn, participant: str, add: list[Line] = (), drop: set[int] = frozenset()) -> int:
    ls = [_row(r) for r in _current_rows(conn, participant) if r["id"] not in drop] + list(add)
    return len(render_lines(ls))


def _at(store: Store, participant: str, sources: list[tuple[str, int]], at: int | None) -> int:
    if at is not None:
        return at
    if sources:
        return max(o for _, o in sources)
    return derived.effective_ordinal(store, participant)


def _guard(conn, store: Store, participant: str, text: str, origin: str, regenerating: frozenset = frozenset()) -> None:
    if origin == "manual":
        return
    n = derived.norm(text)
    if n in regenerating:  # a rebuild putting back a line that stood before it: not a re-capture
        return
    current = {r["norm"] for r in _current_rows(conn, participant)}
    for injected in derived.injected_before(store, participant, 1 << 62):
        if derived.norm(injected) == n and n not in current:
            raise Recapture(f"line {text!r} is memory text the companion injected; not captured back", text)


@_logged
def add(store: Store, participant: str, scope: str, text: str, sources: list[tuple[str, int]] = (),
        origin: str = "manual", at: int | None = None, budget_chars: int = DEFAULT_BUDGET_CHARS,
        regenerating: frozenset = frozenset()) -> Line:
    """Add one line. Refuses duplicates of a current line in the same scope, re-captured memory
    text (see module doc) and anything that would exceed the budget."""
    text = " ".join((text or "").split())
    if not text:
        raise StoreError("a file-memory line needs text")
    sources = sorted({(d, int(o)) for d, o in sources}, key=lambda s: s[1])
    at = _at(store, participant, sources, at)
    since = sources[0][0] if sources else None
    with store.transaction() as conn:
        for r in _current_rows(conn, participant):
            if r["scope"] == scope and r["norm"] == derived.norm(text):
                raise StoreError(f"line {r['id']} already says this in {scope}")
        _guard(conn, store, participant, text, origin, regenerating)
        probe = Line(0, scope, text, since, [d for d, _ in sources], at, None, "current", origin)
        size = _size_with(conn, participant, add=[probe])
        if size > budget_chars:
            raise MemoryFull(f"file memory would be {size} characters, over its budget of {budget_chars}: "
                             "remove or shorten a line first", text, {"size": size, "budget": budget_chars, "origin": origin})
        cur = conn.execute(
            "INSERT INTO memory_file_lines (participant, scope, text, norm, since_dayid, sources, valid_from, "
            "valid_to, status, origin, created_at, pos) VALUES (?,?,?,?,?,?,?,NULL,'current',?,?,?)",
            (participant, scope, text, derived.norm(text), since, json.dumps([list(s) for s in sources]), at,
             origin, derived.now(), _next_pos(conn, participant)))
        line_id = cur.lastrowid
        derived.log(conn, participant, "line", line_id, "added", {"scope": scope, "origin": origin}, text)
        _snapshot(conn, participant, f"add {line_id}", at)
        return _row(conn.execute("SELECT * FROM memory_file_lines WHERE id=?", (line_id,)).fetchone())


@_logged
def replace(store: Store, participant: str, line_id: int, text: str, sources: list[tuple[str, int]] | None = None,
            origin: str | None = None, at: int | None = None, budget_chars: int = DEFAULT_BUDGET_CHARS,
            regenerating: frozenset = frozenset()) -> Line:
    """Replace one line with new text (same scope): the old line is closed, not deleted."""
    text = " ".join((text or "").split())
    if not text:
        raise StoreError("a file-memory line needs text")
    with store.transaction() as conn:
        old = conn.execute("SELECT * FROM memory_file_lines WHERE participant=? AND id=? AND status='current'",
                           (participant, line_id)).fetchone()
        if old is None:
            raise StoreError(f"no current file-memory line {line_id} for participant {participant!r}")
        src = sorted({(d, int(o)) for d, o in (sources if sources is not None else json.loads(old["sources"]))},
                     key=lambda s: s[1])
        origin = origin or old["origin"]
        _guard(conn, store, participant, text, origin, regenerating)
        at = max(_at(store, participant, src if sources is not None else [], at), old["valid_from"])
        since = src[0][0] if src else old["since_dayid"]
        probe = Line(0, old["scope"], text, since, [d for d, _ in src], at, None, "current", origin)
        size = _size_with(conn, participant, add=[probe], drop={line_id})
        if size > budget_chars and size > _size_with(conn, participant):
            raise MemoryFull(f"file memory would be {size} characters, over its budget of {budget_chars}", text,
                             {"size": size, "budget": budget_chars}, line_id)
        cur = conn.execute(
            "INSERT INTO memory_file_lines (participant, scope, text, norm, since_dayid, sources, valid_from, "
            "valid_to, status, origin, created_at, pos) VALUES (?,?,?,?,?,?,?,NULL,'current',?,?,?)",
            (participant, old["scope"], text, derived.norm(text), since, json.dumps([list(s) for s in src]), at,
             origin, derived.now(), old["pos"]))
        new_id = cur.lastrowid
        conn.execute("UPDATE memory_file_lines SET status='replaced', valid_to=? WHERE id=?", (at, line_id))
        derived.log(conn, participant, "line", line_id, "replaced", {"by": new_id}, old["text"])
        derived.log(conn, participant, "line", new_id, "added", {"replaces": line_id, "origin": origin}, text)
        _snapshot(conn, participant, f"replace {line_id} -> {new_id}", at)
        return _row(conn.execute("SELECT * FROM memory_file_lines WHERE id=?", (new_id,)).fetchone())


def remove(store: Store, participant: str, line_id: int, at: int | None = None) -> None:
    """Take one line out of the current document (kept in history and in earlier versions)."""
    with store.transaction() as conn:
        old = conn.execute("SELECT * FROM memory_file_lines WHERE participant=? AND id=? AND status='current'",
                           (participant, line_id)).fetchone()
        if old is None:
            raise StoreError(f"no current file-memory line {line_id} for participant {participant!r}")
        at = max(at if at is not None else derived.effective_ordinal(store, participant), old["valid_from"])
        conn.execute("UPDATE memory_file_lines SET status='removed', valid_to=? WHERE id=?", (at, line_id))
        derived.log(conn, participant, "line", line_id, "removed", {}, old["text"])
        _snapshot(conn, participant, f"remove {line_id}", at)


def line_for_origin(store: Store, participant: str, origin: str) -> Line | None:
    r = store.conn.execute("SELECT * FROM memory_file_lines WHERE participant=? AND origin=? AND status='current'",
                           (participant, origin)).fetchone()
    return _row(r) if r else None


def versions(store: Store, participant: str) -> list[dict]:
    rows = store.conn.execute(
        "SELECT version, created_at, op, at_ordinal, lines FROM memory_file_versions WHERE participant=? ORDER BY version",
        (participant,)).fetchall()
    return [{"version": r["version"], "created_at": r["created_at"], "op": r["op"], "at_ordinal": r["at_ordinal"],
             "n_lines": len(json.loads(r["lines"]))} for r in rows]


def version_text(store: Store, participant: str, version: int) -> str:
    snap = _version(store, participant, version)
    return render_lines([Line(x["id"], x["scope"], x["text"], x["since_dayid"], [s[0] for s in x["sources"]], 0,
                              None, "current", x["origin"]) for x in snap])


def _version(store: Store, participant: str, version: int) -> list[dict]:
    r = store.conn.execute("SELECT lines FROM memory_file_versions WHERE participant=? AND version=?",
                           (participant, version)).fetchone()
    if r is None:
        raise StoreError(f"no file-memory version {version} for participant {participant!r}")
    return json.loads(r["lines"])


def restore(store: Store, participant: str, version: int) -> int:
    """Make the current document equal to `version`, as a new version (returns its number).
    Lines not in it are closed; lines of it no longer current come back as new rows."""
    snap = _version(store, participant, version)
    want = {x["id"]: x for x in snap}
    at = derived.effective_ordinal(store, participant)
    with store.transaction() as conn:
        for r in _current_rows(conn, participant):
            if r["id"] not in want:
                a = max(at, r["valid_from"])
                conn.execute("UPDATE memory_file_lines SET status='removed', valid_to=? WHERE id=?", (a, r["id"]))
                derived.log(conn, participant, "line", r["id"], "removed", {"by_restore": version}, r["text"])
        current_ids = {r["id"] for r in _current_rows(conn, participant)}
        for lid, x in want.items():
            if lid in current_ids:
                continue
            cur = conn.execute(
                "INSERT INTO memory_file_lines (participant, scope, text, norm, since_dayid, sources, valid_from, "
                "valid_to, status, origin, created_at, pos) VALUES (?,?,?,?,?,?,?,NULL,'current',?,?,?)",
                (participant, x["scope"], x["text"], derived.norm(x["text"]), x["since_dayid"],
                 json.dumps(x["sources"]), at, x["origin"], derived.now(), x.get("pos", 0)))
            derived.log(conn, participant, "line", cur.lastrowid, "restored", {"from_version": version, "was": lid},
                        x["text"])
        return _snapshot(conn, participant, f"restore {version}", at)


def purge_origin(conn, participant: str, origin: str) -> int:
    """Delete every line derived from one item, from the rows and from every version."""
    rows = conn.execute("SELECT id, text, status FROM memory_file_lines WHERE participant=? AND origin=?",
                        (participant, origin)).fetchall()
    was_current = any(r["status"] == "current" for r in rows)
    _purge(conn, participant, [r["id"] for r in rows], [r["text"] for r in rows], origin=origin)
    if was_current:
        at = conn.execute("SELECT next_ordinal - 1 FROM participants WHERE participant=?", (participant,)).fetchone()[0]
        _snapshot(conn, participant, f"delete {origin}", at)
    return len(rows)


def _purge(conn, participant: str, ids: list[int], texts: list[str], origin: str | None = None) -> None:
    ids_set = set(ids)
    for i in ids:
        conn.execute("DELETE FROM memory_events WHERE participant=? AND kind='line' AND item_id=?", (participant, i))
        conn.execute("DELETE FROM memory_file_lines WHERE id=?", (i,))
    for t in texts:
        derived.forget_text(conn, participant, t)
        conn.execute("DELETE FROM memory_injected WHERE participant=? AND text=?", (participant, t))
    for r in conn.execute("SELECT id, lines FROM memory_file_versions WHERE participant=?", (participant,)).fetchall():
        snap = json.loads(r["lines"])
        kept = [x for x in snap if x["id"] not in ids_set and (origin is None or x["origin"] != origin)]
        if len(kept) != len(snap):
            conn.execute("UPDATE memory_file_versions SET lines=? WHERE id=?", (json.dumps(kept, ensure_ascii=False), r["id"]))


def delete_line(store: Store, participant: str, line_id: int) -> None:
    """Gone everywhere. A line derived from a claim or cell deletes that item (and so is not
    derived again from the same messages); a hand-written line is purged from every version."""
    r = store.conn.execute("SELECT * FROM memory_file_lines WHERE participant=? AND id=?",
                           (participant, line_id)).fetchone()
    if r is None:
        raise StoreError(f"no file-memory line {line_id} for participant {participant!r}")
    kind, _, item = r["origin"].partition(":")
    if kind in ("claim", "cell"):
        table = "memory_claims" if kind == "claim" else "memory_cells"
        exists = store.conn.execute(f"SELECT 1 FROM {table} WHERE participant=? AND id=?",
                                    (participant, int(item))).fetchone()
    if kind in ("claim", "cell") and exists:
        (claims.delete if kind == "claim" else cells.delete)(store, participant, int(item))
    else:  # hand-written, or restored from before a rebuild (its item is gone)
        with store.transaction() as conn:
            derived.tombstone(conn, participant, [s[0] for s in json.loads(r["sources"])], r["text"])
            _purge(conn, participant, [line_id], [r["text"]])
            _snapshot(conn, participant, f"delete {line_id}", derived.effective_ordinal(store, participant))


PERSONA_ITEMS = 12  # at most this many persona items in a prompt, strongest first


def _follow_edit(store: Store, participant: str, old_origin: str, new_origin: str, scope: str, text: str,
                 sources: list, at: int) -> None:
    """An item edited by hand: its line says the new wording (or is added if it had none)."""
    line = line_for_origin(store, participant, old_origin)
    try:
        if line is not None:
            replace(store, participant, line.id, text, origin=new_origin, at=at)
        else:
            add(store, participant, scope, text, sources=sources, origin=new_origin, at=at)
    except StoreError:  # refused (over budget, a re-capture: logged) or already said: the item holds as edited
        pass


derived.follow(deleted=purge_origin, edited=_follow_edit)


def _persona_items(store: Store, participant: str, as_of: int) -> list:
    order = {"strong": 0, "moderate": 1, "weak": 2}
    items = [i for i in persona.current(store, participant, as_of) if i.clauses]
    items.sort(key=lambda i: (order.get(i.strength, 3), -i.valid_from, i.id))
    return items[:PERSONA_ITEMS]


def prompt_items(store: Store, participant: str, context: str, as_of: int) -> list[str]:
    """Keys of what `prompt_block` puts in the prompt, in its order ("line:<id>", "persona:<id>"):
    what the turn's trace records, and what the inspector opens."""
    ls = lines(store, participant, as_of)
    ls.sort(key=lambda line: (line.scope != context, line.id))
    return [f"line:{line.id}" for line in ls] + [f"persona:{i.id}" for i in _persona_items(store, participant, as_of)]


def prompt_block(store: Store, participant: str, context: str, as_of: int) -> tuple[str, list[str]]:
    """What a turn puts in its system prompt: the file memory as of the bound with the current
    context's section first, then how the participant describes themselves (persona items
    current at the bound, strongest first, with their strength), and the texts injected (pass
    them to derived.note_injected). Persona items are read from memory_persona, not copied into
    lines, so an edit, a deletion or a rebuild of the persona reaches the next prompt at once."""
    ls = lines(store, participant, as_of)
    items = _persona_items(store, participant, as_of)
    if not ls and not items:
        return "", []
    ls.sort(key=lambda line: (line.scope != context, line.id))
    text = render_lines(ls, title="What you remember about the participant") if ls else \
        "# What you remember about the participant\n"
    if items:
        text += "\n## how they describe themselves\n" + "\n".join(
            f"- {i.text} _({i.strength}; sources: {' '.join(f'[{d}]' for d in i.source_dayids)})_" for i in items) + "\n"
    return text, [line.text for line in ls] + [i.text for i in items]
