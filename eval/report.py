"""Write a run's report: report.md, report.json and PNG plots in one folder.

The reporting rules of docs/METRICS.md: every number with its n and interval, strata named,
the baseline and oracle rows present, the command and the data/code versions at the top, and a
missing number shown as missing with its reason, never as 0.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from eval.metrics import Metric
from eval.tracks import BASELINES, SUBSETS, Section


def code_version() -> dict:
    here = Path(__file__).resolve().parent
    try:
        pkg = version("companion")
    except PackageNotFoundError:
        pkg = None
    try:
        git = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=here, capture_output=True,
                             text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        git = None
    return {"package": pkg, "git": git}


def fmt(m: Metric | None, digits: int = 3, with_n: bool = False) -> str:
    if m is None:
        return "—"
    if m.value is None:
        return f"— ({m.reason})" if m.reason else "—"
    v = f"{m.value:.{digits}f}"
    if m.interval:
        v += f" [{m.interval[0]:.{digits}f}, {m.interval[1]:.{digits}f}]"
    return v + (f" (n={m.n})" if with_n else "")


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|",
            *("| " + " | ".join(r) + " |" for r in rows), ""]


# --- markdown per track --------------------------------------------------------------------------


def _retrieval_md(sec: Section, ks: list[int]) -> list[str]:
    out = ["Systems are replayed with the `always` gate unless the command says otherwise, so the rows compare "
           "retrievers. ORACLE must read 1.000 (recall@k < 1 only where a probe has more than k gold messages) "
           "and BROKEN ORACLE about 0: they check the scorer. Micro = mean over probes, macro = mean over "
           "participants. Intervals: 95% participant bootstrap.", ""]
    by = {}
    for m in sec.metrics:
        by.setdefault((m.subset, m.stratum), {}).setdefault((m.system, m.average), {})[m.name] = m
    systems = list(dict.fromkeys(m.system for m in sec.metrics))
    systems = [s for s in systems if s not in BASELINES] + [s for s in BASELINES if s in systems]
    cols = [f"hit@{k}" for k in ks] + [f"recall@{k}" for k in ks] + ["mrr"]
    heads = cols[:-1] + [f"MRR@{max(ks)}"]  # the ranking is cut at the largest k: a truncated MRR
    apart = any(m.stratum in ("category:adversarial", "category:5") for m in sec.metrics)
    if apart:
        out += ["LoCoMo category 5 (adversarial: the answer is not in the conversation) is its own stratum and "
                "is left out of the pooled `all` rows of questions.", ""]
    for (subset, stratum), rows in by.items():
        source, sname = subset.split(":", 1)
        n = max(m.n for ms in rows.values() for m in ms.values())
        title = f"{'chat probes' if source == 'chat' else 'questions'} · {SUBSETS[sname][0]} · stratum {stratum}"
        if n == 0:
            out += [f"#### {title}: no probes", ""]
            continue
        out.append(f"#### {title} (n = {n})")
        out.append("")
        body, missing = [], {}
        for s in systems:
            for avg in ("micro", "macro"):
                ms = rows.get((s, avg), {})
                if not ms:
                    continue
                name = s.upper() if s in BASELINES else f"**{s}**"
                reasons = {m.reason for m in ms.values() if m.value is None}
                if all(m.value is None for m in ms.values()) and len(reasons) == 1:
                    missing[name] = reasons.pop()  # said once under the table, not in every cell
                    body.append([name, avg] + ["—"] * len(cols))
                else:
                    body.append([name, avg] + [fmt(ms.get(c)) for c in cols])
        out += _table(["system", "average", *heads], body)
        out += [f"{name}: not computed: {why}." for name, why in missing.items()] + ([""] if missing else [])
    return out


def _abstention_md(sec: Section) -> list[str]:
    out = ["y = 1 for memory-bearing probes (grounding outside the recent window); the strict variant also "
           "drops probes whose referent is clearly on screen. AUROC = Mann–Whitney, ties ½, 95% participant "
           "bootstrap. Counts at each gate's own operating threshold.", ""]
    by = {}
    for m in sec.metrics:
        if m.name != "misuse_on_controls":
            by.setdefault((m.subset, m.stratum), {}).setdefault(m.system, {})[m.name] = m
    cols = ["auroc", "caught_positives", "false_alarms", "precision", "recall"]
    for (subset, stratum), rows in by.items():
        if stratum == "control":
            continue
        out.append(f"#### {subset} · stratum {stratum}")
        out.append("")
        body = []
        for gate, ms in rows.items():
            a = ms.get("auroc")
            body.append([gate, str(a.n if a else 0)] + [
                fmt(ms.get(c), 0 if c in ("caught_positives", "false_alarms") else 3) for c in cols])
        out += _table(["gate", "n", *cols], body)
    ctl = [m for m in sec.metrics if m.name == "fired_on_controls"]
    if ctl:
        out.append("#### Gate fired on controls (session cold opens: nothing needed)")
        out.append("")
        out += _table(["gate", "control probes", "decided", "share fired [Wilson 95%]"],
                      [[m.system, str((m.extra or {}).get("control_probes", m.n)), str(m.n), fmt(m)] for m in ctl])
    mis = [m for m in sec.metrics if m.name == "misuse_on_controls"]
    if mis:
        out.append("#### Misuse: replies that bring in the past although nothing was needed (judged)")
        out.append("")
        out += _table(["context", "probes", "n judged", "missing", "share [Wilson 95%]"],
                      [[m.system, m.stratum, str(m.n), str((m.extra or {}).get("missing", "—")), fmt(m)] for m in mis])
    return out


def _demand_md(sec: Section) -> list[str]:
    body = []
    for m in sec.metrics:
        boot = m.extra.get("participant_bootstrap")
        b = f"[{boot[0]:.3f}, {boot[1]:.3f}]" if boot else "—"
        body.append([m.subset, m.stratum, str(m.n), fmt(m), b])
    return _table(["label", "stratum", "n", "π [Wilson 95%]", "participant bootstrap 95%"], body)


def _budget_md(sec: Section) -> list[str]:
    out = ["Share of memory-bearing probes whose whole gold set lies within the most recent N messages "
           "(or tokens, estimated at ~4 characters a token) before the probe. Wilson 95% intervals.", ""]
    by = {}
    for m in sec.metrics:
        by.setdefault((m.name, m.subset, m.stratum), []).append(m)
    for (name, subset, stratum), ms in by.items():
        unit = name.removeprefix("coverage_")
        out.append(f"#### {subset} · stratum {stratum} · budget in {unit} (n = {ms[0].n})")
        out.append("")
        out += _table(["budget", *[str(m.k) for m in ms]], [["coverage", *[fmt(m, 2) for m in ms]]])
    return out


def _judged_md(sec: Section, name: str, what: str) -> list[str]:
    out = [f"{what}. Means over the probes a judge scored (missing judgements are left out and counted, never "
           "scored 0); micro = mean over probes, macro = mean over participants; 95% participant bootstrap.", ""]
    by: dict = {}
    for m in sec.metrics:
        if m.name == name:
            by.setdefault((m.stratum, m.subset), {})[m.average] = m
    full = {(m.stratum, m.subset): m for m in sec.metrics if m.name == "full_match_share"}
    head = ["stratum", "subset", "n judged", "missing", "micro", "macro"] + (["share scored 2 [Wilson]"] if full else [])
    body, reasons = [], []
    cell = lambda m: "—" if m is not None and m.value is None else fmt(m)  # noqa: E731  (reason said below)
    for (stratum, subset), ms in by.items():
        mi, ma = ms.get("micro"), ms.get("macro")
        e = (mi.extra or {}) if mi else {}
        row = [stratum, subset, str(mi.n if mi else 0), str(e.get("missing", e.get("probes", "—"))), cell(mi), cell(ma)]
        if full:
            row.append(fmt(full.get((stratum, subset))))
        body.append(row)
        reasons += [m.reason for m in (mi, ma) if m is not None and m.value is None and m.reason]
    systems = sorted({m.system for m in sec.metrics if m.system})
    out = [f"System: {', '.join(systems)}", ""] + out + _table(head, body)
    out += [f"Not computed (—): {r}." for r in dict.fromkeys(reasons)] + ([""] if reasons else [])
    return out


def _ablation_md(sec: Section) -> list[str]:
    out = ["Gain in content match (0-2) of condition C2 over C1 per probe, on scoreable probes of the proportional "
           "stratum: Δ = π·γ1 + (1 − π)·γ0, γ1 / γ0 the mean gains on memory-bearing / other probes. "
           "95% participant bootstrap for each term.", ""]
    by: dict = {}
    for m in sec.metrics:
        by.setdefault(m.system, {})[m.name] = m
    for label, ms in by.items():
        res = ms.get("identity_residual")
        out.append(f"#### {label}")
        out.append("")
        rows = [[k, str(m.n), fmt(m)] for k, m in ms.items() if k != "identity_residual"]
        out += _table(["term", "n", "value [95%]"], rows)
        if res is not None and res.value is not None:
            out += [f"Identity check: Δ = {ms['delta'].value:.6f}; π·γ1 + (1 − π)·γ0 = "
                    f"{res.extra['pi_gamma1_plus_1_minus_pi_gamma0']:.6f}; residual {res.value:.2e}.", ""]
    return out


def _reconstruction_md(sec: Section) -> list[str]:
    out = ["F1 = 2TP / (2TP + FP + FN) per participant (interval: bootstrap over its TP/FP/FN units) and pooled "
           "(micro: summed counts, participant bootstrap; macro: mean of participants' F1).", ""]
    by: dict = {}
    for m in sec.metrics:
        if m.name in ("f1", "precision", "recall"):
            key = (m.subset, m.stratum if m.stratum != "pooled" else f"pooled ({m.average})")
            by.setdefault(key, {})[m.name] = m
    body = []
    for (subset, who), ms in by.items():
        f = ms.get("f1")
        e = f.extra if f is not None and f.extra else {}
        counts = f"{e.get('TP', '—')}/{e.get('FP', '—')}/{e.get('FN', '—')}" if "TP" in e else "—"
        body.append([subset, who, counts, fmt(ms.get("f1")), fmt(ms.get("precision")), fmt(ms.get("recall"))])
    out += _table(["fields", "participant", "TP/FP/FN", "F1", "precision", "recall"], body)
    cost = [m for m in sec.metrics if m.name == "tokens_processed"]
    if cost:
        out += _table(["participant", "messages read", "tokens processed", "seconds"],
                      [[m.stratum, str(m.n), f"{m.value:.0f}", str((m.extra or {}).get("seconds", "—"))] for m in cost])
    return out


# --- plots ---------------------------------------------------------------------------------------


def _plots(sections: list[Section], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for sec in sections:
        if sec.track == "retrieval" and sec.curves.get("hit_at_k"):
            curves, ks = sec.curves["hit_at_k"], sec.curves["k"]
            sources = list(dict.fromkeys(k.split(":", 1)[0] for k in curves))  # rows: chat, qa
            fig, axes = plt.subplots(len(sources), len(SUBSETS), figsize=(4.5 * len(SUBSETS), 3.6 * len(sources)),
                                     squeeze=False)
            for subset, systems in curves.items():
                source, sname = subset.split(":", 1)
                ax = axes[sources.index(source)][list(SUBSETS).index(sname)]
                for s, ys in systems.items():
                    ax.plot(ks, [float("nan") if y is None else y for y in ys], marker="o", ms=3,
                            label=s.upper() if s in BASELINES else s, ls="--" if s in BASELINES else "-")
                ax.set(title=f"{'chat probes' if source == 'chat' else 'questions'}: {SUBSETS[sname][0]}"[:58],
                       xlabel="k", ylabel="hit@k (micro)", ylim=(-0.02, 1.02))
                ax.title.set_fontsize(9)
                ax.grid(alpha=0.3)
                ax.legend(fontsize=7)  # every panel: systems differ between panels when one fails
            fig.tight_layout()
            fig.savefig(out / "hit_at_k.png", dpi=110)
            plt.close(fig)
            made.append("hit_at_k.png")
        if sec.track == "abstention" and sec.curves.get("roc"):
            fig, ax = plt.subplots(figsize=(5, 5))
            auc = {m.system: m for m in sec.metrics
                   if m.name == "auroc" and m.stratum == "all" and m.subset.endswith("y=memory_bearing")}
            for gate, (fpr, tpr) in sec.curves["roc"].items():
                if fpr:
                    ax.plot(fpr, tpr, marker=".", label=f"{gate} (AUROC {fmt(auc.get(gate), 2)})")
            ax.plot([0, 1], [0, 1], color="grey", ls=":", lw=1)
            ax.set(xlabel="false positive rate", ylabel="true positive rate",
                   title="Gates: memory-bearing vs not (scoreable chat probes)")
            ax.legend(fontsize=7, loc="lower right")
            fig.tight_layout()
            fig.savefig(out / "roc.png", dpi=110)
            plt.close(fig)
            made.append("roc.png")
        if sec.track == "budget" and sec.curves:
            fig, axes = plt.subplots(1, len(sec.curves), figsize=(5 * len(sec.curves), 4), squeeze=False)
            for ax, (unit, series) in zip(axes[0], sec.curves.items()):
                for name, (budgets, cov) in series.items():
                    ax.plot(budgets, [float("nan") if c is None else c for c in cov], marker="o", ms=3, label=name)
                ax.set_xscale("log")
                ax.set(xlabel=f"most recent {unit}", ylabel="share of memory-bearing probes covered",
                       ylim=(-0.02, 1.02), title=f"Coverage by context budget ({unit})")
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(out / "coverage_by_budget.png", dpi=110)
            plt.close(fig)
            made.append("coverage_by_budget.png")
    return made


# --- the report ----------------------------------------------------------------------------------


def write(out: Path, header: dict, sections: list[Section], ks: list[int], warnings: list[str]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    plots = _plots(sections, out)
    doc = {
        **header,
        "created_at": datetime.now(timezone.utc).isoformat(),
        "warnings": warnings,
        "tracks": {s.track: {"not_computed": s.not_computed, "notes": s.notes,
                             **({"details": s.curves["details"]} if "details" in s.curves else {})}
                   for s in sections},
        "metrics": [{"track": s.track, **m.model_dump()} for s in sections for m in s.metrics],
        "plots": plots,
    }
    (out / "report.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False))

    md = [f"# Eval report: {', '.join(s.track for s in sections)}", "",
          f"- command: `{header['command']}`",
          f"- code: companion {header['code']['package']} (git {header['code']['git']})",
          f"- corpus: `{header['corpus']['path']}` ({header['corpus']['format']}), "
          f"sha256 {header['corpus']['sha256'][:16]}…, {header['corpus']['participants']} participants, "
          f"{header['corpus']['messages']} messages, {header['corpus']['probes']} probes "
          f"(recent window {header['corpus']['recent_window']})",
          f"- arm: {header['arm']}; seed {header['seed']}; k {ks}",
          *([f"- retriever: `{header['retriever']['name']}` {json.dumps(header['retriever']['params'], sort_keys=True)}"]
            if header.get("retriever") else []),
          f"- store: {header['store']}"]
    if header.get("reply_model"):
        md.append(f"- replies: model `{header['reply_model']}` through the turn's steps 3-7, never stored")
    if header.get("judge"):
        j = header["judge"]
        md.append(f"- judge: `{j['model']}`, prompts {', '.join(j['prompts'])}; {j['calls']} calls")
    md.append("")
    few = header["corpus"]["participants"]
    if few < 5:
        md.append(f"**Warning:** participant-bootstrap intervals resample only {few} participant"
                  f"{'s' if few != 1 else ''} (< 5): they understate the uncertainty; read them as rough.")
    if warnings:
        md.append(f"**Corpus repairs ({len(warnings)})**, listed in full in report.json:")
        md += [f"- {w}" for w in warnings[:30]]
        if len(warnings) > 30:
            md.append(f"- … and {len(warnings) - 30} more")
        md.append("")
    for s in sections:
        md.append(f"## {s.track}")
        md.append("")
        if s.not_computed:
            md += [f"**Not computed**: {s.not_computed}.", ""]
            continue
        md += {"retrieval": lambda: _retrieval_md(s, ks), "abstention": lambda: _abstention_md(s),
               "demand": lambda: _demand_md(s), "budget": lambda: _budget_md(s),
               "chat": lambda: _judged_md(s, "content_match", "Content match 0-2 of each reply against the "
                                          "probe's reference reply"),
               "qa": lambda: _judged_md(s, "accuracy", "Share of answers the judge found correct against the gold"),
               "ablation": lambda: _ablation_md(s), "reconstruction": lambda: _reconstruction_md(s)}[s.track]()
        for n in s.notes:
            md.append(f"- {n}")
        md.append("")
    if plots:
        md.append("## Plots")
        md.append("")
        md += [f"![{p}]({p})" for p in plots]
        md.append("")
    (out / "report.md").write_text("\n".join(md))
    return doc
