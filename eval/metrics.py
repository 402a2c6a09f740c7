"""The numbers of docs/METRICS.md, as small pure functions over plain lists.

Notation: G is a probe's gold set of dayids, R the ranked list a system retrieved.
A number that cannot be computed is `None` with a reason (a `Metric` says why), never 0:
a zero would read as "the system failed" when the truth is "there was nothing to measure".
Intervals resample participants, not probes: probes of one participant are not independent
(one chatty participant would otherwise narrow every interval).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from pydantic import BaseModel

Z95 = 1.959963984540054
BOOTSTRAP = 1000


class Metric(BaseModel):
    """One reported number: every metric carries its n, its interval, its stratum and subset."""

    name: str
    value: float | None
    n: int
    interval: tuple[float, float] | None = None
    method: str | None = None  # how the interval was made
    stratum: str = "all"
    subset: str = "all"
    system: str | None = None  # the retriever, gate or condition measured
    average: str | None = None  # micro | macro
    k: int | None = None
    reason: str | None = None  # why the value (or its interval) is missing
    extra: dict = {}


# --- retrieval --------------------------------------------------------------------------------


def hit_at_k(gold: Sequence[str], ranked: Sequence[str], k: int) -> float:
    """1 if G and R[:k] share a dayid."""
    return float(bool(set(gold) & set(ranked[:k])))


def recall_at_k(gold: Sequence[str], ranked: Sequence[str], k: int) -> float:
    """|G ∩ R[:k]| / |G| (not hit@k: a probe with two gold messages and one found scores 0.5)."""
    g = set(gold)
    if not g:
        raise ValueError("recall@k is undefined for a probe without gold")
    return len(g & set(ranked[:k])) / len(g)


def reciprocal_rank(gold: Sequence[str], ranked: Sequence[str]) -> float:
    """1 / rank of the first gold dayid in R, 0 if none (MRR is its mean)."""
    g = set(gold)
    for i, d in enumerate(ranked, 1):
        if d in g:
            return 1.0 / i
    return 0.0


# --- abstention ---------------------------------------------------------------------------------


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their average rank."""
    order = np.argsort(x, kind="mergesort")
    _, first, counts = np.unique(x[order], return_index=True, return_counts=True)
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
    return ranks


def auroc(scores, labels) -> float | None:
    """Mann-Whitney AUROC, ties counted one half; None when a class is absent.

    Computed from average ranks (O(n log n)), which equals counting pairs with ties as ½ exactly;
    bootstraps call it a thousand times.
    """
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    r = _average_ranks(s)
    u = r[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def roc_curve(scores, labels) -> tuple[list[float], list[float]]:
    """(false positive rates, true positive rates), one point per distinct threshold, from (0,0)."""
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return [], []
    fpr, tpr = [0.0], [0.0]
    for t in sorted(set(s.tolist()), reverse=True):
        fired = s >= t
        tpr.append(float((fired & y).sum() / n_pos))
        fpr.append(float((fired & ~y).sum() / n_neg))
    return fpr, tpr


def auroc_metric(scores, labels, clusters, seed: int = 0, reps: int = BOOTSTRAP, **labels_) -> Metric:
    """AUROC with a bootstrap interval that resamples participants."""
    s, y, c = np.asarray(scores, float), np.asarray(labels, bool), list(clusters)
    value = auroc(s, y)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    extra = {"positives": n_pos, "negatives": n_neg, "participants": len(set(c))}
    if value is None:
        why = "no memory-bearing probes" if n_pos == 0 else "no probes without memory need"
        return Metric(name="auroc", value=None, n=len(s), reason=f"AUROC needs both classes: {why}",
                      extra=extra, **labels_)
    ci = cluster_bootstrap(lambda gs: auroc(s[pooled(gs)], y[pooled(gs)]), c, reps=reps, seed=seed)
    return Metric(name="auroc", value=value, n=len(s), interval=ci,
                  method=f"participant bootstrap ({reps})" if ci else None,
                  reason=None if ci else "no interval: needs at least two participants", extra=extra, **labels_)


def confusion(fired, labels) -> dict[str, float | int | None]:
    """At an operating threshold: caught positives, false alarms, precision, recall."""
    f, y = np.asarray(fired, bool), np.asarray(labels, bool)
    tp, fp = int((f & y).sum()), int((f & ~y).sum())
    fn, tn = int((~f & y).sum()), int((~f & ~y).sum())
    return {"caught": tp, "false_alarms": fp, "missed": fn, "quiet_right": tn,
            "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None}


# --- rates and intervals ------------------------------------------------------------------------


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion (sane at 0/n and n/n, unlike the normal one)."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, center - half), min(1.0, center + half))


def _groups(clusters: Sequence) -> list[np.ndarray]:
    index: dict = {}
    for i, c in enumerate(clusters):
        index.setdefault(c, []).append(i)
    return [np.asarray(v, dtype=np.int64) for v in index.values()]


def cluster_bootstrap(stat: Callable[[list[np.ndarray]], float | None], clusters: Sequence,
                      reps: int = BOOTSTRAP, seed: int = 0, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of `stat(groups)` over resamples of whole clusters (participants).

    `stat` receives the drawn participants as a list of probe-index arrays (one drawn twice
    appears twice) and may return None (say a class is missing from the draw): such draws are
    skipped. None when fewer than two clusters (nothing to resample) or no draw gave a number.
    """
    groups = _groups(clusters)
    if len(groups) < 2:
        return None
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(reps):
        v = stat([groups[i] for i in rng.integers(0, len(groups), len(groups))])
        if v is not None and not math.isnan(v):
            vals.append(v)
    if not vals:
        return None
    a = (1 - level) / 2
    return (float(np.quantile(vals, a)), float(np.quantile(vals, 1 - a)))


def pooled(groups: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(groups) if groups else np.zeros(0, dtype=np.int64)


def micro(values) -> float | None:
    """Mean over probes."""
    v = np.asarray(values, float)
    return float(v.mean()) if len(v) else None


def macro(values, clusters) -> float | None:
    """Mean over participants of each participant's mean (every participant weighs the same)."""
    v = np.asarray(values, float)
    if not len(v):
        return None
    return float(np.mean([v[g].mean() for g in _groups(clusters)]))


def _draws(n_clusters: int, reps: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_clusters, (reps, n_clusters))


def _percentile(vals: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    a = (1 - level) / 2
    return (float(np.quantile(vals, a)), float(np.quantile(vals, 1 - a)))


def mean_metric(name: str, values, clusters, average: str = "micro", seed: int = 0, reps: int = BOOTSTRAP,
                **labels) -> Metric:
    """A mean (micro or macro) with a participant-resampling bootstrap interval.

    Vectorized over per-participant sums (a report holds about a thousand of these).
    """
    v = np.asarray(values, float)
    c = list(clusters)
    if not len(v):
        return Metric(name=name, value=None, n=0, average=average, reason="no probes in this subset", **labels)
    groups = _groups(c)
    sums = np.array([v[g].sum() for g in groups])
    counts = np.array([len(g) for g in groups], float)
    value = micro(v) if average == "micro" else float((sums / counts).mean())
    ci = None
    if len(groups) >= 2:
        d = _draws(len(groups), reps, seed)
        boot = sums[d].sum(1) / counts[d].sum(1) if average == "micro" else (sums / counts)[d].mean(1)
        ci = _percentile(boot)
    return Metric(name=name, value=value, n=len(v), interval=ci,
                  method=f"participant bootstrap ({reps})" if ci else None, average=average,
                  reason=None if ci else "no interval: needs at least two participants",
                  extra={"participants": len(groups)}, **labels)


# --- demand and ablation --------------------------------------------------------------------------


def proportion_metric(name: str, flags, clusters, seed: int = 0, reps: int = BOOTSTRAP, **labels) -> Metric:
    """A share with its Wilson 95% interval, and a participant-clustered bootstrap beside it."""
    f = np.asarray(flags, bool)
    n = len(f)
    if n == 0:
        return Metric(name=name, value=None, n=0, reason="no probes in this subset", **labels)
    ci = wilson(int(f.sum()), n)
    boot = mean_metric(name, f, clusters, seed=seed, reps=reps).interval
    return Metric(name=name, value=float(f.mean()), n=n, interval=ci, method="Wilson 95%",
                  extra={"successes": int(f.sum()), "participant_bootstrap": boot,
                         "participants": len(set(clusters))}, **labels)


def demand_rate(memory_bearing, strata, scoreable, clusters, seed: int = 0, **labels) -> Metric:
    """π = memory-bearing / scoreable probes on the proportional stratum only.

    The enriched stratum was collected because memory was needed: it has no denominator, so
    letting it in would inflate π by however many such probes were gathered.
    """
    keep = [i for i, (s, ok) in enumerate(zip(strata, scoreable)) if s == "proportional" and ok]
    if not keep:
        return Metric(name="demand_rate", value=None, n=0, stratum="proportional",
                      reason="no scoreable probes in the proportional stratum (only it estimates π)", **labels)
    return proportion_metric("demand_rate", [memory_bearing[i] for i in keep], [clusters[i] for i in keep],
                             seed=seed, stratum="proportional", **labels)


class Decomposition(BaseModel):
    delta: Metric
    pi: Metric
    gamma1: Metric
    gamma0: Metric


def decompose(gains, memory_bearing) -> tuple[float, float, float | None, float | None]:
    """Δ = π·γ1 + (1 − π)·γ0 over one set of probes: (Δ, π, γ1, γ0).

    γ1 / γ0 are None when that class is empty (its term then has weight 0, so the identity holds).
    """
    g, y = np.asarray(gains, float), np.asarray(memory_bearing, bool)
    if not len(g):
        raise ValueError("no probes to decompose")
    pi = float(y.mean())
    g1 = float(g[y].mean()) if y.any() else None
    g0 = float(g[~y].mean()) if (~y).any() else None
    return float(g.mean()), pi, g1, g0


def decomposition(gains, memory_bearing, clusters, seed: int = 0, reps: int = BOOTSTRAP, **labels) -> Decomposition:
    """The ablation gain on the proportional stratum, decomposed, each term with a bootstrap interval.

    A gain that lives in γ0 (probes needing no memory) is not evidence that memory helped.
    """
    g, y, c = np.asarray(gains, float), np.asarray(memory_bearing, bool), list(clusters)
    n = len(g)
    if n == 0:
        none = lambda nm: Metric(name=nm, value=None, n=0, reason="no probes", **labels)  # noqa: E731
        return Decomposition(delta=none("delta"), pi=none("pi"), gamma1=none("gamma1"), gamma0=none("gamma0"))
    d, pi, g1, g0 = decompose(g, y)

    def boot(i):
        def stat(gs):
            ix = pooled(gs)
            return decompose(g[ix], y[ix])[i]
        return cluster_bootstrap(stat, c, reps=reps, seed=seed)

    def m(name, value, i, count, why):
        ci = boot(i) if value is not None else None
        return Metric(name=name, value=value, n=count, interval=ci,
                      method=f"participant bootstrap ({reps})" if ci else None,
                      reason=None if value is not None else why, **labels)

    return Decomposition(delta=m("delta", d, 0, n, ""), pi=m("pi", pi, 1, n, ""),
                         gamma1=m("gamma1", g1, 2, int(y.sum()), "no memory-bearing probes"),
                         gamma0=m("gamma0", g0, 3, int((~y).sum()), "no probes without memory need"))


# --- context budget -----------------------------------------------------------------------------


def coverage_curve(needed: Sequence[float], budgets: Sequence[float]) -> list[float | None]:
    """For each budget b, the share of probes whose whole gold set fits in the most recent b.

    `needed[i]` is the smallest budget that holds probe i's whole gold set (messages or tokens
    back from the probe to its oldest gold message).
    """
    nd = np.asarray(needed, float)
    if not len(nd):
        return [None for _ in budgets]
    return [float((nd <= b).mean()) for b in budgets]
