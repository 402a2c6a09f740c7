"""Weeks of chat written by other authors, with recall questions: as `companion bench chat`
scripts, and as cases for the answer-statement selector (eval.answerselect).

A week file (eval/data/recall-authors-v1/README.md says who wrote them and how) holds one
person's 30 turns over seven days and 12 questions about what they said (9 told, 2 or more of
them about a fact they later corrected, 3 never told):

    {"persona": str, "turns": [{"id": "t01", "day": 1, "text": str}, ...],
     "questions": [{"id", "after": "t30", "text", "told": bool, "answer": str | null,
                    "alternatives": [str], "answer_turns": ["t03"]}, ...]}

    python -m eval.authorweeks script FILE [--out SCRIPT.json]   # a bench chat script of the week

The script asks each question right after its `after` turn (in file order), one turn apart;
a told question's `recall` is its answer and alternatives, a never-told one is `unknown`.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2026, 3, 2, 8, 0)  # day 1, local time


class WeekError(ValueError):
    pass


def load(path: str | Path) -> dict:
    """A week file, checked: every turn has an id, a day from 1 to 7 and text; every question an
    `after` that names a turn and, when told, an answer and answer turns said by then."""
    p = Path(path)
    try:
        week = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise WeekError(f"{p}: not a readable JSON file ({e})") from None
    turns, questions = week.get("turns"), week.get("questions")
    if not isinstance(turns, list) or not isinstance(questions, list) or not turns:
        raise WeekError(f"{p}: needs a list of 'turns' and a list of 'questions'")
    order = {}
    for n, t in enumerate(turns):
        if not isinstance(t, dict) or not t.get("id") or not str(t.get("text", "")).strip():
            raise WeekError(f"{p}: turn {n + 1} needs an id and text")
        if not isinstance(t.get("day"), int) or not 1 <= t["day"] <= 7:
            raise WeekError(f"{p}: turn {t['id']} has day {t.get('day')!r}, not 1-7")
        order[t["id"]] = n
    for q in questions:
        if q.get("after") not in order:
            raise WeekError(f"{p}: question {q.get('id')} comes after {q.get('after')!r}, which is no turn")
        if q.get("told"):
            if not q.get("answer"):
                raise WeekError(f"{p}: question {q.get('id')} is told but has no answer")
            late = [a for a in q.get("answer_turns", []) if order.get(a, 10**9) > order[q["after"]]]
            if late:
                raise WeekError(f"{p}: question {q['id']} is answered by {late}, said after it")
    return week


def _times(turns: list[dict]) -> list[datetime]:
    """Each turn's local time: day d from 08:00, a turn every 37 minutes within its day."""
    out, seen = [], {}
    for t in turns:
        k = seen.get(t["day"], 0)
        seen[t["day"]] = k + 1
        out.append(START + timedelta(days=t["day"] - 1, minutes=37 * k))
    return out


def script(week: dict, name: str = "authors-week") -> dict:
    """The week as a `companion bench chat` script (eval.benchchat's format)."""
    turns = week["turns"]
    times = _times(turns)
    after: dict[str, list[dict]] = {}
    for q in week["questions"]:
        after.setdefault(q["after"], []).append(q)
    out = []
    for t, at in zip(turns, times):
        out.append({"at": at.strftime("%Y-%m-%dT%H:%M"), "text": t["text"]})
        for k, q in enumerate(after.get(t["id"], []), 1):
            step = {"at": (at + timedelta(minutes=2 * k)).strftime("%Y-%m-%dT%H:%M"), "text": q["text"]}
            if q.get("told"):
                step["recall"] = [q["answer"], *q.get("alternatives", [])]
            else:
                step["unknown"] = "never told"
            out.append(step)
    return {"version": "benchchat-week-v1", "why": f"{name}: {week.get('persona', '')}".strip(),
            "participant": "bench-" + "".join(ch for ch in name.lower() if ch.isalnum())[:20],
            "tz": "Europe/London", "context": "personal", "turns": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.authorweeks", description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=["script"])
    ap.add_argument("file")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    try:
        s = script(load(a.file), Path(a.file).stem)
    except WeekError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(s, indent=1, ensure_ascii=False) + "\n"
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
