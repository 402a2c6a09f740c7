"""App sessions kept in the database: what a browser tab's token stands for.

A tab holds only a random token (in the app's per-tab state); the database says what the token
is worth. A participant session is bound to the account's `uid`: it resolves only while that
account still holds the name, so a tab left open on a withdrawn account (erasure deletes its rows,
and a newcomer who registers the name gets another uid) resolves to no one, in whichever process
serves the next request. A researcher session says the researcher page was opened with the
credential. Only the token's SHA-256 is stored; sessions older than MAX_AGE_SECONDS resolve to
no one and are pruned when sessions are opened.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta, timezone

from memory.store import Store

PARTICIPANT, RESEARCHER = "participant", "researcher"
MAX_AGE_SECONDS = 7 * 24 * 3600


def new_token() -> str:
    return secrets.token_hex(32)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="microseconds")


def open_(store: Store, token: str, kind: str, participant: str | None = None, uid: str | None = None) -> None:
    """Bind `token` to a participant's account (`participant`, `uid`) or to the researcher page."""
    if kind not in (PARTICIPANT, RESEARCHER):
        raise ValueError(f"session kind must be {PARTICIPANT} or {RESEARCHER}, got {kind!r}")
    if kind == PARTICIPANT and not (participant and uid):
        raise ValueError("a participant session needs the participant and their uid")
    now = _now()
    with store.transaction() as conn:
        conn.execute("DELETE FROM app_sessions WHERE created_at < ?", (_iso(now - timedelta(seconds=MAX_AGE_SECONDS)),))
        conn.execute(
            "INSERT INTO app_sessions (token_hash, kind, participant, uid, created_at) VALUES (?,?,?,?,?)"
            " ON CONFLICT (token_hash, kind) DO UPDATE SET participant = excluded.participant,"
            " uid = excluded.uid, created_at = excluded.created_at",
            (_hash(token), kind, participant if kind == PARTICIPANT else None,
             uid if kind == PARTICIPANT else None, _iso(now)))


def resolve(store: Store, token: str | None) -> dict:
    """{"participant": name or None, "uid": uid or None, "researcher": bool, "ended": name or None}
    as the database says now. `ended`: the token was bound to an account that no longer holds it
    (withdrawn, or the name now belongs to someone else) or the session expired."""
    out = {"participant": None, "uid": None, "researcher": False, "ended": None}
    if not token:
        return out
    fresh = _iso(_now() - timedelta(seconds=MAX_AGE_SECONDS))
    rows = store.conn.execute(
        "SELECT s.kind, s.participant, s.uid, s.created_at, p.uid AS live_uid FROM app_sessions s"
        " LEFT JOIN participants p ON p.participant = s.participant WHERE s.token_hash = ?",
        (_hash(token),)).fetchall()
    for r in rows:
        alive = r["created_at"] >= fresh
        if r["kind"] == RESEARCHER:
            out["researcher"] = alive
        elif alive and r["live_uid"] is not None and r["live_uid"] == r["uid"]:
            out["participant"], out["uid"] = r["participant"], r["uid"]
        else:
            out["ended"] = r["participant"] or "?"
    return out


def close(store: Store, token: str | None, kind: str | None = None) -> None:
    """End the token's session of `kind` (both kinds when None)."""
    if not token:
        return
    with store.transaction() as conn:
        if kind is None:
            conn.execute("DELETE FROM app_sessions WHERE token_hash = ?", (_hash(token),))
        else:
            conn.execute("DELETE FROM app_sessions WHERE token_hash = ? AND kind = ?", (_hash(token), kind))


def end_researcher_sessions(store: Store) -> int:
    """Every open researcher page ends (the researcher credential changed)."""
    with store.transaction() as conn:
        return conn.execute("DELETE FROM app_sessions WHERE kind = ?", (RESEARCHER,)).rowcount
