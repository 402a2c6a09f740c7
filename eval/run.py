"""One `companion eval` run: read the corpus, ingest it once, replay the arms, score, report."""

from __future__ import annotations

import json
import shlex
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from companion import gateway
from companion.settings import Settings
from companion.trials import Arm
from eval import judge as J
from eval import reconstruct
from eval import replay as R
from eval import report, tracks
from eval.readers import Release
from memory import registry


def detect_format(path: Path) -> str:
    if path.is_dir():
        return "benchmark"
    with path.open("rb") as f:
        head = f.read(4096).decode("utf-8", "ignore")
    if '"sample_id"' in head or '"conversation"' in head:
        return "locomo"
    if '"question_id"' in head:
        return "longmemeval"
    raise ValueError(f"{path}: cannot tell the corpus format; pass --format")


def read_corpus(path: Path, fmt: str | None, limit: int | None = None) -> tuple[Release, str]:
    fmt = fmt or detect_format(path)
    release = registry.get("reader", fmt)(path)
    if limit:  # the first N participants (a LongMemEval question brings a whole haystack each)
        keep = list(release.participants)[:limit]
        release.participants = {p: release.participants[p] for p in keep}
        release.manifest = release.manifest.model_copy(update={
            "participants": keep, "counts": {p: c for p, c in release.manifest.counts.items() if p in keep}})
    return release, fmt


def conditions_for(gate: str | None, retriever: str, policy: str, settings: Settings) -> dict[str, Arm]:
    """The context conditions replies are generated under (labels used by the judged tracks)."""
    return {
        "system": Arm(gate or settings.gate, retriever, policy, assignment="eval"),  # the chosen arm, end to end
        "recent": Arm("never", retriever, policy, assignment="eval"),  # C1 / none: the recent window only
        "oracle": Arm("always", "oracle", policy, assignment="eval"),  # C2: the gold evidence
        "topk": Arm("always", retriever, policy, assignment="eval"),  # top-k retrieved, gate or no gate
    }


def _scoreable_chat(p: R.Probe) -> bool:
    return p.source == "chat" and p.scoreable


def _proportional(p: R.Probe) -> bool:
    return _scoreable_chat(p) and p.stratum == "proportional"


def _needs_nothing(p: R.Probe) -> bool:
    """Cold opens and no-referent probes: the controls of misuse (docs/METRICS.md, abstention)."""
    return _scoreable_chat(p) and not p.gold


def reply_plan(track_names: list[str]) -> dict[str, dict]:
    """label -> {"content": probes whose reply gets a content/QA judgement, "misuse": probes whose reply
    is judged for bringing in the past}; conditions no track needs are absent."""
    plan: dict[str, dict] = {}

    def want(label, kind, pred):
        plan.setdefault(label, {"content": [], "misuse": []})[kind].append(pred)

    if "chat" in track_names:
        want("system", "content", _scoreable_chat)
    if "qa" in track_names:
        want("system", "content", lambda p: p.source == "qa")
    if "ablation" in track_names:
        for label in ("system", "recent", "oracle"):
            want(label, "content", _proportional)
    if "abstention" in track_names:
        for label in ("recent", "oracle", "topk"):
            want(label, "misuse", _needs_nothing)
    return {label: {k: (lambda p, fs=fs: any(f(p) for f in fs)) if fs else None for k, fs in d.items()}
            for label, d in plan.items()}


def arms_for(track_names: list[str], gate: str | None, retriever: str | None, policy: str | None,
             settings: Settings, judge: str | None = None) -> dict[str, list[R.ArmSpec]]:
    """The arms each replayed track runs, by registry name (checked before any work starts)."""
    policy = policy or settings.policy
    retriever_ = retriever or settings.retriever
    has_gold = lambda p: bool(p.gold) and p.scoreable  # noqa: E731
    chat = lambda p: p.source == "chat" and p.scoreable  # noqa: E731
    out: dict[str, list[R.ArmSpec]] = {}
    if "retrieval" in track_names:
        # retrievers are compared with the always gate; a chosen gate makes the system row end to end
        g = gate or "always"
        system = retriever_ if g == "always" else f"{g}/{retriever_}"
        specs = [R.ArmSpec(system, Arm(g, retriever_, policy, assignment="eval"), has_gold, "retrieval")]
        specs += [R.ArmSpec(b, Arm("always", b, policy, assignment="eval"), has_gold, "retrieval")
                  for b in tracks.BASELINES if b != system]
        out["retrieval"] = specs
    if "abstention" in track_names:
        gates = list(dict.fromkeys([gate or settings.gate, *tracks.COMPARISON_GATES]))
        out["abstention"] = [R.ArmSpec(g, Arm(g, retriever_, policy, assignment="eval"), chat, "abstention")
                             for g in gates]
    plan = reply_plan(track_names)
    if judge and plan:  # replies only when a judge will read them (they are the slow part)
        cond = conditions_for(gate, retriever_, policy, settings)
        out["reply"] = [R.ArmSpec(label, cond[label], lambda p, w=w: any(f(p) for f in w.values() if f), "reply",
                                  reply=True) for label, w in plan.items()]
    for specs in out.values():
        for s in specs:
            for kind in ("gate", "retriever", "policy"):
                registry.get(kind, getattr(s.arm, kind))  # an unknown name fails now, with the list
    return out


def _settings(base: Settings, work: Path, ks: list[int], seed: int) -> Settings:
    params = {k: dict(v) for k, v in base.params.items()}
    params.setdefault("retriever", {}).setdefault("random", {}).setdefault("seed", seed)
    learned = base.data_dir / "gates" / "learned.json"  # the replay store lives elsewhere: point at the weights
    if learned.exists():
        params.setdefault("gate", {}).setdefault("learned", {}).setdefault("weights", str(learned))
    return base.model_copy(update={"home": work, "k": max(ks), "params": params})


def command_line(tracks_: list[str], corpus, fmt, gate, retriever, policy, ks, out, seed, judge, limit,
                 model: str | None = None) -> str:
    parts = ["companion", "eval", *tracks_, "--corpus", str(corpus), "--format", fmt]
    for flag, v in (("--gate", gate), ("--retriever", retriever), ("--policy", policy), ("--model", model),
                    ("--judge", judge), ("--limit", limit)):
        if v:
            parts += [flag, str(v)]
    for k in ks:
        parts += ["--k", str(k)]
    parts += ["--seed", str(seed), "--out", str(out)]
    return shlex.join(parts)


def judge_replies(probes: list[R.Probe], replies: dict[str, list], judge: J.Judge, plan: dict[str, dict],
                  progress: bool = True) -> tuple[dict[str, list], dict[str, list]]:
    """(content, misuse): judgements per condition label, aligned with `probes` (None where not judged).

    Content: chat content match or QA correctness; misuse: did a reply to a probe that needed
    nothing bring in the past. Identical (prompt, probe, reference, reply) are judged once: two
    conditions that said the same thing get the same judgement, and the judge is not paid twice.
    """
    memo: dict[tuple, J.Judgement] = {}

    def one(version: str, p: R.Probe, o: R.Outcome, reference: str | None) -> J.Judgement:
        if o.reply is None:
            return J.Judgement(value=None, prompt=version, reason=f"no reply: {o.reply_error}")
        if reference is not None and not reference.strip():
            return J.Judgement(value=None, prompt=version,
                               reason="no reference reply" if p.source == "chat" else "no gold answer")
        key = (version, p.text, reference, o.reply)
        if key not in memo:
            memo[key] = judge.judge(version, p.text, reference or "", o.reply)
        return memo[key]

    content: dict[str, list] = {}
    misuse: dict[str, list] = {}
    jobs = [(label, kind, i) for label, outs in replies.items() for kind in ("content", "misuse")
            for i, (p, o) in enumerate(zip(probes, outs))
            if o is not None and plan[label][kind] is not None and plan[label][kind](p)]
    for label in replies:  # only the kinds of judgement some track reads under this condition
        for kind, into in (("content", content), ("misuse", misuse)):
            if plan[label][kind] is not None:
                into[label] = [None] * len(probes)
    for label, kind, i in tqdm(jobs, desc="judge", unit="reply", disable=not progress):
        p, o = probes[i], replies[label][i]
        if kind == "content":
            version = J.CHAT_PROMPT if p.source == "chat" else J.QA_PROMPT
            content[label][i] = one(version, p, o, p.reference or "")
        else:
            misuse[label][i] = one(J.MISUSE_PROMPT, p, o, None)
    return content, misuse


def run(track_names: list[str], corpus: Path, out: Path, fmt: str | None = None, gate: str | None = None,
        retriever: str | None = None, policy: str | None = None, ks: list[int] = (1, 5, 10), seed: int = 0,
        judge: str | None = None, work: Path | None = None, limit: int | None = None,
        settings: Settings | None = None, progress: bool = True, model: str | None = None) -> dict:
    """`model`: the companion's reply model for the judged tracks (default: the settings' model)."""
    settings = settings or Settings()
    if model:
        settings = settings.model_copy(update={"model": model})
    unknown = [t for t in track_names if t not in tracks.TRACKS]
    if unknown:
        raise ValueError(f"unknown track(s) {unknown}; tracks are {', '.join(tracks.TRACKS)}")
    ks = sorted(set(int(k) for k in ks))
    if not ks or ks[0] < 1:
        raise ValueError("--k must be at least 1")
    specs = arms_for(track_names, gate, retriever, policy, settings, judge)
    judge_ = J.Judge(judge, timeout=settings.timeout, retries=settings.retries) if judge else None
    release, fmt = read_corpus(Path(corpus), fmt, limit)
    probes = R.probes_of(release, seed=seed)
    digest = R.corpus_hash(release)
    timings: dict[str, float] = {}

    outcomes: dict[str, dict] = {}
    judged: dict[str, list] = {}
    misuse: dict[str, list] = {}
    recon = None
    store_note = "not needed (these tracks read the gold only)"
    recon_gold = "reconstruction" in track_names and reconstruct.has_gold(release)
    if "reconstruction" in track_names and not recon_gold:  # said without ingesting anything
        recon = reconstruct.reconstruction(release, None, seed)
    if specs or recon_gold:
        tmp = None
        if work is None:
            tmp = tempfile.TemporaryDirectory(prefix="companion-eval-")
            work = Path(tmp.name)
        t = time.perf_counter()
        store, reused = R.open_store(release, Path(work), digest, progress=progress)
        timings["ingest_s"] = round(time.perf_counter() - t, 2)
        store_note = f"{'reused' if reused else 'fresh'} store at {work if tmp is None else 'a temporary folder'}"
        try:
            if specs:
                t = time.perf_counter()
                all_arms = [a for specs_ in specs.values() for a in specs_]
                got = R.replay(store, release, probes, all_arms, _settings(settings, Path(work), ks, seed), progress)
                timings["replay_s"] = round(time.perf_counter() - t, 2)
                outcomes = {track: {a.label: got[a.key] for a in specs_} for track, specs_ in specs.items()}
            if recon_gold:
                t = time.perf_counter()
                recon = reconstruct.reconstruction(release, store, seed)
                timings["reconstruction_s"] = round(time.perf_counter() - t, 2)
        finally:
            store.close()
            if tmp is not None:
                tmp.cleanup()
    if "reply" in outcomes:
        t = time.perf_counter()
        judged, misuse = judge_replies(probes, outcomes["reply"], judge_, reply_plan(track_names), progress)
        timings["judge_s"] = round(time.perf_counter() - t, 2)

    t = time.perf_counter()
    sections = []
    system = conditions_for(gate, retriever or settings.retriever, policy or settings.policy, settings)
    for name in track_names:
        if name == "retrieval":
            sections.append(tracks.retrieval(probes, outcomes["retrieval"], ks, seed))
        elif name == "abstention":
            sections.append(tracks.abstention(probes, outcomes["abstention"], seed, misuse=misuse or None,
                                              conditions={c: system[c].name for c in misuse},
                                              judge=judge_.model if judge_ else None))
        elif name == "demand":
            sections.append(tracks.demand(probes, seed))
        elif name == "budget":
            sections.append(tracks.budget(probes))
        elif name == "reconstruction":
            sections.append(recon)
        elif not judge_:
            sections.append(tracks.not_computed(name))
        elif name == "chat":
            sections.append(tracks.chat(probes, judged, system["system"].name, judge_.model, seed))
        elif name == "qa":
            sections.append(tracks.qa(probes, judged, system["system"].name, judge_.model, seed))
        elif name == "ablation":
            conds = {c: system[c].name for c in ("system", "recent", "oracle")}
            sections.append(tracks.ablation(probes, judged, conds, judge_.model, seed))
    timings["score_s"] = round(time.perf_counter() - t, 2)

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if outcomes:  # per-probe outcomes, so any number in the report can be traced to its probes
        with (out / "outcomes.jsonl").open("w") as f:
            for track, arms in outcomes.items():
                for label, outs in arms.items():
                    for i, (p, o) in enumerate(zip(probes, outs)):
                        if o is not None:
                            row = {"track": track, "system": label, "participant": p.participant, "item": p.item,
                                   "as_of": p.as_of, "gold": p.gold, **o.model_dump()}
                            if track == "reply":
                                row["reference"] = p.reference
                                j = judged.get(label, [None] * len(probes))[i]
                                row["judgement"] = j.model_dump() if j is not None else None
                                u = misuse.get(label, [None] * len(probes))[i]
                                if u is not None:
                                    row["misuse_judgement"] = u.model_dump()
                            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    arm = {"gate": gate, "retriever": retriever or settings.retriever, "policy": policy or settings.policy}
    header = {
        "command": command_line(track_names, corpus, fmt, gate, retriever, policy, ks, out, seed, judge, limit, model),
        "code": report.code_version(),
        "corpus": {"path": str(corpus), "format": fmt, "sha256": digest,
                   "participants": len(release.participants),
                   "messages": sum(len(p.conversation) for p in release.participants.values()),
                   "probes": len(probes), "recent_window": release.recent_window},
        "arm": arm, "seed": seed, "ks": ks, "store": store_note, "timings": timings,
        "arms": {t: [a.arm.describe() | {"label": a.label} for a in s] for t, s in specs.items()},
    }
    ret = arm["retriever"]
    try:  # the hybrid's recipe and weights belong in the header: two recipes can share a name's row
        header["retriever"] = registry.create("retriever", ret, **settings.params_for("retriever", ret)).describe()
    except Exception as e:  # noqa: BLE001 - a plugin that cannot be built here is reported, not fatal
        header["retriever"] = {"name": ret, "params": {"error": str(e)[:200]}}
    if judge_:
        header["judge"] = judge_.describe()
    if "reply" in specs:
        header["reply_model"] = gateway.resolve(settings.model)
    return report.write(out, header, sections, ks, release.warnings)
