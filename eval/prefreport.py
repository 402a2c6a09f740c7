"""The interaction-preference report: `run` replays the suite (eval.preferences) and writes
report.md, report.json, outcomes.jsonl and PNG plots.

Reporting rules of docs/METRICS.md: every number with its n and interval, the random row
(exact expectation over the suite's units) and the oracle row present, the command and the
versions of suite and code at the top, a missing number shown as missing with its reason.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from eval import prefsuite, report
from eval.report import _table
from eval.metrics import Metric
from eval.preferences import CONDITION_TITLES, CONDITIONS, ConditionRun, metrics, outcome_rows, random_baseline, replay
from wrapper import inventory

NAMES = {"psa": "PSA", "cs": "CS", "pet": "PET", "carry_over": "carry-over", "brs": "BRS", "prs": "PRS"}


def code_version() -> dict:
    return report.code_version()


def fmt(m: Metric | None, digits: int = 3) -> str:
    return report.fmt(m, digits, with_n=True)


def _get(ms: list[Metric], name: str, subset: str = "all") -> Metric | None:
    return next((m for m in ms if m.name == name and m.subset == subset), None)


def _plots(out: Path, by_cond: dict[str, list[Metric]], rand: dict) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    inv = inventory.load()
    made = []
    conds = list(by_cond)
    # 1: the four shares per condition, with intervals, random expectation dashed
    names = ["psa", "cs", "pet", "carry_over"]
    fig, ax = plt.subplots(figsize=(8, 4))
    w = 0.8 / max(1, len(conds))
    for i, c in enumerate(conds):
        vals, lo, hi = [], [], []
        for n in names:
            m = _get(by_cond[c], n)
            v = m.value if m and m.value is not None else float("nan")
            vals.append(v)
            lo.append(max(0.0, v - m.interval[0]) if m and m.interval else 0)
            hi.append(max(0.0, m.interval[1] - v) if m and m.interval else 0)
        ax.bar(np.arange(len(names)) + i * w, vals, w, yerr=[lo, hi], capsize=2, label=c)
    for j, n in enumerate(names):
        r = rand[n][0]
        if r is not None:
            ax.hlines(r, j - 0.1, j + 0.8, colors="grey", linestyles="--", lw=1)
    ax.set_xticks(np.arange(len(names)) + 0.4 - w / 2, [NAMES[n] for n in names])
    ax.set(ylim=(0, 1.05), ylabel="share (95% Wilson)", title="Interaction preferences by condition "
           "(dashed: random)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "preferences_summary.png", dpi=110)
    plt.close(fig)
    made.append("preferences_summary.png")
    # 2: PSA per attribute
    attrs = list(inv.attributes)
    fig, ax = plt.subplots(figsize=(12, 4.2))
    for i, c in enumerate(conds):
        vals = []
        for a in attrs:
            m = _get(by_cond[c], "psa", f"attribute:{a}")
            vals.append(m.value if m and m.value is not None else float("nan"))
        ax.bar(np.arange(len(attrs)) + i * w, vals, w, label=c)
    for j, a in enumerate(attrs):
        ax.hlines(1 / len(inv.attributes[a].settings), j - 0.1, j + 0.8, colors="grey", linestyles="--", lw=1)
    ax.set_xticks(np.arange(len(attrs)) + 0.4 - w / 2, [inv.attributes[a].title for a in attrs], rotation=40,
                  ha="right", fontsize=8)
    ax.set(ylim=(0, 1.05), ylabel="PSA (final cells)", title="PSA per attribute (dashed: random)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "psa_by_attribute.png", dpi=110)
    plt.close(fig)
    made.append("psa_by_attribute.png")
    return made


def write(out: Path, header: dict, suite: prefsuite.Suite, runs: list[ConditionRun], seed: int = 0) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    inv = inventory.load()
    rand = random_baseline(suite)
    by_cond = {r.condition: metrics(r, seed) for r in runs}
    plots = _plots(out, by_cond, rand)
    with (out / "outcomes.jsonl").open("w") as f:
        for r in runs:
            for row in outcome_rows(r):
                f.write(json.dumps(row, ensure_ascii=False) + "\n")

    checks = []
    if "oracle" in by_cond:
        m = _get(by_cond["oracle"], "psa")
        paths = next(r.paths for r in runs if r.condition == "oracle")
        if paths == ["selector"]:
            checks.append({"check": "oracle PSA = 1.000 on the selector path", "value": m.value,
                           "ok": m.value == 1.0})
        else:
            checks.append({"check": "oracle PSA on the model path (the model may ignore the target; "
                                    "1.000 is expected only on the selector path)", "value": m.value, "ok": None})
    if "none" in by_cond:
        m = _get(by_cond["none"], "psa")
        want = rand["defaults_psa"][0]
        paths = next(r.paths for r in runs if r.condition == "none")
        checks.append({"check": "none PSA = what the defaults alone earn" + (
            "" if paths == ["selector"] else " (model path: the model may deviate)"), "value": m.value,
            "expected": want, "ok": (abs(m.value - want) < 1e-9) if paths == ["selector"] else None})
    for r in runs:
        if not all(log.main_untouched for log in r.logs):
            checks.append({"check": f"{r.condition}: probes left the main timeline untouched", "ok": False})
        else:
            checks.append({"check": f"{r.condition}: probes left the main timeline untouched", "ok": True})

    doc = {
        **header,
        "code": code_version(),
        "created_at": datetime.now(timezone.utc).isoformat(),
        "random": {k: {"value": v, "n": n} for k, (v, n) in rand.items()},
        "checks": checks,
        "runs": [{"condition": r.condition, "seconds": r.seconds, "paths": r.paths,
                  "personas": [vars(log) for log in r.logs]} for r in runs],
        "metrics": [m.model_dump() for ms in by_cond.values() for m in ms],
        "plots": plots,
    }
    (out / "report.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False, default=str))

    s = header["suite"]
    md = ["# Eval report: interaction preferences", "",
          f"- command: `{header['command']}`",
          f"- code: companion {doc['code']['package']} (git {doc['code']['git']})",
          f"- suite: `{s['path']}` ({s['name']} v{s['version']}, {s['format']}, inventory {s['inventory']}), "
          f"sha256 {s['sha256'][:16]}…, personas {', '.join(s['personas'])}",
          f"- model: {header['model']}; arm {header['arm']}; repeats r = {header['repeats']}; seed {header['seed']}",
          f"- simulated participant: {header['simulator']}; judge: {header['judge'] or 'none'}",
          "- suite lint: " + ("clean" if not s["lint"] else f"{len(s['lint'])} problem(s), listed below"),
          *[f"- **warning**: {w}" for w in header.get("warnings", [])],
          ""]
    md += ["Units: PSA = final probe cells (persona x context x attribute); CS and carry-over = (persona, "
           "attribute) pairs whose final work and personal targets differ; PET = (change event, changed cell). "
           "A unit's score is its share of right repeats. Intervals: Wilson 95% over units (persona bootstrap in "
           "report.json). RANDOM = exact expectation of a uniform choice per probe (no interval: not sampled). "
           "DEFAULTS = the inventory defaults scored against the final targets (what no memory earns). "
           "Carry-over: lower is better.", ""]
    cols = ["psa", "cs", "pet", "carry_over", "brs", "prs"]
    rows = []
    for r in runs:
        ms = by_cond[r.condition]
        rows.append([f"**{r.condition}** ({CONDITION_TITLES[r.condition]}; path {'/'.join(r.paths) or '—'})"]
                    + [fmt(m) if (m := _get(ms, c)) is None or m.value is not None else "— (see below)" for c in cols]
                    + [f"{r.seconds:.1f}"])
    rows.append(["RANDOM"] + [f"{rand[c][0]:.3f} (n={rand[c][1]})" if rand[c][0] is not None else "— (no units)"
                              for c in ("psa", "cs", "pet", "carry_over")] + ["—", "—", "—"])
    rows.append(["DEFAULTS (PSA only)", f"{rand['defaults_psa'][0]:.3f} (n={rand['defaults_psa'][1]})",
                 "—", "—", "—", "—", "—", "—"])
    md += ["## Overall", ""]
    md += _table(["condition", *[NAMES[c] for c in cols], "seconds"], rows)
    missing = {}
    for r in runs:
        for c in ("brs", "prs"):
            m = _get(by_cond[r.condition], c)
            if m is not None and m.value is None:
                missing[NAMES[c]] = m.reason
    md += [f"- {k}: {v}." for k, v in missing.items()] + ([""] if missing else [])
    md += ["## Checks", ""]
    for c in checks:
        state = {True: "ok", False: "FAILED", None: "not applicable"}[c["ok"]]
        v = "" if c.get("value") is None else f": {c['value']:.3f}"
        e = "" if c.get("expected") is None else f" (expected {c['expected']:.3f})"
        md.append(f"- {c['check']}{v}{e} — {state}")
    md.append("")

    md += ["## PSA by context", ""]
    md += _table(["condition", *inv.contexts], [[r.condition] + [fmt(_get(by_cond[r.condition], "psa", f"context:{c}"))
                                                              for c in inv.contexts] for r in runs])
    md += ["## PSA by attribute", ""]
    head = ["attribute", "settings", "random", *[r.condition for r in runs]]
    md += _table(head, [[inv.attributes[a].title, str(len(inv.attributes[a].settings)),
                         f"{1 / len(inv.attributes[a].settings):.3f}"]
                        + [fmt(_get(by_cond[r.condition], "psa", f"attribute:{a}"), 2) for r in runs]
                        for a in inv.attributes])
    md += ["## Context separation and carry-over by attribute", "",
           "Only attributes with at least one persona whose final work and personal targets differ.", ""]
    body = []
    for a in inv.attributes:
        cells = [(_get(by_cond[r.condition], "cs", f"attribute:{a}"), _get(by_cond[r.condition], "carry_over",
                                                                              f"attribute:{a}")) for r in runs]
        if all(c is None or c.n == 0 for c, _ in cells):
            continue
        body.append([inv.attributes[a].title] + [f"{fmt(c, 2)} / {fmt(k, 2)}" for c, k in cells])
    md += _table(["attribute", *[f"{r.condition}: CS / carry-over" for r in runs]], body)

    md += ["## Timeline", "",
           "Per persona on the main timeline: participant messages said through the turn, decision points, "
           "corrections by the simulated participant (attributes corrected), acknowledgements, preference-cell "
           "versions in the store at the end of the timeline, probe turns (on copies), and whether the main store was unchanged by them.",
           ""]
    body = []
    for r in runs:
        for log in r.logs:
            body.append([r.condition, log.persona, str(log.turns), str(log.decision_points),
                         f"{log.corrections} ({log.corrected_attributes})", str(log.acknowledgements),
                         str(log.cells_written), str(log.probes), "yes" if log.main_untouched else "**NO**",
                         str(log.simulator_failures)])
    md += _table(["condition", "persona", "messages", "decision points", "corrections (attributes)", "acks",
                  "cells written", "probes", "main untouched", "simulator failures"], body)
    broken = [(r.condition, o) for r in runs for o in r.outcomes if o.error]
    if broken:
        md += [f"**Probes that broke the contract or failed ({len(broken)})**, scored wrong and kept in the "
               "denominator (first 20; all in outcomes.jsonl):", ""]
        md += [f"- {c}: {o.persona} {o.checkpoint} {o.context}/{o.attribute}: {o.error}" for c, o in broken[:20]]
        md.append("")
    if s["lint"]:
        md += ["## Suite lint", ""] + [f"- {p}" for p in s["lint"][:30]] + [""]
    md += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    (out / "report.md").write_text("\n".join(md))
    return doc


# ---------------------------------------------------------------- the command: replay, then write


def run(suite_path: Path | None, conditions: list[str], out: Path, settings, repeats: int = 1,
        simulator: str | None = None, judge: str | None = None, work: Path | None = None, seed: int = 0,
        oracle_row: bool = True, progress: bool = True, command: str = "") -> dict:
    suite, sha = prefsuite.load(suite_path)
    lint = prefsuite.lint(suite)
    conds = list(dict.fromkeys(conditions))
    for c in conds:
        if c not in CONDITIONS:
            raise ValueError(f"unknown condition {c!r}; conditions: {list(CONDITIONS)}")
    if oracle_row and "oracle" not in conds:
        conds.append("oracle")
    warnings = []
    if settings.session_gap_minutes > suite.session_gap_minutes:
        warnings.append(f"the companion's session gap ({settings.session_gap_minutes:g} min) is longer than the "
                        f"suite's ({suite.session_gap_minutes:g} min): probes and sessions may continue an earlier "
                        "session")
    judge_ = prefsuite.Judge(judge, settings.timeout) if judge else None
    tmp = None
    if work is None:
        tmp = Path(tempfile.mkdtemp(prefix="companion-prefs-"))
        work = tmp
    elif work.exists() and any(work.iterdir()):
        raise FileExistsError(f"{work} is not empty: the replay starts every store afresh")
    try:
        runs = [replay(suite, c, settings, work / c, repeats, simulator, judge_, progress) for c in conds]
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    header = {
        "command": command,
        "suite": {"path": str(suite_path or prefsuite.DEFAULT_SUITE), "name": suite.name, "version": suite.version,
                  "sha256": sha, "format": suite.format, "inventory": suite.inventory,
                  "personas": [p.id for p in suite.personas], "lint": lint.problems, "coverage": lint.coverage},
        "model": settings.model, "repeats": repeats, "seed": seed,
        "simulator": simulator or "scripted", "judge": judge,
        "arm": {"gate": settings.gate, "retriever": settings.retriever, "policy": settings.policy},
        "warnings": warnings,
    }
    return write(out, header, suite, runs, seed)
