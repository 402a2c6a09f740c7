"""Access: a participant's download of all their data, and the researcher's view of consent.

`download` collects every row of every table with a `participant` column (the same discovery
erasure uses, so what can be erased can be downloaded), with the well-known tables shaped for
reading: messages in order, traces as their JSON, consent records with their scopes. The
passphrase hash is left out (it is a credential, not data about the person); dense vectors are
counted, not listed (384 numbers per message, derived from the text that is included).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from consent import audit, erasure, records
from memory import feedback, messages, parses, participants, traces
from memory.store import Store, StoreError

FORMAT = "companion-participant-data"


def _json_cols(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if isinstance(v, bytes):
            v = v.hex()
        elif isinstance(v, str) and v[:1] in "[{":
            try:
                v = json.loads(v)
            except ValueError:
                pass
        out[k] = v
    return out


def download(store: Store, participant: str) -> dict:
    """All the participant's data as a JSON-serializable dict."""
    store.settle(participant)  # the last reply's vector too
    p = participants.get(store, participant)
    if p is None:
        raise StoreError(f"unknown participant {participant!r}")
    conn = store.conn
    state = records.status(store, participant)
    out = {
        "format": FORMAT,
        "version": 1,
        "participant": participant,
        "downloaded_at": datetime.now(timezone.utc).isoformat(),
        "account": {k: v for k, v in p.items() if k != "pass_hash"},
        "consent": {
            "state": {"accepted": state.accepted, "version": state.version, "scopes": list(state.scopes),
                      "needs_reconsent": state.needs_reconsent, "current_version": records.current().version},
            "records": [dict(r, scopes=json.loads(r["scopes"])) for r in map(dict, conn.execute(
                "SELECT version, scopes, accepted_at, withdrawn_at FROM consent_records "
                "WHERE participant=? ORDER BY id", (participant,)))],
            "events": [{k: e[k] for k in ("at", "event", "version", "scopes", "detail")}
                       for e in audit.events(store, participant)],
        },
        "messages": [{**m.public(), "id": m.id} for m in
                     messages.read(store, participant, messages.next_ordinal(store, participant))],
        "traces": [t.model_dump() for t in traces.list_(store, participant=participant)],
        # every rating given, retracted ones too, with the tag's wording as it was shown
        "feedback": [f.public() for f in feedback.history(store, participant)],
    }
    try:
        n = conn.execute(f"SELECT count(*) FROM {erasure.VECTOR_TABLE} WHERE participant=?",
                         (participant,)).fetchone()[0]
    except Exception:  # sqlite-vec not loadable here
        n = None
    out["message_vectors"] = {"count": n, "note": "one 384-number embedding per message, derived from its text"}
    n = conn.execute(f"SELECT count(*) FROM {parses.TABLE} WHERE participant=?", (participant,)).fetchone()[0]
    out[parses.TABLE] = {"count": n, "note": parses.NOTE}
    shaped = {"participants", "consent_records", "messages", "traces", "feedback", parses.TABLE}
    other = {}
    for table in erasure.participant_tables(conn):
        if table in shaped:
            continue
        rows = [_json_cols(dict(r)) for r in conn.execute(
            f'SELECT * FROM "{table}" WHERE participant=?', (participant,))]
        other[table] = rows
    out["other"] = other
    json.dumps(out)  # fail here, not in the caller's writer, if a value cannot be serialized
    return out


COLUMNS = ["participant", "created_at", "consent", "version", "scopes", "accepted_at", "messages", "last_message"]


def participants_view(store: Store) -> list[dict]:
    """For the researcher: every participant with their consent state and how much is stored."""
    cur = records.current().version
    out = []
    for name in participants.names(store):
        p = participants.get(store, name)
        st = records.status(store, name)
        rec = store.conn.execute(
            "SELECT accepted_at FROM consent_records WHERE participant=? AND withdrawn_at IS NULL "
            "ORDER BY id DESC LIMIT 1", (name,)).fetchone()
        m = store.conn.execute("SELECT count(*), max(ts) FROM messages WHERE participant=?", (name,)).fetchone()
        out.append({
            "participant": name, "created_at": p["created_at"],
            "consent": "accepted" if st.accepted else ("re-consent needed" if st.needs_reconsent else "none"),
            "version": st.version, "current_version": cur, "scopes": list(st.scopes),
            "accepted_at": rec["accepted_at"] if rec else None, "messages": m[0], "last_message": m[1],
        })
    return out


def participants_rows(store: Store) -> list[list]:
    """`participants_view` as rows in COLUMNS order (for a table widget)."""
    return [[r[c] if c != "scopes" else ", ".join(r[c]) for c in COLUMNS] for r in participants_view(store)]
