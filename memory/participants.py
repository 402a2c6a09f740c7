"""Participants: a name, a time zone for their day boundaries, a passphrase hash, settings.

Names are compared without case (`name_key`: NFKC, case-folded): "Ana" and "ana" are one
account, found by either spelling, and a sign-up under another spelling of a taken name is
refused. Names that read as the researcher or the system ("researcher", "Re5earcher", "admin",
"companion", ...) are reserved: no new account takes them.
"""

from __future__ import annotations

import json
import re
import secrets
import unicodedata
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


def name_key(participant: str) -> str:
    """The name as accounts are told apart: case and width do not count."""
    return unicodedata.normalize("NFKC", participant).casefold()


# Digits and signs read as letters in a name ("r3searcher", "res3archer", "adm1n").
_LOOKS_LIKE = str.maketrans({"0": "o", "1": "l", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g",
                             "@": "a", "$": "s", "|": "l", "!": "i"})
RESERVED = ("researcher", "research", "admin", "administrator", "companion", "system", "root", "operator")


def _skeleton(participant: str) -> str:
    s = name_key(participant).translate(_LOOKS_LIKE)
    s = re.sub(r"[^a-z]", "", s)
    return s.replace("rn", "m").replace("vv", "w").replace("l", "i")


def reserved(participant: str) -> bool:
    """A name that reads as the researcher, the companion or the system, in any case, with
    separators, with digits for letters, or as one part of a name ("admin_lab", "the.root",
    "system1"; "researcher" anywhere). Other names that only begin like one stay free ("Rootha")."""
    s = _skeleton(participant)
    if not s:
        return False
    marks = {_skeleton(r) for r in RESERVED}
    if s in marks or _skeleton("researcher") in s:
        return True
    parts = [p for p in re.split(r"[\s_.\-]+", participant) if p]
    for i in range(len(parts)):  # every run of parts, as written and without some trailing digits
        for j in range(i + 1, len(parts) + 1):
            run = "".join(parts[i:j])
            digits = len(run) - len(run.rstrip("0123456789"))
            if {_skeleton(run[:len(run) - k]) for k in range(digits + 1)} & marks:
                return True
    return False


def create(store: Store, participant: str, tz: str | None = None, pass_hash: str | None = None, conn=None) -> str:
    """Create the row, or refuse if the name (in any case) exists or is reserved (checked and
    inserted under one write lock, so two sign-ups of one name cannot both succeed). Returns the
    new identity (`uid`)."""
    check_name(participant)
    if reserved(participant):
        raise NameReserved(f"the name {participant!r} is reserved (it reads as the researcher or the system): "
                           "choose another name")
    tz = tz or keys.machine_zone_name()
    keys.zone(tz)
    key = name_key(participant)
    with store.transaction() as c:
        row = c.execute("SELECT participant FROM participants WHERE participant=? OR name_key=?",
                        (participant, key)).fetchone()
        if row is not None:
            if row[0] == participant:
                raise StoreError(f"participant {participant!r} already exists")
            raise StoreError(f"participant {participant!r} already exists as {row[0]!r}: names are not "
                             "case-sensitive")
        uid = secrets.token_hex(16)
        c.execute(
            "INSERT INTO participants (participant, tz, pass_hash, created_at, uid, name_key) VALUES (?,?,?,?,?,?)",
            (participant, tz, pass_hash, datetime.now(timezone.utc).isoformat(), uid, key),
        )
    return uid


class NameReserved(StoreError):
    """A new account asked for a reserved name."""


def find(store: Store, participant: str) -> str | None:
    """The stored name of the account `participant` names, in any case ("Ana" finds "ana"); None
    when there is none. An exact match wins (names that differed only in case before names were
    case-insensitive keep their own accounts)."""
    if not isinstance(participant, str) or not participant:
        return None
    r = store.conn.execute("SELECT participant FROM participants WHERE participant=?", (participant,)).fetchone()
    if r is None:
        r = store.conn.execute("SELECT participant FROM participants WHERE name_key=?",
                               (name_key(participant),)).fetchone()
    return r[0] if r else None


def set_tz(store: Store, participant: str, tz: str) -> None:
    """The participant's time zone from now on (dayids already given keep their day)."""
    keys.zone(tz)
    with store.transaction() as c:
        if c.execute("UPDATE participants SET tz=? WHERE participant=?", (tz, participant)).rowcount != 1:
            raise StoreError(f"unknown participant {participant!r}")


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
