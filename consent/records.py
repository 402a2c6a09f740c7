"""Consent: versioned texts shipped as data, records per participant, the gate of every turn.

Nothing of a participant is stored before they accept the current version: `accept` creates
the participant and the record in one transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources

from memory import participants
from memory.store import Store, StoreError

SCOPES = ("logging", "memory", "export")


@dataclass(frozen=True)
class ConsentText:
    version: str
    scopes: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class ConsentState:
    participant: str
    accepted: bool  # a record for the current version, not withdrawn
    version: str | None
    scopes: tuple[str, ...]
    needs_reconsent: bool  # accepted an older version only

    def allows(self, scope: str) -> bool:
        return self.accepted and scope in self.scopes


def _parse(raw: str) -> ConsentText:
    if not raw.startswith("---"):
        raise ValueError("consent text must start with a '---' header")
    _, header, body = raw.split("---", 2)
    meta = dict(line.split(":", 1) for line in header.strip().splitlines())
    meta = {k.strip(): v.strip() for k, v in meta.items()}
    scopes = tuple(s.strip() for s in meta["scopes"].split(","))
    return ConsentText(version=meta["version"], scopes=scopes, text=body.strip())


def texts() -> dict[str, ConsentText]:
    out = {}
    for f in resources.files("consent").joinpath("texts").iterdir():
        if f.name.endswith(".md"):
            t = _parse(f.read_text(encoding="utf-8"))
            out[t.version] = t
    return out


def current() -> ConsentText:
    return max(texts().values(), key=lambda t: int(t.version))


def status(store: Store, participant: str) -> ConsentState:
    cur = current()
    r = store.conn.execute(
        "SELECT version, scopes FROM consent_records WHERE participant=? AND withdrawn_at IS NULL "
        "ORDER BY id DESC LIMIT 1",
        (participant,),
    ).fetchone()
    if r is None:
        return ConsentState(participant, False, None, (), False)
    ok = r["version"] == cur.version
    return ConsentState(participant, ok, r["version"], tuple(json.loads(r["scopes"])), not ok)


def accept(
    store: Store,
    participant: str,
    version: str | None = None,
    scopes: tuple[str, ...] | None = None,
    pass_hash: str | None = None,
    tz: str | None = None,
) -> ConsentState:
    cur = current()
    version = version or cur.version
    if version != cur.version:
        raise StoreError(f"consent version {version} is not the current one ({cur.version})")
    scopes = tuple(scopes or cur.scopes)
    bad = [s for s in scopes if s not in cur.scopes]
    if bad:
        raise StoreError(f"unknown consent scope(s) {bad}; scopes are {list(cur.scopes)}")
    with store.transaction() as conn:
        if not participants.exists(store, participant):
            participants.create(store, participant, tz=tz, pass_hash=pass_hash)
        conn.execute(
            "INSERT INTO consent_records (participant, version, scopes, accepted_at) VALUES (?,?,?,?)",
            (participant, version, json.dumps(list(scopes)), datetime.now(timezone.utc).isoformat()),
        )
    return status(store, participant)


def withdraw(store: Store, participant: str) -> ConsentState:
    """Mark every open record withdrawn. (Erasure of the data comes with the full consent work.)"""
    with store.transaction() as conn:
        n = conn.execute(
            "UPDATE consent_records SET withdrawn_at=? WHERE participant=? AND withdrawn_at IS NULL",
            (datetime.now(timezone.utc).isoformat(), participant),
        ).rowcount
        if n == 0:
            raise StoreError(f"participant {participant!r} has no consent on record to withdraw")
    return status(store, participant)


def refusal(participant: str, state: ConsentState | None = None) -> str:
    cur = current()
    if state is not None and state.needs_reconsent:
        why = f"the consent text changed (you accepted version {state.version}, the current one is {cur.version})"
    else:
        why = "there is no consent on record"
    return (
        f"Nothing was stored: {why}. Read the consent text with "
        f"`companion consent show --participant {participant}` and accept it with "
        f"`companion consent accept --participant {participant}` (or sign in to the app)."
    )
