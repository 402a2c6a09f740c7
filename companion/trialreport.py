"""What each arm of a live gate trial did for the participants: `companion trial report`
and the researcher tab's "Trial results" panel.

Turns are the traces that ran a gate (a reply the wrapper gave without the model, e.g. a "yes"
to a held action, ran no arm and is left out). Only turns a trial assigned (fixed or randomized)
are arms; turns that ran the configured arm (before a participant's first assignment, or after
`trial clear`) are counted apart, never as an arm. The reference arm is the one named
(`--control`), else the first arm given to `trial randomize` (recorded in every randomized
turn's trace). Each turn's outcomes are read when the report
is made: the reply's standing feedback (memory.feedback) and the implicit signals in the
participant's next message (memory.signals, versioned rules). Rates are pooled over turns
(micro); differences between arms come with 95% participant-cluster bootstrap intervals
(participants resampled with replacement, every turn of a drawn participant kept, so turns of
one person are not treated as independent). Formulas: docs/METRICS.md, "Live trials".

This module must not import eval (the live app imports it); its small formatting helpers
mirror eval/report.py's style: every number with its n, a missing one shown with its reason.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from memory import feedback, participants as participants_mod, signals, traces
from memory.store import Store

MIN_PARTICIPANTS = 5
BALANCE = 0.8  # the smallest arm below this share of the largest arm's turns: unbalanced
BOOTSTRAP = 2000

# rate metrics: name -> (numerator field, denominator field, what it says)
RATES = {
    "retrieval_rate": ("retrieved", "turns", "turns whose gate retrieved"),
    "feedback_rate": ("rated", "turns", "turns whose reply was rated"),
    "up_share": ("up", "rated", "thumbs up among rated replies"),
    "down_rate": ("down", "turns", "turns rated thumbs down"),
    "tag_forgot_rate": ("tag_forgot", "turns", "turns tagged 'you forgot something I told you'"),
    "tag_misfit_rate": ("tag_misfit", "turns", "turns tagged 'brought up something that didn't fit'"),
    "tag_wrong_rate": ("tag_wrong", "turns", "turns tagged 'got something about me wrong'"),
    "implicit_miss_rate": ("restate", "turns", "replies followed by a restatement (signal restate)"),
    "implicit_misuse_rate": ("irrelevant", "turns", "replies followed by 'not relevant' (signal irrelevant)"),
    "implicit_correction_rate": ("correct", "turns", "replies followed by a correction (signal correct)"),
}
COUNTS = ["turns", "retrieved", "rated", "up", "down", "tag_forgot", "tag_misfit", "tag_wrong",
          "restate", "irrelevant", "correct"]


@dataclass
class Turn:
    participant: str
    arm: str
    gate: str
    trace_id: int
    dayid: str | None
    reply_dayid: str | None
    created_at: str
    retrieved: bool
    latency_ms: float | None
    rating: int = 0
    tag: str | None = None
    signals: list[str] = field(default_factory=list)
    assignment: str | None = None  # settings (outside any trial), fixed or randomized
    control: str | None = None  # the randomized trial's first arm


def _metric(value, n, interval=None, reason=None) -> dict:
    return {"value": value, "n": n, "interval": interval, "reason": reason}


def fmt(m: dict | None, digits: int = 3, with_n: bool = False) -> str:
    if m is None:
        return "—"
    if m["value"] is None:
        return f"— ({m['reason']})" if m.get("reason") else "—"
    v = f"{m['value']:.{digits}f}"
    if m.get("interval"):
        v += f" [{m['interval'][0]:.{digits}f}, {m['interval'][1]:.{digits}f}]"
    return v + (f" (n={m['n']})" if with_n else "")


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|",
            *("| " + " | ".join(r) + " |" for r in rows), ""]


def code_version() -> dict:
    try:
        pkg = version("companion")
    except PackageNotFoundError:
        pkg = None
    try:
        git = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        git = None
    return {"package": pkg, "git": git}


# --- collecting turns ---------------------------------------------------------------------------


def collect(store: Store, who: list[str] | None = None, since: str | None = None) -> list[Turn]:
    """The trial's turns with their outcomes. `since`: an ISO date or time (UTC), turns from then on."""
    if since is not None:
        try:
            bound = datetime.fromisoformat(since)
        except ValueError:
            raise ValueError(f"--since must be an ISO date like 2026-11-30, got {since!r}") from None
        if bound.tzinfo is None:
            bound = bound.replace(tzinfo=timezone.utc)
    names = who if who else participants_mod.names(store)
    for p in names:
        if not participants_mod.exists(store, p):
            raise ValueError(f"unknown participant {p!r}")
    out: list[Turn] = []
    for p in names:
        rating = {f.dayid: f for f in feedback.current(store, p)}
        sig: dict[str, list[str]] = {}
        for s in signals.of(store, p):
            sig.setdefault(s.reply_dayid, []).append(s.rule)
        for t in traces.list_(store, participant=p):
            if not t.arm.get("name"):
                continue
            if since is not None and datetime.fromisoformat(t.created_at) < bound:
                continue
            f = rating.get(t.reply_dayid) if t.reply_dayid else None
            out.append(Turn(p, t.arm["name"], t.arm.get("gate", ""), t.id, t.dayid, t.reply_dayid, t.created_at,
                            bool(t.decision and t.decision.get("retrieve")), t.latency_ms.get("total"),
                            f.rating if f else 0, f.tag if f else None,
                            sig.get(t.reply_dayid, []) if t.reply_dayid else [],
                            t.arm.get("assignment") or "settings", t.arm.get("control")))
    return out


TRIAL = ("fixed", "randomized", None)  # None: a Turn built without an assignment (tests, older callers)


def split(turns: list[Turn]) -> tuple[list[Turn], dict[str, list[Turn]]]:
    """(the trial's turns, {"before_assignment": ..., "after_trial": ...}): a turn that ran the
    configured arm belongs to no arm; it came before the participant's first trial turn, or after
    their trial was cleared."""
    first: dict[str, int] = {}
    for t in turns:
        if t.assignment in TRIAL:
            first[t.participant] = min(first.get(t.participant, t.trace_id), t.trace_id)
    trial = [t for t in turns if t.assignment in TRIAL]
    outside = {"before_assignment": [], "after_trial": []}
    for t in turns:
        if t.assignment not in TRIAL:
            late = t.participant in first and t.trace_id > first[t.participant]
            outside["after_trial" if late else "before_assignment"].append(t)
    return trial, outside


def pick_reference(turns: list[Turn], control: str | None, arms: list[str]) -> tuple[str | None, str | None]:
    """(the reference arm, a warning or None). `control`: an arm's name, or a gate that names
    exactly one arm; default: the control every randomized turn recorded."""
    if not arms:
        return None, None
    if control is not None:
        if control in arms:
            return control, None
        by_gate = [a for a in arms if a.split("/")[0] == control]
        if len(by_gate) == 1:
            return by_gate[0], None
        raise ValueError(f"--control {control!r} ran no turns here: one of {', '.join(arms)}"
                         + (" (that gate names several arms: give the full name)" if by_gate else ""))
    named = sorted({t.control for t in turns if t.control})
    if len(named) > 1:
        raise ValueError(f"the trials name different first arms ({', '.join(named)}): choose the reference "
                         "with --control ARM")
    if named and named[0] in arms:
        return named[0], None
    return arms[0], (f"no trial recorded a control arm: differences are taken against {arms[0]} "
                     "(the first by name); name one with --control ARM")


def counts(turns: list[Turn]) -> dict[str, int]:
    c = dict.fromkeys(COUNTS, 0)
    for t in turns:
        c["turns"] += 1
        c["retrieved"] += t.retrieved
        c["rated"] += t.rating != 0
        c["up"] += t.rating > 0
        c["down"] += t.rating < 0
        if t.tag:
            c[f"tag_{t.tag}"] = c.get(f"tag_{t.tag}", 0) + 1
        for s in set(t.signals):
            c[s] += 1
    return c


def rates(c: dict[str, int]) -> dict[str, float | None]:
    return {name: (c[num] / c[den] if c[den] else None) for name, (num, den, _) in RATES.items()}


def _latency(turns: list[Turn]) -> float | None:
    xs = [t.latency_ms for t in turns if t.latency_ms is not None]
    return statistics.fmean(xs) if xs else None


def _values(turns: list[Turn]) -> dict[str, float | None]:
    return {**rates(counts(turns)), "latency_ms_mean": _latency(turns)}


def _sums(turns: list[Turn]) -> dict[str, float]:
    lat = [t.latency_ms for t in turns if t.latency_ms is not None]
    return {**counts(turns), "latency_sum": sum(lat), "latency_n": len(lat)}


def _from_sums(parts: list[dict[str, float]]) -> dict[str, float | None]:
    """`_values` of the union of turns whose `_sums` are `parts`."""
    total = {k: sum(p.get(k, 0) for p in parts) for k in [*COUNTS, "latency_sum", "latency_n"]}
    return {**rates(total), "latency_ms_mean": total["latency_sum"] / total["latency_n"] if total["latency_n"] else None}


# --- the analysis -------------------------------------------------------------------------------


def analyse(turns: list[Turn], reference: str | None = None, bootstrap: int = BOOTSTRAP, seed: int = 0,
            show_progress: bool | None = False) -> dict:
    from consent import progress

    turns, outside = split(turns)
    arms = sorted({t.arm for t in turns})
    by_arm = {a: [t for t in turns if t.arm == a] for a in arms}
    people = sorted({t.participant for t in turns})
    warnings = []
    if len(people) < MIN_PARTICIPANTS:
        warnings.append(f"only {len(people)} participant(s): below {MIN_PARTICIPANTS}, the participant-cluster "
                        "intervals are not trustworthy")
    if len(arms) > 1:
        sizes = {a: len(v) for a, v in by_arm.items()}
        if min(sizes.values()) < BALANCE * max(sizes.values()):
            warnings.append("arms are unbalanced: " + ", ".join(f"{a} {n} turns" for a, n in sizes.items()))
        for p in people:
            seen = sorted({t.arm for t in turns if t.participant == p})
            if len(seen) < len(arms):
                warnings.append(f"{p} ran only {', '.join(seen)}: their turns compare between participants, "
                                "not within")
    if len(arms) < 2:
        warnings.append("fewer than two arms: no differences to estimate")

    arm_rows = {}
    for a, ts in by_arm.items():
        c = counts(ts)
        vals = _values(ts)
        arm_rows[a] = {
            "counts": c, "participants": len({t.participant for t in ts}),
            "metrics": {name: _metric(vals[name], c[RATES[name][1]], reason=None if vals[name] is not None
                                      else f"no {RATES[name][1]}") for name in RATES},
        }
        lat = [t.latency_ms for t in ts if t.latency_ms is not None]
        arm_rows[a]["metrics"]["latency_ms_mean"] = _metric(vals["latency_ms_mean"], len(lat),
                                                            reason=None if lat else "no latencies")
        arm_rows[a]["metrics"]["latency_ms_median"] = _metric(statistics.median(lat) if lat else None, len(lat),
                                                              reason=None if lat else "no latencies")

    ref, why = pick_reference(turns, reference, arms)
    if why and len(arms) > 1:
        warnings.append(why)
    diffs = []
    names = [*RATES, "latency_ms_mean"]
    if ref is not None and len(arms) > 1:
        # Pooled rates are ratios of sums, so a resample only needs each participant's sums per arm.
        sums = {(p, a): _sums([t for t in turns if t.participant == p and t.arm == a]) for p in people for a in arms}
        rng = random.Random(seed)
        reps: dict[tuple[str, str], list[float]] = {}
        bar = progress.bar(total=bootstrap, desc="trial report: bootstrap", unit="replicate", show=show_progress)
        for _ in range(bootstrap):
            bar.update(1)
            drawn = rng.choices(people, k=len(people))
            v = {a: _from_sums([sums[(p, a)] for p in drawn]) for a in arms}
            for a in arms:
                if a == ref:
                    continue
                for n in names:
                    if v[a][n] is not None and v[ref][n] is not None:
                        reps.setdefault((a, n), []).append(v[a][n] - v[ref][n])
        bar.close()
        point = {a: _values(by_arm[a]) for a in arms}
        for a in arms:
            if a == ref:
                continue
            for n in names:
                if point[a][n] is None or point[ref][n] is None:
                    diffs.append({"arm": a, "reference": ref, "metric": n,
                                  **_metric(None, 0, reason="undefined in one of the arms")})
                    continue
                rs = sorted(reps.get((a, n), []))
                interval = [_pct(rs, 0.025), _pct(rs, 0.975)] if rs else None
                diffs.append({"arm": a, "reference": ref, "metric": n, "replicates": len(rs),
                              **_metric(point[a][n] - point[ref][n], len(by_arm[a]) + len(by_arm[ref]), interval)})

    table_rows = []
    for p in people:
        for a in arms:
            ts = [t for t in turns if t.participant == p and t.arm == a]
            if ts:
                table_rows.append({"participant": p, "arm": a, **counts(ts)})
    outside_rows = {k: {"counts": counts(v), "participants": len({t.participant for t in v})}
                    for k, v in outside.items()}
    return {"arms": arm_rows, "reference": ref, "differences": diffs, "participants": table_rows,
            "n_participants": len(people), "n_turns": len(turns), "warnings": warnings,
            "outside_trial": outside_rows,
            "bootstrap": {"replicates": bootstrap, "seed": seed, "unit": "participant"}}


def _pct(xs: list[float], q: float) -> float:
    """Percentile by linear interpolation between order statistics."""
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def report(store: Store, who: list[str] | None = None, since: str | None = None, reference: str | None = None,
           bootstrap: int = BOOTSTRAP, seed: int = 0, command: str = "", show_progress: bool | None = False) -> dict:
    turns = collect(store, who, since)
    doc = analyse(turns, reference, bootstrap, seed, show_progress)
    doc["outcomes"] = [asdict(t) for t in turns]  # written as outcomes.jsonl, one row per turn
    header = {"command": command, "code": code_version(), "created_at": datetime.now(timezone.utc).isoformat(),
              "filters": {"participants": who or "all", "since": since},
              "signals_version": signals.version(), "feedback_version": feedback.version()}
    return {**header, **doc}


# --- writing ------------------------------------------------------------------------------------

MD_METRICS = ["retrieval_rate", "feedback_rate", "up_share", "down_rate", "tag_forgot_rate", "tag_misfit_rate",
              "tag_wrong_rate", "implicit_miss_rate", "implicit_misuse_rate", "implicit_correction_rate",
              "latency_ms_mean", "latency_ms_median"]


def markdown(doc: dict, plots: list[str] | None = None) -> str:
    md = ["# Trial report", "",
          f"- command: `{doc['command']}`" if doc.get("command") else "- made in the researcher tab",
          f"- code: companion {doc['code']['package']} (git {doc['code']['git']})",
          f"- filters: participants {doc['filters']['participants']}, since {doc['filters']['since'] or 'the start'}",
          f"- {doc['n_participants']} participants, {doc['n_turns']} turns; rules {doc['signals_version']}, "
          f"tags {doc['feedback_version']}",
          f"- intervals: 95% participant-cluster bootstrap, {doc['bootstrap']['replicates']} replicates, "
          f"seed {doc['bootstrap']['seed']}", ""]
    if doc["warnings"]:
        md += ["**Warnings**", ""] + [f"- {w}" for w in doc["warnings"]] + [""]
    arms = list(doc["arms"])
    md += ["## Per arm", "", "Rates are pooled over turns (micro); n is the denominator.", ""]
    md += table(["metric", *arms], [[m, *(fmt(doc["arms"][a]["metrics"][m], with_n=True) for a in arms)]
                                   for m in MD_METRICS])
    md += table(["arm", "participants", *COUNTS],
                [[a, str(doc["arms"][a]["participants"]), *(str(doc["arms"][a]["counts"].get(c, 0)) for c in COUNTS)]
                 for a in arms])
    out = doc.get("outside_trial") or {}
    if any(v["counts"]["turns"] for v in out.values()):
        md += ["## Outside the trial", "", "Turns that ran the configured arm, not one a trial assigned: "
               "counted here, never as an arm.", ""]
        md += table(["when", "participants", *COUNTS],
                    [[k.replace("_", " "), str(v["participants"]), *(str(v["counts"].get(c, 0)) for c in COUNTS)]
                     for k, v in out.items()])
    if doc["differences"]:
        md += ["## Differences", "", f"Each arm minus the reference arm `{doc['reference']}`, "
               "with its 95% participant-cluster bootstrap interval.", ""]
        md += table(["arm", "metric", "difference"], [[d["arm"], d["metric"], fmt(d)] for d in doc["differences"]])
    md += ["## Per participant", ""]
    md += table(["participant", "arm", *COUNTS], [[r["participant"], r["arm"], *(str(r.get(c, 0)) for c in COUNTS)]
                                                 for r in doc["participants"]])
    if plots:
        md += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(md)


def plots(doc: dict, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    arms = list(doc["arms"])
    if not arms:
        return made
    shown = ["retrieval_rate", "down_rate", "implicit_miss_rate", "implicit_misuse_rate", "implicit_correction_rate"]
    fig, ax = plt.subplots(figsize=(1.6 + 1.5 * len(shown), 3.8))
    width = 0.8 / len(arms)
    for i, a in enumerate(arms):
        ys = [doc["arms"][a]["metrics"][m]["value"] for m in shown]
        ax.bar([j + i * width for j in range(len(shown))], [float("nan") if y is None else y for y in ys],
               width, label=a)
    ax.set_xticks([j + width * (len(arms) - 1) / 2 for j in range(len(shown))],
                  [m.replace("_rate", "").replace("_", " ") for m in shown], fontsize=8)
    ax.set(ylabel="share of turns", title="Per arm (pooled over turns)", ylim=(0, 1.02))
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "arms.png", dpi=110)
    plt.close(fig)
    made.append("arms.png")
    diffs = [d for d in doc["differences"] if d["value"] is not None and d["metric"] != "latency_ms_mean"]
    if diffs:
        fig, ax = plt.subplots(figsize=(6.5, 0.35 * len(diffs) + 1.4))
        for i, d in enumerate(diffs):
            lo, hi = d["interval"] or (d["value"], d["value"])
            ax.errorbar(d["value"], i, xerr=[[d["value"] - lo], [hi - d["value"]]], fmt="o", capsize=3, color="C0")
        ax.axvline(0, color="grey", lw=1, ls=":")
        ax.set_yticks(range(len(diffs)), [f"{d['arm']}: {d['metric']}" for d in diffs], fontsize=7)
        ax.set(xlabel=f"difference vs {doc['reference']} (95% participant bootstrap)")
        fig.tight_layout()
        fig.savefig(out / "differences.png", dpi=110)
        plt.close(fig)
        made.append("differences.png")
    return made


def write(doc: dict, out: Path) -> dict:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    made = plots(doc, out)
    rows = doc.get("outcomes", [])
    (out / "outcomes.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                        encoding="utf-8")
    doc = {**{k: v for k, v in doc.items() if k != "outcomes"}, "plots": made}
    (out / "report.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(doc, made) + "\n", encoding="utf-8")
    return doc


# --- planning -----------------------------------------------------------------------------------


def plan(baseline: float, effect: float, icc: float, turns_per_participant: int, alpha: float = 0.05,
         power: float = 0.8, arms: int = 2) -> dict:
    """Participants needed to detect `effect` on a turn-level rate (docs/METRICS.md, "Planning").

    n per arm (independent turns) = (z[1-alpha/2] + z[power])^2 * (p1(1-p1) + p2(1-p2)) / effect^2,
    inflated by the design effect 1 + (m - 1) * icc for m = turns_per_participant / arms turns of a
    participant in each arm; participants = ceil(n * DE / m).
    """
    p1, p2 = baseline, baseline + effect
    problems = []
    if not 0 < p1 < 1:
        problems.append(f"--baseline must be a rate strictly between 0 and 1, got {baseline}")
    if effect == 0 or not 0 < p2 < 1:
        problems.append(f"--effect must be non-zero and keep baseline + effect strictly between 0 and 1, got {effect}")
    if not 0 <= icc <= 1:
        problems.append(f"--icc must be between 0 and 1, got {icc}")
    if arms < 2:
        problems.append(f"--arms must be at least 2, got {arms}")
    if turns_per_participant < arms:
        problems.append(f"--turns-per-participant must be at least the number of arms ({arms}), "
                        f"got {turns_per_participant}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        problems.append("--alpha and --power must be strictly between 0 and 1")
    if problems:
        raise ValueError("; ".join(problems))
    z = statistics.NormalDist()
    za, zb = z.inv_cdf(1 - alpha / 2), z.inv_cdf(power)
    n = (za + zb) ** 2 * (p1 * (1 - p1) + p2 * (1 - p2)) / effect ** 2
    m = turns_per_participant / arms
    de = 1 + (m - 1) * icc
    need = math.ceil(n * de / m)
    return {"baseline": p1, "effect": effect, "icc": icc, "turns_per_participant": turns_per_participant,
            "alpha": alpha, "power": power, "arms": arms, "z_alpha": round(za, 4), "z_power": round(zb, 4),
            "turns_per_arm_independent": round(n, 1), "turns_per_participant_per_arm": m,
            "design_effect": round(de, 4), "turns_per_arm": round(n * de, 1), "participants": need}
