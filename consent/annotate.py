"""Annotating a release's pending chat probes, stage by stage, into scoreable rows.

An export marks its proportional probes `annotation: "pending"` (not scoreable: locus, tier and
grounding are placeholders). An annotator works through each, in order:

  A  what the probe points at           locus (thread, episode, profile, companion, none)
  B  evidence checked against the source episode_refs, profile_refs, grounding_dayids (picked by
                                         dayid from the history), referent_on_screen
  C  tier and category, rule applied     tier, category, rule
  D  reference reply                     reference_reply, from the recorded context only
  E  final check                         scoreable; the row's mechanical checks are re-run here

Every stage carries a short reasoning note, who confirmed it and, when a model drafted it, which
model. A model draft is stored unconfirmed; only a person's `confirm` (or their own `set`) makes it
count, and a stage can be set only once the stages before it are confirmed. Changing a stage makes
the later ones stale (they must be set again).

Working state is an append-only log per annotator, `annotations/<annotator>.jsonl` inside the
release (the latest record of a stage wins; earlier ones stay as history). `finalize` writes the
confirmed annotations of one annotator into `chat_gold.jsonl` (the notes go into each row's
`trace`), and only if the result passes `consent.releasecheck.check`; otherwise the release is left
as it was. `agreement` compares two annotators: Cohen's kappa on locus, tier and demand.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from consent import releasecheck, releasefiles
from consent.formats import (STAGE_MODELS, STAGES, AnnotationRecord, ChatProbe, ConversationRow, ProfileClaim,
                             StageA, StageB, StageC, StageD, StageE, describe)  # noqa: F401  (the stages' models)
from consent.releasefiles import ReleaseFileError

ANNOTATIONS = releasecheck.ANNOTATIONS
DRAFT_PROMPT = "annotate-draft-v1.md"
MODELS = STAGE_MODELS  # what each stage takes: consent.formats


class AnnotationError(ValueError):
    """Input the annotator must fix; the message names the probe, the stage and the field."""


INSTRUCTIONS = {
    "A": "Say what the probe points at: locus is thread (the recent window), episode (an earlier exchange), "
         "profile (a fact the participant stated), companion (something the companion said or did earlier) or none.",
    "B": "Pick the earlier messages that ground the probe (grounding_dayids), split into episode_refs and "
         "profile_refs, all before the recent window; referent_on_screen is no, partial or clear.",
    "C": "Give the tier (basic, intermediate, hard, edge), a category, and the rule that decided the tier.",
    "D": "Write the reply a good companion would give, using only the recorded context above.",
    "E": "Say whether the probe is scoreable (true/false).",
}


# --- the release, as the annotator needs it ----------------------------------------------------------


@dataclass
class Probe:
    key: str  # "U01/day3-5"
    pid: str
    row: dict  # the chat_gold row
    line: int
    conversation: list[dict]
    at: int  # position of the probe in the conversation
    claims: dict[str, dict]

    @property
    def text(self) -> str:
        return self.conversation[self.at]["text"]


def _rows(root: Path, rel: str, model) -> list[tuple[int, dict]]:
    """The rows of one release file, each checked against its model; any problem is an
    AnnotationError naming file and line (bounded reads, no link followed: consent.releasefiles)."""
    if not releasefiles.exists(root, rel):
        return []
    try:
        rows = releasefiles.read_jsonl(root, rel)
    except ReleaseFileError as e:
        raise AnnotationError(f"{e} (run `companion release check`)") from None
    for n, row in rows:
        try:
            model.model_validate(row)
        except ValidationError as e:
            raise AnnotationError(f"{rel} line {n}: {describe(e)} (run `companion release check`)") from None
    return rows


def _manifest(root: Path) -> dict:
    try:
        m = releasefiles.read_object(Path(root), releasecheck.MANIFEST)
        releasefiles.participants_of(m)
    except ReleaseFileError as e:
        raise AnnotationError(f"{root}: not a readable release ({e})") from None
    w = m.get("recent_window")
    if not isinstance(w, int) or isinstance(w, bool) or w < 0:
        raise AnnotationError(f"{root}: {releasecheck.MANIFEST}: field 'recent_window' must be a whole number "
                              f"of messages, got {w!r}")
    return m


def _participants(root: Path) -> list[str]:
    return releasefiles.participants_of(_manifest(root))  # U-numbers only: never a path


def probes(root: str | Path, status: str | None = "pending") -> list[Probe]:
    """The chat probes of a release (with `status`, only those whose annotation is that)."""
    root = Path(root)
    out = []
    for pid in _participants(root):
        conv = [c for _, c in _rows(root, f"{pid}/{releasecheck.CONVERSATION}", ConversationRow)]
        at = {c["dayid"]: i for i, c in enumerate(conv)}
        claims = {c.get("id"): c for _, c in _rows(root, f"{pid}/{releasecheck.PROFILE}", ProfileClaim)}
        for n, g in _rows(root, f"{pid}/{releasecheck.CHAT_GOLD}", ChatProbe):
            if status is not None and g.get("annotation") != status:
                continue
            if g.get("probe_dayid") not in at:
                raise AnnotationError(f"{pid}/{releasecheck.CHAT_GOLD} line {n}: probe {g.get('probe_dayid')!r} "
                                      "is not in the conversation (run `companion release check`)")
            out.append(Probe(f"{pid}/{g['probe_dayid']}", pid, g, n, conv, at[g["probe_dayid"]], claims))
    return out


def probe(root: str | Path, key: str) -> Probe:
    for p in probes(root, status=None):
        if p.key == key:
            return p
    raise AnnotationError(f"no probe {key!r} in {root} (keys look like U01/day3-5; see `annotate list`)")


def window(root: str | Path, p: Probe) -> list[dict]:
    w = int(_manifest(root).get("recent_window") or 0)
    return p.conversation[max(0, p.at - w):p.at]


def history(root: str | Path, p: Probe, query: str | None = None) -> list[dict]:
    """Messages before the recent window; with `query`, those holding every word of it."""
    w = int(_manifest(root).get("recent_window") or 0)
    rows = p.conversation[:max(0, p.at - w)]
    if query and query.strip():
        words = query.casefold().split()
        rows = [r for r in rows if all(x in r["text"].casefold() for x in words)]
    return rows


# --- the annotators' logs ------------------------------------------------------------------------------


def _check_name(annotator: str) -> str:
    if not annotator or not releasefiles.ANNOTATOR.fullmatch(annotator):
        raise AnnotationError(f"annotator name {annotator!r}: use letters, digits, '.', '_' or '-' (a file name)")
    return annotator


def _log_rel(annotator: str) -> str:
    return f"{ANNOTATIONS}/{_check_name(annotator)}.jsonl"


def annotators(root: str | Path) -> list[str]:
    known, _ = releasefiles.layout(Path(root), [])
    return sorted(e.rel[len(ANNOTATIONS) + 1:-len(".jsonl")] for e in known
                  if e.kind == "file" and e.rel.startswith(ANNOTATIONS + "/"))


def state(root: str | Path, annotator: str, key: str | None = None) -> dict[str, dict[str, dict]]:
    """key -> stage -> the stage's current record, stale records (set before an earlier stage changed) left out."""
    out: dict[str, dict[str, dict]] = {}
    for seq, (_, rec) in enumerate(_rows(Path(root), _log_rel(annotator), AnnotationRecord)):
        if key is not None and rec["key"] != key:
            continue
        stages = out.setdefault(rec["key"], {})
        stages[rec["stage"]] = {**rec, "seq": seq}
        for later in [s for s in STAGES if s > rec["stage"]]:
            stages.pop(later, None)  # a changed stage invalidates what was built on it
    return out


def _confirmed(stages: dict[str, dict], upto: str) -> list[str]:
    return [s for s in STAGES if s < upto and not (stages.get(s) or {}).get("confirmed")]


# --- stage checks against the source --------------------------------------------------------------------


def _evidence_problems(root: Path, p: Probe, stages: dict[str, dict], b: StageB) -> list[str]:
    w = int(_manifest(root).get("recent_window") or 0)
    index = {c["dayid"]: i for i, c in enumerate(p.conversation)}
    recent = {c["dayid"] for c in window(root, p)}
    out = []
    dayid_refs = [x for x in b.profile_refs if x in index or re.fullmatch(r"day\d+-\d+", x)]
    for f, ids in (("episode_refs", b.episode_refs), ("grounding_dayids", b.grounding_dayids),
                   ("profile_refs", dayid_refs)):
        for x in ids:
            if x not in index:
                out.append(f"{f}: {x!r} is not in {p.pid}'s conversation")
            elif index[x] >= p.at:
                out.append(f"{f}: {x!r} comes after the probe")
            elif x in recent:
                out.append(f"{f}: {x!r} is inside the recent window ({w} messages before the probe); "
                           "what is on screen is no memory (V2): use locus thread instead")
    for x in set(b.profile_refs) - set(dayid_refs):
        if x not in p.claims:
            out.append(f"profile_refs: {x!r} is neither a dayid nor a claim id of {p.pid}")
    claim_sources = {s for x in b.profile_refs if x in p.claims for s in p.claims[x].get("source_dayids") or []}
    allowed = set(b.episode_refs) | set(dayid_refs) | claim_sources
    stray = [x for x in b.grounding_dayids if x not in allowed]
    if stray:
        out.append(f"grounding_dayids: {stray} are neither episode refs, profile refs nor sources of a cited claim")
    locus = stages["A"]["locus"]
    if locus in ("episode", "profile", "companion") and not b.grounding_dayids:
        out.append(f"locus {locus} (stage A) needs grounding_dayids")
    if locus in ("thread", "none") and (b.grounding_dayids or b.episode_refs or b.profile_refs):
        out.append(f"locus {locus} (stage A) cites no earlier message: leave the refs empty or change stage A")
    if locus == "profile" and not b.profile_refs:
        out.append("locus profile (stage A) needs profile_refs")
    if locus == "companion" and not any(p.conversation[index[x]]["sender"] == "companion"
                                        for x in b.grounding_dayids if x in index):
        out.append("locus companion (stage A) needs a companion message among grounding_dayids")
    return out


def _reply_problems(root: Path, p: Probe, d: StageD) -> list[str]:
    """A surrogate name in the reply must come from the recorded context before the probe."""
    said = "\n".join(c["text"] for c in p.conversation[:p.at + 1])
    out = []
    for x in releasecheck.surrogate_pools():
        if re.search(r"(?<!\w)" + re.escape(x) + r"(?!\w)", d.reference_reply) and \
                not re.search(r"(?<!\w)" + re.escape(x) + r"(?!\w)", said):
            out.append(f"reference_reply names {x!r}, which the recorded context before the probe never mentions")
    return out


def assemble(p: Probe, stages: dict[str, dict], annotator: str) -> dict:
    """The chat_gold row the confirmed stages make."""
    a, b, c, d, e = (stages[s] for s in STAGES)
    trace = {s: {k: v for k, v in stages[s].items() if k not in ("key", "stage", "seq")} for s in STAGES}
    return {**p.row, "locus": a["locus"], "locus_verified": a["locus"], "episode_refs": b["episode_refs"],
            "profile_refs": b["profile_refs"], "grounding_dayids": b["grounding_dayids"],
            "referent_on_screen": b["referent_on_screen"], "tier": c["tier"], "category": c["category"],
            "reference_reply": d["reference_reply"], "scoreable": e["scoreable"], "annotation": "done",
            "annotators": [annotator], "trace": trace}


def _row_problems(root: Path, p: Probe, row: dict) -> list[str]:
    """Stage E: the row's own checks, the way `release check` will run them."""
    w = int(_manifest(root).get("recent_window") or 0)
    recent = [c["dayid"] for c in p.conversation[max(0, p.at - w):p.at]]
    out = []
    if list(row.get("recent_context") or []) != recent:
        out.append(f"recent_context {row.get('recent_context')} is not the recent window {recent}")
    for f in ("grounding_dayids", "episode_refs"):
        bad = [x for x in row[f] if x in recent]
        if bad:
            out.append(f"{f} {bad} inside the recent window (V2)")
    hits = releasecheck._covered(row["reference_reply"], releasecheck._identifier_hits(row["reference_reply"]),
                                 releasecheck.surrogate_pools())
    out += [f"reference_reply: the recognizers find {h.kind} {releasecheck._mask(h.text)!r}" for h in hits]
    return out


def set_stage(root: str | Path, key: str, stage: str, data: dict, annotator: str, *,
              drafted_by: str | None = None, confirmed: bool = True) -> dict:
    """Record one stage: confirmed by `annotator`, or (confirmed=False) a model's draft awaiting a person."""
    root = Path(root)
    stage = stage.upper()
    if stage not in STAGES:
        raise AnnotationError(f"stage {stage!r}: one of {', '.join(STAGES)}")
    p = probe(root, key)
    if p.row.get("annotation") not in ("pending", "done"):
        raise AnnotationError(f"{key}: annotation is {p.row.get('annotation')!r}; only pending probes are annotated")
    stages = state(root, annotator, key).get(key, {})
    missing = _confirmed(stages, stage)
    if missing:
        raise AnnotationError(f"{key}: stage {stage} comes after {', '.join(missing)}, not yet confirmed")
    try:
        m = MODELS[stage].model_validate(data)
    except ValidationError as e:
        raise AnnotationError(f"{key} stage {stage}: {describe(e)}") from None
    problems = []
    if stage == "B":
        problems = _evidence_problems(root, p, stages, m)
    elif stage == "D":
        problems = _reply_problems(root, p, m)
    rec = AnnotationRecord.of(key, stage, m, annotator if confirmed else None, drafted_by, confirmed,
                              datetime.now(timezone.utc).isoformat(timespec="seconds")).model_dump(mode="json")
    if stage == "E":
        row = assemble(p, {**stages, "E": rec}, annotator)
        problems = _row_problems(root, p, row)
        rec["checks"] = "passed" if not problems else problems
    if problems:
        raise AnnotationError(f"{key} stage {stage}: " + "; ".join(problems))
    _append(root, annotator, rec)
    return rec


def confirm(root: str | Path, key: str, stage: str, annotator: str, note: str | None = None) -> dict:
    """A person confirms a model's draft (optionally with their own note): it counts from now on."""
    stage = stage.upper()
    cur = state(root, annotator, key).get(key, {}).get(stage)
    if cur is None:
        raise AnnotationError(f"{key}: no stage {stage} to confirm for {annotator}")
    if cur.get("confirmed"):
        return cur
    data = {k: cur[k] for k in MODELS[stage].model_fields if k in cur}
    if note:
        data["note"] = note
    return set_stage(root, key, stage, data, annotator, drafted_by=cur.get("drafted_by"))


def _append(root: Path, annotator: str, rec: dict) -> None:
    """One line at the end of the annotator's log, through no link (the folder and the log must be
    a real folder and a regular file inside the release)."""
    rec = AnnotationRecord.model_validate(rec).model_dump(mode="json")
    folder = Path(root) / ANNOTATIONS
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        d = os.open(folder, flags)
    except OSError:
        raise AnnotationError(f"{ANNOTATIONS}/ in {root} is not a folder (a link?): not written to") from None
    try:
        fd = os.open(f"{_check_name(annotator)}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                     | os.O_NONBLOCK, 0o600, dir_fd=d)
    except OSError as e:
        raise AnnotationError(f"{_log_rel(annotator)} cannot be written ({e.strerror}; a link or a FIFO?)") from None
    finally:
        os.close(d)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise AnnotationError(f"{_log_rel(annotator)} is not a regular file: not written to")
        f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def set_many(root: str | Path, key: str, stages: dict[str, dict], annotator: str) -> list[dict]:
    """Several stages in one go (scripted use: {"A": {...}, "B": {...}}), in stage order."""
    unknown = [s for s in stages if s.upper() not in STAGES]
    if unknown:
        raise AnnotationError(f"{key}: unknown stage(s) {unknown}; stages are {', '.join(STAGES)}")
    return [set_stage(root, key, s, stages[s], annotator) for s in sorted(stages, key=str.upper)]


# --- drafts by a capable model -------------------------------------------------------------------------


def refuse_model(model: str) -> None:
    """Drafts need a capable model: never the embedded demo model, nor the echo test model."""
    if not model or model.startswith("local/") or model == "echo":
        raise AnnotationError(f"model {model!r} cannot draft annotations: configure a capable model "
                              "(the embedded demo model and echo are refused)")


def draft_prompt(root: str | Path, key: str, stage: str, annotator: str) -> str:
    p = probe(root, key)
    stages = state(root, annotator, key).get(key, {})
    template = resources.files("consent").joinpath("prompts", DRAFT_PROMPT).read_text(encoding="utf-8")
    line = lambda r: f"{r['dayid']} {r['sender']}: {r['text']}"  # noqa: E731
    earlier = {s: {k: v for k, v in stages[s].items() if k in MODELS[s].model_fields} for s in STAGES
               if s < stage and s in stages}
    return template.format(stage=stage, stage_name=STAGES[stage], instructions=INSTRUCTIONS[stage],
                           keys=", ".join(MODELS[stage].model_fields), probe_dayid=p.row["probe_dayid"],
                           probe_text=p.text, window="\n".join(map(line, window(root, p))) or "(empty)",
                           history="\n".join(map(line, history(root, p))) or "(empty)",
                           earlier=json.dumps(earlier, ensure_ascii=False) if earlier else "(none)")


def draft(root: str | Path, key: str, stage: str, annotator: str, model: str,
          complete: Callable[[str], str]) -> dict:
    """Ask `complete` (a call to `model`) for the stage and store its answer as an unconfirmed draft."""
    refuse_model(model)
    stage = stage.upper()
    text = complete(draft_prompt(root, key, stage.upper(), annotator))
    m = re.search(r"\{.*\}", text or "", re.S)
    try:
        data = json.loads(m.group(0)) if m else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise AnnotationError(f"{key} stage {stage}: {model} did not answer with a JSON object: {text[:200]!r}")
    data = {k: v for k, v in data.items() if k in MODELS[stage].model_fields}  # a chatty model's extra keys
    return set_stage(root, key, stage, data, annotator, drafted_by=model, confirmed=False)


# --- finalize and agreement ---------------------------------------------------------------------------------


def finalize(root: str | Path, annotator: str, show_progress: bool | None = False) -> dict:
    """Write `annotator`'s fully confirmed probes into the release as scoreable rows.

    Everything is read and validated first (participant ids, the folder's layout, every row);
    then a copy of the release's known regular files (no link followed) gets the new rows and
    replaces the original only if it passes every check of `release check`. Otherwise
    ReleaseCheckFailed names the failures and the release is as it was.
    """
    root = Path(root)
    try:
        return _finalize(root, annotator, show_progress)
    except ReleaseCheckFailed:
        raise
    except AnnotationError as e:  # refused while reading, before anything was written
        raise AnnotationError(f"{e}\nnothing was written") from None


def _finalize(root: Path, annotator: str, show_progress: bool | None) -> dict:
    pids = _participants(root)
    _, bad = releasefiles.layout(root, pids)
    if bad:
        raise AnnotationError("the release holds what a release may not:\n  "
                              + "\n  ".join(f"files: {rel}: {why}" for rel, why in bad))
    st = state(root, annotator)
    ready, unfinished = {}, []
    for p in probes(root, status=None):
        stages = st.get(p.key, {})
        if p.row.get("annotation") not in ("pending", "done") or not stages:
            continue
        if all((stages.get(s) or {}).get("confirmed") for s in STAGES):
            ready[p.key] = assemble(p, stages, annotator)
        elif p.row.get("annotation") == "pending":
            unfinished.append(p.key)
    gold = {pid: [ready.get(f"{pid}/{g.get('probe_dayid')}", g)
                  for _, g in _rows(root, f"{pid}/{releasecheck.CHAT_GOLD}", ChatProbe)]
            for pid in pids if releasefiles.exists(root, f"{pid}/{releasecheck.CHAT_GOLD}")}
    tmp = root.parent / f".{root.name}.finalize-{secrets.token_hex(4)}"
    try:
        releasefiles.copy_release(root, tmp)
        for pid, rows in gold.items():
            fd = os.open(tmp / pid / releasecheck.CHAT_GOLD, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write("".join(json.dumps(ChatProbe.model_validate(g).model_dump(mode="json"), ensure_ascii=False)
                                + "\n" for g in rows))
        report = releasecheck.check(tmp, show_progress=show_progress)
        if not report.ok:
            raise ReleaseCheckFailed(report)
        old = root.parent / f".{root.name}.old-{secrets.token_hex(4)}"
        root.rename(old)
        tmp.rename(root)
        shutil.rmtree(old, ignore_errors=True)
    except ReleaseFileError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise AnnotationError(str(e)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"finalized": sorted(ready), "unfinished": unfinished,
            "scoreable": sum(1 for r in ready.values() if r["scoreable"]), "notes": report.notes}


class ReleaseCheckFailed(AnnotationError):
    def __init__(self, report):
        self.report = report
        super().__init__("the annotated release fails `release check`; nothing was written:\n  "
                         + "\n  ".join(map(str, report.failures)))


def cohen_kappa(a: list, b: list) -> float | None:
    """(p_o - p_e) / (1 - p_e); None when chance agreement is already 1 (one label used by both)."""
    if len(a) != len(b) or not a:
        return None
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    labels = set(a) | set(b)
    pe = sum((a.count(x) / n) * (b.count(x) / n) for x in labels)
    return None if pe == 1 else (po - pe) / (1 - pe)


def agreement(root: str | Path, first: str, second: str) -> dict:
    """Cohen's kappa between two annotators on locus (A), tier (C) and demand (B: cites the past),
    over the probes both confirmed that far."""
    sa, sb = state(root, first), state(root, second)
    out = {"annotators": [first, second]}
    for name, stage, value in (("locus", "A", lambda r: r["locus"]), ("tier", "C", lambda r: r["tier"]),
                               ("demand", "B", lambda r: bool(r["grounding_dayids"]))):
        keys = sorted(k for k in set(sa) & set(sb)
                      if all((sa[k].get(s) or {}).get("confirmed") and (sb[k].get(s) or {}).get("confirmed")
                             for s in STAGES if s <= stage))
        x = [value(sa[k][stage]) for k in keys]
        y = [value(sb[k][stage]) for k in keys]
        k = cohen_kappa(x, y)
        out[name] = {"n": len(keys), "observed": (sum(i == j for i, j in zip(x, y)) / len(keys)) if keys else None,
                     "kappa": k, "reason": None if k is not None else
                     ("no probe annotated by both" if not keys else "both used a single label: kappa undefined"),
                     "disagreements": [kk for kk, i, j in zip(keys, x, y) if i != j]}
    return out
