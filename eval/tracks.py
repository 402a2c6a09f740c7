"""What each `companion eval` track measures, as lists of `Metric` (docs/METRICS.md).

A track is a function of the probes (and, for replayed tracks, the arms' outcomes). Rendering
lives in `eval.report`; the numbers come from `eval.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eval import judge as J
from eval import metrics as M
from eval.metrics import Metric
from eval.replay import Outcome, Probe

TRACKS = ("retrieval", "abstention", "demand", "ablation", "budget", "reconstruction", "chat", "qa")
REPLAYED = ("retrieval", "abstention")  # scored from steps 3-5
JUDGED = ("chat", "qa", "ablation")  # scored from replies (steps 3-7) by a judge model
BASELINES = ("recency", "bm25", "random", "oracle", "broken_oracle")  # printed in every retrieval table
SUBSETS = {  # name -> (label, predicate)
    "with_gold": ("all probes with gold", lambda p: True),
    "memory_bearing": ("memory-bearing", lambda p: p.memory_bearing),
    "distant": ("distant (gold only outside the recent window)", lambda p: p.distant),
}
COMPARISON_GATES = ("lexical", "dense", "oracle", "always")
MESSAGE_BUDGETS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
TOKEN_BUDGETS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)


@dataclass
class Section:
    track: str
    metrics: list[Metric] = field(default_factory=list)
    not_computed: str | None = None  # the reason, when the whole track is missing
    notes: list[str] = field(default_factory=list)
    curves: dict = field(default_factory=dict)  # plot data (hit@k, ROC, coverage)


def not_computed(track: str, judge: str | None = None) -> Section:
    """A judged track run without a judge: missing, with the reason (never 0)."""
    needs_judge = "needs --judge MODEL: {what} is judged by a model, and without one it is not computed (not 0)"
    why = {
        "chat": needs_judge.format(what="the chat content match (0-2)"),
        "qa": needs_judge.format(what="QA correctness"),
        "ablation": needs_judge.format(what="the reply score whose gain Δ = π·γ1 + (1 − π)·γ0 decomposes"),
    }[track]
    return Section(track, not_computed=why)


def _stratum_of(p: Probe) -> str:
    return p.stratum if p.source == "chat" else f"category:{p.category}"


APART = {"adversarial", "5"}  # LoCoMo category 5: no answer in the conversation, never pooled


def _groups(probes: list[Probe]) -> list[tuple[str, str, list[int]]]:
    """(source, stratum, probe indices) for each source present: pooled first, then per stratum.
    The pooled rows leave out LoCoMo's adversarial category, which is reported as its own stratum."""
    out = []
    for source in ("chat", "qa"):
        ix = [i for i, p in enumerate(probes) if p.source == source]
        if not ix:
            continue
        pooled = [i for i in ix if not (source == "qa" and probes[i].category in APART)]
        if pooled:
            out.append((source, "all", pooled))
        for st in sorted({_stratum_of(probes[i]) for i in ix}):
            out.append((source, st, [i for i in ix if _stratum_of(probes[i]) == st]))
    return out


# --- retrieval -----------------------------------------------------------------------------------


def retrieval(probes: list[Probe], outcomes: dict[str, list[Outcome | None]], ks: list[int], seed: int = 0) -> Section:
    sec = Section("retrieval")
    gold = [i for i, p in enumerate(probes) if p.gold and p.scoreable]
    if not gold:
        sec.not_computed = "no scoreable probe has gold: there is nothing to retrieve"
        return sec
    sub = [probes[i] for i in gold]
    kmax = max(ks)
    curves: dict = {}
    for system, outs in outcomes.items():
        got = [outs[i] for i in gold]
        errors = [o.error for o in got if o is not None and o.error]
        ranked = [o.ranked if o is not None else [] for o in got]
        failed = len(errors) == len(got)
        if errors:
            sec.notes.append(f"{system}: failed on {len(errors)} of {len(got)} probes ({errors[0][:160]})"
                             + ("" if failed else "; those probes count as misses, as the live turn would"))
        per = {  # per-probe values, aligned with `sub`
            **{("hit", k): [M.hit_at_k(p.gold, r, k) for p, r in zip(sub, ranked)] for k in range(1, kmax + 1)},
            **{("recall", k): [M.recall_at_k(p.gold, r, k) for p, r in zip(sub, ranked)] for k in ks},
            ("mrr", None): [M.reciprocal_rank(p.gold, r) for p, r in zip(sub, ranked)],
        }
        for source, stratum, ix_all in _groups(sub):
            for sname, (_, pred) in SUBSETS.items():
                ix = [i for i in ix_all if pred(sub[i])]
                if system == "broken_oracle":  # only probes that have another probe's gold to borrow
                    ix = [i for i in ix if sub[i].broken_gold]
                clusters = [sub[i].participant for i in ix]
                for (name, k), vals in per.items():
                    if name == "hit" and k not in ks:
                        continue
                    for avg in ("micro", "macro"):
                        labels = dict(system=system, stratum=stratum, subset=f"{source}:{sname}", k=k)
                        if system == "broken_oracle" and not ix:
                            m = Metric(name=f"{name}@{k}" if k else name, value=None, n=0, average=avg,
                                       reason="no probe here has a different probe of the same participant "
                                              "whose gold it could borrow", **labels)
                        elif failed:
                            m = Metric(name=f"{name}@{k}" if k else name, value=None, n=len(ix), average=avg,
                                       reason=f"{system} failed on every probe: {errors[0][:200]}", **labels)
                        else:
                            m = M.mean_metric(f"{name}@{k}" if k else name, [vals[i] for i in ix], clusters,
                                              average=avg, seed=seed, **labels)
                        sec.metrics.append(m)
                if stratum == "all" and not failed:  # hit@k curves for the plot (micro)
                    curves.setdefault(f"{source}:{sname}", {})[system] = [
                        M.micro([per[("hit", k)][i] for i in ix]) for k in range(1, kmax + 1)]
    sec.curves = {"hit_at_k": curves, "k": list(range(1, kmax + 1))}
    return sec


# --- abstention ----------------------------------------------------------------------------------


def abstention(probes: list[Probe], outcomes: dict[str, list[Outcome | None]], seed: int = 0,
               misuse: dict[str, list] | None = None, conditions: dict[str, str] | None = None,
               judge: str | None = None) -> Section:
    sec = Section("abstention")
    ix = [i for i, p in enumerate(probes) if p.source == "chat" and p.scoreable]
    if not ix:
        sec.not_computed = ("no scoreable chat probes: questions are all asked after the whole history, so "
                            "there is no 'is the past needed?' label to rank")
        return sec
    sub = [probes[i] for i in ix]
    rocs: dict = {}
    for gate, outs in outcomes.items():
        got = [outs[i] for i in ix]
        failed = [o for o in got if o is None or o.retrieve is None]
        if failed:
            first = next((o.error for o in failed if o is not None and o.error), "no decision")
            sec.notes.append(f"{gate}: no decision on {len(failed)} of {len(got)} probes ({first[:160]})")
        for label in ("memory_bearing", "memory_bearing_strict"):
            for stratum in ("all", "proportional"):
                keep = [j for j, p in enumerate(sub) if (stratum == "all" or p.stratum == stratum)
                        and got[j] is not None and got[j].retrieve is not None]
                lab = dict(system=gate, stratum=stratum, subset=f"chat:scoreable, y={label}")
                if not keep:
                    sec.metrics.append(Metric(name="auroc", value=None, n=0, reason="the gate made no decision",
                                              **lab))
                    continue
                y = [getattr(sub[j], label) for j in keep]
                scores = [got[j].score for j in keep]
                fired = [got[j].retrieve for j in keep]
                clusters = [sub[j].participant for j in keep]
                sec.metrics.append(M.auroc_metric(scores, y, clusters, seed=seed, **lab))
                c = M.confusion(fired, y)
                tp, fp, fn = c["caught"], c["false_alarms"], c["missed"]
                sec.metrics += [
                    Metric(name="caught_positives", value=float(tp), n=tp + fn, **lab),
                    Metric(name="false_alarms", value=float(fp), n=len(y) - tp - fn, **lab),
                    _share("precision", tp, tp + fp, "the gate never fired", **lab),
                    _share("recall", tp, tp + fn, "no memory-bearing probes", **lab),
                ]
                if stratum == "all" and label == "memory_bearing":
                    rocs[gate] = M.roc_curve(scores, y)
        all_controls = [j for j, p in enumerate(sub) if p.stratum == "control"]
        controls = [j for j in all_controls if got[j] is not None and got[j].retrieve is not None]
        fired = [got[j].retrieve for j in controls]
        why = (f"{len(all_controls)} control probes, the gate decided on none" if all_controls
               else "no control probes (session cold opens)")
        m = _share("fired_on_controls", int(sum(fired)), len(fired), why, system=gate, stratum="control",
                   subset="chat:scoreable")
        m.extra = {**(m.extra or {}), "control_probes": len(all_controls), "decided": len(controls)}
        sec.metrics.append(m)
    if misuse is None:
        sec.notes.append("misuse on controls (replies that bring in the past although nothing was needed) is judged "
                         "on replies: not computed without --judge MODEL. `fired_on_controls` is the gate-level "
                         "share: how often the gate reached into the past on a cold open.")
    else:
        _misuse(sec, probes, ix, misuse, conditions or {}, judge)
    sec.curves = {"roc": rocs}
    return sec


MISUSE_NAMES = {"recent": "none", "oracle": "oracle", "topk": "top-k retrieved"}


def _misuse(sec: Section, probes: list[Probe], ix: list[int], misuse: dict[str, list], conditions: dict[str, str],
            judge: str | None) -> None:
    """Share of replies to probes that needed nothing (cold opens, no referent) that bring in the past anyway."""
    groups = (("control", lambda p: p.stratum == "control"),
              ("no referent", lambda p: p.stratum != "control"),
              ("all", lambda p: True))
    for label, got in misuse.items():
        for stratum, pred in groups:
            sub = [i for i in ix if not probes[i].gold and pred(probes[i]) and got[i] is not None]
            have = [i for i in sub if got[i].value is not None]
            k = int(sum(got[i].value for i in have))
            name = MISUSE_NAMES.get(label, label)
            why = ("no such probes" if not sub else
                   f"every judgement missing ({next(got[i].reason for i in sub)})")
            m = _share("misuse_on_controls", k, len(have), why, system=f"context: {name}", stratum=stratum,
                       subset="chat:scoreable, gold empty")
            m.extra = {**m.extra, "condition": conditions.get(label), "missing": len(sub) - len(have)}
            sec.metrics.append(m)
        if note := _missing_note(f"misuse, context {MISUSE_NAMES.get(label, label)}",
                                 [got[i] for i in ix if got[i] is not None]):
            sec.notes.append(note)
    sec.notes.append(f"misuse on controls: replies (steps 3-7, never stored) to scoreable probes with no gold (session "
                     f"cold opens and no-referent probes) judged by {judge} (prompt {J.MISUSE_PROMPT}) for bringing in "
                     "the past although nothing was needed; by context condition: "
                     + "; ".join(f"{MISUSE_NAMES.get(k, k)} = {v}" for k, v in conditions.items())
                     + ". Wilson 95% intervals. `fired_on_controls` is the gate-level share on cold opens.")


def _share(name: str, k: int, n: int, why: str, **labels) -> Metric:
    if n == 0:
        return Metric(name=name, value=None, n=0, reason=why, **labels)
    return Metric(name=name, value=k / n, n=n, interval=M.wilson(k, n), method="Wilson 95%", **labels)


# --- demand --------------------------------------------------------------------------------------


def demand(probes: list[Probe], seed: int = 0) -> Section:
    sec = Section("demand")
    chat = [p for p in probes if p.source == "chat"]
    for label in ("memory_bearing", "memory_bearing_strict"):
        m = M.demand_rate([getattr(p, label) for p in chat], [p.stratum for p in chat],
                          [p.scoreable for p in chat], [p.participant for p in chat], seed=seed,
                          subset=f"chat:scoreable, y={label}")
        if m.value is None and not chat:
            m.reason = "no chat probes: this corpus has questions only, which carry no demand rate"
        sec.metrics.append(m)
    counts = {st: sum(p.stratum == st for p in chat) for st in ("proportional", "enriched", "control")}
    sec.notes.append(f"probes by stratum: {counts}; only the proportional stratum enters π (the enriched one "
                     "was collected because memory was needed and has no denominator)")
    return sec


# --- budget --------------------------------------------------------------------------------------


def budget(probes: list[Probe]) -> Section:
    """Coverage: the share of memory-bearing probes whose whole gold set fits in the most recent N."""
    sec = Section("budget")
    curves: dict = {}
    for source in ("chat", "qa"):
        for stratum in ("all", "proportional"):
            sub = [p for p in probes if p.source == source and p.scoreable and p.memory_bearing
                   and (stratum == "all" or p.stratum == stratum)]
            if not sub:
                continue
            for unit, budgets, attr in (("messages", MESSAGE_BUDGETS, "needed_messages"),
                                        ("tokens", TOKEN_BUDGETS, "needed_tokens")):
                needed = [getattr(p, attr) for p in sub]
                cov = M.coverage_curve(needed, budgets)
                curves.setdefault(unit, {})[f"{source}:{stratum}"] = (list(budgets), cov)
                for b, v in zip(budgets, cov):
                    k = int(sum(np.asarray(needed) <= b))
                    sec.metrics.append(Metric(name=f"coverage_{unit}", value=v, n=len(sub), k=b,
                                              interval=M.wilson(k, len(sub)), method="Wilson 95%",
                                              stratum=stratum, subset=f"{source}:memory_bearing"))
    if not curves:
        sec.not_computed = "no memory-bearing probes: there is no gold to fit in a budget"
    sec.curves = curves
    return sec


# --- judged tracks: chat, qa, ablation -----------------------------------------------------------

CHAT_SUBSETS = {  # name -> predicate, over scoreable chat probes
    "all": lambda p: True,
    "memory_bearing": lambda p: p.memory_bearing,
    "not_memory_bearing": lambda p: not p.memory_bearing,
}
ABLATIONS = (("oracle", "recent"), ("system", "recent"))  # (C2, C1) condition labels


def _missing_note(what: str, judged: list) -> str | None:
    """'k of n missing: reason (count), ...' for judgements that are None or carry no value."""
    reasons: dict[str, int] = {}
    for j in judged:
        if j is not None and j.value is None:
            grouped = j.reason.startswith(("unparseable judgement", "no reply", "judge model fault"))
            key = j.reason.split(":")[0] if grouped else j.reason  # one line per kind, examples in outcomes.jsonl
            reasons[key] = reasons.get(key, 0) + 1
    if not reasons:
        return None
    n = sum(1 for j in judged if j is not None)
    parts = ", ".join(f"{r} ({c})" for r, c in sorted(reasons.items(), key=lambda t: -t[1]))
    return (f"{what}: {sum(reasons.values())} of {n} judgements missing, left out of every mean (never counted "
            f"as 0): {parts}")


def _judged_means(sec: Section, name: str, sub: list[Probe], judged: list, groups, seed: int, **labels) -> None:
    """Micro and macro means of the judged values per (stratum, subset) group; missing ones left out."""
    for stratum, subset, ix in groups:
        have = [i for i in ix if judged[i] is not None and judged[i].value is not None]
        for avg in ("micro", "macro"):
            lab = dict(stratum=stratum, subset=subset, average=avg, **labels)
            if not ix:
                continue
            if not have:
                why = next((judged[i].reason for i in ix if judged[i] is not None and judged[i].reason),
                           "nothing was judged")
                sec.metrics.append(Metric(name=name, value=None, n=0, reason=f"every judgement missing ({why})",
                                          extra={"probes": len(ix)}, **lab))
                continue
            m = M.mean_metric(name, [judged[i].value for i in have], [sub[i].participant for i in have],
                              seed=seed, **lab)
            m.extra = {**m.extra, "probes": len(ix), "missing": len(ix) - len(have)}
            sec.metrics.append(m)


def chat(probes: list[Probe], judged: dict[str, list], system: str, judge: str, seed: int = 0) -> Section:
    """Content match 0-2 of the system's replies against each probe's reference reply."""
    sec = Section("chat")
    ix_all = [i for i, p in enumerate(probes) if p.source == "chat" and p.scoreable]
    if not ix_all:
        sec.not_computed = "no scoreable chat probes in this corpus"
        return sec
    got = judged["system"]
    groups = []
    for stratum in ("all", "proportional", "enriched", "control"):
        for sname, pred in CHAT_SUBSETS.items():
            ix = [i for i in ix_all if (stratum == "all" or probes[i].stratum == stratum) and pred(probes[i])]
            if ix and not (stratum == "control" and sname != "all"):
                groups.append((stratum, f"chat:{sname}", ix))
    _judged_means(sec, "content_match", probes, got, groups, seed, system=system)
    for stratum, subset, ix in groups:  # the distribution behind each mean, for the full-match share
        if subset == "chat:all":
            vals = [got[i].value for i in ix if got[i] is not None and got[i].value is not None]
            if vals:
                k = sum(v == 2 for v in vals)
                sec.metrics.append(Metric(name="full_match_share", value=k / len(vals), n=len(vals),
                                          interval=M.wilson(k, len(vals)), method="Wilson 95%", stratum=stratum,
                                          subset=subset, system=system,
                                          extra={"scores": {s: sum(v == s for v in vals) for s in (0, 1, 2)}}))
    if note := _missing_note("content match", [got[i] for i in ix_all]):
        sec.notes.append(note)
    sec.notes.append(f"judge {judge}, prompt {J.CHAT_PROMPT}: 2 = the reference's key content, 1 = part of it, "
                     "0 = none or a contradiction. Replies come from the turn's steps 3-7 as of each probe "
                     "and are never stored, so no probe changes what a later one sees.")
    return sec


def qa(probes: list[Probe], judged: dict[str, list], system: str, judge: str, seed: int = 0) -> Section:
    """Correctness of the system's answers against the gold answers."""
    sec = Section("qa")
    ix_all = [i for i, p in enumerate(probes) if p.source == "qa"]
    if not ix_all:
        sec.not_computed = "no written questions in this corpus"
        return sec
    got = judged["system"]
    groups = [("all", "qa:all", ix_all)]
    for cat in sorted({probes[i].category for i in ix_all if probes[i].category is not None}):
        groups.append((f"category:{cat}", "qa:all", [i for i in ix_all if probes[i].category == cat]))
    _judged_means(sec, "accuracy", probes, got, groups, seed, system=system)
    if note := _missing_note("QA correctness", [got[i] for i in ix_all]):
        sec.notes.append(note)
    sec.notes.append(f"judge {judge}, prompt {J.QA_PROMPT}: correct = the gold answer's content. Questions are "
                     "asked after the whole history, through the turn's steps 3-7, answers never stored.")
    return sec


def ablation(probes: list[Probe], judged: dict[str, list], conditions: dict[str, str], judge: str,
             seed: int = 0) -> Section:
    """Δ = π·γ1 + (1 − π)·γ0 of the content-match gain of C2 over C1, on the proportional stratum."""
    sec = Section("ablation")
    ix_all = [i for i, p in enumerate(probes) if p.source == "chat" and p.scoreable and p.stratum == "proportional"]
    if not ix_all:
        sec.not_computed = "no scoreable chat probes in the proportional stratum (only it carries the decomposition)"
        return sec
    for c2, c1 in ABLATIONS:
        a, b = judged[c2], judged[c1]
        both = [i for i in ix_all if a[i] is not None and a[i].value is not None
                and b[i] is not None and b[i].value is not None]
        label = f"{c2} vs {c1}"
        lab = dict(system=label, stratum="proportional", subset="chat:scoreable")
        for cond in (c1, c2):
            vals = [i for i in ix_all if judged[cond][i] is not None and judged[cond][i].value is not None]
            sec.metrics.append(M.mean_metric(f"content_match[{cond}]", [judged[cond][i].value for i in vals],
                                             [probes[i].participant for i in vals], seed=seed, **lab)
                               if vals else Metric(name=f"content_match[{cond}]", value=None, n=0,
                                                   reason="every judgement missing", **lab))
        if not both:
            for nm in ("delta", "pi", "gamma1", "gamma0"):
                sec.metrics.append(Metric(name=nm, value=None, n=0, reason="no probe judged under both conditions",
                                          **lab))
            continue
        gains = [a[i].value - b[i].value for i in both]
        y = [probes[i].memory_bearing for i in both]
        d = M.decomposition(gains, y, [probes[i].participant for i in both], seed=seed, **lab)
        sec.metrics += [d.delta, d.pi, d.gamma1, d.gamma0]
        pi, g1, g0 = d.pi.value, d.gamma1.value, d.gamma0.value
        rebuilt = pi * (g1 if g1 is not None else 0.0) + (1 - pi) * (g0 if g0 is not None else 0.0)
        sec.metrics.append(Metric(name="identity_residual", value=d.delta.value - rebuilt, n=len(both),
                                  reason=None, extra={"pi_gamma1_plus_1_minus_pi_gamma0": rebuilt}, **lab))
        if len(both) < len(ix_all):
            sec.notes.append(f"{label}: {len(ix_all) - len(both)} of {len(ix_all)} proportional probes lack a "
                             "judgement under one condition and are left out of Δ, π, γ1 and γ0 alike")
    sec.notes.append(f"conditions: {'; '.join(f'{k} = {v}' for k, v in conditions.items())}. Score: content match "
                     f"0-2 by judge {judge} (prompt {J.CHAT_PROMPT}). π here is the memory-bearing share of the "
                     "probes judged under both conditions. A gain that lives in γ0 is not evidence that memory helped.")
    return sec
