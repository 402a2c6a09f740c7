"""Replay a corpus through the turn's own decision path (steps 3-5), as of each probe.

    store = open_store(release, work_dir)          # ingest once per run, reused by every arm
    outcomes = replay(store, release, probes, arms, settings)

Each participant's messages are ingested once into a fresh store; then every probe is replayed
as of its position: `companion.turn.context_at` builds what the turn would see (the recent
window and everything before the probe, nothing at or after it) and `companion.turn.recall`
runs the gate, the retriever and the policy chosen by name from the registry. That is the only
road: the eval cannot score a path the live companion does not take. One context is built per
probe and shared by its arms, so BM25 scores and the query embedding are computed once per probe
(the context's memo), not once per arm.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel
from tqdm import tqdm

from companion.settings import Settings
from companion.trials import Arm
from companion.turn import context_at, recall, respond
from eval.ingest import ingest
from eval.readers import Participant, Release
from memory import messages
from memory.policies import count_tokens
from memory.store import Store
from memory.traces import Trace

STORE_MARK = "eval-store.json"  # which corpus a reusable work store holds
EMBED_CHUNK = 128  # below the embedder's memo size (256), so a chunk stays remembered


class Probe(BaseModel):
    """One scored item: a chat probe (a participant message) or a written question."""

    participant: str
    item: str  # probe dayid, or question id
    source: Literal["chat", "qa"]
    stratum: str  # proportional | enriched | control (chat); qa
    category: str | None = None
    tier: str | None = None
    locus: str | None = None
    scoreable: bool = True
    text: str
    as_of: int  # ordinal bound: the probe sees ordinals < as_of
    gold: list[str]
    gold_ordinals: list[int]
    broken_gold: list[str] = []
    memory_bearing: bool
    memory_bearing_strict: bool
    distant: bool
    needed_messages: int | None = None  # most recent messages that hold the whole gold set
    needed_tokens: int | None = None  # the same, in estimated tokens
    reference: str | None = None  # what a judge compares the reply with: reference_reply (chat), answer (qa)

    @property
    def key(self) -> str:
        return f"{self.participant}/{self.item}"


class Outcome(BaseModel):
    """What steps 3-5 did for one probe under one arm."""

    retrieve: bool | None = None  # None: the gate failed (the turn abstained)
    score: float | None = None
    ranked: list[str] = []  # step 4: dayids, best first
    applied: list[str] = []  # step 5: what entered the prompt
    error: str | None = None  # a fault in steps 3-5
    reply: str | None = None  # steps 6-7: the shown text (arms that reply; None on a model fault)
    reply_error: str | None = None
    reply_tokens: dict = {}


@dataclass
class ArmSpec:
    label: str  # the row name in reports
    arm: Arm
    wants: Callable[[Probe], bool]  # which probes this arm is replayed on
    track: str = ""
    reply: bool = False  # also run steps 6-7 (generate, wrap): the judged tracks need the shown text

    @property
    def key(self) -> str:  # labels repeat across tracks (the oracle gate, the oracle retriever)
        return f"{self.track}:{self.label}"


# --- probes -------------------------------------------------------------------------------------


def _budget(p: Participant, as_of: int, gold_ordinals: list[int]) -> tuple[int | None, int | None]:
    if not gold_ordinals:
        return None, None
    first = min(gold_ordinals)
    tokens = sum(count_tokens(r.text) for r in p.conversation[first - 1: as_of - 1])
    return as_of - first, tokens


def _probe(p: Participant, w: int, **kw) -> Probe:
    as_of, gold = kw["as_of"], kw["gold"]
    ords = [p.index[d] for d in gold]
    outside = [o < as_of - w for o in ords]  # the recent window is ordinals as_of-w .. as_of-1
    mb = any(outside)
    on_screen = kw.pop("on_screen", None)
    strict = mb and on_screen != "clear"  # under the strict reading, clear on-screen referents do not count
    nm, nt = _budget(p, as_of, ords)
    return Probe(participant=p.id, gold_ordinals=ords, memory_bearing=mb, memory_bearing_strict=strict,
                 distant=bool(outside) and all(outside), needed_messages=nm, needed_tokens=nt, **kw)


def probes_of(release: Release, seed: int = 0) -> list[Probe]:
    """Every chat probe (asked at its own position) and question (asked after the whole history)."""
    w = release.recent_window
    out: list[Probe] = []
    for pid, p in release.participants.items():
        mine = []
        for g in p.chat_gold:
            mine.append(_probe(p, w, item=g.probe_dayid, source="chat", stratum=g.stratum, category=g.category,
                               tier=g.tier, locus=g.locus_verified or g.locus, scoreable=g.scoreable,
                               text=p.row(g.probe_dayid).text, as_of=p.index[g.probe_dayid],
                               gold=list(g.grounding_dayids), on_screen=g.referent_on_screen,
                               reference=g.reference_reply))
        end = len(p.conversation) + 1
        for q in p.qa:
            cat = None if q.category is None else str(getattr(q, "category_name", None) or q.category)
            mine.append(_probe(p, w, item=q.id, source="qa", stratum="qa", category=cat, text=q.question,
                               as_of=end, gold=list(q.evidence_dayids), reference=q.answer))
        _break(mine, pid, seed)
        out += mine
    return out


def _break(probes: list[Probe], pid: str, seed: int) -> None:
    """Broken-oracle gold: the gold of a different probe of the same participant.

    Chosen deterministically (seed, participant, item), preferring gold that shares nothing with
    the probe's own, so a scorer that rewards any gold at all is caught.
    """
    for p in probes:
        if not p.gold:
            continue
        others = [q for q in probes if q.item != p.item and q.gold and q.source == p.source]
        disjoint = [q for q in others if not set(q.gold) & set(p.gold)]
        pool = sorted(disjoint or others, key=lambda q: q.item)
        if pool:
            p.broken_gold = list(random.Random(f"{seed}:{pid}:{p.item}").choice(pool).gold)


# --- the store ------------------------------------------------------------------------------------


def corpus_hash(release: Release) -> str:
    """sha256 over the corpus files as read (the release folder, or the single source file)."""
    h = hashlib.sha256()
    root = release.path
    if root is None:
        h.update(json.dumps(release.manifest.model_dump(mode="json"), sort_keys=True).encode())
    elif root.is_file():
        h.update(root.read_bytes())
    else:
        for f in sorted(x for x in root.rglob("*") if x.is_file()):
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()


def open_store(release: Release, work: Path, digest: str, progress: bool = True) -> tuple[Store, bool]:
    """A store holding the corpus: reused when `work` already holds this corpus, else built fresh.

    Returns (store, reused). Ingest is the dominant cost of a run (embedding every message), so a
    second track over the same corpus and work dir skips it.
    """
    work = Path(work)
    mark = work / STORE_MARK
    want = {"corpus_sha256": digest,
            "messages": {pid: len(p.conversation) for pid, p in release.participants.items()}}
    if mark.exists() and json.loads(mark.read_text()) == want:
        return Store(work, synchronous="NORMAL"), True  # a rebuildable replay copy
    if work.exists() and any(work.iterdir()) and not mark.exists():
        raise FileExistsError(f"{work} holds something other than an eval store; refusing to reuse it")
    if mark.exists():  # another corpus: start over
        mark.unlink()
        for f in work.iterdir():
            if f.name.startswith("companion.db"):
                f.unlink()
    store = Store(work, synchronous="NORMAL")
    total = sum(len(p.conversation) for p in release.participants.values())
    with tqdm(total=total, desc="ingest", unit="msg", disable=not progress) as bar:
        for pid, p in release.participants.items():
            for i in range(0, len(p.conversation), 512):
                ingest(store, pid, p.conversation[i:i + 512])
                bar.update(len(p.conversation[i:i + 512]))
            stored = messages.next_ordinal(store, pid) - 1
            if stored != len(p.conversation):  # ordinals must be the release's file positions
                raise RuntimeError(f"{pid}: stored {stored} messages of {len(p.conversation)}")
    mark.write_text(json.dumps(want))
    return store, False


# --- replay ---------------------------------------------------------------------------------------


def replay(store: Store, release: Release, probes: list[Probe], arms: list[ArmSpec], settings: Settings,
           progress: bool = True) -> dict[str, list[Outcome | None]]:
    """Outcomes per arm key, aligned with `probes` (None where the arm does not apply)."""
    s = settings.model_copy(update={"recent_window": release.recent_window})
    out: dict[str, list[Outcome | None]] = {a.key: [None] * len(probes) for a in arms}
    if len(out) != len(arms):
        raise ValueError("two arms share a key: give each (track, label) once")
    todo = [i for i, p in enumerate(probes) if any(a.wants(p) for a in arms)]
    bar = tqdm(total=len(todo), desc="replay", unit="probe", disable=not progress)
    for c in range(0, len(todo), EMBED_CHUNK):
        chunk = todo[c:c + EMBED_CHUNK]
        # One batched encode of the next probes' texts fills the embedder's memo, so the query
        # embedding each dense gate or retriever asks for is free (single encodes cost ~10x more).
        store.vectors.embedder.encode([probes[i].text for i in chunk])
        for i in chunk:
            _one(store, probes[i], [a for a in arms if a.wants(probes[i])], s, out, i)
            bar.update()
    bar.close()
    return out


def _one(store: Store, p: Probe, mine: list[ArmSpec], s: Settings, out: dict, i: int) -> None:
    """Steps 3-5 for one probe under each of its arms, from one shared context; 6-7 for arms that reply.

    A reply is never logged (step 8 is the live turn's): nothing a replayed probe says enters the
    corpus timeline, so no probe changes what a later probe sees.
    """
    ctx = context_at(store, p.participant, p.text, p.as_of, "personal", s,
                     extra={"gold": p.gold, "broken_gold": p.broken_gold})
    for a in mine:
        trace = Trace(participant=p.participant, dayid=p.item if p.source == "chat" else None)
        decision, hits, applied = recall(ctx, a.arm, s, trace)
        err = "; ".join(f"{e.step}: {e.type}: {e.message}" for e in trace.errors) or None
        o = Outcome(
            retrieve=None if decision is None else decision.retrieve,
            score=None if decision is None else decision.score,
            ranked=[h.dayid for h in hits], applied=[h.dayid for h in applied.items], error=err)
        if a.reply:  # steps 6-7: the turn's own prompt, gateway call and wrapper; nothing stored
            seen = len(trace.errors)
            o.reply = respond(ctx, applied, s, trace, time=ctx.time).shown
            o.reply_tokens = dict(trace.tokens or {})
            if o.reply is None:
                o.reply_error = "; ".join(f"{e.step}: {e.type}: {e.message}" for e in trace.errors[seen:]) \
                    or "no reply (model fault)"
        out[a.key][i] = o
