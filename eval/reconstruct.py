"""Reconstruction (docs/METRICS.md): from each participant's full history the system writes a
profile and a persona, and each field is matched to the release's gold.

    sec = reconstruction(release, store, seed)

The system's side is the companion's own machinery: `memory.extract.rebuild` over the whole
history (as `companion memory rebuild` does), then `memory.extract.profile_rows` (the profile
export) and `memory.persona.persona`. It runs on a copy of the replay store, so the derived
memory it writes never reaches a replayed probe.

Matching rule (MATCH_VERSION):
- Text is normalized to its *content words*: lowercased, split on anything not a letter or digit,
  a trailing possessive "'s" dropped, stop words and the verbs claims are phrased with ("works",
  "lives", "has", "is", "called" ...) removed. Two texts match when the Dice overlap of their
  content words, 2|A ∩ B| / (|A| + |B|), is at least THRESHOLD (0.5); when either side has no
  content words, they match only if their normalized strings are equal.
- Profile: the gold positives are the gold claims with verdict `supported` that still hold at the
  end of the history (valid_to empty); the system's claims are those current at the end. Pairs
  are matched one to one, highest overlap first. A system claim matched to a gold positive is a
  TP; a gold positive left over is a FN; a system claim left over is a FP, except when it matches
  a gold claim that is neither wrong nor a positive (verdict repairable, pending, pruned_supported
  or undetermined): those are not counted either way. A system claim matching a gold claim that is
  `unsupported` or superseded (valid_to set) is a FP (wrong, or stale).
- Persona: every field is a (section, key) pair: `slots.<name>`, `big_five.<trait>`,
  `descriptions.<facet>` (descriptions matched one to one within a facet). A field present in
  both with matching values is a TP; a field with different values counts as FP and FN; a field
  only the system fills is a FP, one only the gold has a FN.
- F1 = 2TP / (2TP + FP + FN), precision TP / (TP + FP), recall TP / (TP + FN): per participant
  (interval: bootstrap over that participant's TP/FP/FN units) and pooled over participants
  (micro: summed counts, participant bootstrap; macro: mean of participants' F1).
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from eval import metrics as M
from eval.metrics import Metric
from eval.readers import Release
from memory import extract
from memory import persona as persona_mod
from memory.policies import count_tokens
from memory.store import DB_NAME, Store

MATCH_VERSION = "content-dice-0.5-v1"
THRESHOLD = 0.5
POSITIVE = {"supported"}
NEUTRAL = {"repairable", "pending", "pruned_supported", "undetermined"}
STOP = set("""a an the and or but so of in on at to for from by with as into about than then that this these those
it its is am are was were be been being has have had having do does did i me my mine we our you your he him his she her
they them their who whom which what when where why how not no just very really also too called named works work
working lives living live has years year old""".split())


def content_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", str(text).lower().replace("\u2019", "'"))
    return {w.removesuffix("'s") for w in words if w.removesuffix("'s") not in STOP}


def normalized(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", str(text).lower()))


def overlap(a: str, b: str) -> float:
    """Dice overlap of content words; 1/0 by normalized equality when either side has none."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return float(normalized(a) == normalized(b) and normalized(a) != "")
    return 2 * len(wa & wb) / (len(wa) + len(wb))


def match(a: str, b: str) -> bool:
    return overlap(a, b) >= THRESHOLD


def _pairs(left: list[str], right: list[str]) -> list[tuple[int, int]]:
    """One-to-one matching, highest overlap first (ties: earlier items first)."""
    cand = sorted(((overlap(x, y), i, j) for i, x in enumerate(left) for j, y in enumerate(right)
                   if match(x, y)), key=lambda t: (-t[0], t[1], t[2]))
    used_l, used_r, out = set(), set(), []
    for _, i, j in cand:
        if i not in used_l and j not in used_r:
            used_l.add(i)
            used_r.add(j)
            out.append((i, j))
    return out


def score_profile(system: list[str], gold: list[dict]) -> dict:
    """system: claim texts current at the end; gold: rows with text, verdict, valid_to."""
    pos = [g for g in gold if g["verdict"] in POSITIVE and not g.get("valid_to")]
    items: list[dict] = []
    matched = dict(_pairs(system, [g["text"] for g in pos]))
    for i, s in enumerate(system):
        if i in matched:
            items.append({"unit": "TP", "system": s, "gold": pos[matched[i]]["text"]})
    left = [i for i in range(len(system)) if i not in matched]
    others = [g for g in gold if g not in pos]
    second = dict(_pairs([system[i] for i in left], [g["text"] for g in others]))
    for k, i in enumerate(left):
        g = others[second[k]] if k in second else None
        if g is None:
            items.append({"unit": "FP", "system": system[i], "gold": None, "why": "not in the gold profile"})
        elif g.get("valid_to") or g["verdict"] not in NEUTRAL:
            why = "stale (superseded in gold)" if g.get("valid_to") else f"gold verdict {g['verdict']}"
            items.append({"unit": "FP", "system": system[i], "gold": g["text"], "why": why})
        else:
            items.append({"unit": "ignored", "system": system[i], "gold": g["text"], "why": f"gold verdict {g['verdict']}"})
    hit = set(matched.values())
    items += [{"unit": "FN", "system": None, "gold": g["text"]} for j, g in enumerate(pos) if j not in hit]
    return _counts(items)


def _fields(p: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, t in (p.get("slots") or {}).items():
        out[f"slots.{k}"] = [str(t.get("value") if isinstance(t, dict) else t)]
    for k, t in (p.get("big_five") or {}).items():
        out[f"big_five.{k}"] = [str(t.get("value") if isinstance(t, dict) else t)]
    for d in p.get("descriptions") or []:
        out.setdefault(f"descriptions.{d.get('facet')}", []).append(str(d.get("text", "")))
    return out


def score_persona(system: dict, gold: dict) -> dict:
    """Field-by-field: TP for a matching value, FP + FN for a wrong one, FP / FN for a one-sided field."""
    s, g = _fields(system), _fields(gold)
    items = []
    for f in sorted(set(s) | set(g)):
        sv, gv = s.get(f, []), g.get(f, [])
        pairs = _pairs(sv, gv)
        for i, j in pairs:
            items.append({"unit": "TP", "field": f, "system": sv[i], "gold": gv[j]})
        ps, pg = {i for i, _ in pairs}, {j for _, j in pairs}
        items += [{"unit": "FP", "field": f, "system": v, "gold": None} for i, v in enumerate(sv) if i not in ps]
        items += [{"unit": "FN", "field": f, "system": None, "gold": v} for j, v in enumerate(gv) if j not in pg]
    return _counts(items)


def _counts(items: list[dict]) -> dict:
    c = {u: sum(1 for x in items if x["unit"] == u) for u in ("TP", "FP", "FN", "ignored")}
    return {**c, "items": items}


def f1(tp: int, fp: int, fn: int) -> float | None:
    return 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else None


def precision(tp: int, fp: int, fn: int) -> float | None:
    return tp / (tp + fp) if tp + fp else None


def recall(tp: int, fp: int, fn: int) -> float | None:
    return tp / (tp + fn) if tp + fn else None


WHY = {"f1": "nothing in the gold nor in the system's output", "precision": "the system wrote nothing here",
       "recall": "the gold has nothing here"}


def _unit_boot(fn, tp, fp, n_fn, seed, reps=M.BOOTSTRAP):
    units = np.array([0] * tp + [1] * fp + [2] * n_fn)
    if len(units) < 2:
        return None
    rng = np.random.default_rng(seed)
    draws = units[rng.integers(0, len(units), (reps, len(units)))]
    vals = [fn(int((d == 0).sum()), int((d == 1).sum()), int((d == 2).sum())) for d in draws]
    vals = [v for v in vals if v is not None]
    return M._percentile(np.asarray(vals)) if vals else None


def _metrics(counts: dict[str, dict], what: str, system: str, seed: int) -> list[Metric]:
    out = []
    pids = list(counts)
    for name, fn in (("f1", f1), ("precision", precision), ("recall", recall)):
        for pid in pids:
            c = counts[pid]
            v = fn(c["TP"], c["FP"], c["FN"])
            ci = _unit_boot(fn, c["TP"], c["FP"], c["FN"], seed) if v is not None else None
            out.append(Metric(name=name, value=v, n=c["TP"] + c["FP"] + c["FN"], interval=ci,
                              method=f"bootstrap over TP/FP/FN units ({M.BOOTSTRAP})" if ci else None,
                              stratum=f"participant:{pid}", subset=what, system=system,
                              reason=None if v is not None else WHY[name],
                              extra={k: c[k] for k in ("TP", "FP", "FN", "ignored")}))
        tot = {k: sum(counts[p][k] for p in pids) for k in ("TP", "FP", "FN", "ignored")}
        v = fn(tot["TP"], tot["FP"], tot["FN"])
        tp, fp, fnn = (np.array([counts[p][k] for p in pids]) for k in ("TP", "FP", "FN"))

        def stat(groups, fn=fn):
            ix = M.pooled(groups)
            return fn(int(tp[ix].sum()), int(fp[ix].sum()), int(fnn[ix].sum()))

        ci = M.cluster_bootstrap(stat, pids, seed=seed) if v is not None else None
        out.append(Metric(name=name, value=v, n=tot["TP"] + tot["FP"] + tot["FN"], interval=ci, average="micro",
                          method=f"participant bootstrap ({M.BOOTSTRAP})" if ci else None, stratum="pooled",
                          subset=what, system=system, extra={**tot, "participants": len(pids)},
                          reason=WHY[name] if v is None else
                          None if ci else "no interval: needs at least two participants"))
        per = [fn(counts[p]["TP"], counts[p]["FP"], counts[p]["FN"]) for p in pids]
        have = [x for x in per if x is not None]
        out.append(M.mean_metric(name, have, [p for p, x in zip(pids, per) if x is not None], average="macro",
                                 seed=seed, stratum="pooled", subset=what, system=system) if have else
                   Metric(name=name, value=None, n=0, average="macro", stratum="pooled", subset=what, system=system,
                          reason=WHY[name]))
    return out


def _copy_store(store: Store, dest: Path) -> Store:
    """The replay store's messages in a scratch store (SQLite online backup)."""
    src = sqlite3.connect(str(store.path))
    dst = sqlite3.connect(str(dest / DB_NAME))
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return Store(dest, synchronous="NORMAL")  # a throwaway copy


def has_gold(release: Release) -> bool:
    return any(p.profile or p.persona is not None for p in release.participants.values())


def reconstruction(release: Release, store: Store | None, seed: int = 0):
    """The reconstruction section; `store` holds the release's messages (None only when there is no gold)."""
    from eval.tracks import Section

    sec = Section("reconstruction")
    gold = {pid: p for pid, p in release.participants.items() if p.profile or p.persona is not None}
    if not gold or store is None:
        sec.not_computed = ("the corpus has no gold profile.jsonl or persona.json (LoCoMo and LongMemEval carry "
                            "none): there is nothing to match a reconstruction against")
        return sec
    profile_counts, persona_counts, details = {}, {}, {}
    ex = extract.RuleExtractor()
    system = f"extractor {ex.name}:{ex.version}"
    with tempfile.TemporaryDirectory(prefix="companion-recon-") as tmp:
        scratch = _copy_store(store, Path(tmp))
        try:
            for pid, p in gold.items():
                t = time.perf_counter()
                rep = extract.rebuild(scratch, pid, ex)
                seconds = time.perf_counter() - t
                # the extractor reads messages in ordinal order from the first: the release's first ones
                tokens = sum(count_tokens(r.text) for r in p.conversation[:rep.messages])
                rows = extract.profile_rows(scratch, pid)
                current = [r["text"] for r in rows if not r["valid_to"]]
                pers = persona_mod.persona(scratch, pid)
                details[pid] = {"messages": rep.messages, "tokens": tokens, "seconds": round(seconds, 3)}
                if p.profile:
                    profile_counts[pid] = score_profile(current, [c.model_dump() for c in p.profile])
                    details[pid]["profile"] = profile_counts[pid]["items"]
                if p.persona is not None:
                    persona_counts[pid] = score_persona(pers, p.persona.model_dump())
                    details[pid]["persona"] = persona_counts[pid]["items"]
                sec.metrics.append(Metric(name="tokens_processed", value=float(tokens), n=rep.messages,
                                          stratum=f"participant:{pid}", subset="cost", system=system,
                                          reason="a count, not an estimate from a sample: no interval",
                                          extra={"seconds": round(seconds, 3), "model_tokens": 0}))
        finally:
            scratch.close()
    if profile_counts:
        sec.metrics += _metrics(profile_counts, "profile", system, seed)
    if persona_counts:
        sec.metrics += _metrics(persona_counts, "persona", system, seed)
        for section in ("slots", "big_five", "descriptions"):
            part = {pid: _counts([x for x in c["items"] if x["field"].startswith(section + ".")])
                    for pid, c in persona_counts.items()}
            sec.metrics += [m for m in _metrics(part, f"persona:{section}", system, seed) if m.stratum == "pooled"]
    total = sum(d["tokens"] for d in details.values())
    sec.metrics.append(Metric(name="tokens_processed", value=float(total), n=sum(d["messages"] for d in details.values()),
                              stratum="pooled", subset="cost", system=system,
                              reason="a count, not an estimate from a sample: no interval"))
    sec.notes.append(f"matching rule {MATCH_VERSION}: content words (lowercased, stop words and claim verbs removed), "
                     f"Dice overlap ≥ {THRESHOLD}, one to one, highest overlap first. Profile gold positives: "
                     "claims `supported` and still valid at the end; a system claim matching a gold claim that is "
                     "repairable, pending, pruned_supported or undetermined is not counted; one matching an "
                     "unsupported or superseded gold claim is a FP. Persona: per field (slots.<name>, "
                     "big_five.<trait>, descriptions.<facet>); a wrong value is a FP and a FN.")
    sec.notes.append("tokens processed: the estimated tokens (~4 characters a token) of every message the "
                     "extractor read; the rule extractor calls no model (model tokens 0).")
    sec.curves = {"details": details}
    return sec
