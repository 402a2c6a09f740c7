"""The consent audit log: what happened to whose consent, when, with no content.

Every event (accepted, scope_withdrawn, withdrawn, erased, retention_sweep, exported) is one
row of `consent_events`. A row names its participant only by `subject`, a keyed hash
(HMAC-SHA256 with a per-data-directory key) of the name: the log survives erasure, yet does not
keep the name of the person erased. Given a name, `subject(store, name)` finds their events
(a participant asking "did you erase me?" can be answered); the log alone lists nobody.
`detail` carries versions, scopes and counts, never message text.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime, timezone

from memory.store import Store

EVENTS = ("accepted", "scope_withdrawn", "withdrawn", "erased", "retention_sweep", "exported")


def _key(conn) -> bytes:
    return conn.execute("SELECT value FROM consent_meta WHERE key='audit_key'").fetchone()[0].encode()


def subject(store_or_conn, participant: str) -> str:
    conn = getattr(store_or_conn, "conn", store_or_conn)
    return hmac.new(_key(conn), participant.encode("utf-8"), hashlib.sha256).hexdigest()[:24]


def record(conn, event: str, participant: str | None = None, version: str | None = None,
           scopes=None, **detail) -> None:
    """Append one event inside the caller's transaction (so it lands with what it records)."""
    if event not in EVENTS:
        raise ValueError(f"unknown consent event {event!r}; events are {list(EVENTS)}")
    conn.execute(
        "INSERT INTO consent_events (at, event, subject, version, scopes, detail) VALUES (?,?,?,?,?,?)",
        (datetime.now(timezone.utc).isoformat(), event,
         subject(conn, participant) if participant is not None else None, version,
         json.dumps(list(scopes)) if scopes is not None else None, json.dumps(detail, sort_keys=True)),
    )


def events(store: Store, participant: str | None = None, limit: int | None = None) -> list[dict]:
    """Events oldest first; with `participant`, only theirs (found through the keyed hash)."""
    sql, args = "SELECT * FROM consent_events", []
    if participant is not None:
        sql += " WHERE subject=?"
        args.append(subject(store, participant))
    sql += " ORDER BY id"
    rows = [dict(r) for r in store.conn.execute(sql, args)]
    if limit:
        rows = rows[-int(limit):]
    for r in rows:
        r["scopes"] = json.loads(r["scopes"]) if r["scopes"] else None
        r["detail"] = json.loads(r["detail"])
    return rows
