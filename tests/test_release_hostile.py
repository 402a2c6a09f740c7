"""Hostile release folders (issue 22 items 4, 6, 12): `release check` and `annotate finalize`
refuse what a release may not hold by name and exit 2, never follow a link, never block on a FIFO,
never hold an unbounded line, and finalize writes nothing anywhere when it refuses. The listed
attacks, then a seeded generator of hostile folders built from the same parts."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from companion.cli import main
from consent import annotate as A
from consent import releasecheck

LINES = ["my cat sleeps on the sofa", "the tomatoes are ripe", "is my cat still sleepy?", "reading a novel"]


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A release exported by the product, with one probe annotated by rita (finalize has work)."""
    from memory.store import Store
    from tests.conftest import export_garden_chat

    base = tmp_path_factory.mktemp("hostile")
    mp = pytest.MonkeyPatch()
    mp.setenv("COMPANION_HOME", str(base / "home"))
    store = Store(base / "home")
    try:
        export_garden_chat(store, base / "rel", LINES)
    finally:
        store.close()
        mp.undo()
    A.set_many(base / "rel", "U01/day1-5", {
        "A": {"locus": "episode", "note": "asks about the cat"},
        "B": {"episode_refs": ["day1-1"], "grounding_dayids": ["day1-1"], "referent_on_screen": "no", "note": "d"},
        "C": {"tier": "basic", "category": "event_recall", "rule": "one message answers it", "note": "n"},
        "D": {"reference_reply": "Is the cat still on the sofa?", "note": "n"},
        "E": {"scoreable": True, "note": "n"}}, "rita")
    assert releasecheck.check(base / "rel").ok
    return base / "rel"


def snapshot(root: Path) -> dict:
    """Every entry under root (and root's siblings), by lstat: what finalize may not change."""
    out = {}
    for d in (root.parent,):
        for p in sorted(d.rglob("*")):
            st = os.lstat(p)
            data = p.read_bytes() if p.is_file() and not p.is_symlink() and st.st_size < 10_000_000 else None
            out[str(p)] = (st.st_mode, st.st_size, data)
    return out


def bounded(fn, seconds=120):
    """Run fn in a thread; a call that blocks (a FIFO opened for reading) fails the test instead of hanging it."""
    box = {}

    def call():
        try:
            box["r"] = fn()
        except BaseException as e:  # raised again in the test's thread
            box["e"] = e

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked"
    if "e" in box:
        raise box["e"]
    return box.get("r")


def _conv(rel):
    return rel / "U01" / "conversation.jsonl"


def _line(rel, text: bytes, at=2):
    lines = _conv(rel).read_bytes().split(b"\n")
    lines[at] = text
    _conv(rel).write_bytes(b"\n".join(lines))


def _manifest(rel, **change):
    m = json.loads((rel / "manifest.json").read_text())
    m.update(change)
    (rel / "manifest.json").write_text(json.dumps(m))


# Each case: how to plant it, and the words of its named error.
CASES = {
    "deep nesting": (lambda rel: _line(rel, b'{"dayid": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
                     "U01/conversation.jsonl line 3: JSON nested deeper than 32 levels"),
    "60 MB line": (lambda rel: _line(rel, b'{"text": "' + b"a" * 60_000_000 + b'"}'),
                   "U01/conversation.jsonl line 3: 60,000,012 characters, more than the 1,000,000"),
    "recent_window ten": (lambda rel: _manifest(rel, recent_window="ten"),
                          "manifest.json: field 'recent_window': Input should be a valid integer"),
    "non-object line": (lambda rel: _line(rel, b"[1, 2, 3]"),
                        "U01/conversation.jsonl line 3: expected a JSON object, got list"),
    "invalid UTF-8": (lambda rel: _line(rel, b'{"text": "caf\xe9"}'),
                      "U01/conversation.jsonl line 3: not valid UTF-8"),
    "5,000-digit integer": (lambda rel: _line(rel, b'{"n": ' + b"7" * 5000 + b"}"),
                            "U01/conversation.jsonl line 3: invalid JSON (Exceeds the limit (4300 digits)"),
    "list manifest": (lambda rel: (rel / "manifest.json").write_text("[]"),
                      "manifest.json: expected a JSON object, got list"),
    "/dev/zero symlink": (lambda rel: (_conv(rel).unlink(), _conv(rel).symlink_to("/dev/zero")),
                          "U01/conversation.jsonl: is a symbolic link, not a regular file"),
    "FIFO": (lambda rel: ((rel / "U01" / "chat_gold.jsonl").unlink(), os.mkfifo(rel / "U01" / "chat_gold.jsonl")),
             "U01/chat_gold.jsonl: is a FIFO, not a regular file"),
    "linked data folder": (lambda rel: (rel / "U01" / "data").symlink_to(rel.parent / "home"),
                           "U01/data: is a symbolic link of an unknown name"),
    "linked participant": (lambda rel: (shutil.move(rel / "U01", rel.parent / "U01-real"),
                                        (rel / "U01").symlink_to(rel.parent / "U01-real")),
                           "U01: is a symbolic link, not a folder"),
    "unknown file": (lambda rel: (rel / "U01" / "notes.txt").write_text("hello"),
                     "U01/notes.txt: is a regular file of an unknown name"),
    "unknown folder": (lambda rel: (rel / "scratch").mkdir(),
                       "scratch: is a folder of an unknown name"),
    "path as participant": (lambda rel: _manifest(rel, participants=["U01", "../outside"]),
                            "participant '../outside' is not of the shape U01"),
    "absolute participant": (lambda rel: _manifest(rel, participants=["/etc"]),
                             "participant '/etc' is not of the shape U01"),
}


@pytest.mark.parametrize("case", CASES)
def test_release_check_names_each_attack_and_exits_2(clean, tmp_path, case):
    rel = tmp_path / "rel"
    shutil.copytree(clean, rel)
    (tmp_path / "home").mkdir(exist_ok=True)
    plant, words = CASES[case]
    plant(rel)
    r = bounded(lambda: CliRunner().invoke(main, ["release", "check", str(rel)]))
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), (r.exception, r.output[-2000:])
    assert words in r.output, r.output[-3000:]


@pytest.mark.parametrize("case", CASES)
def test_finalize_refuses_each_attack_and_writes_nothing_anywhere(clean, tmp_path, case):
    rel = tmp_path / "rel"
    shutil.copytree(clean, rel)
    (tmp_path / "home").mkdir(exist_ok=True)
    CASES[case][0](rel)
    before = snapshot(rel)
    r = bounded(lambda: CliRunner().invoke(main, ["annotate", "finalize", str(rel), "--annotator", "rita"]))
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), (r.exception, r.output[-2000:])
    assert "nothing was written" in r.output or "not a readable release" in r.output, r.output[-2000:]
    assert snapshot(rel) == before  # true: not one byte changed, in the release or beside it


def test_finalize_copies_regular_files_only_and_never_what_a_link_reaches(clean, tmp_path):
    rel = tmp_path / "rel"
    shutil.copytree(clean, rel)

    def kinds(root):
        return {str(p.relative_to(root)): ("link" if p.is_symlink() else "dir" if p.is_dir() else "file")
                for p in root.rglob("*")}

    before = kinds(rel)
    assert {"U01/conversation.jsonl", "U01/chat_gold.jsonl", "annotations/rita.jsonl"} <= set(before)
    r = CliRunner().invoke(main, ["annotate", "finalize", str(rel), "--annotator", "rita"])
    assert r.exit_code == 0, r.output
    assert kinds(rel) == before and "link" not in before.values()
    assert oct(os.stat(rel).st_mode & 0o777) == "0o700"  # the new folder is private


# --- a seeded generator of hostile folders -------------------------------------------------------------

TARGETS = ["manifest.json", "U01/conversation.jsonl", "U01/chat_gold.jsonl", "annotations/rita.jsonl",
           "U01/profile.jsonl", "U01/persona.json", "U01/feedback.jsonl"]


def _payloads(rng: random.Random) -> list[bytes]:
    depth = rng.choice([33, 500, 5_000, 200_000])
    return [
        b'{"a": ' + b"[" * depth + b"]" * depth + b"}",
        b"{" * depth,
        b'{"text": "' + b"x" * rng.randint(1_000_001, 4_500_000) + b'"}',
        b'{"text": "' + bytes([rng.randint(0x80, 0xFF)]) + b'"}',
        b'{"n": ' + b"9" * rng.randint(4_301, 20_000) + b"}",
        rng.choice([b"[]", b"42", b'"text"', b"null", b"true", b"[{}]"]),
        json.dumps({"dayid": rng.choice([[], {}, 3, None, "x" * 50]), "sender": [1], "text": {"a": 1},
                    "ts": 7, "probe_dayid": {"x": 1}, "recent_context": "day1-1", "profile_refs": 5,
                    "grounding_dayids": [[1]], "trace": [1], "key": ["U01"], "stage": 1,
                    "participants": {"U01": 1}, "recent_window": rng.choice(["ten", -1, 1e300, [3]]),
                    "counts": [1], "sampling": "all"}).encode(),
        b"\xef\xbb\xbf" + b'{"text": "\xed\xa0\x80"}',  # a BOM, then a UTF-8-encoded lone surrogate
        b"\x00" * rng.randint(1, 100),
    ]


def _mutate(rel: Path, rng: random.Random) -> str:
    kind = rng.choice(["content", "content", "content", "link", "fifo", "name", "participant"])
    target = rel / rng.choice(TARGETS)
    if kind == "content":
        payload = rng.choice(_payloads(rng))
        target.parent.mkdir(exist_ok=True)
        if target.is_symlink() or (target.exists() and not target.is_file()):  # an earlier mutation's link or FIFO
            target.unlink()
        if target.is_file() and target.suffix == ".jsonl" and rng.random() < 0.7:
            lines = target.read_bytes().split(b"\n")
            lines.insert(rng.randint(0, len(lines)), payload)
            target.write_bytes(b"\n".join(lines))
        else:
            target.write_bytes(payload)
    elif kind == "link":
        if target.exists() or target.is_symlink():
            target.unlink()
        target.parent.mkdir(exist_ok=True)
        target.symlink_to(rng.choice(["/dev/zero", "/dev/urandom", str(rel.parent), "/etc/passwd", "missing"]))
    elif kind == "fifo":
        if target.exists() or target.is_symlink():
            target.unlink()
        target.parent.mkdir(exist_ok=True)
        os.mkfifo(target)
    elif kind == "name":
        where = rel / rng.choice(["", "U01", "annotations"])
        where.mkdir(exist_ok=True)
        name = rng.choice(["notes.txt", ".hidden", "U07", "x.jsonl.bak", "rita jsonl", "..."])
        p = where / name
        if rng.random() < 0.5:
            p.mkdir(exist_ok=True)
        else:
            p.write_text("x")
    else:
        try:
            m = json.loads((rel / "manifest.json").read_text(encoding="utf-8")) \
                if (rel / "manifest.json").is_file() and not (rel / "manifest.json").is_symlink() else None
        except ValueError:
            m = None
        if isinstance(m, dict):
            m["participants"] = rng.choice([["../../etc"], ["/tmp"], ["U01", "U01/../.."], [["U01"]], "U01",
                                            ["U1"], ["u01"]])
            (rel / "manifest.json").write_text(json.dumps(m))
    return kind


@pytest.mark.parametrize("seed", range(40))
def test_generated_hostile_folders_are_refused_by_name_without_hanging(clean, tmp_path, seed):
    rng = random.Random(seed)
    rel = tmp_path / "rel"
    shutil.copytree(clean, rel)
    kinds = [_mutate(rel, rng) for _ in range(rng.randint(1, 3))]
    report = bounded(lambda: releasecheck.check(rel))
    assert not report.ok, kinds
    assert all(f.check in releasecheck.CHECKS and f.file and f.message for f in report.failures)
    before = snapshot(rel)
    with pytest.raises(A.AnnotationError):
        bounded(lambda: A.finalize(rel, "rita"))
    assert snapshot(rel) == before, kinds
