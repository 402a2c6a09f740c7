"""Mechanical validity checks of a written release (`companion release check DIR`).

The exporter's gates (consent.export.check_release) guard the moment of writing; this checks a
release folder as it is later, after annotation, copying or hand edits, from the files alone (plus,
when the data directory that exported it is at hand, the surrogate map's originals). Each check has
a name; each failure names the check, the file, the line (or row) and what is wrong:

- `files`: the folder holds regular files of known names only (consent.releasefiles): no
  symbolic link anywhere, no FIFO, device or socket, no folder or file of another name, and every
  manifest participant id of the U-number shape. What this refuses is never opened.
- `schema`: every file against the format models (consent.formats): manifest, conversation,
  profile, persona, chat gold, QA, feedback, the annotators' logs; reads are bounded (line and
  file size, nesting depth) and hostile bytes are named errors, never a traceback.
- `dayids`: every cited dayid resolves to a conversation row of the same participant; a probe is
  a participant message; its recent context, episode refs and grounding precede it.
- `order`: conversation dayids unique and increasing, timestamps never going back; probe, claim and
  question ids unique.
- `window` (V2): grounding / episode / profile references lie outside the probe's recent window,
  and `recent_context` is exactly that window.
- `sampling` (V3): the manifest's sampling record exists, read nothing about demand, and the
  proportional rows are exactly what it drew (population, size, digest), so π, computed on that
  stratum only, rests on a blind draw.
- `identifiers`: the export recognizers re-run over every text field find nothing that is not a
  surrogate; with the exporting store, none of the originals of its surrogate map appears either.
- `surrogates`: a surrogate in a participant's derived files (profile, persona, probes, QA) also
  occurs in that participant's conversation: derived text was pseudonymized with the same map.
- `counts`: manifest participants and counts match the folders and files.
- `annotation`: an annotated probe carries every stage A-E with a note, confirmed by a person; a
  pending probe is not scoreable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from consent import progress, pseudonymize, recognizers, releasefiles
from consent.formats import (STAGES, describe, strings, AnnotationRecord, ChatProbe, ConversationRow, FeedbackRow, Manifest,
                             Persona, ProfileClaim, QAItem, Sampling, sampling_digest)
from consent.releasefiles import (ANNOTATIONS, CHAT_GOLD, CONVERSATION, FEEDBACK, MANIFEST, PERSONA, PROFILE, QA,
                                  ReleaseFileError)
from memory.keys import parse_dayid

CHECKS = ("files", "schema", "dayids", "order", "window", "sampling", "identifiers", "surrogates", "counts",
          "annotation")
# What export re-runs on its staging folder (its own gate covers identifiers with the surrogate map).
STRUCTURE = tuple(c for c in CHECKS if c not in ("identifiers", "surrogates"))
# What a draw blind to need may not read (V3).
NEED_WORDS = ("demand", "locus", "grounding", "annotation", "memory", "tier", "category", "referent", "gold")


@dataclass
class Failure:
    check: str
    file: str
    row: int | None
    message: str
    unreadable: bool = False  # the folder or a file is not a release that can be read (exit 2)

    def __str__(self) -> str:
        return f"{self.check}: {self.file}" + (f" line {self.row}" if self.row else "") + f": {self.message}"


@dataclass
class Report:
    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def unreadable(self) -> bool:
        """Not a release one can read: a file a release may not hold, bytes that are no JSON row,
        or a manifest that does not fit its model (`release check` exits 2, not 1)."""
        return any(f.unreadable for f in self.failures)

    def failed(self, check: str) -> list[Failure]:
        return [f for f in self.failures if f.check == check]

    def summary(self) -> dict:
        return {"ok": self.ok, "checks": {c: len(self.failed(c)) for c in CHECKS},
                "unreadable": self.unreadable, "failures": [f.__dict__ for f in self.failures], "notes": self.notes}


# --- identifier recognizers ------------------------------------------------------------------------


def _identifier_hits(text: str) -> list:
    """Identifier spans in `text` (kind, start, end, text): the very scan that pseudonymized the release."""
    return recognizers.scan(text)


def surrogate_pools() -> list[str]:
    """Every surrogate a Pseudonymizer can draw from a pool (names, places, organisations)."""
    out = []
    for name in ("PERSON_POOL", "SURNAME_POOL", "PLACE_POOL", "ORG_POOL"):
        out += list(getattr(pseudonymize, name, []))
    return out


# The shapes of the exporter's generated surrogates: reserved documentation names and numbers
# (example.org, +1 555 01xx, 192.0.2.x), numbered stand-ins and visible placeholders.
SURROGATE_SHAPES = re.compile(
    r"person\d+@example\.org|\+1 555 01\d\d|https://example\.org/link\d+|192\.0\.2\.\d{1,3}|"
    r"\b(?:Person|Place|Organisation)\d+\b|\[[a-zA-Z ]+ \d+\]")


def _covered(text: str, hits: list, vocab: list[str]) -> list:
    """Hits that are not surrogates: the export gate's own rule (recognizers.uncovered), with the
    surrogates known from the pools and the generated shapes instead of the release's map."""
    if not hits:
        return []
    return recognizers.uncovered(text, hits, list(vocab) + [m.group(0) for m in SURROGATE_SHAPES.finditer(text)])


def _mask(term: str) -> str:
    return term[0] + "*" * max(1, len(term) - 2) + (term[-1] if len(term) > 1 else "")


# --- reading, failures collected instead of raised ------------------------------------------------




class _Reader:
    """Reads the files `layout` accepted (never anything else), collecting failures instead of raising."""

    def __init__(self, root: Path, report: Report, readable: set[str]):
        self.root, self.report, self.readable = root, report, readable

    def fail(self, check: str, rel: str, row: int | None, message: str, unreadable: bool = False) -> None:
        self.report.failures.append(Failure(check, rel, row, message, unreadable or check == "files"))

    def has(self, rel: str) -> bool:
        return rel in self.readable

    def _validate(self, rel: str, n: int | None, model: type[BaseModel], obj) -> BaseModel | None:
        if not isinstance(obj, dict):
            self.fail("schema", rel, n, f"expected a JSON object, got {type(obj).__name__}", unreadable=True)
            return None
        try:
            return model.model_validate(obj)
        except ValidationError as e:
            self.fail("schema", rel, n, describe(e), unreadable=rel == MANIFEST)
            return None

    def json(self, rel: str, model: type[BaseModel]) -> tuple[dict | None, BaseModel | None]:
        if not self.has(rel):
            return None, None
        try:
            raw = releasefiles.read_json(self.root, rel)
        except ReleaseFileError as e:
            self.fail(e.check, rel, e.line, e.message, unreadable=True)
            return None, None
        return (raw if isinstance(raw, dict) else None), self._validate(rel, None, model, raw)

    def jsonl(self, rel: str, model: type[BaseModel]) -> list[tuple[int, dict, BaseModel | None]]:
        """(line, raw object, validated model or None) for every non-blank line that is a JSON object."""
        if not self.has(rel):
            return []
        out = []
        try:
            for n, raw in releasefiles.iter_jsonl(self.root, rel):
                if isinstance(raw, ReleaseFileError):
                    self.fail("schema", rel, raw.line, raw.message, unreadable=True)
                    continue
                out.append((n, _view(raw), self._validate(rel, n, model, raw)))
        except ReleaseFileError as e:
            self.fail(e.check, rel, e.line, e.message, unreadable=True)
        return out


# The cross-file checks read rows whose schema may have failed (schema names that): they see a
# field of the wrong type as absent, so hostile values (a list where a dayid goes) cannot crash them.
_STR_FIELDS = ("dayid", "probe_dayid", "id", "sender", "text", "ts", "valid_from", "valid_to", "stratum", "annotation",
               "reference_reply", "question", "answer", "rating", "tag", "key", "stage")
_LIST_FIELDS = ("recent_context", "episode_refs", "grounding_dayids", "profile_refs", "source_dayids",
                "evidence_dayids", "annotators")


def _view(raw: dict) -> dict:
    v = dict(raw)
    for k in _STR_FIELDS:
        if k in v and not isinstance(v[k], str):
            v[k] = None
    for k in _LIST_FIELDS:
        if k in v:
            v[k] = [x for x in v[k] if isinstance(x, str)] if isinstance(v[k], list) else []
    if "trace" in v and not isinstance(v["trace"], dict):
        v["trace"] = {}
    return v


# Fields that hold dayids, enumerations or who annotated (researchers, not participants): no
# participant text in them, so neither scanned for identifiers nor for surrogates.
DAYID_FIELDS = ("recent_context", "episode_refs", "grounding_dayids", "probe_dayid", "source_dayids", "valid_from",
                "valid_to", "evidence", "evidence_dayids", "dayid", "dayids", "profile_refs", "stratum", "locus",
                "locus_verified", "tier", "referent_on_screen", "annotation", "sender", "ts", "verdict", "id",
                "by", "drafted_by", "annotator", "annotators", "confirmed", "stage", "key", "at", "checks")


def _is_dayid(x) -> bool:
    try:
        parse_dayid(x)
        return True
    except (ValueError, TypeError):
        return False


# --- the check --------------------------------------------------------------------------------------


def check(root: str | Path, originals: dict[str, str] | None = None, checks: tuple[str, ...] = CHECKS,
          show_progress: bool | None = False) -> Report:
    """Run every check (or those named in `checks`) on the release folder `root`.

    `originals` (original -> kind), when given, are looked for verbatim in every file: the
    exporting store's surrogate map (see `originals_from_store`). `show_progress` None: a bar on a
    terminal (consent.progress).
    """
    root = Path(root)
    report = Report()
    if not releasefiles.exists(root, MANIFEST):
        report.failures.append(Failure("schema", MANIFEST, None, f"no {MANIFEST} in {root} (not a release folder)",
                                       unreadable=True))
        return report
    r = _Reader(root, report, {MANIFEST})
    raw_manifest, manifest = r.json(MANIFEST, Manifest)
    if raw_manifest is None and not report.failures:
        r.fail("files", MANIFEST, None, "is not a regular file")
    raw_manifest = raw_manifest or {}
    listed = raw_manifest.get("participants", [])
    listed = listed if isinstance(listed, list) else []
    # Ids become paths: one that is not a U-number is refused here and never used to build one.
    pids = [p for p in listed if releasefiles.valid_participant(p)]
    for p in listed:
        if p not in pids:
            r.fail("files", MANIFEST, None, f"participant {p!r} is not of the shape U01 (U and a number): "
                                            "its folder is not read")
    known, bad = releasefiles.layout(root, pids)
    for rel, why in bad:
        r.fail("files", rel, None, why)
    r.readable = {e.rel for e in known if e.kind == "file"}
    folders = {e.rel for e in known if e.kind == "dir"}
    rw = raw_manifest.get("recent_window")
    w = manifest.recent_window if manifest else (rw if isinstance(rw, int) and not isinstance(rw, bool)
                                                 and 0 <= rw <= 10_000 else None)
    bar = progress.bar(total=len(pids), desc="release check", unit="participant", show=show_progress)

    convs: dict[str, list[dict]] = {}
    texts: list[tuple[str, int | None, str, str]] = []
    # The manifest is written by tools (names like "eval.fixtures" read as URLs to the recognizers):
    # it is searched for the surrogate map's originals only.
    meta = [(MANIFEST, None, k, v) for k, v in strings(raw_manifest)]
    derived: dict[str, list[tuple[str, int | None, str]]] = {}
    proportional: dict[str, list[str]] = {}
    users: dict[str, int] = {}
    pending = done = 0
    demand = [0, 0]  # proportional, annotated and scoreable: [citing the past, all]

    for pid in pids:
        bar.update(1)
        if pid not in folders:
            if not releasefiles.exists(root, pid):
                r.fail("counts", MANIFEST, None, f"lists {pid} but there is no folder {pid}/")
            continue
        rel = f"{pid}/{CONVERSATION}"
        if not releasefiles.exists(root, rel):
            r.fail("schema", rel, None, "missing (every participant has a conversation)")
        conv = r.jsonl(rel, ConversationRow)
        convs[pid] = [c for _, c, _ in conv]
        users[pid] = sum(1 for _, c, _ in conv if c.get("sender") == "user")
        index: dict[str, int] = {}
        prev_key = prev_ts = None
        for i, (n, c, _) in enumerate(conv):
            dayid = c.get("dayid")
            texts.append((rel, n, "text", c.get("text") or ""))
            if dayid is None:
                continue  # schema names it
            if dayid in index:
                r.fail("order", rel, n, f"dayid {dayid!r} repeats (first at row {index[dayid] + 1})")
                continue
            index[dayid] = i
            if _is_dayid(dayid):
                key = parse_dayid(dayid)
                if prev_key is not None and key <= prev_key[1]:
                    r.fail("order", rel, n, f"dayid {dayid!r} comes after {prev_key[0]!r}: rows must be in time order")
                prev_key = (dayid, key)
            try:
                ts = datetime.fromisoformat(c.get("ts"))
                if prev_ts is not None and ts.tzinfo and prev_ts[1].tzinfo and ts < prev_ts[1]:
                    r.fail("order", rel, n, f"ts {c['ts']!r} is earlier than {prev_ts[0]!r} on the row before")
                prev_ts = (c["ts"], ts)
            except (TypeError, ValueError):
                pass  # schema names it
        sender = {c.get("dayid"): c.get("sender") for c in convs[pid]}

        def resolve(rel_, n, fname, dayids, before=None):
            for x in dayids:
                if not isinstance(x, str):
                    continue
                if x not in index:
                    elsewhere = [q for q, cs in convs.items() if q != pid and any(c.get("dayid") == x for c in cs)]
                    r.fail("dayids", rel_, n, f"field '{fname}': {x!r} is not in {pid}'s conversation"
                                              + (f" (it is a dayid of {', '.join(elsewhere)})" if elsewhere else ""))
                elif before is not None and index[x] >= before:
                    r.fail("dayids", rel_, n, f"field '{fname}': {x!r} does not precede the probe")

        derived[pid] = []
        claims: dict[str, dict] = {}
        rel = f"{pid}/{PROFILE}"
        prof = r.jsonl(rel, ProfileClaim)
        seen: dict[str, int] = {}
        for n, c, _ in prof:
            if c.get("id") in seen:
                r.fail("order", rel, n, f"claim id {c.get('id')!r} repeats (first at line {seen[c.get('id')]})")
            seen.setdefault(c.get("id"), n)
            claims[c.get("id")] = c
            resolve(rel, n, "source_dayids", c.get("source_dayids") or [])
            for f in ("valid_from", "valid_to"):
                resolve(rel, n, f, [c[f]] if c.get(f) else [])
            for k, s in strings(c, skip=DAYID_FIELDS):
                texts.append((rel, n, k, s))
                derived[pid].append((rel, n, s))
        rel = f"{pid}/{PERSONA}"
        if r.has(rel):
            raw_p, persona = r.json(rel, Persona)
            if persona is not None:
                for fname, x in persona.evidence():
                    resolve(rel, None, fname, [x])
            for k, s in strings(raw_p or {}):
                texts.append((rel, None, k, s))
                derived[pid].append((rel, None, s))
        rel = f"{pid}/{QA}"
        qa = r.jsonl(rel, QAItem)
        seen = {}
        for n, q, _ in qa:
            if q.get("id") in seen:
                r.fail("order", rel, n, f"question id {q.get('id')!r} repeats (first at line {seen[q.get('id')]})")
            seen.setdefault(q.get("id"), n)
            resolve(rel, n, "evidence_dayids", q.get("evidence_dayids") or [])
            for k, s in strings(q, skip=DAYID_FIELDS):
                texts.append((rel, n, k, s))
                derived[pid].append((rel, n, s))
        rel = f"{pid}/{FEEDBACK}"
        for n, fb, _ in r.jsonl(rel, FeedbackRow):
            resolve(rel, n, "dayid", [fb.get("dayid")])
            if fb.get("dayid") in index and sender.get(fb.get("dayid")) != "companion":
                r.fail("dayids", rel, n, f"field 'dayid': {fb.get('dayid')!r} is a participant message: ratings "
                                          "rate companion replies")
            for k, s in strings(fb, skip=DAYID_FIELDS):
                texts.append((rel, n, k, s))

        rel = f"{pid}/{CHAT_GOLD}"
        gold = r.jsonl(rel, ChatProbe)
        seen = {}
        proportional[pid] = []
        for n, g, model in gold:
            probe = g.get("probe_dayid")
            if probe in seen:
                r.fail("order", rel, n, f"probe {probe!r} repeats (first at line {seen[probe]})")
            seen.setdefault(probe, n)
            for k, s in strings(g, skip=DAYID_FIELDS):
                texts.append((rel, n, k, s))
                derived[pid].append((rel, n, s))
            if g.get("stratum") == "proportional":
                proportional[pid].append(probe)
            resolve(rel, n, "probe_dayid", [probe])
            if probe not in index:
                continue
            if sender.get(probe) != "user":
                r.fail("dayids", rel, n, f"field 'probe_dayid': {probe!r} is a companion message, not a participant's")
            at = index[probe]
            for f in ("recent_context", "episode_refs", "grounding_dayids"):
                resolve(rel, n, f, [x for x in (g.get(f) or [])], before=at)
            refs = [x for x in (g.get("profile_refs") or []) if isinstance(x, str)]
            for x in refs:
                if _is_dayid(x):
                    resolve(rel, n, "profile_refs", [x], before=at)
                elif x not in claims:
                    r.fail("dayids", rel, n, f"field 'profile_refs': {x!r} is neither a dayid nor a claim id "
                                             f"in {pid}/{PROFILE}")
            # V2: the recent window is the w messages before the probe; what the probe cites from
            # memory lies before it, else the "memory" was on screen.
            if w is None:  # the manifest's recent_window is broken (schema names it): no window to check
                continue
            window = [c.get("dayid") for c in convs[pid][max(0, at - w):at]]
            if "recent_context" in g and list(g.get("recent_context") or []) != window:
                r.fail("window", rel, n, f"field 'recent_context' is {g.get('recent_context')}, the {w} messages "
                                         f"before {probe} are {window}")
            inside = set(window)
            for f in ("grounding_dayids", "episode_refs"):
                bad = [x for x in (g.get(f) or []) if x in inside]
                if bad:
                    r.fail("window", rel, n, f"field '{f}': {bad} inside the recent window of {probe} (V2)")
            for x in refs:
                if _is_dayid(x) and x in inside:
                    r.fail("window", rel, n, f"field 'profile_refs': {x!r} inside the recent window of {probe} (V2)")
                elif x in claims:
                    srcs = [s for s in claims[x].get("source_dayids") or [] if s in index]
                    if srcs and all(s in inside or index[s] >= at for s in srcs):
                        r.fail("window", rel, n, f"field 'profile_refs': claim {x!r} rests only on {srcs}, "
                                                 f"none before the recent window of {probe} (V2)")
            # annotation
            status = g.get("annotation")
            if status == "pending":
                pending += 1
                if g.get("scoreable"):
                    r.fail("annotation", rel, n, f"probe {probe} is scoreable but its annotation is pending")
            elif status == "done":
                done += 1
                if g.get("stratum") == "proportional" and g.get("scoreable"):
                    demand[0] += bool(g.get("grounding_dayids"))
                    demand[1] += 1
                trace = g.get("trace") or {}
                for s in STAGES:
                    st = trace.get(s)
                    if not isinstance(st, dict):
                        r.fail("annotation", rel, n, f"probe {probe}: stage {s} ({STAGES[s]}) missing from the trace")
                    elif not isinstance(st.get("note"), str) or not st["note"].strip():
                        r.fail("annotation", rel, n, f"probe {probe}: stage {s} has no reasoning note")
                    elif not st.get("confirmed") or not st.get("by"):
                        r.fail("annotation", rel, n, f"probe {probe}: stage {s} was not confirmed by a person")

        # counts
        have = {"messages": len(conv), "chat_rows": len(gold), "claims": len(prof), "qa": len(qa)}
        counted = raw_manifest.get("counts")
        counted = counted.get(pid) if isinstance(counted, dict) else None
        for k, want in (counted.items() if isinstance(counted, dict) else ()):
            if k in have and want is not None and want != have[k]:
                r.fail("counts", MANIFEST, None, f"counts.{pid}.{k} says {want}, the files hold {have[k]}")

    bar.close()
    # annotators' working files are part of the folder: checked and scanned like the rest
    for rel in sorted(x for x in r.readable if x.startswith(ANNOTATIONS + "/")):
        for n, rec, m in r.jsonl(rel, AnnotationRecord):
            if m is not None and m.key.split("/")[0] not in pids:
                r.fail("dayids", rel, n, f"field 'key': {m.key!r} names a participant not in the release")
            texts += [(rel, n, k, s) for k, s in strings(rec, skip=DAYID_FIELDS)]

    _sampling(r, raw_manifest, pids, proportional, users, convs)
    if "identifiers" in checks:
        allowed = [a.get("text") for a in raw_manifest.get("allowed") or [] if isinstance(a, dict) and a.get("text")]
        _identifiers(r, texts, meta, originals, show_progress, allowed)
    _surrogates(r, convs, derived)
    seen_files: set[str] = set()
    kept = []
    for f in report.failures:
        if f.check == "files":
            if f.file in seen_files:
                continue
            seen_files.add(f.file)
        if f.check in checks:
            kept.append(f)
    report.failures = kept
    if pending or done:
        report.notes.append(f"annotation: {done} probes annotated, {pending} pending (not scoreable)")
    if demand[1]:
        drawn = sum(len(v) for v in proportional.values())
        report.notes.append(f"demand: {demand[0]} of {demand[1]} annotated scoreable probes of the proportional "
                            f"stratum ({drawn} drawn) cite the past: π = {demand[0] / demand[1]:.3f}")
    return report


def _sampling(r: _Reader, raw: dict, pids: list[str], proportional: dict[str, list[str]], users: dict[str, int],
              convs: dict[str, list[dict]]) -> None:
    record = raw.get("sampling")
    if record is None:
        if any(proportional.values()):
            r.fail("sampling", MANIFEST, None, "the release has proportional probes but no 'sampling' record: "
                                               "nothing shows they were drawn without looking at demand (V3)")
        return
    try:
        s = Sampling.model_validate(record)
    except ValidationError as e:
        r.fail("sampling", MANIFEST, None, f"'sampling': {describe(e)}")
        return
    read_need = [x for x in s.inputs if any(word in x.casefold() for word in NEED_WORDS)]
    if read_need:
        r.fail("sampling", MANIFEST, None, f"'sampling.inputs' include {read_need}: the draw looked at need (V3)")
    for pid in pids:
        if pid not in convs:
            continue
        rec = s.participants.get(pid)
        got = proportional.get(pid, [])
        if rec is None:
            if got:
                r.fail("sampling", MANIFEST, None, f"'sampling.participants' has no record for {pid}, "
                                                   f"which has {len(got)} proportional probes")
            continue
        if rec.population != users[pid]:
            r.fail("sampling", MANIFEST, None, f"sampling.participants.{pid}.population is {rec.population}, "
                                               f"{pid}'s conversation has {users[pid]} participant messages")
        want = min(rec.population, round(s.share * rec.population))
        if rec.drawn != want:
            r.fail("sampling", MANIFEST, None, f"sampling.participants.{pid}.drawn is {rec.drawn}, a share of "
                                               f"{s.share} of {rec.population} is {want}")
        if len(got) != rec.drawn:
            r.fail("sampling", f"{pid}/{CHAT_GOLD}", None, f"{len(got)} proportional probes, the draw recorded "
                                                           f"{rec.drawn}: rows were added to or dropped from the stratum")
        elif sampling_digest(got) != rec.digest:
            r.fail("sampling", f"{pid}/{CHAT_GOLD}", None, "the proportional probes are not the ones drawn "
                                                           "(digest differs): the stratum was changed after the draw")
    stray = sorted(set(s.participants) - set(pids))
    if stray:
        r.fail("sampling", MANIFEST, None, f"'sampling.participants' lists {stray}, not in the release")


def _identifiers(r: _Reader, texts, meta, originals: dict[str, str] | None, show_progress: bool | None,
                 allowed=()) -> None:
    vocab = surrogate_pools()
    ok = {" ".join(a.split()).casefold() for a in allowed}  # the exporter's --allow: reviewed, in the manifest
    todo = []
    for rel, n, k, s in texts:
        if len(s) > releasefiles.MAX_TEXT_CHARS:
            r.fail("schema", rel, n, f"field '{k}': {len(s):,} characters, more than the "
                                     f"{releasefiles.MAX_TEXT_CHARS:,} a text field may hold: not scanned",
                   unreadable=True)
        elif s and s.strip():
            todo.append((rel, n, k, s))
    with progress.bar(total=len(todo), desc="identifiers", unit="text", show=show_progress) as bar:
        hits = progress.scan_many([s for *_, s in todo], bar)
    for (rel, n, k, s), hs in zip(todo, hits):
        for h in _covered(s, hs, vocab):
            if " ".join(h.text.split()).casefold() in ok:
                continue
            r.fail("identifiers", rel, n, f"field '{k}': the recognizers find {h.kind} {_mask(h.text)!r}")
    words = sorted((t for t in (originals or {}) if len(t) >= 2), key=len, reverse=True)
    if words:
        pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(x) for x in words) + r")(?!\w)", re.IGNORECASE)
        for rel, n, k, s in todo + meta:
            for m in pattern.finditer(s):
                r.fail("identifiers", rel, n, f"field '{k}': an original of the surrogate map survives: "
                                              f"{_mask(m.group(0))!r}")


def _surrogates(r: _Reader, convs: dict[str, list[dict]], derived: dict[str, list]) -> None:
    vocab = surrogate_pools()
    pool = re.compile(r"(?<!\w)(" + "|".join(re.escape(x) for x in sorted(vocab, key=len, reverse=True))
                      + r")(?!\w)") if vocab else None
    for pid, rows in derived.items():
        said = "\n".join(c.get("text") or "" for c in convs.get(pid, []))
        for rel, n, s in rows:
            found = [m.group(0) for m in SURROGATE_SHAPES.finditer(s)] + ([m.group(0) for m in pool.finditer(s)]
                                                                          if pool else [])
            for x in dict.fromkeys(found):
                if not re.search(r"(?<!\w)" + re.escape(x) + r"(?!\w)", said):
                    r.fail("surrogates", rel, n, f"surrogate {x!r} never occurs in {pid}'s conversation: "
                                                 "this file was pseudonymized with another map")


def originals_from_store(store, release_id: str) -> dict[str, str] | None:
    """The originals of a release's surrogate map (None: that store did not export it)."""
    try:
        rows = store.conn.execute("SELECT original, kind FROM export_surrogates WHERE release=?",
                                  (release_id,)).fetchall()
        known = store.conn.execute("SELECT 1 FROM exports WHERE release=?", (release_id,)).fetchone()
    except Exception:  # a store without export tables (a fresh data dir): nothing to add
        return None
    return {o: k for o, k in rows} if known else None
