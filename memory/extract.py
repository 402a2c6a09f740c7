"""Extraction: propose, verify against the cited messages, merge.

    propose   an Extractor turns participant messages into Proposals (claims, preferences and
              persona statements),
              each citing source dayids and quoting its evidence
    verify    each proposal is checked against the messages it cites: they must exist, be the
              participant's own (never the companion's: memory text the companion says is not
              captured back) and contain the evidence -> supported; only the content words ->
              repairable (kept, confidence downgraded); otherwise unsupported (dropped). Every
              verdict is logged (memory_events, kind 'proposal'). A persona statement whose cited
              words are negated in the message ("I'm not an introvert") is unsupported.
    merge     claims.add / cells.set_ / persona.add deduplicate and supersede; tombstoned (dayid, text) pairs
              are skipped (a deleted item is not re-derived from the same messages); each new
              claim or cell gets its file-memory line (added, or replacing its predecessor's).
              Persona items get none: they are read whole through memory.persona.persona().

Two extractors share the interface `propose(messages) -> list[Proposal]`: `RuleExtractor`
(explicit first-person statements; no model) and `ModelExtractor` (a prompt kept as versioned
data, sent through an injected `complete(messages) -> str`: memory does not import the gateway).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Callable

from memory import cells, claims, derived, facts, filememory, ix_attributes, persona, persona_rules, preferences
from memory.messages import CONTEXTS, Message, _row as _message_row
from memory.store import Store, StoreError


@dataclass
class Proposal:
    kind: str  # claim | preference | persona
    text: str  # claim text, the preference description, or the persona clause (third person)
    source_dayids: list[str]
    evidence: str  # the span of the source message that states it
    category: str = "other"
    slot: str | None = None
    confidence: float = 0.9
    attribute: str | None = None
    setting: str | None = None
    contexts: list[str] = field(default_factory=list)  # preference: the contexts it is stated for
    extractor: str = "rule"
    value: str | None = None  # persona: the slot's value (high / low, fast / slow, the clause ...)
    facet: str | None = None  # persona: the description facet the clause feeds
    intensified: bool = False  # persona: stated with an intensifier ("a real introvert")

    def public(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------- rule-based extractor
# Facts come from the parse (memory.facts); preferences from the phrase tables
# (memory.ix_attributes); persona statements from memory.persona_rules.

_SENTENCE = re.compile(r"[^.!?;\n]+[.!?;]*")
_QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d")
_HYPOTHETICAL = re.compile(r"\b(if|imagine|pretend|suppose|what if|would|wish|hypothetically)\b", re.I)


class RuleExtractor:
    """Explicit first-person statements of fact, of preference and about oneself (persona,
    memory.persona_rules); no model."""

    name = "rule"
    version = "3"  # 2: persona statements; 3: facts from the parse (memory.facts)

    def __init__(self, kinds: tuple[str, ...] = ("claim", "preference", "persona")):
        self.kinds = kinds  # the reply path asks for preferences only: it does not pay for the parse

    def propose(self, msgs: list[Message]) -> list[Proposal]:
        out: list[Proposal] = []
        users = [m for m in msgs if m.sender == "user"]  # never from companion messages: they may quote memory
        parsed = facts.extract_many([m.text for m in users]) if "claim" in self.kinds else [[] for _ in users]
        for m, found in zip(users, parsed):
            out += [Proposal("claim", f.text, [m.dayid], f.evidence, category=f.category, slot=f.slot,
                             confidence=0.9, extractor=self.name) for f in found]
        for m in users:
            text = _QUOTED.sub(" ", m.text)  # quoted text is someone else's words
            for s in _SENTENCE.finditer(text):
                sentence = s.group(0).strip()
                if not sentence or sentence.endswith("?"):
                    continue
                if "persona" in self.kinds:
                    out += self._persona(m, sentence)
            if "preference" in self.kinds:
                out += self._preferences(m)
        return out

    def _persona(self, m: Message, sentence: str) -> list[Proposal]:
        out = []
        for h in persona_rules.find(sentence):
            if _HYPOTHETICAL.search(sentence[: h.start]):
                continue  # "if I were an introvert ..." states nothing
            out.append(Proposal("persona", h.clause, [m.dayid], h.evidence, category="persona", slot=h.slot,
                                confidence=0.8, value=h.value, facet=h.facet, intensified=h.intensified,
                                extractor=self.name))
        return out

    def _preferences(self, m: Message) -> list[Proposal]:
        """Clause by clause, gated by the parse: the rule phrases, then the classifier over
        sentence embeddings for what people say in their own words (memory.preferences)."""
        return [Proposal("preference", ix_attributes.describe(f.attribute, f.setting), [m.dayid], f.evidence,
                         category="preference", confidence=0.8 if f.road == "rule" else round(0.8 * f.probability, 3),
                         attribute=f.attribute, setting=f.setting, contexts=f.contexts,
                         extractor=self.name if f.road == "rule" else preferences.NAME)
                for f in preferences.find(m.text, m.context, rules=preference_phrases)]


@functools.lru_cache(maxsize=1)
def _compiled(version: int) -> tuple:
    return (re.compile(ix_attributes.BOTH), re.compile(ix_attributes.WORK), re.compile(ix_attributes.PERSONAL),
            [(re.compile(p), a, s) for p, a, s in ix_attributes.PHRASES])


def preference_phrases(sentence: str, said_in: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The contexts a sentence speaks for (its own unless it names work, personal or both) and the
    (attribute, setting, words) it states; within an attribute the first matching phrase wins."""
    both, work, personal, phrases = _compiled(len(ix_attributes.PHRASES))
    n = derived.norm(sentence)
    contexts = list(CONTEXTS) if both.search(n) else ["work"] if work.search(n) else \
        ["personal"] if personal.search(n) else [said_in]
    found, done = [], set()
    for pattern, attribute, setting in phrases:
        if attribute not in done and (hit := pattern.search(n)):
            done.add(attribute)
            found.append((attribute, setting, hit.group(0)))
    return contexts, found


_compiled(len(ix_attributes.PHRASES))  # compiled at import, not on a participant's first turn


# ---------------------------------------------------------------- model-based extractor

PROMPTS = {
    "extract-v1": (
        "You extract what a person explicitly stated about themselves from their messages.\n"
        "Return one JSON object per line, nothing else. Facts: "
        '{"kind": "claim", "text": "<third-person statement, e.g. Works nights at the hospital>", '
        '"category": "<work|residence|family|relationships|health|pets|biographical|other>", '
        '"slot": "<what a later statement would contradict, e.g. residence, or null>", '
        '"source_dayids": ["<dayid>"], "evidence": "<the exact words quoted from that message>"}. '
        "Preferences about how the assistant should behave: "
        '{"kind": "preference", "attribute": "<ATTRS>", "setting": "<one of its settings>", '
        '"source_dayids": ["<dayid>"], "evidence": "<exact words>"}.\n'
        "Attributes and settings: <SETTINGS>. Only what the person said outright; no guesses."
    ),
}
PROMPTS["extract-v2"] = PROMPTS["extract-v1"] + (
    "\nHow the person describes themselves (persona): "
    '{"kind": "persona", "slot": "<big_five:TRAIT, or FACET:aspect, or quirk>", '
    '"value": "<high|low for a Big Five trait; a short word for an aspect; omit for a quirk>", '
    '"facet": "<one of FACETS, or null>", "text": "<third-person clause, e.g. Always plans everything ahead>", '
    '"source_dayids": ["<dayid>"], "evidence": "<exact words>"}. Big Five traits: <TRAITS>. '
    "Only what they say of themselves, never what they deny (\"I'm not shy\" says nothing)."
)
PROMPT_VERSION = "extract-v1"


class ModelExtractor:
    """A model proposes; the same verification decides. `complete(messages) -> str` is injected."""

    name = "model"
    needs_model = True

    def __init__(self, complete: Callable[[list[dict]], str], prompt: str = PROMPT_VERSION, batch: int = 20):
        self.complete, self.prompt, self.batch = complete, prompt, batch
        self.version = prompt

    def _system(self) -> str:
        return (PROMPTS[self.prompt].replace("<ATTRS>", "|".join(ix_attributes.ATTRIBUTES))
                .replace("<SETTINGS>", json.dumps({a: v["settings"] for a, v in ix_attributes.ATTRIBUTES.items()}))
                .replace("<TRAITS>", ", ".join(persona_rules.TRAITS))
                .replace("<FACETS>", ", ".join(persona_rules.FACETS)))

    def propose(self, msgs: list[Message]) -> list[Proposal]:
        users = [m for m in msgs if m.sender == "user"]
        by_dayid = {m.dayid: m for m in users}
        out: list[Proposal] = []
        for i in range(0, len(users), self.batch):
            chunk = users[i : i + self.batch]
            body = "\n".join(f"[{m.dayid}] {m.text}" for m in chunk)
            raw = self.complete([{"role": "system", "content": self._system()}, {"role": "user", "content": body}])
            for line in (raw or "").splitlines():
                line = line.strip().strip(",")
                if not line.startswith("{"):
                    continue
                try:
                    d = json.loads(line)
                    src = [s for s in d.get("source_dayids") or [] if isinstance(s, str)]
                    ctx = [by_dayid[src[0]].context] if src and src[0] in by_dayid else []
                    if d.get("kind") == "preference":
                        ix_attributes.check(d["attribute"], d["setting"])
                        out.append(Proposal("preference", ix_attributes.describe(d["attribute"], d["setting"]), src,
                                            str(d.get("evidence", "")), category="preference", confidence=0.7,
                                            attribute=d["attribute"], setting=d["setting"], contexts=ctx,
                                            extractor=self.name))
                    elif d.get("kind") == "persona" and d.get("text"):
                        out.append(_model_persona(d, src, self.name))
                    elif d.get("kind") == "claim" and d.get("text"):
                        out.append(Proposal("claim", str(d["text"]), src, str(d.get("evidence", "")),
                                            category=str(d.get("category") or "other"), slot=d.get("slot") or None,
                                            confidence=0.7, extractor=self.name))
                except (ValueError, KeyError, TypeError, StoreError):
                    continue  # a malformed line is skipped, not guessed at
        return out


class Combined:
    """The rule extractor and a capable model together: the model adds what the rules miss.
    A model claim for a slot the rules already read from the same message is dropped, so two
    wordings of one statement do not supersede each other."""

    name = "rule+model"

    def __init__(self, *extractors):
        self.extractors = extractors
        self.version = "+".join(f"{e.name}:{e.version}" for e in extractors)

    def propose(self, msgs: list[Message]) -> list[Proposal]:
        out: list[Proposal] = []
        for e in self.extractors:
            taken = {(d, p.slot) for p in out if p.kind == "claim" and p.slot for d in p.source_dayids}
            out += [p for p in e.propose(msgs)
                    if not (p.kind == "claim" and p.slot and any((d, p.slot) in taken for d in p.source_dayids))]
        return out


class RuleAndModel(Combined):
    """The rules, then a capable model through `complete` (what background consolidation runs
    when the model is marked capable)."""

    needs_model = True

    def __init__(self, complete: Callable[[list[dict]], str], prompt: str = "extract-v2"):
        super().__init__(RuleExtractor(), ModelExtractor(complete, prompt=prompt))


def build(name: str, complete: Callable[[list[dict]], str] | None = None):
    """The registered extractor NAME (memory.registry kind "extractor"); one that asks a model
    (`needs_model`) is given `complete(messages) -> str`."""
    from memory import registry

    factory = registry.get("extractor", name)
    if not getattr(factory, "needs_model", False):
        return factory()
    if complete is None:
        raise ValueError(f"extractor {name!r} asks a model: give it a complete(messages) function")
    return factory(complete)


def _model_persona(d: dict, src: list[str], extractor: str) -> Proposal:
    """A model's persona line as a Proposal; an unknown trait, value or facet raises StoreError."""
    clause = str(d["text"]).strip()
    slot, value = str(d.get("slot") or ""), d.get("value")
    facet = d.get("facet") or None
    if slot == "quirk" or slot.endswith(":*"):  # open-ended: the clause is the value
        value = persona_rules.clause_key(clause)
        slot = f"{slot.removesuffix(':*')}:{value}"
    elif facet is None and not slot.startswith("big_five:"):
        facet = slot.split(":", 1)[0]
    persona.check(slot, str(value or ""), facet)
    evidence = str(d.get("evidence", ""))
    return Proposal("persona", clause, src, evidence, category="persona", slot=slot, confidence=0.7,
                    value=str(value), facet=facet, intensified=bool(persona_rules.INTENSIFIERS.search(evidence)),
                    extractor=extractor)


# ---------------------------------------------------------------- verify

_STOP = set("i me my mine we our you your a an the is am are was were be been to of in on at for and or but so "
            "with as by it its that this has have had do does did not no just".split())
_STATE_VERBS = {"works", "lives", "has", "is", "called", "wants", "prefers", "years", "old", "their"}


def content_words(text: str) -> set[str]:
    return {w for w in derived.norm(text).split() if w not in _STOP and w not in _STATE_VERBS}


def _said(words: set[str], said: set[str]) -> bool:
    """Every claim word is in the message, allowing the third person a claim is written in
    ("Plays bass" from "I play bass", "Studies" from "study", "Goes" from "go")."""
    def base(w):
        return {w, w[:-1], w[:-2], w[:-3] + "y"} if w.endswith("s") else {w}
    return all(base(w) & said for w in words)


def _only_hypothetical(ev: str, found: list[Message]) -> bool:
    """True when every sentence quoting the evidence asks or supposes rather than states."""
    for m in found:
        for sent in _SENTENCE.finditer(_QUOTED.sub(" ", m.text)):
            ns = derived.norm(sent.group(0))
            i = ns.find(ev)
            if i < 0:
                continue
            if not sent.group(0).strip().endswith("?") and not _HYPOTHETICAL.search(ns[:i]):
                return False
    return True


def _only_negated(evidence: str, found: list[Message]) -> bool:
    """True when every sentence quoting the evidence negates it ("I don't think I'm shy").
    Looked for in the sentence as written (commas end a clause), else in its normalized form."""
    straight = lambda t: t.replace("\u2019", "'").replace("\u2018", "'").lower()  # noqa: E731
    raw_ev, ev = straight(evidence.strip()), derived.norm(evidence)
    for m in found:
        for sent in _SENTENCE.finditer(_QUOTED.sub(" ", m.text)):
            raw = straight(sent.group(0))
            i = raw.find(raw_ev) if raw_ev else -1
            if i >= 0:
                if not persona_rules.negated(raw, i):
                    return False
                continue
            ns = derived.norm(sent.group(0))
            i = ns.find(ev)
            if i >= 0 and not persona_rules.negated(ns, i):
                return False
    return True


@dataclass
class Verdict:
    verdict: str  # supported | repairable | unsupported | refused
    reason: str
    sources: list[tuple[str, int]]
    context: str | None


def verify(store: Store, participant: str, p: Proposal) -> Verdict:
    """Check a proposal against the messages it cites."""
    if not p.source_dayids:
        return Verdict("unsupported", "cites no message", [], None)
    marks = ",".join("?" * len(p.source_dayids))
    found = [_message_row(r) for r in store.conn.execute(
        f"SELECT * FROM messages WHERE participant=? AND dayid IN ({marks}) ORDER BY ordinal",
        (participant, *p.source_dayids))]
    if len(found) < len(set(p.source_dayids)):
        missing = sorted(set(p.source_dayids) - {m.dayid for m in found})
        if not found:
            return Verdict("unsupported", f"cited messages do not exist: {missing}", [], None)
    if any(m.sender != "user" for m in found):
        return Verdict("refused", "cites a companion message: memory text is not captured back", [], None)
    sources = [(m.dayid, m.ordinal) for m in found]
    ev = derived.norm(p.evidence)
    if ev and any(ev in derived.norm(m.text) for m in found):
        if _only_hypothetical(ev, found) and not (
                p.kind == "preference" and any(preferences.still_stated(p.evidence, m.text) for m in found)):
            return Verdict("unsupported", "the cited words are asked, supposed, quoted from someone else or span sentences", sources,
                           found[-1].context)
        if p.kind == "persona" and _only_negated(p.evidence, found):
            return Verdict("unsupported", "the cited words are negated in the message", sources, found[-1].context)
        if p.kind == "claim" and not _said(content_words(p.text), content_words(" ".join(m.text for m in found))):
            return Verdict("repairable", "evidence quoted, but the claim says more than it", sources, found[-1].context)
        return Verdict("supported", "evidence found in the cited message", sources, found[-1].context)
    words = content_words(p.text if p.kind == "claim" else p.evidence)
    said = content_words(" ".join(m.text for m in found))
    if words and _said(words, said):
        return Verdict("repairable", "evidence not verbatim; every content word is in the cited message",
                       sources, found[-1].context)
    return Verdict("unsupported", "the cited messages do not state it", sources, found[-1].context)


# ---------------------------------------------------------------- merge / consolidate

@dataclass
class Report:
    participant: str
    extractor: str
    messages: int = 0
    proposals: int = 0
    verdicts: dict = field(default_factory=dict)
    tombstoned: int = 0
    claims: dict = field(default_factory=dict)  # added / duplicate / superseded
    cells: dict = field(default_factory=dict)
    persona: dict = field(default_factory=dict)  # added / duplicate / superseded
    lines_added: int = 0
    lines_refused: dict = field(default_factory=dict)  # budget / recapture / duplicate
    processed_ordinal: int = 0
    regenerating: frozenset = field(default_factory=frozenset, repr=False)  # rebuild: lines that stood before

    def public(self) -> dict:
        out = asdict(self)
        out.pop("regenerating")
        return out


def _count(d: dict, key: str) -> None:
    d[key] = d.get(key, 0) + 1


def _line(store, participant, report, *, origin, old_origin, scope, text, sources, at, budget_chars):
    """Give a new item its file-memory line: replace its predecessor's line, or add one."""
    try:
        old = filememory.line_for_origin(store, participant, old_origin) if old_origin else None
        if old is not None:
            filememory.replace(store, participant, old.id, text, sources=sources, origin=origin, at=at,
                               budget_chars=budget_chars, regenerating=report.regenerating)
        else:
            filememory.add(store, participant, scope, text, sources=sources, origin=origin, at=at,
                           budget_chars=budget_chars, regenerating=report.regenerating)
        report.lines_added += 1
    except filememory.MemoryFull:
        _count(report.lines_refused, "budget")
    except filememory.Recapture:
        _count(report.lines_refused, "recapture")
    except StoreError:
        _count(report.lines_refused, "duplicate")


def _merge_persona(store: Store, participant: str, p: Proposal, v: Verdict, report: Report) -> None:
    keys = (persona.key_text(p.slot, p.value), persona.slot_key(p.slot))
    sources = [(d, o) for d, o in v.sources if not any(derived.tombstoned(store.conn, participant, d, k) for k in keys)]
    if not sources:
        report.tombstoned += 1
        return
    _, action = persona.add(store, participant, slot=p.slot, value=p.value, clause=p.text, sources=sources,
                            facet=p.facet, intensified=p.intensified, verdict=v.verdict, origin=p.extractor)
    _count(report.persona, action)


def merge(store: Store, participant: str, p: Proposal, v: Verdict, report: Report,
          budget_chars: int = filememory.DEFAULT_BUDGET_CHARS) -> None:
    if p.kind == "persona":
        return _merge_persona(store, participant, p, v, report)
    if p.kind == "claim":
        key_texts = {None: p.text}
    else:
        key_texts = {c: cells.key_text(c, p.attribute, p.setting) for c in (p.contexts or [v.context])}
    for ctx, key_text in key_texts.items():
        slot_key = f"slot:{p.slot}" if p.kind == "claim" and p.slot else None
        sources = [(d, o) for d, o in v.sources if not derived.tombstoned(store.conn, participant, d, key_text)
                   and not (slot_key and derived.tombstoned(store.conn, participant, d, slot_key))]
        if not sources:
            report.tombstoned += 1
            continue
        at = sources[-1][1]
        confidence = p.confidence if v.verdict == "supported" else round(p.confidence * 0.6, 3)
        if p.kind == "claim":
            prev = store.conn.execute(
                "SELECT id FROM memory_claims WHERE participant=? AND slot=? AND status='current'",
                (participant, p.slot)).fetchone() if p.slot else None
            claim, action = claims.add(store, participant, text=p.text, category=p.category, sources=sources,
                                       context=v.context or "personal", slot=p.slot, confidence=confidence,
                                       verdict=v.verdict, origin=p.extractor)
            _count(report.claims, action)
            if action != "duplicate":
                _line(store, participant, report, origin=f"claim:{claim.id}",
                      old_origin=f"claim:{prev['id']}" if prev and action == "superseded" else None,
                      scope=claim.context, text=claim.text, sources=sources, at=at, budget_chars=budget_chars)
        else:
            prev = store.conn.execute(
                "SELECT id FROM memory_cells WHERE participant=? AND context=? AND attribute=? AND status='current'",
                (participant, ctx, p.attribute)).fetchone()
            cell, action = cells.set_(store, participant, context=ctx, attribute=p.attribute, setting=p.setting,
                                      sources=sources, evidence=p.evidence, verdict=v.verdict, origin=p.extractor)
            _count(report.cells, action)
            if action != "duplicate":
                _line(store, participant, report, origin=f"cell:{cell.id}",
                      old_origin=f"cell:{prev['id']}" if prev and action == "superseded" else None,
                      scope=ctx, text=cell.text, sources=sources, at=at, budget_chars=budget_chars)


def consolidate(store: Store, participant: str, extractor=None, upto: int | None = None,
                budget_chars: int = filememory.DEFAULT_BUDGET_CHARS, batch: int = 200,
                regenerating: frozenset = frozenset()) -> Report:
    """Run extraction over the messages not yet processed (ordinal above the high-water mark,
    below `upto`), verify, merge, and advance the mark. Safe to run again: merging is idempotent."""
    extractor = extractor or RuleExtractor()
    report = Report(participant, f"{extractor.name}:{extractor.version}")
    report.regenerating = regenerating
    start = derived.processed_ordinal(store, participant)
    end = upto if upto is not None else derived.effective_ordinal(store, participant) + 1
    report.processed_ordinal = start
    while True:
        rows = store.conn.execute(
            "SELECT * FROM messages WHERE participant=? AND ordinal>? AND ordinal<? ORDER BY ordinal LIMIT ?",
            (participant, report.processed_ordinal, end, batch)).fetchall()
        if not rows:
            break
        msgs = [_message_row(r) for r in rows]
        report.messages += len(msgs)
        proposals = extractor.propose(msgs)
        report.proposals += len(proposals)
        order = {m.dayid: m.ordinal for m in msgs}
        proposals.sort(key=lambda p: max((order.get(d, 0) for d in p.source_dayids), default=0))
        for p in proposals:
            v = verify(store, participant, p)
            _count(report.verdicts, v.verdict)
            with store.transaction() as conn:
                derived.log(conn, participant, "proposal", None, v.verdict,
                            {"text": p.text, "kind": p.kind, "sources": p.source_dayids, "reason": v.reason,
                             "extractor": p.extractor}, p.text)
            if v.verdict in ("supported", "repairable"):
                merge(store, participant, p, v, report, budget_chars)
        report.processed_ordinal = msgs[-1].ordinal
        with store.transaction() as conn:
            derived.set_processed(conn, participant, report.processed_ordinal)
    return report


def rebuild(store: Store, participant: str, extractor=None,
            budget_chars: int = filememory.DEFAULT_BUDGET_CHARS) -> Report:
    """Derive claims, cells and persona items again from the full history. Kept: tombstones
    (deleted items stay deleted), hand-written file lines, file-memory versions, persona items
    entered by hand (applied again on top). Derived lines are regenerated."""
    with store.transaction() as conn:
        if conn.execute("SELECT 1 FROM participants WHERE participant=?", (participant,)).fetchone() is None:
            raise StoreError(f"unknown participant {participant!r}")
        corrections = [dict(r) for r in conn.execute(
            "SELECT * FROM memory_claims WHERE participant=? AND origin='manual' AND status='current' ORDER BY id",
            (participant,))]
        # Lines that stand now may come back although they were injected into prompts since:
        # the rebuild re-derives them from the participant's own words, it does not re-capture them.
        regenerating = frozenset(r["norm"] for r in conn.execute(
            "SELECT norm FROM memory_file_lines WHERE participant=? AND status='current' AND "
            "(origin LIKE 'claim:%' OR origin LIKE 'cell:%')", (participant,)))
        conn.execute("DELETE FROM memory_file_lines WHERE participant=? AND (origin LIKE 'claim:%' OR origin LIKE 'cell:%')",
                     (participant,))
        manual_persona = [dict(r) for r in conn.execute(
            "SELECT * FROM memory_persona WHERE participant=? AND origin='manual' AND status='current' ORDER BY id",
            (participant,))]
        conn.execute("DELETE FROM memory_claims WHERE participant=?", (participant,))
        conn.execute("DELETE FROM memory_cells WHERE participant=?", (participant,))
        conn.execute("DELETE FROM memory_persona WHERE participant=?", (participant,))
        conn.execute("DELETE FROM memory_events WHERE participant=? AND kind IN ('claim', 'cell', 'persona', 'proposal')",
                     (participant,))
        derived.set_processed(conn, participant, 0)
    report = consolidate(store, participant, extractor, budget_chars=budget_chars, regenerating=regenerating)
    # The participant's own corrections are not derivable: apply them again on top (they take
    # effect now, at the newest message, not at the time they were first made).
    for r in corrections:
        prev = store.conn.execute("SELECT id FROM memory_claims WHERE participant=? AND slot=? AND status='current'",
                                  (participant, r["slot"])).fetchone() if r["slot"] else None
        c, action = claims.add(store, participant, text=r["text"], category=r["category"],
                               sources=[tuple(x) for x in json.loads(r["sources"])], context=r["context"],
                               slot=r["slot"], confidence=r["confidence"], verdict=r["verdict"], origin="manual")
        if action != "duplicate":
            _line(store, participant, report, origin=f"claim:{c.id}", old_origin=f"claim:{prev['id']}" if prev else None,
                  scope=c.context, text=c.text, sources=[], at=c.valid_from, budget_chars=budget_chars)
    for r in manual_persona:
        for d, o, inten, clause in json.loads(r["sources"]):
            persona.add(store, participant, slot=r["slot"], value=r["value"], clause=clause, sources=[(d, o)],
                        facet=r["facet"], intensified=bool(inten), verdict=r["verdict"], origin="manual")
    return report


# ---------------------------------------------------------------- export

def profile_rows(store: Store, participant: str) -> list[dict]:
    """profile.jsonl rows (docs/FORMAT.md), superseded claims included with their valid_to."""
    out = []
    for c in claims.all_(store, participant):
        out.append({"id": f"c{c.id:04d}", "text": c.text, "category": c.category, "confidence": c.confidence,
                    "valid_from": c.from_dayid, "valid_to": c.to_dayid, "source_dayids": c.source_dayids,
                    "verdict": c.verdict})
    return out
