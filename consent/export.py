"""Export: a release in the benchmark format (docs/FORMAT.md), pseudonymized, gated.

`export(store, out, ...)` writes, for every participant whose current consent includes the
`export` scope:
- `manifest.json` (format, version, recent_window, participants U01.., counts, release id, seed),
- `Uxx/conversation.jsonl`: every message in order, dayids kept, text pseudonymized,
- `Uxx/profile.jsonl`, `Uxx/persona.json`: from registered profile sources (`profile_source`),
  text under the same surrogates,
- `Uxx/chat_gold.jsonl`: chat-probe candidates: a proportional random sample of the
  participant's messages drawn blind to need (seeded; `annotation: "pending"`, not scoreable
  until annotated: locus/tier/grounding are placeholders), and session cold opens (the first
  participant message after a gap of `session_gap_minutes`) as controls with empty gold.
The writer lives here (consent may not import eval); tests read its output back with
`eval.readers.read_release`.

Pseudonymization is consent.pseudonymize: one `Pseudonymizer` for the whole release, so a
surrogate is consistent across files and participants. The surrogate map goes to the
`export_surrogates` table (per participant, so erasure removes it), never into the release;
participant names appear only in `export_members`.

Release gates (`check_release`), run on the written staging folder before it is moved into
place; any failure removes the staging folder and raises `ReleaseRefused` naming the rows:
1. every cited dayid resolves in the participant's conversation;
2. a probe's recent_context / episode_refs / grounding_dayids precede the probe;
3. a second scan finds none of the detected or listed identifiers in any file, and the
   pattern detector finds nothing in the text fields that is not a surrogate;
4. manifest participants and counts agree with the folders and files.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from consent import audit, records
from consent.pseudonymize import Pseudonymizer, _norm, detect_patterns, read_deny_list, stated_terms
from memory import messages, participants
from memory.store import Store, StoreError

FORMAT = "companion-benchmark"
VERSION = 1
MANIFEST, CONVERSATION, PROFILE, PERSONA, CHAT_GOLD, QA = (
    "manifest.json", "conversation.jsonl", "profile.jsonl", "persona.json", "chat_gold.jsonl", "qa.jsonl")

# fn(store, participant) -> (claims: list[dict], persona: dict | None), claims in the
# profile.jsonl shape with dayids of the participant. Memory work registers its claims here.
_PROFILE_SOURCES: list[Callable] = []


def profile_source(fn: Callable) -> Callable:
    _PROFILE_SOURCES.append(fn)
    return fn


class ReleaseRefused(Exception):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("release refused:\n  " + "\n  ".join(problems))


def eligible(store: Store) -> list[str]:
    """Participants whose consent for the current text includes `export`."""
    return [p for p in participants.names(store) if records.status(store, p).allows("export")]


def _sessions_cold_opens(msgs, gap_minutes: float) -> set[int]:
    """Indexes of the first participant message of every session."""
    out, prev, seen_user = set(), None, True
    for i, m in enumerate(msgs):
        t = datetime.fromisoformat(m.ts)
        if prev is None or (t - prev).total_seconds() > gap_minutes * 60:
            seen_user = False
        if m.sender == "user" and not seen_user:
            out.add(i)
            seen_user = True
        prev = t
    return out


def _probes(msgs, texts, pid: str, seed: int, share: float, recent_window: int, gap: float) -> list[dict]:
    users = [i for i, m in enumerate(msgs) if m.sender == "user"]
    rng = random.Random(f"probes:{seed}:{pid}")
    sample = set(rng.sample(users, min(len(users), round(share * len(users)))))
    cold = _sessions_cold_opens(msgs, gap)
    rows = []
    for i in users:
        stratum = "proportional" if i in sample else "control" if i in cold else None
        if stratum is None:
            continue
        reply = next((texts[j] for j in range(i + 1, len(msgs)) if msgs[j].sender == "companion"), None)
        rows.append({
            "probe_dayid": msgs[i].dayid, "stratum": stratum,
            "scoreable": stratum == "control", "locus": "none", "locus_verified": None,
            "recent_context": [m.dayid for m in msgs[max(0, i - recent_window):i]],
            "episode_refs": [], "profile_refs": [], "grounding_dayids": [], "tier": "basic",
            "category": "cold_open" if stratum == "control" else None, "referent_on_screen": "no",
            "reference_reply": reply, "trace": {},
            "annotation": "not_needed" if stratum == "control" else "pending",
        })
    return rows


def _persona_texts(persona, fn):
    """Apply fn to every string in a persona except evidence dayids (returns a copy)."""
    if isinstance(persona, dict):
        return {k: (v if k == "evidence" else _persona_texts(v, fn)) for k, v in persona.items()}
    if isinstance(persona, list):
        return [_persona_texts(v, fn) for v in persona]
    if isinstance(persona, str):
        return fn(persona)
    return persona


def export(store: Store, out, participants_: list[str] | None = None, seed: int = 0,
           deny_list: str | Path | None = None, recent_window: int = 6, probe_share: float = 0.1,
           session_gap_minutes: float = 60, overwrite: bool = False) -> dict:
    """Write a gated release to `out`; returns a summary. Raises ReleaseRefused or StoreError."""
    ok = eligible(store)
    chosen = list(participants_) if participants_ else ok
    refused = [p for p in chosen if p not in ok]
    if refused:
        raise StoreError(f"not consented to export (or unknown, or re-consent pending): {refused}")
    if not chosen:
        raise StoreError("no participant has consented to export")
    chosen = sorted(set(chosen))
    pids = {p: f"U{i:02d}" for i, p in enumerate(chosen, 1)}
    dest = Path(out)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        if not overwrite or not (dest / MANIFEST).is_file():
            raise FileExistsError(f"{dest} exists" + ("" if overwrite else "; pass overwrite to replace a release")
                                  + ("" if (dest / MANIFEST).is_file() else " and is not a release"))

    deny = read_deny_list(deny_list) if deny_list else {}
    data = {}
    for p in chosen:
        msgs = messages.read(store, p, messages.next_ordinal(store, p))
        claims, persona = [], None
        for src in _PROFILE_SOURCES:
            c, pe = src(store, p)
            claims += list(c or [])
            persona = pe if pe is not None else persona
        data[p] = (msgs, claims, persona)
        stated = [m.text for m in msgs if m.sender == "user"] + [c.get("text", "") for c in claims]
        for t, k in stated_terms(stated).items():
            deny.setdefault(t, k)
        if len(p) >= 3:
            deny.setdefault(p, "PERSON")  # a sign-in name can be a real name
    ps = Pseudonymizer(deny, seed=seed)

    release_id = secrets.token_hex(8)
    files: dict[str, dict] = {}
    used: dict[str, set] = {}
    counts = {}
    for p in chosen:
        msgs, claims, persona = data[p]
        ps.used = set()
        texts = [ps.apply(m.text) for m in msgs]
        conv = [{"dayid": m.dayid, "sender": m.sender, "text": t, "ts": m.ts} for m, t in zip(msgs, texts)]
        probes = _probes(msgs, texts, pids[p], seed, probe_share, recent_window, session_gap_minutes)
        prof = [{**c, "text": ps.apply(c.get("text", ""))} for c in claims]
        pers = _persona_texts(persona, ps.apply) if persona is not None else None
        used[p] = set(ps.used)
        files[pids[p]] = {"conversation": conv, "profile": prof, "persona": pers, "chat_gold": probes}
        counts[pids[p]] = {"messages": len(conv), "chat_rows": len(probes), "claims": len(prof)}
    manifest = {"format": FORMAT, "version": VERSION, "recent_window": recent_window,
                "participants": [pids[p] for p in chosen], "counts": counts, "release": release_id,
                "generator": "consent.export", "seed": seed, "probe_share": probe_share,
                "session_gap_minutes": session_gap_minutes}

    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.staging-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        write(staging, manifest, files)
        problems = check_release(staging, ps.identifiers(), ps.surrogates())
        if problems:
            raise ReleaseRefused(problems)
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

    now = datetime.now(timezone.utc).isoformat()
    with store.transaction() as conn:
        conn.execute("INSERT INTO exports VALUES (?,?,?,?,?)", (release_id, now, str(dest.resolve()), seed, len(chosen)))
        for p in chosen:
            conn.execute("INSERT INTO export_members VALUES (?,?,?)", (release_id, p, pids[p]))
            conn.executemany("INSERT INTO export_surrogates VALUES (?,?,?,?,?)",
                             [(release_id, p, m["kind"], m["original"], m["surrogate"]) for m in ps.mapping(used[p])])
            audit.record(conn, "exported", p, release=release_id, **counts[pids[p]])
    return {"release": release_id, "path": str(dest), "participants": {pids[p]: counts[pids[p]] for p in chosen},
            "surrogates": len(ps.map)}


def write(root: Path, manifest: dict, files: dict[str, dict]) -> None:
    """The benchmark layout: manifest.json and one folder per participant (empty lists: no file)."""
    def dump(x):
        return json.dumps(x, ensure_ascii=False)

    from consent.formats import with_sampling  # V3: the draw's record, written before anyone sees a probe
    manifest = with_sampling(manifest, files)
    (root / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    for pid, f in files.items():
        d = root / pid
        d.mkdir()
        (d / CONVERSATION).write_text("".join(dump(r) + "\n" for r in f["conversation"]), encoding="utf-8")
        for name, key in ((PROFILE, "profile"), (CHAT_GOLD, "chat_gold"), (QA, "qa")):
            if f.get(key):
                (d / name).write_text("".join(dump(r) + "\n" for r in f[key]), encoding="utf-8")
        if f.get("persona") is not None:
            (d / PERSONA).write_text(json.dumps(f["persona"], ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


# --- gates --------------------------------------------------------------------------------------


def _lines(path: Path) -> list[tuple[int, dict]]:
    if not path.exists():
        return []
    return [(n, json.loads(line)) for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1)
            if line.strip()]


def _evidence(obj, where="") -> list[tuple[str, str]]:
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "evidence" and isinstance(v, list):
                out += [(f"{where}.{k}".lstrip("."), d) for d in v]
            else:
                out += _evidence(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _evidence(v, f"{where}[{i}]")
    return out


def _mask(term: str) -> str:
    return term[0] + "*" * max(1, len(term) - 2) + (term[-1] if len(term) > 1 else "")


def check_release(root: str | Path, identifiers: dict[str, str], surrogates: set[str] = frozenset(),
                  detector: bool = True) -> list[str]:
    """Every failing gate, one line per offending row ([] means the release may go)."""
    root = Path(root)
    problems: list[str] = []
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return [f"{MANIFEST}: unreadable ({e})"]
    pids = manifest.get("participants", [])
    folders = sorted(d.name for d in root.iterdir() if d.is_dir())
    for d in folders:
        if d not in pids:
            problems.append(f"counts: folder {d}/ is not listed in {MANIFEST} participants")
    words = sorted((t for t in identifiers if len(t) >= 2), key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(w) for w in words) + r")(?!\w)",
                         re.IGNORECASE) if words else None
    kind_of = {_norm("X", t): k for t, k in identifiers.items()}

    def scan(rel: str, n, text: str, fields: list[str]) -> None:
        where = f"{rel}" + (f" line {n}" if n else "")
        if pattern is not None:
            for m in pattern.finditer(text):
                problems.append(f"identifiers: {where}: {kind_of.get(_norm('X', m.group(0)), 'listed')} "
                                f"identifier {_mask(m.group(0))!r} survives")
        if detector:
            for f in fields:
                covered = [(m.start(), m.end()) for s in surrogates for m in re.finditer(re.escape(s), f)]
                for s in detect_patterns(f):
                    if not any(a <= s.start and s.end <= b for a, b in covered):
                        problems.append(f"identifiers: {where}: detector finds a {s.kind} "
                                        f"{_mask(s.text)!r} that is no surrogate")

    scan(MANIFEST, None, (root / MANIFEST).read_text(encoding="utf-8"), [])
    for pid in pids:
        d = root / pid
        if not d.is_dir():
            problems.append(f"counts: {MANIFEST} lists {pid} but there is no folder {pid}/")
            continue
        rel = f"{pid}/{CONVERSATION}"
        conv = _lines(d / CONVERSATION)
        index = {r.get("dayid"): i for i, (_, r) in enumerate(conv)}
        for n, r in conv:
            scan(rel, n, json.dumps(r, ensure_ascii=False), [r.get("text", "")])

        def resolve(where, field, dayids, before=None):
            for x in dayids:
                if x not in index:
                    problems.append(f"dayids: {where}: field '{field}': {x!r} is not in the conversation")
                elif before is not None and index[x] >= before:
                    problems.append(f"order: {where}: field '{field}': {x!r} does not precede the probe")

        gold = _lines(d / CHAT_GOLD)
        for n, g in gold:
            where = f"{pid}/{CHAT_GOLD} line {n}"
            scan(f"{pid}/{CHAT_GOLD}", n, json.dumps(g, ensure_ascii=False), [g.get("reference_reply") or ""])
            resolve(where, "probe_dayid", [g.get("probe_dayid")])
            at = index.get(g.get("probe_dayid"))
            for f in ("recent_context", "episode_refs", "grounding_dayids"):
                resolve(where, f, g.get(f) or [], before=at)
        prof = _lines(d / PROFILE)
        for n, c in prof:
            where = f"{pid}/{PROFILE} line {n}"
            scan(f"{pid}/{PROFILE}", n, json.dumps(c, ensure_ascii=False), [c.get("text", "")])
            resolve(where, "source_dayids", c.get("source_dayids") or [])
            resolve(where, "valid_from", [c["valid_from"]] if c.get("valid_from") else [])
            resolve(where, "valid_to", [c["valid_to"]] if c.get("valid_to") else [])
        qa = _lines(d / QA)
        for n, q in qa:
            scan(f"{pid}/{QA}", n, json.dumps(q, ensure_ascii=False), [q.get("question", ""), q.get("answer", "")])
            resolve(f"{pid}/{QA} line {n}", "evidence_dayids", q.get("evidence_dayids") or [])
        if (d / PERSONA).exists():
            persona = json.loads((d / PERSONA).read_text(encoding="utf-8"))
            texts = []
            _persona_texts(persona, lambda s: texts.append(s) or s)
            scan(f"{pid}/{PERSONA}", None, json.dumps(persona, ensure_ascii=False), texts)
            for field, x in _evidence(persona):
                resolve(f"{pid}/{PERSONA}", field, [x])
        have = {"messages": len(conv), "chat_rows": len(gold), "claims": len(prof), "qa": len(qa)}
        for k, want in (manifest.get("counts", {}).get(pid) or {}).items():
            if k in have and want != have[k]:
                problems.append(f"counts: {MANIFEST} counts.{pid}.{k} says {want}, the files hold {have[k]}")
    return problems
