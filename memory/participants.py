"""Participants: a name, a time zone for their day boundaries, a passphrase hash, settings."""

from __future__ import annotations

import json
import re
import secrets
from datetime import datetime, timezone

from memory import keys
from memory.store import Store, StoreError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_name(participant: str) -> str:
    if not isinstance(participant, str) or not NAME.match(participant):
        raise StoreError(
            f"participant name {participant!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-'"
        )
    return participant


def create(store: Store, participant: str, tz: str | None = None, pass_hash: str | None = None, conn=None) -> str:
    """Create the row, or refuse if the name exists (checked and inserted under one write lock,
    so two sign-ups of one name cannot both succeed). Returns the new identity (`uid`)."""
    check_name(participant)
    tz = tz or keys.machine_zone_name()
    keys.zone(tz)
    with store.transaction() as c:
        if c.execute("SELECT 1 FROM participants WHERE participant=?", (participant,)).fetchone():
            raise StoreError(f"participant {participant!r} already exists")
        uid = secrets.token_hex(16)
        c.execute(
            "INSERT INTO participants (participant, tz, pass_hash, created_at, uid) VALUES (?,?,?,?,?)",
            (participant, tz, pass_hash, datetime.now(timezone.utc).isoformat(), uid),
        )
    return uid


def get(store: Store, participant: str) -> dict | None:
    r = store.conn.execute("SELECT * FROM participants WHERE participant=?", (participant,)).fetchone()
    if r is None:
        return None
    d = dict(r)
    d["settings"] = json.loads(d["settings"])
    return d


def uid(store: Store, participant: str) -> str | None:
    """The identity of whoever holds the name now (None: no one). A withdrawal retires it; a
    newcomer with the same name gets another."""
    r = store.conn.execute("SELECT uid FROM participants WHERE participant=?", (participant,)).fetchone()
    return r[0] if r else None


def exists(store: Store, participant: str) -> bool:
    return get(store, participant) is not None


def names(store: Store) -> list[str]:
    return [r[0] for r in store.conn.execute("SELECT participant FROM participants ORDER BY participant")]
