"""The release ledger: which releases hold which pseudonymous participants, surviving erasure.

Every export writes a `release_ledger` row before it writes anything (state `staging`, with the
hidden staging folder), one `release_ledger_members` row per participant (pseudonym and
`member_key`, a keyed hash of the name), and marks the row `released` once the folder is in place
(`refused` when a gate refuses). A process killed in between leaves `staging`: the next export
(`reconcile`) removes the staging folder and marks it `abandoned`, or `released` when the folder
was already moved into place. A staging folder is never a release.

Erasure (`on_erase`, registered by consent.erasure) sets `withdrawn_at` on the participant's
member rows and blanks their `member_key`: the row that says "release R held U03, withdrawn at T"
stays, and nothing in it points at the person. `recalls` lists such releases (and those holding
someone who withdrew only the export scope); `consent.export.export(reissue=R)` writes R again
without them, under the same pseudonyms.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
from datetime import datetime, timezone
from pathlib import Path

from memory.store import has_table

MARKER = ".companion-staging"  # inside every staging folder: who writes it (pid, host)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _secret(conn, create: bool = True) -> bytes | None:
    row = conn.execute("SELECT value FROM release_meta WHERE name='ledger_secret'").fetchone()
    if row is None and not create:
        return None
    if row is None:
        value = secrets.token_hex(32)
        conn.execute("INSERT INTO release_meta VALUES ('ledger_secret', ?)", (value,))
        return bytes.fromhex(value)
    return bytes.fromhex(row[0])


def member_key(conn, participant: str) -> str:
    return hmac.new(_secret(conn), participant.encode("utf-8"), hashlib.sha256).hexdigest()


def keys(conn, participant: str) -> tuple[int, str]:
    """(shift_days, key) of the participant, drawn once: whole weeks back, 4 to 104."""
    row = conn.execute("SELECT shift_days, key FROM release_keys WHERE participant=?", (participant,)).fetchone()
    if row is None:
        row = (-7 * (4 + secrets.randbelow(101)), secrets.token_hex(16))
        conn.execute("INSERT INTO release_keys VALUES (?,?,?)", (participant, *row))
    return int(row[0]), row[1]


def begin(conn, release: str, folder: Path, staging: Path, seed, params: dict, members: dict[str, str],
          reissue_of: str | None = None) -> None:
    """Record a release about to be written: members is participant -> pseudonym."""
    conn.execute("INSERT INTO release_ledger VALUES (?,?,?,?, 'staging', ?,?,?)",
                 (release, _now(), str(folder), str(staging), seed, json.dumps(params), reissue_of))
    conn.executemany("INSERT INTO release_ledger_members VALUES (?,?,?,NULL)",
                     [(release, pid, member_key(conn, p)) for p, pid in members.items()])


def finish(conn, release: str, state: str) -> None:
    conn.execute("UPDATE release_ledger SET state=? WHERE release=?", (state, release))


def write_marker(staging: Path) -> None:
    (staging / MARKER).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}), encoding="utf-8")


def _alive(staging: Path) -> bool:
    """Is the process that writes this staging folder still running (on this machine)?"""
    try:
        who = json.loads((staging / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if who.get("host") != socket.gethostname():
        return True  # another machine's export: not ours to judge
    try:
        os.kill(int(who["pid"]), 0)
    except (ProcessLookupError, ValueError, KeyError, TypeError):
        return False
    except PermissionError:
        return True
    return int(who["pid"]) != os.getpid()


def _manifest_release(folder: Path) -> str | None:
    try:
        return json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("release")
    except (OSError, ValueError, AttributeError):
        return None


def reconcile(store, parent: Path | None = None) -> list[str]:
    """Settle exports a killed process left behind; returns the staging folders removed.

    Ledger rows still `staging`: released if their folder holds their manifest, else abandoned and
    their staging folder removed (unless its writer is alive). Also any staging folder under
    `parent` (the new export's folder's parent) that carries our marker and whose writer is dead.
    """
    removed = []
    rows = store.conn.execute("SELECT release, folder, staging FROM release_ledger WHERE state='staging'").fetchall()
    for release, folder, staging in rows:
        st = Path(staging)
        if st.is_dir() and _alive(st):
            continue
        if _manifest_release(Path(folder)) == release and not st.exists():
            state = "released"
        else:
            state = "abandoned"
            if st.is_dir() and (st / MARKER).exists():
                shutil.rmtree(st, ignore_errors=True)
                removed.append(str(st))
        with store.transaction() as conn:
            finish(conn, release, state)
    if parent is not None and parent.is_dir():
        for st in parent.glob(".*.staging-*"):
            if st.is_dir() and (st / MARKER).exists() and not _alive(st):
                shutil.rmtree(st, ignore_errors=True)
                removed.append(str(st))
    return removed


def on_erase(conn, store, participant: str) -> dict[str, int]:
    """Erasure hook: keep the ledger rows of the participant's releases, blank who they were."""
    if not has_table(conn, "release_meta") \
            or _secret(conn, create=False) is None:
        return {}  # no release was ever written
    conn.execute("UPDATE release_ledger_members SET member_key=NULL, withdrawn_at=? WHERE member_key=?",
                 (_now(), member_key(conn, participant)))
    return {}  # nothing erased here: the rows are kept, and say nothing about the person


def releases(conn) -> list[dict]:
    """Every ledger row with its members (pseudonym, withdrawn_at), newest first."""
    out = []
    for r in conn.execute("SELECT release, created_at, folder, state, seed, reissue_of FROM release_ledger "
                          "ORDER BY created_at DESC"):
        members = [{"pseudonym": m[0], "withdrawn_at": m[1]} for m in conn.execute(
            "SELECT pseudonym, withdrawn_at FROM release_ledger_members WHERE release=? ORDER BY pseudonym",
            (r[0],))]
        out.append({"release": r[0], "created_at": r[1], "folder": r[2], "state": r[3], "seed": r[4],
                    "reissue_of": r[5], "members": members})
    return out


def current_members(conn, release: str) -> dict[str, str]:
    """participant -> pseudonym for the members of `release` who are still here."""
    out = {}
    if _secret(conn, create=False) is None:
        return out
    keyed = {m[0]: m[1] for m in conn.execute(
        "SELECT member_key, pseudonym FROM release_ledger_members WHERE release=? AND member_key IS NOT NULL "
        "AND withdrawn_at IS NULL", (release,))}
    for (p,) in conn.execute("SELECT participant FROM participants"):
        k = member_key(conn, p)
        if k in keyed:
            out[p] = keyed[k]
    return out


def recalls(store, eligible: list[str]) -> list[dict]:
    """Released releases holding someone who has since withdrawn (erased, or export scope withdrawn)."""
    conn = store.conn
    if _secret(conn, create=False) is None:
        return []
    ok = {member_key(conn, p) for p in eligible}
    out = []
    for r in releases(conn):
        if r["state"] != "released":
            continue
        gone = []
        for m in conn.execute("SELECT pseudonym, member_key, withdrawn_at FROM release_ledger_members "
                              "WHERE release=? ORDER BY pseudonym", (r["release"],)):
            if m[2] is not None or m[1] not in ok:
                gone.append(m[0])
        if gone:
            out.append({"release": r["release"], "folder": r["folder"], "created_at": r["created_at"],
                        "withdrawn": gone})
    return out
