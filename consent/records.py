"""Consent: versioned texts shipped as data, records per participant, the gate of every turn.

Nothing of a participant is stored before they accept the current version: `accept` creates
the participant and the record in one transaction. A new text (`texts/v<N>.md`, a higher
version) makes every earlier acceptance stale: `status` reports `needs_reconsent` and the gate
refuses until the participant accepts the new version. `withdraw` erases the participant
(consent.erasure); `withdraw_scope` narrows the consent while they keep chatting. Every change
is written to the audit log (consent.audit) in the same transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources

from consent import audit
from memory import participants
from memory.store import Store, StoreError, tables_with_column

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


def _texts_dir():
    """Where the consent texts live (the package's `texts/`; tests point it elsewhere)."""
    return resources.files("consent").joinpath("texts")


def texts() -> dict[str, ConsentText]:
    out = {}
    for f in _texts_dir().iterdir():
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


class NameTaken(StoreError):
    """A sign-up for a name someone else holds (or took while the sign-up was pending)."""


class IdentityChanged(StoreError):
    """The account verified earlier is no longer the one under that name (withdrawn and
    re-registered, or its passphrase changed): the earlier check proves nothing now."""


def accept(
    store: Store,
    participant: str,
    version: str | None = None,
    scopes: tuple[str, ...] | None = None,
    pass_hash: str | None = None,
    tz: str | None = None,
    new: bool = False,
    verified: tuple[str, str | None] | None = None,
) -> ConsentState:
    """Record consent, creating the participant if there is none.

    `new=True`: this is a sign-up; refuse if the name exists by now (someone registered it
    between the caller's check and this call). `verified=(uid, pass_hash)`: the caller checked
    the passphrase of an existing participant earlier; accept only if that same identity with
    that same hash still holds the name. Both checks run inside the write transaction, so no
    other writer can slip in between the check and the record.
    """
    cur = current()
    version = version or cur.version
    if version != cur.version:
        raise StoreError(f"consent version {version} is not the current one ({cur.version})")
    scopes = tuple(scopes or cur.scopes)
    bad = [s for s in scopes if s not in cur.scopes]
    if bad:
        raise StoreError(f"unknown consent scope(s) {bad}; scopes are {list(cur.scopes)}")
    with store.transaction() as conn:
        row = conn.execute("SELECT uid, pass_hash FROM participants WHERE participant=?",
                           (participant,)).fetchone()
        if row is not None and new:
            raise NameTaken(f"the name {participant!r} is already taken: choose another name, or sign in "
                            "with its passphrase if it is yours")
        if verified is not None and (row is None or (row["uid"], row["pass_hash"]) != tuple(verified)):
            raise IdentityChanged(f"the account {participant!r} changed since you signed in: sign in again")
        before = status(store, participant) if row is not None else None
        if before is None:
            participants.create(store, participant, tz=tz, pass_hash=pass_hash)
        conn.execute(
            "INSERT INTO consent_records (participant, version, scopes, accepted_at) VALUES (?,?,?,?)",
            (participant, version, json.dumps(list(scopes)), _now()),
        )
        audit.record(conn, "accepted", participant, version=version, scopes=scopes,
                     reconsent=bool(before and before.version and before.version != version),
                     previous_version=before.version if before else None)
    return status(store, participant)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def withdraw(store: Store, participant: str):
    """Withdraw entirely: erase the participant everywhere (see consent.erasure).

    Returns the `Erasure` report: what was erased, in counts, to tell the participant.
    """
    from consent import erasure

    return erasure.erase(store, participant)


def withdraw_scope(store: Store, participant: str, scope: str) -> ConsentState:
    """Take one scope back while the participant keeps chatting.

    The open record is closed and a new one with the remaining scopes takes its place (same
    version), so the record history shows what was consented when. What goes with the scope:
    - `export`: the participant leaves every later export (consent.export checks the scope);
      export bookkeeping rows of theirs (surrogate maps of past releases) are deleted.
    - `logging`: their traces (the research records of each turn) are deleted.
    - `memory`: the companion stops consulting the past (the turn checks the scope); the
      message log itself stays, it is the conversation.
    """
    cur = current()
    if scope not in cur.scopes:
        raise StoreError(f"unknown consent scope {scope!r}; scopes are {list(cur.scopes)}")
    with store.transaction() as conn:
        r = conn.execute(
            "SELECT id, version, scopes FROM consent_records WHERE participant=? AND withdrawn_at IS NULL "
            "ORDER BY id DESC LIMIT 1", (participant,)).fetchone()
        if r is None:
            raise StoreError(f"participant {participant!r} has no consent on record")
        scopes = json.loads(r["scopes"])
        if scope not in scopes:
            raise StoreError(f"participant {participant!r} has not consented to {scope!r} "
                             f"(scopes: {', '.join(scopes) or 'none'})")
        left = [s for s in scopes if s != scope]
        now = _now()
        conn.execute("UPDATE consent_records SET withdrawn_at=? WHERE id=?", (now, r["id"]))
        conn.execute(
            "INSERT INTO consent_records (participant, version, scopes, accepted_at) VALUES (?,?,?,?)",
            (participant, r["version"], json.dumps(left), now))
        erased = _scope_erasure(conn, participant, scope)
        audit.record(conn, "scope_withdrawn", participant, version=r["version"], scopes=left,
                     scope=scope, counts=erased)
    return status(store, participant)


def _scope_erasure(conn, participant: str, scope: str) -> dict[str, int]:
    tables = set(tables_with_column(conn, "participant"))
    drop = {"logging": ["traces"], "export": ["export_surrogates", "export_members"]}.get(scope, [])
    return {t: conn.execute(f"DELETE FROM {t} WHERE participant=?", (participant,)).rowcount
            for t in drop if t in tables}


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
