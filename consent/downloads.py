"""Files the app hands out (a participant's "Download my data", the researcher's trace export).

They used to be written to /tmp (0644) and copied into Gradio's cache, where anyone who knew
the path could fetch them, before or after the owner withdrew. Now each one is staged under
the data directory (`downloads/<owner>/<token>/<file>`, directories 0700, file 0600), fetched
once through an unguessable token, and deleted as soon as it is delivered or after
`TTL_SECONDS` unfetched. Erasure removes the participant's staged files and every staged
researcher export (an export of traces may hold the participant's turns).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import time
from pathlib import Path
from typing import Iterator

DIR = "downloads"
TTL_SECONDS = 600.0
RESEARCHER = "researcher"
TOKEN = re.compile(r"^[0-9a-f]{64}$")


def _root(data_dir) -> Path:
    return Path(data_dir).expanduser() / DIR


def _owner_dir(data_dir, owner: str) -> Path:
    # participants are "p-<name>" so that a participant called "researcher" is not the researcher
    return _root(data_dir) / (RESEARCHER if owner == RESEARCHER else f"p-{owner}")


def _remove(path: Path) -> int:
    n = sum(1 for p in path.rglob("*") if p.is_file()) if path.exists() else 0
    shutil.rmtree(path, ignore_errors=True)
    return n


def sweep(data_dir, ttl: float = TTL_SECONDS, now: float | None = None) -> int:
    """Delete staged files older than `ttl` seconds (all of them with ttl=0); returns how many."""
    now = time.time() if now is None else now
    n = 0
    root = _root(data_dir)
    if not root.exists():
        return 0
    for token_dir in root.glob("*/*"):
        try:
            old = now - token_dir.stat().st_mtime >= ttl
        except FileNotFoundError:
            continue
        if old:
            n += _remove(token_dir)
    return n


def stage(data_dir, owner: str, filename: str, text: str) -> str:
    """Write `text` as `filename` for `owner` (a participant's name, or RESEARCHER); returns
    the token that fetches it once."""
    if "/" in filename or filename.startswith("."):
        raise ValueError(f"bad download file name {filename!r}")
    sweep(data_dir)
    token = secrets.token_hex(32)
    d = _owner_dir(data_dir, owner) / token
    for p in (_root(data_dir), d.parent, d):
        p.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(d / filename, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return token


def take(data_dir, token: str) -> tuple[str, bytes] | None:
    """The staged file for `token` as (file name, bytes), removed from disk; None when there is
    no such token (wrong, already fetched, expired, or erased)."""
    if not isinstance(token, str) or not TOKEN.match(token):
        return None
    sweep(data_dir)
    for token_dir in _root(data_dir).glob(f"*/{token}"):
        files = [p for p in token_dir.iterdir() if p.is_file()]
        if not files:
            continue
        data = files[0].read_bytes()
        _remove(token_dir)
        return files[0].name, data
    return None


def erase(data_dir, participant: str) -> int:
    """Erasure: the participant's staged downloads and every staged researcher export."""
    return _remove(_owner_dir(data_dir, participant)) + _remove(_owner_dir(data_dir, RESEARCHER))


@contextlib.contextmanager
def scratch(data_dir) -> Iterator[Path]:
    """A private working folder under the data directory (0700), removed on exit: for files a
    panel must write to build what it shows (plots), never /tmp or Gradio's cache."""
    root = _root(data_dir)
    root.mkdir(mode=0o700, exist_ok=True)
    work = root / f".work-{secrets.token_hex(8)}"
    work.mkdir(mode=0o700)
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
