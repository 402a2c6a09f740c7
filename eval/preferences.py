"""The interaction-preference track: on-policy replay of a probe suite through the turn, and its
metrics (docs/METRICS.md, "Interaction preferences").

    for each persona, in timeline order:
      before a change event   probe the cells it changes (on a throw-away copy of the store)
      change event            its fixed transcript, said through the turn, no reactions
      accumulation session    each scripted turn goes through the turn; the simulated participant
                              sees what the companion did and accepts or corrects in its own words
                              (the correction is itself a turn, so memory learns from it)
    after the timeline        probe every cell (14 attributes x 2 contexts)

A probe copies the persona's store with SQLite's backup API into a temporary folder, runs one
turn there (the suite's probe message for the attribute, in the cell's context, at the
checkpoint's time), reads the setting the trace says was in force, and deletes the copy. Each
probe is repeated r times, each on a fresh copy. During probes the participant says nothing
else: no feedback about preferences reaches any store.

Conditions (what the selector reads, `Settings.ix_source`): none, file, retrieval, cells, oracle.
Under `oracle` every turn is given the current target of its context (`extra["ix_target"]`).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np

from eval import prefsuite
from eval.metrics import BOOTSTRAP, Z95, Metric, mean_metric
from eval.prefsuite import Change, Checkpoint, Persona, Suite
from wrapper import inventory

CONDITIONS = ("none", "file", "retrieval", "cells", "oracle")
CONDITION_TITLES = {"none": "no memory (defaults)", "file": "file memory", "retrieval": "retrieval (hybrid)",
                    "cells": "preference cells", "oracle": "oracle (target given)"}


@dataclass
class ProbeOutcome:
    persona: str
    checkpoint: str
    kind: str  # before_change | final
    change: str | None
    context: str
    attribute: str
    target: str
    default: str
    repeat: int
    chosen: str | None  # None: the turn traced no setting for the attribute (a broken contract)
    by: str | None
    source: str | None
    right: bool
    error: str | None = None
    brs: int | None = None
    brs_reason: str | None = None
    prs: int | None = None
    prs_reason: str | None = None
    shown: str = ""
    actions: list = field(default_factory=list)


@dataclass
class PersonaLog:
    persona: str
    turns: int = 0  # participant messages said through the turn on the main timeline
    decision_points: int = 0
    corrections: int = 0  # decision points the participant corrected
    corrected_attributes: int = 0
    acknowledgements: int = 0
    change_messages: int = 0
    cells_written: int = 0  # preference-cell versions in the store after the timeline (added or superseding)
    probes: int = 0
    main_untouched: bool = True  # the main store had the same ordinal and row counts after every probe
    simulator_failures: int = 0  # model-driven simulator calls that failed (taken as no reaction)


@dataclass
class ConditionRun:
    condition: str
    outcomes: list[ProbeOutcome]
    logs: list[PersonaLog]
    seconds: float
    paths: list[str]  # the interaction paths the turns took (selector | model)


# ---------------------------------------------------------------- the replay


def _counts(store, participant: str) -> tuple:
    """A fingerprint of what a probe must never change on the main timeline."""
    c = store.conn
    q = lambda sql: c.execute(sql, (participant,)).fetchone()[0]  # noqa: E731
    return (q("SELECT next_ordinal FROM participants WHERE participant=?"),
            q("SELECT COUNT(*) FROM messages WHERE participant=?"),
            q("SELECT COUNT(*) FROM memory_cells WHERE participant=?"),
            q("SELECT COALESCE(MAX(id), 0) FROM memory_cells WHERE participant=?"),
            q("SELECT COUNT(*) FROM memory_file_lines WHERE participant=?"),
            q("SELECT COUNT(*) FROM traces WHERE participant=?"),
            q("SELECT COUNT(*) FROM action_events WHERE participant=?"),
            q("SELECT COALESCE(MAX(last_ts), '') FROM ix_sessions WHERE participant=?"))


def copy_store(store, into: Path):
    """A copy of the store (SQLite backup API, consistent with the WAL) opened in `into`."""
    import sqlean as sqlite3

    from memory.store import DB_NAME, Store

    into.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Private from the start, like a data directory (memory.store.secure_data_dir): SQLite would
    # create the file with the umask's mode, and the Store opened on it would warn and fix it.
    os.close(os.open(into / DB_NAME, os.O_RDWR | os.O_CREAT, 0o600))
    dst = sqlite3.connect(str(into / DB_NAME))
    try:
        store.conn.backup(dst)
    finally:
        dst.close()
    copy = Store(into, synchronous="NORMAL")  # thrown away after the probe
    copy.vectors.embedder = store.vectors.embedder  # the same embedder (a test may have swapped in a hashing one)
    return copy


class _Replay:
    def __init__(self, suite: Suite, condition: str, settings, work: Path, repeats: int, simulator: str | None,
                 judge, bar):
        from companion.turn import turn

        self.turn = turn
        self.suite, self.condition, self.work, self.repeats = suite, condition, work, repeats
        self.settings = settings.model_copy(update={"ix_source": condition})
        self.simulator, self.judge, self.bar = simulator, judge, bar
        self.inv = inventory.load()
        self.paths: set[str] = set()

    def _say(self, store, pid: str, text: str, context: str, at, targets: dict):
        extra = {"ix_target": dict(targets[context])} if self.condition == "oracle" else None
        r = self.turn(store, pid, text, context=context, settings=self.settings, at=at, extra=extra)
        if r.trace is not None and (p := (r.trace.interaction or {}).get("path")):
            self.paths.add(p)
        return r

    def persona(self, persona: Persona) -> tuple[list[ProbeOutcome], PersonaLog]:
        from consent import records as consent
        from memory.store import Store

        store = Store(self.work / persona.id, synchronous="NORMAL")  # a simulation, rebuilt on every run
        try:
            consent.accept(store, persona.id, tz=persona.tz)
            sim = (prefsuite.ModelSimulator(self.suite, persona, self.simulator, self.settings.timeout)
                   if self.simulator else prefsuite.Scripted(self.suite, persona))
            log = PersonaLog(persona.id)
            outcomes: list[ProbeOutcome] = []
            cps = prefsuite.checkpoints(self.suite, persona)
            by_index: dict[int, list[Checkpoint]] = {}
            for cp in cps:
                by_index.setdefault(cp.index, []).append(cp)
            step = timedelta(minutes=self.suite.step_minutes)
            for i, item in enumerate(persona.timeline):
                for cp in by_index.get(i, []):
                    outcomes += self._probe(store, persona, cp, sim, log)
                targets = prefsuite.targets_at(persona, i)
                if isinstance(item, Change):
                    for k, text in enumerate(item.transcript):
                        r = self._say(store, persona.id, text, item.context, item.at + k * step, targets)
                        log.turns += 1
                        log.change_messages += 1
                    continue
                at = item.at
                for j, t in enumerate(item.turns):
                    r = self._say(store, persona.id, t.text, item.context, at, targets)
                    at += step
                    log.turns += 1
                    log.decision_points += bool(t.stakes)
                    reaction = sim.react(item.context, t.stakes, targets[item.context], r, j == len(item.turns) - 1)
                    if reaction:
                        self._say(store, persona.id, reaction, item.context, at, targets)
                        at += step
                        log.turns += 1
                        got = prefsuite.declared(r)
                        wrong = [a for a in t.stakes if got.get(a) != targets[item.context][a]]
                        if wrong or not isinstance(sim, prefsuite.Scripted):
                            log.corrections += 1
                            log.corrected_attributes += len(wrong)
                        else:
                            log.acknowledgements += 1
                if self.bar is not None:
                    self.bar.update(1)
            log.simulator_failures = len(sim.failures)
            log.cells_written = store.conn.execute("SELECT COUNT(*) FROM memory_cells WHERE participant=?",
                                                   (persona.id,)).fetchone()[0]
            for cp in by_index.get(len(persona.timeline), []):
                outcomes += self._probe(store, persona, cp, sim, log)
            return outcomes, log
        finally:
            store.close()

    def _probe(self, store, persona: Persona, cp: Checkpoint, sim, log: PersonaLog) -> list[ProbeOutcome]:
        out = []
        before = _counts(store, persona.id)
        for context, attribute in cp.cells:
            target = cp.targets[context][attribute]
            text = self.suite.probe[attribute][context]
            for rep in range(self.repeats):
                tmp = Path(tempfile.mkdtemp(prefix="probe-", dir=self.work))
                copy = copy_store(store, tmp)
                try:
                    error, chosen, by, source, shown, acts = None, None, None, None, "", []
                    try:
                        r = self._say(copy, persona.id, text, context, cp.at, cp.targets)
                        shown = r.shown
                        t = r.trace
                        acts = [a.get("summary") or a.get("kind") for a in (t.actions_run + t.actions_held)] if t else []
                        d = ((t.interaction or {}).get("settings") or {}).get(attribute) if t else None
                        if isinstance(d, dict) and d.get("setting"):
                            chosen, by, source = d["setting"], d.get("by"), d.get("source")
                        else:
                            error = "the turn traced no setting for this attribute (contract broken: scored wrong)"
                    except Exception as e:  # a broken run stays in the denominator, scored wrong
                        r = None
                        error = f"probe turn failed: {type(e).__name__}: {e}"
                    o = ProbeOutcome(persona.id, cp.id, cp.kind, cp.change, context, attribute, target,
                                     self.inv.attributes[attribute].default[context], rep, chosen, by, source,
                                     chosen == target, error, shown=shown, actions=acts)
                    if cp.kind == "final":
                        if r is None or chosen is None:
                            o.brs, o.brs_reason = (1, "contract broken: BRS 1") if self.judge else (None, "no --judge")
                        elif self.judge:
                            o.brs, o.brs_reason = self.judge.rate(attribute, target, r)
                        else:
                            o.brs_reason = "no --judge"
                        if r is not None:
                            o.prs, o.prs_reason = sim.rate(attribute, target, r)
                        else:
                            o.prs_reason = "probe turn failed"
                    out.append(o)
                    log.probes += 1
                finally:
                    copy.close()
                    shutil.rmtree(tmp, ignore_errors=True)
        if _counts(store, persona.id) != before:
            log.main_untouched = False
        return out


def replay(suite: Suite, condition: str, settings, work: Path, repeats: int = 1, simulator: str | None = None,
           judge: prefsuite.Judge | None = None, progress: bool = False) -> ConditionRun:
    """Replay every persona under one condition; `work` gets one store folder per persona."""
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; conditions: {list(CONDITIONS)}")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=sum(len(p.timeline) for p in suite.personas), desc=f"preferences:{condition}", unit="item")
    started = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    rp = _Replay(suite, condition, settings, work, repeats, simulator, judge, bar)
    outcomes, logs = [], []
    try:
        for p in suite.personas:
            o, log = rp.persona(p)
            outcomes += o
            logs.append(log)
    finally:
        if bar is not None:
            bar.close()
    return ConditionRun(condition, outcomes, logs, round(time.perf_counter() - started, 2), sorted(rp.paths))


# ---------------------------------------------------------------- metrics


def _by(outcomes, *keys):
    out: dict = {}
    for o in outcomes:
        out.setdefault(tuple(getattr(o, k) for k in keys), []).append(o)
    return out


def _share(name: str, scores: list[float], clusters: list[str], seed: int, **labels) -> Metric:
    """A share over units (a unit's score is its share of right repeats), with a Wilson 95% interval
    over the n units and a persona-resampling bootstrap beside it."""
    if not scores:
        return Metric(name=name, value=None, n=0, reason="no units in this subset", **labels)
    s = float(np.sum(scores))
    boot = mean_metric(name, scores, clusters, seed=seed, reps=BOOTSTRAP).interval if len(set(clusters)) > 1 else None
    return Metric(name=name, value=s / len(scores), n=len(scores), interval=_wilson_frac(s, len(scores)),
                  method="Wilson 95% over units",
                  extra={"right": round(s, 3), "persona_bootstrap": boot, "personas": len(set(clusters))}, **labels)


def _wilson_frac(s: float, n: int):
    """Wilson's interval; with r > 1 a unit's score is a share of its repeats, so the success count
    may be fractional (the formula takes it as it is: repeats of one unit are not independent)."""
    p, z = s / n, Z95
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    lo, hi = max(0.0, center - half), min(1.0, center + half)
    return (0.0 if s <= 0 else lo, 1.0 if s >= n else hi)  # exact at 0/n and n/n, not off by rounding


def _final_cells(outcomes):
    """(persona, context, attribute) -> [outcome per repeat] at the final checkpoint."""
    return _by([o for o in outcomes if o.kind == "final"], "persona", "context", "attribute")


def psa_units(outcomes) -> list[tuple[tuple, float]]:
    return [(k, float(np.mean([o.right for o in os]))) for k, os in _final_cells(outcomes).items()]


def cs_units(outcomes) -> list[tuple[tuple, float]]:
    """(persona, attribute) pairs whose final work and personal targets differ: share of repeats with
    both contexts right (repeats paired by index)."""
    cells = _final_cells(outcomes)
    out = []
    for (p, a) in sorted({(k[0], k[2]) for k in cells}):
        w, h = cells.get((p, "work", a)), cells.get((p, "personal", a))
        if not w or not h or w[0].target == h[0].target:
            continue
        w, h = sorted(w, key=lambda o: o.repeat), sorted(h, key=lambda o: o.repeat)
        out.append(((p, a), float(np.mean([x.right and y.right for x, y in zip(w, h)]))))
    return out


def pet_units(outcomes) -> list[tuple[tuple, float]]:
    """(persona, change, context, attribute): right just before the change and right at the end."""
    cells = _final_cells(outcomes)
    out = []
    for (p, cp, ch, c, a), os in _by([o for o in outcomes if o.kind == "before_change"],
                                     "persona", "checkpoint", "change", "context", "attribute").items():
        end = sorted(cells.get((p, c, a), []), key=lambda o: o.repeat)
        os = sorted(os, key=lambda o: o.repeat)
        if not end:
            continue
        out.append(((p, ch, c, a), float(np.mean([x.right and y.right for x, y in zip(os, end)]))))
    return out


def carry_units(outcomes) -> list[tuple[tuple, float]]:
    """Over the CS pairs: share of repeats where one setting was applied in both contexts, it is
    right for one, wrong for the other, and differs from the other context's no-memory default
    (a rule from one context leaking into the other). Lower is better."""
    cells = _final_cells(outcomes)
    out = []
    for (p, a), _ in cs_units(outcomes):
        w = sorted(cells[(p, "work", a)], key=lambda o: o.repeat)
        h = sorted(cells[(p, "personal", a)], key=lambda o: o.repeat)
        flags = []
        for x, y in zip(w, h):
            leak = False
            if x.chosen is not None and x.chosen == y.chosen:
                if x.right and not y.right:
                    leak = y.chosen != y.default
                elif y.right and not x.right:
                    leak = x.chosen != x.default
            flags.append(leak)
        out.append(((p, a), float(np.mean(flags))))
    return out


def random_baseline(suite: Suite) -> dict[str, dict]:
    """Exact expectations of a uniformly random choice per probe, over the suite's units."""
    inv = inventory.load()
    n_s = {a: len(v.settings) for a, v in inv.attributes.items()}
    psa, cs, carry, pet, defaults = [], [], [], [], []
    for p in suite.personas:
        fin = prefsuite.final_targets(p)
        for c in inv.contexts:
            for a in inv.attributes:
                psa.append(1 / n_s[a])
                defaults.append(float(fin[c][a] == inv.attributes[a].default[c]))
        for a in inv.attributes:
            tw, tp = fin["work"][a], fin["personal"][a]
            if tw == tp:
                continue
            cs.append(1 / n_s[a] ** 2)
            # same setting s in both: right for one context only, and not the other's default
            leaks = sum(1 for s, other_default in ((tw, inv.attributes[a].default["personal"]),
                                                   (tp, inv.attributes[a].default["work"])) if s != other_default)
            carry.append(leaks / n_s[a] ** 2)
        for cp in prefsuite.checkpoints(suite, p):
            if cp.kind == "before_change":
                pet += [1 / n_s[a] ** 2 for _, a in cp.cells]
    mean = lambda xs: (float(np.mean(xs)) if xs else None, len(xs))  # noqa: E731
    return {"psa": mean(psa), "cs": mean(cs), "pet": mean(pet), "carry_over": mean(carry),
            "defaults_psa": mean(defaults)}


def defaults_earn(suite: Suite) -> tuple[float, int]:
    """PSA the inventory defaults alone earn: share of final cells whose target is the default."""
    return random_baseline(suite)["defaults_psa"]


def metrics(run: ConditionRun, seed: int = 0) -> list[Metric]:
    """PSA, CS, PET, carry-over (overall, per attribute, per context), BRS and PRS for one run."""
    sysname = run.condition
    out: list[Metric] = []
    inv = inventory.load()

    def share(name, units, subset="all", stratum="all"):
        out.append(_share(name, [s for _, s in units], [k[0] for k, _ in units], seed, system=sysname,
                          subset=subset, stratum=stratum))

    psa, cs, pet, carry = psa_units(run.outcomes), cs_units(run.outcomes), pet_units(run.outcomes), carry_units(run.outcomes)
    share("psa", psa)
    share("cs", cs)
    share("pet", pet)
    share("carry_over", carry)
    for c in inv.contexts:
        share("psa", [u for u in psa if u[0][1] == c], subset=f"context:{c}")
    for a in inv.attributes:
        share("psa", [u for u in psa if u[0][2] == a], subset=f"attribute:{a}")
        share("cs", [u for u in cs if u[0][1] == a], subset=f"attribute:{a}")
        share("carry_over", [u for u in carry if u[0][1] == a], subset=f"attribute:{a}")
    final = [o for o in run.outcomes if o.kind == "final"]
    for name, field_, why_field in (("brs", "brs", "brs_reason"), ("prs", "prs", "prs_reason")):
        scored = [o for o in final if getattr(o, field_) is not None]
        if not scored:
            reasons = sorted({getattr(o, why_field) or "no rating" for o in final})
            out.append(Metric(name=name, value=None, n=0, system=sysname,
                              reason="not computed: " + "; ".join(reasons)))
            continue
        m = mean_metric(name, [getattr(o, field_) for o in scored], [o.persona for o in scored], seed=seed)
        m.system = sysname
        m.extra = {**m.extra, "unscored": len(final) - len(scored), "scale": "1-5"}
        out.append(m)
    return out


def outcome_rows(run: ConditionRun) -> list[dict]:
    return [{"condition": run.condition, **asdict(o)} for o in run.outcomes]
