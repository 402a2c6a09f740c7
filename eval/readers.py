"""Read and write a benchmark release (docs/FORMAT.md).

`read_release` validates everything it can before a single metric is computed: a corpus error
found halfway through a scoring run wastes the run, and a silently skipped row moves a number.
Every error is a `CorpusError` naming the file (relative to the release), the line and the field.
"""

from __future__ import annotations

import json
import secrets
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from consent import releasefiles
from consent.formats import describe as _describe  # one wording for the release checks and the reader
from eval.formats import ChatProbe, ConversationRow, Counts, FeedbackRow, Manifest, Persona, ProfileClaim, QAItem
from memory.keys import parse_dayid

M = TypeVar("M", bound=BaseModel)

MANIFEST = "manifest.json"
CONVERSATION = "conversation.jsonl"
PROFILE = "profile.jsonl"
PERSONA = "persona.json"
CHAT_GOLD = "chat_gold.jsonl"
QA = "qa.jsonl"
FEEDBACK = "feedback.jsonl"


class CorpusError(ValueError):
    """A release that does not follow the format; the message names file, line and field."""


@dataclass
class Participant:
    id: str
    conversation: list[ConversationRow]
    profile: list[ProfileClaim] = field(default_factory=list)
    persona: Persona | None = None
    chat_gold: list[ChatProbe] = field(default_factory=list)
    qa: list[QAItem] = field(default_factory=list)
    feedback: list[FeedbackRow] = field(default_factory=list)  # ratings of companion replies (live trials)

    @cached_property
    def index(self) -> dict[str, int]:
        """dayid -> ordinal (1-based file position, as the store numbers messages).

        Cached: treat `conversation` as immutable once the participant is built.
        """
        return {r.dayid: i for i, r in enumerate(self.conversation, 1)}

    def row(self, dayid: str) -> ConversationRow:
        return self.conversation[self.index[dayid] - 1]

    def counts(self) -> Counts:
        return Counts(messages=len(self.conversation), chat_rows=len(self.chat_gold),
                      qa=len(self.qa), claims=len(self.profile))


@dataclass
class Release:
    manifest: Manifest
    participants: dict[str, Participant]  # in manifest order
    path: Path | None = field(default=None, compare=False)
    # What a reader of a foreign corpus repaired or dropped (LoCoMo's malformed evidence ids...):
    # reports print it, so a number is never moved silently.
    warnings: list[str] = field(default_factory=list, compare=False)

    @property
    def recent_window(self) -> int:
        return self.manifest.recent_window


def manifest_for(participants: dict[str, Participant], recent_window: int, **extra) -> Manifest:
    """A manifest whose participant list and counts agree with the data (for writers)."""
    return Manifest(recent_window=recent_window, participants=list(participants),
                    counts={p: x.counts() for p, x in participants.items()}, **extra)


# --- reading -----------------------------------------------------------------------------------




def load_json_list(path: str | Path, what: str) -> list:
    """A whole-file JSON list (LoCoMo, LongMemEval), with errors that name the file."""
    name = Path(path).name
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except OSError as e:
        raise CorpusError(f"{name}: cannot read ({e.strerror})") from e
    except UnicodeDecodeError as e:
        raise CorpusError(f"{name}: not valid UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise CorpusError(f"{name}: invalid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(data, list):
        raise CorpusError(f"{name}: expected a list of {what}, got {type(data).__name__}")
    return data


def validate(where: str, model: type[M], obj) -> M:
    if not isinstance(obj, dict):
        raise CorpusError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        raise CorpusError(f"{where}: {_describe(e)}") from None


def _read_json(root: Path, rel: str, model: type[M]) -> M:
    try:
        return validate(rel, model, releasefiles.read_json(root, rel))
    except releasefiles.ReleaseFileError as e:
        raise CorpusError(str(e)) from None


# Bounded reads, no link followed (consent.releasefiles): a line over MAX_LINE_CHARS, nesting
# past its depth limit or a FIFO in place of a file is refused by name, never parsed or waited on.
MAX_LINE_CHARS = releasefiles.MAX_LINE_CHARS


def _read_jsonl(root: Path, rel: str, model: type[M]) -> list[tuple[int, M]]:
    """(line number, row) pairs; blank lines are skipped but still counted."""
    try:
        rows = releasefiles.read_jsonl(root, rel)
    except releasefiles.ReleaseFileError as e:
        raise CorpusError(str(e)) from None
    return [(n, validate(f"{rel} line {n}", model, row)) for n, row in rows]


def _resolve(where: str, name: str, dayids, index: dict[str, int], before: int | None = None) -> None:
    """Every cited dayid exists; with `before`, it also precedes that ordinal (no future gold)."""
    for d in dayids:
        if d not in index:
            raise CorpusError(f"{where}: field '{name}': {d!r} is not in the conversation")
        if before is not None and index[d] >= before:
            raise CorpusError(f"{where}: field '{name}': {d!r} does not precede the probe")


def _unique(rel: str, rows, key: str) -> None:
    seen: dict[str, int] = {}
    for n, r in rows:
        k = getattr(r, key)
        if k in seen:
            raise CorpusError(f"{rel} line {n}: field '{key}': duplicate {k!r} (first at line {seen[k]})")
        seen[k] = n


def _read_participant(root: Path, pid: str) -> Participant:
    if not (root / pid).is_dir():
        raise CorpusError(f"{MANIFEST}: participant {pid!r} has no folder {pid}/")
    rel = f"{pid}/{CONVERSATION}"
    conv = _read_jsonl(root, rel, ConversationRow)
    _unique(rel, conv, "dayid")
    prev = None
    for n, r in conv:
        # File order is the ordinal. A dayid going backwards means the exporter sorted the rows
        # (day10 before day2 as strings) or merged two logs: every window would be wrong.
        key = parse_dayid(r.dayid)
        if prev and key <= prev[1]:
            raise CorpusError(f"{rel} line {n}: field 'dayid': {r.dayid!r} comes after {prev[0]!r}; "
                              "rows must be in conversation order")
        prev = (r.dayid, key)
    p = Participant(pid, [r for _, r in conv])
    index = p.index

    def optional(name: str) -> str | None:
        return f"{pid}/{name}" if (root / pid / name).exists() else None

    if rel := optional(PROFILE):
        rows = _read_jsonl(root, rel, ProfileClaim)
        _unique(rel, rows, "id")
        for n, c in rows:
            _resolve(f"{rel} line {n}", "source_dayids", c.source_dayids, index)
            _resolve(f"{rel} line {n}", "valid_from", [c.valid_from] if c.valid_from else [], index)
            _resolve(f"{rel} line {n}", "valid_to", [c.valid_to] if c.valid_to else [], index)
        p.profile = [c for _, c in rows]
    if rel := optional(PERSONA):
        p.persona = _read_json(root, rel, Persona)
        for name, d in p.persona.evidence():
            _resolve(rel, name, [d], index)
    if rel := optional(CHAT_GOLD):
        rows = _read_jsonl(root, rel, ChatProbe)
        _unique(rel, rows, "probe_dayid")
        for n, g in rows:
            where = f"{rel} line {n}"
            _resolve(where, "probe_dayid", [g.probe_dayid], index)
            if p.row(g.probe_dayid).sender != "user":  # a probe is a participant message, verbatim
                raise CorpusError(f"{where}: field 'probe_dayid': {g.probe_dayid!r} is a companion message")
            at = index[g.probe_dayid]
            for name in ("recent_context", "episode_refs", "grounding_dayids"):
                _resolve(where, name, getattr(g, name), index, before=at)
        p.chat_gold = [g for _, g in rows]
    if rel := optional(QA):
        rows = _read_jsonl(root, rel, QAItem)
        _unique(rel, rows, "id")
        for n, q in rows:
            _resolve(f"{rel} line {n}", "evidence_dayids", q.evidence_dayids, index)
        p.qa = [q for _, q in rows]
    if rel := optional(FEEDBACK):
        rows = _read_jsonl(root, rel, FeedbackRow)
        for n, f in rows:
            _resolve(f"{rel} line {n}", "dayid", [f.dayid], index)
            if p.row(f.dayid).sender != "companion":
                raise CorpusError(f"{rel} line {n}: field 'dayid': {f.dayid!r} is a participant message: "
                                  "ratings rate companion replies")
        p.feedback = [f for _, f in rows]
    return p


def read_release(path: str | Path) -> Release:
    root = Path(path)
    if not (root / MANIFEST).is_file():
        raise CorpusError(f"{root}: no {MANIFEST} (not a release folder)")
    manifest = _read_json(root, MANIFEST, Manifest)
    participants = {pid: _read_participant(root, pid) for pid in manifest.participants}
    for pid, c in manifest.counts.items():
        have = participants[pid].counts()
        for name in Counts.model_fields:
            want = getattr(c, name)
            if want is not None and want != getattr(have, name):
                raise CorpusError(f"{MANIFEST}: field 'counts.{pid}.{name}': says {want}, "
                                  f"the files hold {getattr(have, name)} (truncated or stale?)")
    return Release(manifest, participants, root)


# --- writing -----------------------------------------------------------------------------------


def _dump(m: BaseModel) -> str:
    return json.dumps(m.model_dump(mode="json"), ensure_ascii=False)


def _write_jsonl(path: Path, rows: list[BaseModel]) -> None:
    path.write_text("".join(_dump(r) + "\n" for r in rows), encoding="utf-8")


def _write_json(path: Path, m: BaseModel) -> None:
    path.write_text(json.dumps(m.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def write_release(release: Release, path: str | Path, overwrite: bool = False) -> Path:
    """Write `release` to the folder `path` and return it.

    The release is written to a temporary sibling, read back with `read_release` (so nothing
    invalid is ever published, and the round trip is checked), then moved into place. With
    `overwrite`, an existing release at `path` is replaced; any other existing folder is refused.
    Empty optional lists (profile, chat_gold, qa) and a missing persona write no file.
    """
    dest = Path(path)
    if list(release.manifest.participants) != list(release.participants):
        raise CorpusError(f"manifest participants {release.manifest.participants} do not match "
                          f"the release's {list(release.participants)}")
    stray = [pid for pid, p in release.participants.items() if p.id != pid]
    if stray:
        raise CorpusError(f"participants filed under another id: {stray}")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        if not overwrite:
            raise FileExistsError(f"{dest} exists; pass overwrite=True to replace a release")
        if not (dest / MANIFEST).is_file():  # never delete a folder that is not a release
            raise FileExistsError(f"{dest} exists and is not a release; refusing to replace it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{secrets.token_hex(4)}"  # mkdir (not mkdtemp): keeps umask modes
    tmp.mkdir()
    try:
        _write_json(tmp / MANIFEST, release.manifest)
        for pid, p in release.participants.items():
            d = tmp / pid
            d.mkdir()
            _write_jsonl(d / CONVERSATION, p.conversation)
            for name, rows in ((PROFILE, p.profile), (CHAT_GOLD, p.chat_gold), (QA, p.qa), (FEEDBACK, p.feedback)):
                if rows:
                    _write_jsonl(d / name, rows)
            if p.persona is not None:
                _write_json(d / PERSONA, p.persona)
        back = read_release(tmp)
        if back != release:
            raise CorpusError("release does not survive a write/read round trip (a value JSON cannot hold?)")
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
