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
import shlex
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from consent import audit, ledger, progress, recognizers, records, timeshift
from consent.formats import ChatProbe, ConversationRow, FeedbackRow, Manifest, Persona, ProfileClaim, describe, strings
from consent.pseudonymize import Plan, Pseudonymizer, _norm, read_deny_list
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
    """The gates found problems; `advice` says, per refused text, how the researcher can proceed."""

    def __init__(self, problems: list[str], advice: list[str] = ()):
        self.problems = problems
        self.advice = list(advice)
        text = "release refused:\n  " + "\n  ".join(problems)
        if self.advice:
            text += ("\nWhat a recognizer finds is replaced; these survived replacement. If a text is no "
                     "identifier, allow it (recorded in the manifest with who allowed it); or leave its "
                     "message out (counted in the manifest):\n  " + "\n  ".join(self.advice))
        super().__init__(text)


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


# --- what a release says about people: left-out messages, the anonymization pass, the time pass --
# (kept together and apart from the writer: `export` calls each once)


def _exclusions(entries: list[str], chosen: list[str]) -> dict[str, set[str]]:
    """`--exclude` values (`PARTICIPANT:DAYID`, or `DAYID` when one participant is exported; a
    claim id in place of a dayid) as participant -> ids."""
    out: dict[str, set[str]] = {}
    for e in entries:
        e = e.strip()
        if not e:
            continue
        if ":" in e:
            p, x = e.rsplit(":", 1)
        elif len(chosen) == 1:
            p, x = chosen[0], e
        else:
            raise StoreError(f"--exclude {e!r}: several participants are exported; name one as PARTICIPANT:{e}")
        if p not in chosen:
            raise StoreError(f"--exclude {e!r}: {p!r} is not exported in this release")
        out.setdefault(p, set()).add(x)
    return out


def _leave_out(msgs, claims: list[dict], persona, ids: set[str], participant: str):
    """(messages, claims, persona) without the left-out messages and claims, and (messages, claims)
    left out: a claim resting only on left-out messages goes too; citations of them disappear."""
    if not ids:
        return (msgs, claims, persona), (0, 0)
    unknown = sorted(ids - {m.dayid for m in msgs} - {c.get("id") for c in claims})
    if unknown:
        raise StoreError(f"--exclude: {participant} has no message or claim {', '.join(unknown)}")
    kept = [m for m in msgs if m.dayid not in ids]
    out = []
    for c in claims:
        src = list(c.get("source_dayids") or [])
        if c.get("id") in ids or (src and set(src) <= ids):
            continue
        c = {**c, "source_dayids": [d for d in src if d not in ids]}
        for f in ("valid_from", "valid_to"):
            if c.get(f) in ids:
                c[f] = c["source_dayids"][0] if f == "valid_from" and c["source_dayids"] else None
        out.append(c)

    def strip(x):
        if isinstance(x, dict):
            return {k: ([d for d in v if d not in ids] if k == "evidence" and isinstance(v, list) else strip(v))
                    for k, v in x.items()}
        return [strip(v) for v in x] if isinstance(x, list) else x

    return (kept, out, strip(persona) if persona is not None else None), (len(msgs) - len(kept), len(claims) - len(out))


def _anonymize(ps: Pseudonymizer, data: dict, shifts: dict[str, int], zones: dict[str, str | None],
               produced: set[str]) -> dict[str, dict]:
    """Every text a participant's files carry, in one pass per participant: dates shifted by their
    offset (`consent.timeshift`), then one plan of names over all of them (messages, claims,
    persona) applied to every one, so the same person has the same surrogate in every file."""
    prepared, plans = {}, {}
    for p, (msgs, claims, persona) in data.items():
        days, first = shifts[p], timeshift.day_first(zones.get(p))
        when = {m.dayid: datetime.fromisoformat(m.ts) for m in msgs}
        start = next(iter(when.values()), None)

        def shift(text, ref):
            return timeshift.shift_text(text, days, ref, first, seen=produced)

        texts = [shift(m.text, when[m.dayid]) for m in msgs]
        claim_texts = [shift(c.get("text", ""), next((when[d] for d in c.get("source_dayids") or [] if d in when), start))
                       for c in claims]
        strings: list[str] = []
        if persona is not None:
            _persona_texts(persona, lambda x: strings.append(x) or x)
        everything = texts + claim_texts + [shift(x, start) for x in strings]
        prepared[p] = (everything, len(texts), len(claim_texts))
        plans[p] = ps.plan(everything)
    for plan in plans.values():  # no surrogate may be an original of anyone in the release
        ps.ban(plan)
    for p, plan in plans.items():  # a name found in anyone's texts is replaced in everyone's
        for q, other in plans.items():
            if q != p:
                for key, kind in other.kinds.items():
                    if key not in plan.kinds:
                        plan.add(other.spelling[key], kind)
                        plan.surnames |= {key} & other.surnames
                        plan.anycase |= {key} & other.anycase
    out = {}
    for p, (msgs, claims, persona) in data.items():
        everything, nm, nc = prepared[p]
        ps.used = set()
        done = ps.apply_many(everything, plans[p])
        rest = iter(done[nm + nc:])
        out[p] = {"texts": done[:nm], "claims": done[nm:nm + nc], "used": set(ps.used),
                  "persona": _persona_texts(persona, lambda x: next(rest)) if persona is not None else None}
    return out


def _time_pass(root: Path, shifts: dict[str, int], manifest_days: int, produced: set[str]) -> None:
    """Every timestamp in every file of the staged release, shifted: a participant's files by their
    offset, the manifest (and anything outside a participant's folder) by the release's own."""
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.suffix not in (".json", ".jsonl"):
            continue
        rel = f.relative_to(root)
        days = shifts.get(rel.parts[0], manifest_days) if len(rel.parts) > 1 else manifest_days
        raw = f.read_text(encoding="utf-8")
        if f.suffix == ".jsonl":
            rows = [timeshift.shift_tree(json.loads(x), days, seen=produced) for x in raw.split("\n") if x.strip()]
            new = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        else:
            new = json.dumps(timeshift.shift_tree(json.loads(raw), days, seen=produced), ensure_ascii=False,
                             indent=2) + "\n"
        if new != raw:
            f.write_text(new, encoding="utf-8")


def export(store: Store, out, participants_: list[str] | None = None, seed: int = 0,
           deny_list: str | Path | None = None, recent_window: int = 6, probe_share: float = 0.1,
           session_gap_minutes: float = 60, overwrite: bool = False, reissue: str | None = None,
           exclude: list[str] = (), allow: list[str] = (), allowed_by: str | None = None,
           show_progress: bool | None = False) -> dict:
    """Write a gated release to `out`; returns a summary. Raises ReleaseRefused or StoreError.

    Every row is built as its consent.formats model, and the written folder passes the structural
    checks of `release check` (consent.releasecheck.STRUCTURE) before it is moved into place.
    `show_progress` None: a progress bar on a terminal (consent.progress).

    `reissue=R`: write release R again (same seed, parameters and pseudonyms, the same messages
    left out and texts allowed) without the members who have withdrawn since (see
    consent.ledger); `participants_` is then not allowed.
    `exclude`: messages (or claims) left out, as `PARTICIPANT:DAYID` (`DAYID` alone when one
    participant is exported; a claim id in place of the dayid); counted in the manifest.
    `allow`: texts a researcher reviewed as no identifier (a recognizer's false positive): never
    replaced, never refused, listed in the manifest with `allowed_by`.
    """
    dest = Path(out)
    if (dest / ledger.MARKER).exists() or re.fullmatch(r"\..+\.staging-[0-9a-f]+", dest.name):
        raise FileExistsError(f"{dest} is an unfinished export's staging folder, not a release")
    removed = ledger.reconcile(store, dest.parent)  # a killed export's staging folder is never a release
    ok = eligible(store)
    pinned: dict[str, str] = {}
    params_before: dict = {}
    if reissue is not None:
        row = store.conn.execute("SELECT state, seed, params FROM release_ledger WHERE release=?",
                                 (reissue,)).fetchone()
        if row is None or row[0] != "released":
            raise StoreError(f"no released release {reissue!r} in the ledger"
                             + (f" (it is {row[0]})" if row else ""))
        if participants_:
            raise StoreError("a re-issue takes its participants from the ledger: do not name any")
        params = params_before = json.loads(row[2])
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
    by_pid = {u: p for p, u in pids.items()}
    left_out = _exclusions(list(exclude) + [f"{by_pid[u]}:{x}" for u, xs in params_before.get("excluded", {}).items()
                                            if u in by_pid for x in xs], chosen)
    allow = list(dict.fromkeys(list(allow) + [a["text"] for a in params_before.get("allowed", [])]))
    allowed_by = allowed_by or next((a.get("by") for a in params_before.get("allowed", [])), None)

    deny = read_deny_list(deny_list) if deny_list else {}
    for p in chosen:
        if len(p) >= 3:
            deny.setdefault(p, "PERSON")  # a sign-in name can be a real name
    data, dropped = {}, {}
    bar = progress.bar(total=2 * len(chosen), desc="export: reading", unit="step", show=show_progress)
    for p in chosen:
        bar.update(1)
        msgs = messages.read(store, p, messages.next_ordinal(store, p))
        claims, persona = [], None
        for src in profile_sources():
            c, pe = src(store, p)
            claims += list(c or [])
            persona = pe if pe is not None else persona
        data[p], dropped[p] = _leave_out(msgs, claims, persona, left_out.get(p, set()), p)
    ps = Pseudonymizer(deny, seed=seed, allowed=allow)
    if reissue is not None:
        ps.preload(dict(r) for r in store.conn.execute(
            "SELECT kind, original, surrogate FROM export_surrogates WHERE release=? AND participant IN "
            f"({','.join('?' * len(chosen))}) ORDER BY rowid", (reissue, *chosen)))
    zones = {p: (participants.get(store, p) or {}).get("tz") for p in chosen}
    produced: set[str] = set()  # every timestamp and date the time pass wrote (the gate allows no other)
    people = _anonymize(ps, data, {p: secret[p][0] for p in chosen}, zones, produced)

    release_id = secrets.token_hex(8)
    files: dict[str, dict] = {}
    counts = {}
    bar.set_description("export: pseudonymizing")
    for p in chosen:
        bar.update(1)
        msgs, claims, persona = data[p]
        texts, claim_out, persona_out = people[p]["texts"], people[p]["claims"], people[p]["persona"]
        # times as stored: the time pass shifts every timestamp of every written file (_time_pass)
        conv = [_row(ConversationRow, f"{pids[p]}/{CONVERSATION}", n, {
            "dayid": m.dayid, "sender": m.sender, "text": t, "ts": m.ts})
            for n, (m, t) in enumerate(zip(msgs, texts), 1)]
        probes = [_row(ChatProbe, f"{pids[p]}/{CHAT_GOLD}", n, g) for n, g in enumerate(
            _probes(msgs, texts, secret[p][1], seed, probe_share, recent_window, session_gap_minutes), 1)]
        prof = [_row(ProfileClaim, f"{pids[p]}/{PROFILE}", n, {**c, "text": t})
                for n, (c, t) in enumerate(zip(claims, claim_out), 1)]
        pers = _row(Persona, f"{pids[p]}/{PERSONA}", None, persona_out) if persona_out is not None else None
        files[pids[p]] = {"conversation": conv, "profile": prof, "persona": pers, "chat_gold": probes}
        counts[pids[p]] = {"messages": len(conv), "chat_rows": len(probes), "claims": len(prof)}
    order = sorted(pids.values())
    manifest = {"format": FORMAT, "version": VERSION, "recent_window": recent_window,
                "participants": order, "counts": {u: counts[u] for u in order}, "release": release_id,
                "generator": "consent.export", "seed": seed, "probe_share": probe_share,
                "session_gap_minutes": session_gap_minutes, "recognizers": recognizers.VERSION,
                "timestamps": "shifted per participant by a secret number of weeks, UTC, to the minute; "
                              "dates inside texts shifted by the same weeks"}
    excluded = {pids[p]: {"messages": n[0], "claims": n[1]} for p, n in dropped.items() if any(n)}
    if excluded:
        manifest["excluded"] = {u: excluded[u] for u in sorted(excluded)}
    if allow:
        manifest["allowed"] = [{"text": a, "by": allowed_by or "researcher"} for a in allow]
    if reissue is not None:
        manifest["reissue_of"] = reissue
    manifest = _row(Manifest, MANIFEST, None, manifest)

    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.staging-{secrets.token_hex(4)}"
    params = {"recent_window": recent_window, "probe_share": probe_share, "session_gap_minutes": session_gap_minutes,
              "manifest_shift_days": params_before.get("manifest_shift_days", -7 * (4 + secrets.randbelow(101)))}
    if excluded:  # by U-number: the ledger outlives erasure and holds no name
        params["excluded"] = {pids[p]: sorted(left_out[p]) for p in chosen if left_out.get(p)}
    if allow:
        params["allowed"] = manifest["allowed"]
    with store.transaction() as conn:
        ledger.begin(conn, release_id, dest.resolve(), staging.resolve(), seed, params, pids, reissue)
    staging.mkdir()
    ledger.write_marker(staging)
    try:
        write(staging, manifest, files)
        write_feedback(store, staging, pids)  # live-trial feedback (see the end of this file)
        _time_pass(staging, {pids[p]: secret[p][0] for p in chosen}, params["manifest_shift_days"], produced)
        bar.close()
        findings: list[Finding] = []
        problems = check_release(staging, ps.identifiers(), ps.surrogates(), allowed=allow, cache=ps.cache,
                                 times=produced, findings=findings, show_progress=show_progress)
        from consent import releasecheck  # the release must pass its own check, whatever the writer did

        problems += [str(f) for f in releasecheck.check(staging, checks=releasecheck.STRUCTURE).failures
                     if f.file != ledger.MARKER]  # the staging marker goes once every gate has passed
        if problems:
            raise ReleaseRefused(problems, _how_to_proceed(staging, findings, by_pid, len(chosen)))
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
                             [(release_id, p, m["kind"], m["original"], m["surrogate"])
                              for m in ps.mapping(people[p]["used"])])
            audit.record(conn, "exported", p, release=release_id, **counts[pids[p]])
    return {"release": release_id, "path": str(dest), "participants": {u: counts[u] for u in order},
            "surrogates": len(ps.map), "reissue_of": reissue, "cleaned": removed,
            "excluded": manifest.get("excluded", {}), "allowed": allow}


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


SOURCES = {"checksum": "the check-digit rule", "pattern": "the pattern", "phone": "the phone-number parser",
           "email": "the email rule", "url": "the web-address rule", "ip": "the IP-address rule",
           "cue": "the cue word + number rule", "digits": "the long-number rule", "ner": "the NER model (spaCy)",
           "name": "the name lists (first names, surnames)", "title": "the title rule (Mr, Dr ...)",
           "script": "the non-Latin-script rule", "nickname": "the nickname rule",
           "map": "the surrogate map (an original of this release)", "time": "the time pass"}


@dataclass
class Finding:
    """One thing the gate found: where (file, line, field), what (text in full), and which rule."""
    check: str
    file: str
    line: int | None
    field: str
    text: str
    kind: str
    source: str

    def __str__(self) -> str:
        where = self.file + (f" line {self.line}" if self.line else "") + f", field '{self.field}'"
        if self.check == "time":
            return f"time: {where}: {self.text!r} is a date or time the time pass did not shift"
        by = {"pattern": f"the {self.kind} pattern", "checksum": f"the {self.kind} check-digit rule"}.get(
            self.source, SOURCES.get(self.source, self.source))
        if self.source == "map":
            return f"identifiers: {where}: {self.kind} {self.text!r} ({by}) survives"
        return f"identifiers: {where}: {self.kind} {self.text!r} (found by {by}) survives replacement"


# fields that hold dayids or times: not text the identifier scan reads
NOT_TEXT = ("evidence", "ts", "at", "dayid", "probe_dayid", "recent_context", "episode_refs", "profile_refs",
            "grounding_dayids", "source_dayids", "valid_from", "valid_to")


# Fields the recognizers read: participant text (the rest are ids, enumerations, arms, times).
TEXT_FIELDS = re.compile(r"(?:^|\.)(?:text|question|answer|reference_reply|value|note)(?:$|\[)|^descriptions\[|"
                         r"^slots\.")


def check_release(root: str | Path, identifiers: dict[str, str], surrogates: set[str] = frozenset(),
                  detector: bool = True, allowed=(), cache: dict | None = None, times: set | None = None,
                  findings: list | None = None, show_progress: bool | None = False) -> list[str]:
    """Every failing gate, one line per offending row ([] means the release may go).

    `identifiers`: originals (of the surrogate map, the deny list) that may appear nowhere;
    `surrogates` and `allowed` texts are no identifiers; `cache` is the export's scan cache (the
    gate reads the very texts the export scanned last); `times`, when given, is every timestamp and
    date the time pass wrote: any other in any file is refused. `findings` collects the
    identifiers and time problems as `Finding`s. `show_progress` None: a bar on a terminal."""
    root = Path(root)
    problems: list[str] = []
    findings = [] if findings is None else findings
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return [f"{MANIFEST}: unreadable ({e})"]
    pids = manifest.get("participants", [])
    folders = sorted(d.name for d in root.iterdir() if d.is_dir())
    for d in folders:
        if d not in pids:
            problems.append(f"counts: folder {d}/ is not listed in {MANIFEST} participants")
    ok = {_norm("X", a) for a in allowed}
    listed = Plan()
    for t, k in identifiers.items():
        if len(t.strip()) >= 2 and _norm("X", t) not in ok:
            listed.add(t.strip(), k)

    pending: list[tuple[str, int | None, str, str]] = []  # (file, line, field, text): recognizers run once, batched

    def found(f: Finding) -> None:
        findings.append(f)
        problems.append(str(f))

    cover = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(x) for x in sorted(surrogates, key=len, reverse=True)
                                                 if x) + r")(?!\w)") if surrogates else None

    def scan(rel: str, n, obj) -> None:
        fields = strings(obj, NOT_TEXT)
        for field, text in fields:
            inside = [m.span() for m in cover.finditer(text)] if cover is not None else []
            for m in listed.spans(text):  # an original, unless it is part of a surrogate ("[INSEE number 2]")
                if not any(a <= m.start and m.end <= b for a, b in inside):
                    found(Finding("identifiers", rel, n, field, m.text, m.kind, "map"))
            if times is not None:
                for expr in timeshift.dates_in_text(text):
                    if expr not in times:
                        found(Finding("time", rel, n, field, expr, "DATE", "time"))
            if detector and text and TEXT_FIELDS.search(field):
                pending.append((rel, n, field, text))
        if times is not None:
            for t in timeshift.timestamps(obj):
                if t not in times:
                    found(Finding("time", rel, n, "timestamp", t, "TIME", "time"))

    scan(MANIFEST, None, {k: v for k, v in manifest.items() if k != "allowed"})
    for pid in pids:
        d = root / pid
        if not d.is_dir():
            problems.append(f"counts: {MANIFEST} lists {pid} but there is no folder {pid}/")
            continue
        rel = f"{pid}/{CONVERSATION}"
        conv = _lines(d / CONVERSATION)
        index = {r.get("dayid"): i for i, (_, r) in enumerate(conv)}
        for n, r in conv:
            scan(rel, n, r)

        def resolve(where, field, dayids, before=None):
            for x in dayids:
                if x not in index:
                    problems.append(f"dayids: {where}: field '{field}': {x!r} is not in the conversation")
                elif before is not None and index[x] >= before:
                    problems.append(f"order: {where}: field '{field}': {x!r} does not precede the probe")

        gold = _lines(d / CHAT_GOLD)
        for n, g in gold:
            where = f"{pid}/{CHAT_GOLD} line {n}"
            scan(f"{pid}/{CHAT_GOLD}", n, g)
            resolve(where, "probe_dayid", [g.get("probe_dayid")])
            at = index.get(g.get("probe_dayid"))
            for f in ("recent_context", "episode_refs", "grounding_dayids"):
                resolve(where, f, g.get(f) or [], before=at)
        prof = _lines(d / PROFILE)
        for n, c in prof:
            where = f"{pid}/{PROFILE} line {n}"
            scan(f"{pid}/{PROFILE}", n, c)
            resolve(where, "source_dayids", c.get("source_dayids") or [])
            resolve(where, "valid_from", [c["valid_from"]] if c.get("valid_from") else [])
            resolve(where, "valid_to", [c["valid_to"]] if c.get("valid_to") else [])
        qa = _lines(d / QA)
        for n, q in qa:
            scan(f"{pid}/{QA}", n, q)
            resolve(f"{pid}/{QA} line {n}", "evidence_dayids", q.get("evidence_dayids") or [])
        for f in sorted(d.glob("*.jsonl")):  # every other file of the participant (feedback ...)
            if f.name not in (CONVERSATION, CHAT_GOLD, PROFILE, QA):
                for n, r in _lines(f):
                    scan(f"{pid}/{f.name}", n, r)
        if (d / PERSONA).exists():
            persona = json.loads((d / PERSONA).read_text(encoding="utf-8"))
            scan(f"{pid}/{PERSONA}", None, persona)
            for field, x in _evidence(persona):
                resolve(f"{pid}/{PERSONA}", field, [x])
        have = {"messages": len(conv), "chat_rows": len(gold), "claims": len(prof), "qa": len(qa)}
        for k, want in (manifest.get("counts", {}).get(pid) or {}).items():
            if k in have and want != have[k]:
                problems.append(f"counts: {MANIFEST} counts.{pid}.{k} says {want}, the files hold {have[k]}")
    with progress.bar(total=len(pending), desc="export: identifiers", unit="text", show=show_progress) as bar:
        scanned = progress.scan_many([t for *_, t in pending], bar, cache=cache)
    for (rel, n, field, text), hits in zip(pending, scanned):
        for h in recognizers.uncovered(text, hits, surrogates):
            if _norm("X", h.text) not in ok:
                found(Finding("identifiers", rel, n, field, h.text, h.kind, h.source))
    return problems


def _how_to_proceed(root: Path, findings: list[Finding], by_pid: dict[str, str], n_participants: int) -> list[str]:
    """What the researcher can do about each refused text: allow it, or leave its message out."""
    out, seen = [], set()
    rows: dict[str, list[dict]] = {}
    for f in findings:
        if f.check != "identifiers":
            continue
        pid = f.file.split("/", 1)[0]
        who = by_pid.get(pid)
        if f.file not in rows and (root / f.file).is_file():
            rows[f.file] = [r for _, r in _lines(root / f.file)] if f.file.endswith(".jsonl") else []
        row = rows.get(f.file, [])[f.line - 1] if f.line and len(rows.get(f.file, [])) >= f.line else {}
        key = row.get("dayid") or row.get("id") or row.get("probe_dayid")
        what = f"--allow {shlex.quote(f.text)}"
        if who and key and f.file.endswith((CONVERSATION, PROFILE)):
            target = f"{who}:{key}" if n_participants > 1 else key
            what += f"  or  --exclude {shlex.quote(target)}" + (" (the message is left out)" if f.file.endswith(
                CONVERSATION) else " (the claim is left out)")
        elif who and f.file.endswith(CHAT_GOLD):
            what += "  (it is a companion reply: the conversation line with the same text can be left out)"
        line = f"{f.file}" + (f" line {f.line}" if f.line else "") + (f" ({who}, {key})" if who and key else
                                                                        f" ({who})" if who else "") + f": {what}"
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out


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
