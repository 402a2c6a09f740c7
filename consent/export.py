"""Export: a release in the benchmark format (docs/FORMAT.md), pseudonymized, gated.

`export(store, out, ...)` writes, for every participant whose current consent includes the
`export` scope:
- `manifest.json` (format, version, recent_window, participants U01.., counts, release id, seed),
- `Uxx/conversation.jsonl`: every message in order, dayids kept, text pseudonymized,
- `Uxx/profile.jsonl`, `Uxx/persona.json`: from the registered export sources (`profile_sources`),
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

What a release does not keep: exact times (each participant's timeline is shifted by a secret
whole number of weeks, 4 to 104 back, kept in `release_keys`, and cut to the minute in UTC;
dayids, weekdays, times of day and gaps hold), the order of real names (U-numbers are drawn at
random; the probe sample is seeded by a per-participant secret, not by name or U-number).

Staging and the ledger (consent.ledger): the release is written to a hidden staging folder
(`.<name>.staging-<hex>`, with a marker file) and recorded in `release_ledger` first; only a
folder that passed every gate is moved into place and marked `released`. The next export removes
the staging folder of a killed one and marks it `abandoned`. `export(reissue=R)` writes R again
without participants who withdrew since, under their old U-numbers.

Release gates (`check_release`), run on the written staging folder before it is moved into
place; any failure removes the staging folder and raises `ReleaseRefused` naming the rows:
1. every cited dayid resolves in the participant's conversation;
2. a probe's recent_context / episode_refs / grounding_dayids precede the probe;
3. a second scan finds none of the detected or listed identifiers in any file, and
   `consent.recognizers` (patterns, NER, names) finds nothing in any text field that is not a
   surrogate (each hit named by file, line and kind);
4. manifest participants and counts agree with the folders and files.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from consent import audit, ledger, progress, recognizers, records
from consent.formats import ChatProbe, ConversationRow, FeedbackRow, Manifest, Persona, ProfileClaim, describe
from consent.pseudonymize import Pseudonymizer, _norm, learned_terms, read_deny_list, stated_terms
from memory import messages, participants, registry
from memory.store import Store, StoreError

FORMAT = "companion-benchmark"
VERSION = 1
MANIFEST, CONVERSATION, PROFILE, PERSONA, CHAT_GOLD, QA = (
    "manifest.json", "conversation.jsonl", "profile.jsonl", "persona.json", "chat_gold.jsonl", "qa.jsonl")

def profile_sources() -> list[Callable]:
    """What a release carries beside the conversation: the registry's `export_source` kind, each
    fn(store, participant) -> (claims: list[dict], persona: dict | None), claims in the
    profile.jsonl shape with dayids of the participant (built in: companion.release_sources)."""
    return [registry.get("export_source", name) for name in registry.names("export_source")]


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


def _probes(msgs, texts, key: str, seed: int, share: float, recent_window: int, gap: float) -> list[dict]:
    users = [i for i, m in enumerate(msgs) if m.sender == "user"]
    # keyed by the participant's secret, not their name or U-number: anyone holding the seed
    # could otherwise test which name produced which sample
    rng = random.Random(f"probes:{seed}:{key}")
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


def _release_ts(ts: str, shift_days: int) -> str:
    """A release timestamp: shifted by the participant's secret whole weeks, in UTC, to the minute."""
    t = (datetime.fromisoformat(ts) + timedelta(days=shift_days)).astimezone(timezone.utc)
    return t.replace(second=0, microsecond=0).isoformat()


def export(store: Store, out, participants_: list[str] | None = None, seed: int = 0,
           deny_list: str | Path | None = None, recent_window: int = 6, probe_share: float = 0.1,
           session_gap_minutes: float = 60, overwrite: bool = False, reissue: str | None = None,
           show_progress: bool | None = False) -> dict:
    """Write a gated release to `out`; returns a summary. Raises ReleaseRefused or StoreError.

    Every row is built as its consent.formats model, and the written folder passes the structural
    checks of `release check` (consent.releasecheck.STRUCTURE) before it is moved into place.
    `show_progress` None: a progress bar on a terminal (consent.progress).

    `reissue=R`: write release R again (same seed, parameters and pseudonyms) without the members
    who have withdrawn since (see consent.ledger); `participants_` is then not allowed.
    """
    dest = Path(out)
    if (dest / ledger.MARKER).exists() or re.fullmatch(r"\..+\.staging-[0-9a-f]+", dest.name):
        raise FileExistsError(f"{dest} is an unfinished export's staging folder, not a release")
    removed = ledger.reconcile(store, dest.parent)  # a killed export's staging folder is never a release
    ok = eligible(store)
    pinned: dict[str, str] = {}
    if reissue is not None:
        row = store.conn.execute("SELECT state, seed, params FROM release_ledger WHERE release=?",
                                 (reissue,)).fetchone()
        if row is None or row[0] != "released":
            raise StoreError(f"no released release {reissue!r} in the ledger"
                             + (f" (it is {row[0]})" if row else ""))
        if participants_:
            raise StoreError("a re-issue takes its participants from the ledger: do not name any")
        params = json.loads(row[2])
        seed, recent_window = row[1], params.get("recent_window", recent_window)
        probe_share = params.get("probe_share", probe_share)
        session_gap_minutes = params.get("session_gap_minutes", session_gap_minutes)
        pinned = {p: pid for p, pid in ledger.current_members(store.conn, reissue).items() if p in ok}
        if not pinned:
            raise StoreError(f"nobody of release {reissue} is left to re-issue")
        chosen = list(pinned)
    else:
        chosen = list(participants_) if participants_ else ok
    refused = [p for p in chosen if p not in ok]
    if refused:
        raise StoreError(f"not consented to export (or unknown, or re-consent pending): {refused}")
    if not chosen:
        raise StoreError("no participant has consented to export")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        if not overwrite or not (dest / MANIFEST).is_file():
            raise FileExistsError(f"{dest} exists" + ("" if overwrite else "; pass overwrite to replace a release")
                                  + ("" if (dest / MANIFEST).is_file() else " and is not a release"))
    with store.transaction() as conn:
        secret = {p: ledger.keys(conn, p) for p in set(chosen)}
    # Surrogates are drawn in order of first appearance: go through participants in the order of
    # their random keys, so neither that order nor the U-numbers follow their real names.
    chosen = sorted(set(chosen), key=lambda p: secret[p][1])
    if pinned:
        pids = dict(pinned)
    else:
        numbers = list(range(1, len(chosen) + 1))
        secrets.SystemRandom().shuffle(numbers)
        pids = {p: f"U{n:02d}" for p, n in zip(chosen, numbers)}

    deny = read_deny_list(deny_list) if deny_list else {}
    data, cache = {}, {}
    bar = progress.bar(total=2 * len(chosen), desc="export: reading", unit="step", show=show_progress)
    for p in chosen:
        bar.update(1)
        msgs = messages.read(store, p, messages.next_ordinal(store, p))
        claims, persona = [], None
        for src in profile_sources():
            c, pe = src(store, p)
            claims += list(c or [])
            persona = pe if pe is not None else persona
        data[p] = (msgs, claims, persona)
        stated = [m.text for m in msgs if m.sender == "user"] + [c.get("text", "") for c in claims]
        for t, k in stated_terms(stated).items():
            deny.setdefault(t, k)
        for hits in recognizers.scan_many(stated, cache=cache):
            for t, k in learned_terms(hits).items():
                deny.setdefault(t, k)
        if len(p) >= 3:
            deny.setdefault(p, "PERSON")  # a sign-in name can be a real name
    ps = Pseudonymizer(deny, seed=seed)
    ps.cache = cache
    if reissue is not None:
        ps.preload(dict(r) for r in store.conn.execute(
            "SELECT kind, original, surrogate FROM export_surrogates WHERE release=? AND participant IN "
            f"({','.join('?' * len(chosen))}) ORDER BY rowid", (reissue, *chosen)))

    release_id = secrets.token_hex(8)
    files: dict[str, dict] = {}
    used: dict[str, set] = {}
    counts = {}
    bar.set_description("export: pseudonymizing")
    for p in chosen:
        bar.update(1)
        msgs, claims, persona = data[p]
        shift = secret[p][0]
        ps.used = set()
        persona_strings: list[str] = []
        if persona is not None:
            _persona_texts(persona, lambda x: persona_strings.append(x) or x)
        claim_texts = [c.get("text", "") for c in claims]
        done = ps.apply_many([m.text for m in msgs] + claim_texts + persona_strings)
        texts, claim_out, persona_out = (done[:len(msgs)], done[len(msgs):len(msgs) + len(claims)],
                                         iter(done[len(msgs) + len(claims):]))
        conv = [_row(ConversationRow, f"{pids[p]}/{CONVERSATION}", n, {
            "dayid": m.dayid, "sender": m.sender, "text": t, "ts": _release_ts(m.ts, shift)})
            for n, (m, t) in enumerate(zip(msgs, texts), 1)]
        probes = [_row(ChatProbe, f"{pids[p]}/{CHAT_GOLD}", n, g) for n, g in enumerate(
            _probes(msgs, texts, secret[p][1], seed, probe_share, recent_window, session_gap_minutes), 1)]
        prof = [_row(ProfileClaim, f"{pids[p]}/{PROFILE}", n, {**c, "text": t})
                for n, (c, t) in enumerate(zip(claims, claim_out), 1)]
        pers = _persona_texts(persona, lambda x: next(persona_out)) if persona is not None else None
        pers = _row(Persona, f"{pids[p]}/{PERSONA}", None, pers) if pers is not None else None
        used[p] = set(ps.used)
        files[pids[p]] = {"conversation": conv, "profile": prof, "persona": pers, "chat_gold": probes}
        counts[pids[p]] = {"messages": len(conv), "chat_rows": len(probes), "claims": len(prof)}
    order = sorted(pids.values())
    manifest = {"format": FORMAT, "version": VERSION, "recent_window": recent_window,
                "participants": order, "counts": {u: counts[u] for u in order}, "release": release_id,
                "generator": "consent.export", "seed": seed, "probe_share": probe_share,
                "session_gap_minutes": session_gap_minutes, "recognizers": recognizers.VERSION,
                "timestamps": "shifted per participant by a secret number of weeks, UTC, to the minute"}
    if reissue is not None:
        manifest["reissue_of"] = reissue
    manifest = _row(Manifest, MANIFEST, None, manifest)

    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.staging-{secrets.token_hex(4)}"
    params = {"recent_window": recent_window, "probe_share": probe_share, "session_gap_minutes": session_gap_minutes}
    with store.transaction() as conn:
        ledger.begin(conn, release_id, dest.resolve(), staging.resolve(), seed, params, pids, reissue)
    staging.mkdir()
    ledger.write_marker(staging)
    try:
        write(staging, manifest, files)
        write_feedback(store, staging, pids)  # live-trial feedback (see the end of this file)
        bar.close()
        problems = check_release(staging, ps.identifiers(), ps.surrogates(), show_progress=show_progress)
        from consent import releasecheck  # the release must pass its own check, whatever the writer did

        problems += [str(f) for f in releasecheck.check(staging, checks=releasecheck.STRUCTURE).failures
                     if f.file != ledger.MARKER]  # the staging marker goes once every gate has passed
        if problems:
            raise ReleaseRefused(problems)
        (staging / ledger.MARKER).unlink()
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    except BaseException as e:
        bar.close()
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(e, Exception):
            with store.transaction() as conn:
                ledger.finish(conn, release_id, "refused" if isinstance(e, ReleaseRefused) else "abandoned")
        raise

    now = datetime.now(timezone.utc).isoformat()
    with store.transaction() as conn:
        ledger.finish(conn, release_id, "released")
        conn.execute("INSERT INTO exports VALUES (?,?,?,?,?)", (release_id, now, str(dest.resolve()), seed, len(chosen)))
        for p in chosen:
            conn.execute("INSERT INTO export_members VALUES (?,?,?)", (release_id, p, pids[p]))
            conn.executemany("INSERT INTO export_surrogates VALUES (?,?,?,?,?)",
                             [(release_id, p, m["kind"], m["original"], m["surrogate"]) for m in ps.mapping(used[p])])
            audit.record(conn, "exported", p, release=release_id, **counts[pids[p]])
    return {"release": release_id, "path": str(dest), "participants": {u: counts[u] for u in order},
            "surrogates": len(ps.map), "reissue_of": reissue, "cleaned": removed}


def _row(model, rel: str, line: int | None, data: dict) -> dict:
    """A release row built as its format model (consent.formats), as written; a source that gives
    a row the format cannot hold refuses the release, naming file, line and field."""
    try:
        return model.model_validate(data).model_dump(mode="json", exclude_unset=True)
    except ValidationError as e:
        raise ReleaseRefused([f"schema: {rel}" + (f" line {line}" if line else "") + f": {describe(e)}"]) from None


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
                  detector: bool = True, show_progress: bool | None = False) -> list[str]:
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

    pending: list[tuple[str, str]] = []  # (where, text field): the recognizers run once, batched

    def scan(rel: str, n, text: str, fields: list[str]) -> None:
        nonlocal pending
        where = f"{rel}" + (f" line {n}" if n else "")
        if pattern is not None:
            for m in pattern.finditer(text):
                problems.append(f"identifiers: {where}: {kind_of.get(_norm('X', m.group(0)), 'listed')} "
                                f"identifier {_mask(m.group(0))!r} survives")
        if detector:
            pending += [(where, f) for f in fields if f]

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
    texts = [t for _, t in pending]
    with progress.bar(total=len(texts), desc="export: identifiers", unit="text", show=show_progress) as bar:
        found = progress.scan_many(texts, bar)
    for (where, text), hits in zip(pending, found):
        for h in recognizers.uncovered(text, hits, surrogates):
            problems.append(f"identifiers: {where}: recognizers find a {h.kind} {_mask(h.text)!r} that is no surrogate")
    return problems


# --- feedback.jsonl (live trials; docs/FORMAT.md) ------------------------------------------------
# Kept apart from the writer above: one call in `export`, nothing else depends on it.

FEEDBACK = "feedback.jsonl"


def write_feedback(store: Store, root: Path, pids: dict[str, str]) -> None:
    """Write each participant's ratings of companion replies as Uxx/feedback.jsonl (no file
    without any). Rows carry no text (dayid, rating, tag, arm, gate, via, time), so there is
    nothing to pseudonymize. A rating of a reply that is no longer in the released conversation
    (deleted since, e.g. by a retention sweep) is left out: it would cite a dayid that does not
    resolve."""
    from memory import feedback

    for p, pid in pids.items():
        replies = {r.get("dayid") for _, r in _lines(root / pid / CONVERSATION) if r.get("sender") == "companion"}
        rows = [_row(FeedbackRow, f"{pid}/{FEEDBACK}", n, {
            "dayid": f.dayid, "rating": f.public()["rating"], "tag": f.tag, "arm": f.arm, "gate": f.gate,
            "via": f.via, "at": f.created_at})
            for n, f in enumerate((f for f in feedback.history(store, p) if f.dayid in replies), 1)]
        if rows:
            (root / pid / FEEDBACK).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                               encoding="utf-8")
