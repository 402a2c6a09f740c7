"""Read LongMemEval into the benchmark shape: one Participant per question (each has its own haystack).

Mapping: the haystack sessions, put in time order by `haystack_dates` (a stable sort: a replay's
ordinals must follow time), become days 1, 2, ...; their turns j = 1, 2, ...; `user` is the
participant and `assistant` the companion. The question is a `QAItem` asked after the whole
haystack; its gold is every turn marked `has_answer: true`. Abstention items (`question_id`
ending in `_abs`) have no answer in the haystack and are flagged `abstention`. Repairs (empty
turns dropped, questions without evidence turns) are listed in `Release.warnings`; anything else
malformed is a `CorpusError` naming the file, item and field.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from eval.formats import ConversationRow, QAItem
from eval.readers import CorpusError, Participant, Release, _describe, load_json_list, manifest_for

RECENT_WINDOW = 3
TURN_GAP = timedelta(seconds=30)
DATE_FORMATS = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y-%m-%d %H:%M", "%Y/%m/%d", "%Y-%m-%d")


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Turn(_Model):
    role: Literal["user", "assistant"]
    content: str
    has_answer: bool = False


class Item(_Model):
    question_id: str
    question_type: str
    question: str
    answer: Any
    question_date: str | None = None
    haystack_session_ids: list[str]
    haystack_dates: list[str]
    haystack_sessions: list[list[Turn]]
    answer_session_ids: list[str] = []


def _date(where: str, value: str) -> datetime:
    for f in DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), f).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise CorpusError(f"{where}: unreadable date {value!r} (expected like '2023/05/20 (Sat) 02:21')")


def _participant_id(qid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", qid).lstrip("_.-") or "q"


def _item(item: Item, where: str, warnings: list[str]) -> Participant:
    n = len(item.haystack_sessions)
    if len(item.haystack_dates) != n or len(item.haystack_session_ids) != n:
        raise CorpusError(f"{where}: fields 'haystack_sessions', 'haystack_dates', 'haystack_session_ids' "
                          f"differ in length ({n}, {len(item.haystack_dates)}, {len(item.haystack_session_ids)})")
    dated = [(_date(f"{where}.haystack_dates[{i}]", d), i) for i, d in enumerate(item.haystack_dates)]
    order = [i for _, i in sorted(dated, key=lambda t: t[0])]  # stable: equal dates keep file order
    pid = _participant_id(item.question_id)
    rows, gold, last = [], [], None
    for day, i in enumerate(order, 1):
        start = dated[i][0]
        if last is not None and start <= last:
            start = last + TURN_GAP
        for j, t in enumerate(item.haystack_sessions[i], 1):
            ts = start + TURN_GAP * (j - 1)
            last = ts
            if not t.content.strip():
                warnings.append(f"{where}.haystack_sessions[{i}][{j - 1}]: empty turn dropped")
                continue
            dayid = f"day{day}-{j}"
            rows.append(ConversationRow(dayid=dayid, sender="user" if t.role == "user" else "companion",
                                        text=t.content, ts=ts.isoformat(), session_id=item.haystack_session_ids[i]))
            if t.has_answer:
                gold.append(dayid)
    if not rows:
        raise CorpusError(f"{where}: field 'haystack_sessions': no turns")
    abstention = item.question_id.endswith("_abs")
    if not gold and not abstention:
        warnings.append(f"{where}: question {item.question_id!r} has no turn marked has_answer; it has no gold")
    qa = QAItem(id=item.question_id, question=item.question, answer=str(item.answer), category=item.question_type,
                evidence_dayids=gold, abstention=abstention, question_date=item.question_date,
                answer_session_ids=item.answer_session_ids)
    return Participant(pid, rows, qa=[qa])


def read_longmemeval(path: str | Path, recent_window: int = RECENT_WINDOW, limit: int | None = None) -> Release:
    """Read a LongMemEval file; `limit` keeps the first N questions (each brings its whole haystack)."""
    path = Path(path)
    name = path.name
    data = load_json_list(path, "questions")
    warnings: list[str] = []
    participants: dict[str, Participant] = {}
    for i, raw in enumerate(data[:limit] if limit else data):
        where = f"{name} [{i}]"
        if not isinstance(raw, dict):
            raise CorpusError(f"{where}: expected a JSON object, got {type(raw).__name__}")
        try:
            item = Item.model_validate(raw)
        except ValidationError as e:
            raise CorpusError(f"{where}: {_describe(e)}") from None
        p = _item(item, where, warnings)
        if p.id in participants:
            raise CorpusError(f"{where}: field 'question_id': duplicate {item.question_id!r}")
        participants[p.id] = p
    if not participants:
        raise CorpusError(f"{name}: no questions")
    manifest = manifest_for(participants, recent_window, source="longmemeval", source_file=name)
    return Release(manifest, participants, path, warnings=warnings)
