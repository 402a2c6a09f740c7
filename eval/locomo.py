"""Read LoCoMo (`locomo10.json`) into the benchmark shape: one Participant per conversation.

Mapping (docs/FORMAT.md): session N -> day N, its turns -> j = 1, 2, ... in order, so the
turn `D<N>:<t>` becomes `day<N>-<t>` when turns are numbered as usual. Only sessions that exist
are read (some `session_N_date_time` keys have no `session_N`). LoCoMo is a conversation
between two people: `speaker_a` is stored as the participant (`user`), `speaker_b` as the other
side (`companion`). Each message is stored as "Name: text" because the questions name the
speakers ("What did Caroline research?") and the store only knows user/companion; a shared
image's `blip_caption` is appended, as the official evaluation shows it.

Evidence is mapped by the dia_id strings the file holds, never by position: a file whose
`session_4` continues the numbering of session 3 (`D3:30`, `D3:31` ...) keeps its evidence `D3:34`
on the turn that says so. Every turn must carry a readable dia_id of its own (`D<n>:<t>`; leading
zeros read as the number, so `D30:05` is `D30:5`); a turn without one, or two turns with the same
one, is a `CorpusError` naming them: evidence could not be placed without guessing.

Every question becomes a `QAItem` asked after the whole conversation. Evidence ids are repaired
the documented ways and every repair is listed in `Release.warnings`: an entry holding several
ids ("D8:6; D9:17") is split, an empty or unparseable one is dropped, one citing an empty (dropped)
turn is dropped. An id that no turn holds is dropped with a warning only while such ids are rare
(at most `DANGLING_SHARE` of the file's evidence ids: the public file has two, annotators' slips);
more, and the reader refuses, naming them, because a numbering it does not understand would move
gold silently. Anything else malformed is a `CorpusError` naming the file and field.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from eval.formats import ConversationRow, QAItem
from eval.readers import CorpusError, Participant, Release, load_json_list, manifest_for, validate

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL_ANSWER = "Not mentioned in the conversation"  # what the official scorer expects for category 5
DIA_ID = re.compile(r"D\s*(\d+)\s*:\s*(\d+)")
SESSION = re.compile(r"^session_(\d+)$")
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")
RECENT_WINDOW = 3
DANGLING_SHARE = 0.01  # evidence ids citing no turn, as a share of all ids, dropped with a warning; more is refused
TURN_GAP = timedelta(seconds=30)  # turns carry no time of their own; they keep their order


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Turn(_Model):
    speaker: str
    dia_id: str | None = None
    text: str = ""
    blip_caption: str | None = None


class Question(_Model):
    question: str
    answer: Any = None
    adversarial_answer: Any = None
    evidence: list[Any] = []
    category: int


class Sample(_Model):
    sample_id: str
    conversation: dict[str, Any]
    qa: list[Any] = []


def _date(where: str, value) -> datetime:
    if not isinstance(value, str):
        raise CorpusError(f"{where}: expected a date string, got {value!r}")
    for f in DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), f).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise CorpusError(f"{where}: unreadable date {value!r} (expected like '1:56 pm on 8 May, 2023')")


def _participant_id(sample_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", sample_id).lstrip("_.-") or "conv"


def parse_evidence(entry, known: dict[tuple[int, int], str | None], where: str, warnings: list[str],
                   dangling: list[str] | None = None) -> list[str]:
    """Dayids for one `evidence` entry; repairs are appended to `warnings`, ids citing no turn to
    `dangling` (the caller decides whether there are too many)."""
    if not isinstance(entry, str) or not entry.strip():
        warnings.append(f"{where}: empty evidence id {entry!r} dropped")
        return []
    found = DIA_ID.findall(entry)
    if not found:
        warnings.append(f"{where}: malformed evidence id {entry!r} dropped")
        return []
    if len(found) > 1:
        warnings.append(f"{where}: evidence entry {entry!r} split into {len(found)} ids")
    out = []
    for n, t in found:
        key = (int(n), int(t))
        if key not in known:
            warnings.append(f"{where}: evidence id D{n}:{t} points at no turn; dropped")
            if dangling is not None:
                dangling.append(f"{where}: D{n}:{t}")
        elif known[key] is None:
            warnings.append(f"{where}: evidence id D{n}:{t} cites an empty turn; dropped")
        else:
            out.append(known[key])
    return out


def _conversation(sample: Sample, where: str, warnings: list[str]):
    conv = sample.conversation
    a, b = conv.get("speaker_a"), conv.get("speaker_b")
    for name, v in (("speaker_a", a), ("speaker_b", b)):
        if not isinstance(v, str) or not v:
            raise CorpusError(f"{where}.conversation: field '{name}' missing")
    sessions = sorted(int(m.group(1)) for k in conv if (m := SESSION.match(k)))
    for k in conv:  # date keys without their session are a known quirk: say so, read on
        m = re.match(r"^session_(\d+)_date_time$", k)
        if m and int(m.group(1)) not in sessions:
            warnings.append(f"{where}.conversation: {k} has no session_{m.group(1)}; skipped")
    rows: list[ConversationRow] = []
    known: dict[tuple[int, int], str | None] = {}  # (session, turn) of a dia_id -> dayid (None: an empty turn)
    placed: dict[tuple[int, int], str] = {}  # where each dia_id was seen, to name both of a duplicate
    unreadable: list[str] = []
    last = None
    for n in sessions:
        key = f"session_{n}"
        turns = conv[key]
        if not isinstance(turns, list):
            raise CorpusError(f"{where}.conversation.{key}: expected a list of turns")
        dkey = f"{key}_date_time"
        if dkey in conv:
            start = _date(f"{where}.conversation.{dkey}", conv[dkey])
        else:
            warnings.append(f"{where}.conversation: {key} has no {dkey}; dated one day after the previous session")
            start = (last or datetime(2000, 1, 1, tzinfo=timezone.utc)) + timedelta(days=1)
        if last is not None and start <= last:  # ts must keep the file's order
            start = last + TURN_GAP
        foreign: list[str] = []  # dia_ids of this session that are not numbered D<n>:...
        for j, raw in enumerate(turns, 1):
            tw = f"{where}.conversation.{key}[{j - 1}]"
            t = validate(tw, Turn, raw)
            if t.speaker not in (a, b):
                raise CorpusError(f"{tw}: field 'speaker': {t.speaker!r} is neither speaker_a ({a!r}) nor speaker_b ({b!r})")
            m = DIA_ID.fullmatch((t.dia_id or "").strip())
            if not m:
                unreadable.append(f"{key}[{j - 1}] {t.dia_id!r}")
                continue
            ident = (int(m.group(1)), int(m.group(2)))
            if ident in placed:
                raise CorpusError(f"{tw}: field 'dia_id': {t.dia_id!r} is also the dia_id of {placed[ident]}; "
                                  "evidence citing it would be ambiguous")
            placed[ident] = f"{key}[{j - 1}]"
            if ident[0] != n:
                foreign.append(t.dia_id.strip())
            text = t.text.strip()
            if t.blip_caption:
                text = f"{text} [shares a photo: {t.blip_caption}]".strip()
            ts = start + TURN_GAP * (j - 1)
            last = ts
            if not text:
                warnings.append(f"{tw}: empty turn dropped")
                known[ident] = None
                continue
            dayid = f"day{n}-{j}"
            known[ident] = dayid
            rows.append(ConversationRow(dayid=dayid, sender="user" if t.speaker == a else "companion",
                                        text=f"{t.speaker}: {text}", ts=ts.isoformat(), speaker=t.speaker,
                                        dia_id=t.dia_id))
        if foreign:
            warnings.append(f"{where}.conversation.{key}: {len(foreign)} turns numbered outside D{n}: "
                            f"({foreign[0]} .. {foreign[-1]}); evidence is mapped by these ids")
    if unreadable:
        shown = ", ".join(unreadable[:10]) + (f" and {len(unreadable) - 10} more" if len(unreadable) > 10 else "")
        raise CorpusError(f"{where}.conversation: {len(unreadable)} turns without a readable dia_id "
                          f"(D<session>:<turn>): {shown}; evidence cannot be mapped to them without guessing")
    if not rows:
        raise CorpusError(f"{where}.conversation: no session_N with turns")
    return rows, known


def read_locomo(path: str | Path, recent_window: int = RECENT_WINDOW) -> Release:
    path = Path(path)
    name = path.name
    data = load_json_list(path, "conversations")
    warnings: list[str] = []
    dangling: list[str] = []
    cited = 0
    participants: dict[str, Participant] = {}
    for i, raw in enumerate(data):
        where = f"{name} [{i}]"
        sample = validate(where, Sample, raw)
        pid = _participant_id(sample.sample_id)
        if pid in participants:
            raise CorpusError(f"{where}: field 'sample_id': duplicate {sample.sample_id!r}")
        rows, known = _conversation(sample, where, warnings)
        qa = []
        for q_i, rq in enumerate(sample.qa):
            qw = f"{where}.qa[{q_i}]"
            q = validate(qw, Question, rq)
            gold: list[str] = []
            for e_i, entry in enumerate(q.evidence):
                cited += len(DIA_ID.findall(entry)) if isinstance(entry, str) else 0
                for d in parse_evidence(entry, known, f"{qw}.evidence[{e_i}]", warnings, dangling):
                    if d not in gold:
                        gold.append(d)
            if q.category == 5:
                answer, adversarial = ADVERSARIAL_ANSWER, q.adversarial_answer
            elif q.answer is None:
                raise CorpusError(f"{qw}: field 'answer' missing (category {q.category})")
            else:
                answer, adversarial = q.answer, None
            qa.append(QAItem(id=f"{pid}-q{q_i + 1:04d}", question=q.question, answer=str(answer),
                             category=q.category, category_name=CATEGORIES.get(q.category),
                             evidence_dayids=gold, evidence_raw=q.evidence,
                             **({"adversarial_answer": str(adversarial)} if adversarial is not None else {})))
        participants[pid] = Participant(pid, rows, qa=qa)
    if not participants:
        raise CorpusError(f"{name}: no conversations")
    if dangling and len(dangling) > DANGLING_SHARE * cited:
        shown = "; ".join(dangling[:10]) + (f"; and {len(dangling) - 10} more" if len(dangling) > 10 else "")
        raise CorpusError(f"{name}: {len(dangling)} of {cited} evidence ids point at no turn (more than "
                          f"{DANGLING_SHARE:.0%}: the file numbers its turns in a way the evidence does not "
                          f"follow): {shown}")
    manifest = manifest_for(participants, recent_window, source="locomo", source_file=name)
    return Release(manifest, participants, path, warnings=warnings)
