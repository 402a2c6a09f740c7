"""What a release folder may hold, and reading it without trusting it.

A release arrives from elsewhere (a copy, an archive, a colleague's disk), so every reader of one
(`release check`, `annotate`, `finalize`, the eval reader) goes through this module:

- **Known names only.** `manifest.json` at the top, one folder per listed participant (U-number
  shape, `U01`), holding only the files of docs/FORMAT.md, and `annotations/<annotator>.jsonl`.
  Each must be a regular file (or a real folder). Anything else (a symlink anywhere, a FIFO, a
  device, a socket, a folder or a file of another name) is named by `layout` and never opened.
- **No link is followed, nothing blocks.** Files are opened relative to a folder opened with
  O_NOFOLLOW, themselves with O_NOFOLLOW | O_NONBLOCK, and fstat'ed: only a regular file is read.
- **Bounded reads.** A file over `MAX_FILE_BYTES` or a line over `MAX_LINE_CHARS` is refused by
  name before it is held in memory; JSON nested deeper than `MAX_DEPTH`, numbers too long for
  Python's int conversion, invalid UTF-8 and lines that are not JSON objects are named errors.

Every problem is a `ReleaseFileError` naming the file (relative to the release) and the line.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

MANIFEST, CONVERSATION, PROFILE, PERSONA, CHAT_GOLD, QA, FEEDBACK = (
    "manifest.json", "conversation.jsonl", "profile.jsonl", "persona.json", "chat_gold.jsonl", "qa.jsonl",
    "feedback.jsonl")
ANNOTATIONS = "annotations"
PARTICIPANT_FILES = (CONVERSATION, PROFILE, PERSONA, CHAT_GOLD, QA, FEEDBACK)
# The exporter's participant ids: U and a number (U01 ... U100 ...). Checked before any path is built.
PARTICIPANT_ID = re.compile(r"U\d{2,6}")
ANNOTATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

MAX_FILE_BYTES = 256 * 1024 * 1024  # a release of a year of daily chat is a few MB per participant
MAX_LINE_CHARS = 1_000_000  # one row; a message is at most 20,000 characters (memory.messages)
MAX_LINE_BYTES = 4 * MAX_LINE_CHARS  # what is read of a line before it is refused unread (UTF-8: <= 4 bytes a character)
_CONTINUATION = bytes(range(0x80, 0xC0))
# One text field: a message holds at most 20,000 characters (memory.messages); surrogates may make
# it a little longer. Longer text is refused unscanned (the recognizers' NER needs ~1 GB per
# 100,000 characters).
MAX_TEXT_CHARS = 40_000
MAX_DEPTH = 32  # the deepest row of the format (an annotated probe's trace) nests 4 levels


class ReleaseFileError(ValueError):
    """`check`: "files" for what a release may not hold (a link, a FIFO, a device, an unknown
    name), "schema" for a file that is there but cannot be read as the format."""

    def __init__(self, file: str, line: int | None, message: str, check: str = "schema"):
        self.file, self.line, self.message, self.check = file, line, message, check
        super().__init__(f"{file}" + (f" line {line}" if line else "") + f": {message}")


def valid_participant(pid) -> bool:
    return isinstance(pid, str) and PARTICIPANT_ID.fullmatch(pid) is not None


def annotator_log(name: str) -> bool:
    return name.endswith(".jsonl") and ANNOTATOR.fullmatch(name[:-len(".jsonl")]) is not None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


@dataclass
class Entry:
    rel: str
    kind: str  # "file" or "dir"


def layout(root: str | Path, participants: list[str]) -> tuple[list[Entry], list[tuple[str, str]]]:
    """What the release folder holds: (the known entries, [(relative path, why refused)]).

    Walks with lstat only (never following a link, never opening anything). `participants` are
    the manifest's ids; only those of U-number shape are looked into.
    """
    root = Path(root)
    known: list[Entry] = []
    bad: list[tuple[str, str]] = []
    listed = {p for p in participants if valid_participant(p)}

    def entries(rel: str) -> list[tuple[str, int]]:
        try:
            with os.scandir(root / rel if rel else root) as it:
                return sorted((e.name, e.stat(follow_symlinks=False).st_mode) for e in it)
        except OSError as e:
            bad.append((rel or ".", f"cannot be listed ({e.strerror})"))
            return []

    for name, mode in entries(""):
        if name == MANIFEST:
            if stat.S_ISREG(mode):
                known.append(Entry(name, "file"))
            else:
                bad.append((name, f"is {_kind(mode)}, not a regular file"))
        elif name == ANNOTATIONS or name in listed:
            if not stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
                bad.append((name, f"is {_kind(mode)}, not a folder"))
                continue
            known.append(Entry(name, "dir"))
            allowed = annotator_log if name == ANNOTATIONS else (lambda n: n in PARTICIPANT_FILES)
            for sub, smode in entries(name):
                rel = f"{name}/{sub}"
                if not allowed(sub):
                    bad.append((rel, f"is {_kind(smode)} of an unknown name: a release holds only "
                                     + ("<annotator>.jsonl logs here" if name == ANNOTATIONS
                                        else ", ".join(PARTICIPANT_FILES))))
                elif not stat.S_ISREG(smode):
                    bad.append((rel, f"is {_kind(smode)}, not a regular file"))
                else:
                    known.append(Entry(rel, "file"))
        elif PARTICIPANT_ID.fullmatch(name) and stat.S_ISDIR(mode):
            bad.append((name, "is a participant folder not listed in manifest.json participants"))
        else:
            bad.append((name, f"is {_kind(mode)} of an unknown name: a release holds only manifest.json, "
                              "annotations/ and the listed participant folders"))
    return known, bad


# --- reading ----------------------------------------------------------------------------------------


def _open(root: Path, rel: str) -> int:
    """A descriptor of the regular file `rel` under `root`, opened without following any link
    below `root` and without blocking; ReleaseFileError otherwise."""
    parts = rel.split("/")
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, flags_dir, dir_fd=fd)
            except OSError as e:
                raise ReleaseFileError(rel, None, f"folder {part!r} cannot be opened as a folder ("
                                       + ("a symbolic link or not a folder: not followed)"
                                          if e.errno in (errno.ELOOP, errno.ENOTDIR) else f"{e.strerror})"),
                                       "files") from None
            os.close(fd)
            fd = nxt
        try:
            f = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ReleaseFileError(rel, None, "is a symbolic link: not followed", "files") from None
            if e.errno == errno.ENOENT:
                raise ReleaseFileError(rel, None, "missing") from None
            raise ReleaseFileError(rel, None, f"cannot be read ({e.strerror})") from None
    finally:
        os.close(fd)
    st = os.fstat(f)
    if not stat.S_ISREG(st.st_mode):
        os.close(f)
        raise ReleaseFileError(rel, None, f"is {_kind(st.st_mode)}, not a regular file: not read", "files")
    if st.st_size > MAX_FILE_BYTES:
        os.close(f)
        raise ReleaseFileError(rel, None, f"{st.st_size:,} bytes, more than the {MAX_FILE_BYTES:,} a release file may hold")
    return f


def exists(root: str | Path, rel: str) -> bool:
    try:
        os.lstat(Path(root) / rel)
        return True
    except OSError:
        return False


def read_bytes(root: str | Path, rel: str) -> bytes:
    f = _open(Path(root), rel)
    with os.fdopen(f, "rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ReleaseFileError(rel, None, f"more than the {MAX_FILE_BYTES:,} bytes a release file may hold")
    return data


def _decode(rel: str, data: bytes, line: int | None = None) -> str:
    try:
        return data.decode("utf-8-sig" if line in (None, 1) else "utf-8")
    except UnicodeDecodeError as e:
        at = line if line is not None else data[:e.start].count(b"\n") + 1
        raise ReleaseFileError(rel, at, f"not valid UTF-8 (byte {e.start}"
                                        + (" of the line)" if line is not None else ")")) from None


def depth(obj, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a parsed JSON value, counted without recursion; stops past `limit`."""
    deepest, todo = 0, [(obj, 1)]
    while todo:
        x, d = todo.pop()
        if isinstance(x, (dict, list)):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            todo += [(v, d + 1) for v in (x.values() if isinstance(x, dict) else x)]
    return deepest


def parse(rel: str, line: int | None, text: str):
    """One JSON value, with named errors for what Python's parser raises on hostile input."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ReleaseFileError(rel, line, f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise ReleaseFileError(rel, line, f"invalid JSON ({e.msg} at column {e.colno})") from None
    except ValueError as e:  # int() of a number with thousands of digits
        raise ReleaseFileError(rel, line, f"invalid JSON ({str(e).split(';')[0]})") from None
    if depth(value) > MAX_DEPTH:
        raise ReleaseFileError(rel, line, f"JSON nested deeper than {MAX_DEPTH} levels")
    return value


def read_json(root: str | Path, rel: str):
    """The JSON value of a whole-file JSON (manifest, persona), bounded and checked."""
    data = read_bytes(root, rel)
    return parse(rel, None, _decode(rel, data))


def read_object(root: str | Path, rel: str) -> dict:
    value = read_json(root, rel)
    if not isinstance(value, dict):
        raise ReleaseFileError(rel, None, f"expected a JSON object, got {type(value).__name__}")
    return value


def iter_jsonl(root: str | Path, rel: str) -> Iterator[tuple[int, dict | ReleaseFileError]]:
    """(line, object) for every non-blank line, or (line, error) for a line that is not one; a
    line longer than MAX_LINE_CHARS is refused (past MAX_LINE_BYTES, skipped unread). Errors of the
    file itself are raised."""
    f = _open(Path(root), rel)
    with os.fdopen(f, "rb") as fh:
        n = 0
        while True:
            raw = fh.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            n += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                chars = len(raw.translate(None, _CONTINUATION))
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line, never holding it
                    raw = fh.readline(1 << 20)
                    chars += len(raw.translate(None, _CONTINUATION))
                yield n, _too_long(rel, n, chars - raw.endswith(b"\n"))
                continue
            try:
                text = _decode(rel, raw, n)
                if len(text.rstrip("\r\n")) > MAX_LINE_CHARS:
                    yield n, _too_long(rel, n, len(text.rstrip("\r\n")))
                    continue
                if not text.strip():
                    continue
                value = parse(rel, n, text)
            except ReleaseFileError as e:
                yield n, e
                continue
            if not isinstance(value, dict):
                yield n, ReleaseFileError(rel, n, f"expected a JSON object, got {type(value).__name__}")
                continue
            yield n, value


def _too_long(rel: str, n: int, chars: int) -> ReleaseFileError:
    return ReleaseFileError(rel, n, f"{chars:,} characters, more than the {MAX_LINE_CHARS:,} a line may hold "
                                    "(one row per line)")


def read_jsonl(root: str | Path, rel: str) -> list[tuple[int, dict]]:
    """Every row of a JSONL file; the first bad line raises its ReleaseFileError."""
    out = []
    for n, x in iter_jsonl(root, rel):
        if isinstance(x, ReleaseFileError):
            raise x
        out.append((n, x))
    return out


def participants_of(manifest: dict) -> list[str]:
    """The manifest's participant ids, each checked to be a U-number before any path is built
    from it (a path-like id, `../x` or `/abs`, would read or write outside the release)."""
    pids = manifest.get("participants")
    if not isinstance(pids, list):
        raise ReleaseFileError(MANIFEST, None, "field 'participants' must be a list of ids like U01")
    bad = [p for p in pids if not valid_participant(p)]
    if bad:
        raise ReleaseFileError(MANIFEST, None, f"field 'participants': {bad[:5]!r} "
                                               "not of the shape U01 (U and a number): refused before any read")
    return list(pids)


def copy_release(src: str | Path, dst: str | Path) -> None:
    """Copy a release folder's known regular files into the new folder `dst` (created 0700),
    following no link; anything `layout` refuses makes it raise before anything is copied."""
    src, dst = Path(src), Path(dst)
    manifest = read_object(src, MANIFEST)
    known, bad = layout(src, participants_of(manifest))
    if bad:
        rel, why = bad[0]
        raise ReleaseFileError(rel, None, why)
    dst.mkdir(mode=0o700)
    for e in known:
        if e.kind == "dir":
            (dst / e.rel).mkdir(mode=0o700, exist_ok=True)
    for e in known:
        if e.kind == "file":
            fd = os.open(dst / e.rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(read_bytes(src, e.rel))
