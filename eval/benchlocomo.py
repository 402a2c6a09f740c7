"""`companion bench locomo PATH`: recall defaults chosen and reported by conversation-level cross-validation.

The folds are eval/devfolds.py's: LoCoMo's ten conversations in five folds of two (L1-L5), the
project's own corpora as three more (O1-O3). For each held-out fold:

- every fixed system (BM25, dense, each hybrid recipe) ranks the fold's queries through its real
  retriever (`registry.create`, `search(ctx, query, 10)`, as of the query);
- the learned ranker is trained on the other folds only (eval/ranktrain.py; LoCoMo categories 1-4
  and the project's probes, the two corpus families weighted equally), written to a file, and
  run through the same `hybrid` retriever with that file;
- the fold's *chosen* system is the one with the best hit@5 on the training folds (LoCoMo
  categories 1-4 and the project's probes, pooled over queries), where the learned ranker's
  training-fold score is itself out of fold (nested: trained without the inner fold it is scored on).

Reported: hit@5, recall@10 and MRR@10 per held-out fold and pooled over held-out folds, by LoCoMo
category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 1-4 pooled; 5 adversarial apart,
never pooled) and for the project's probes, each with n and a 95% bootstrap interval that resamples
conversations (a fold has two: its interval spans them). Then whether the chosen system is below its
best single input (BM25, dense) on any held-out fold, or below BM25 on any fold and category, and
which system the same rule chooses on all folds (the shipped default).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from eval import metrics as M

FIXED = ("bm25", "dense", "hybrid:normalized", "hybrid:balanced", "hybrid:lexical_heavy", "hybrid:dense_heavy",
         "hybrid:sharp")
LEARNED = "hybrid:learned"
SINGLE = ("bm25", "dense")
OLD_DEFAULT = "hybrid:normalized"  # the default before issue 24
GROUPS = ("1", "2", "3", "4", "1-4", "5", "own")
GROUP_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "1-4": "categories 1-4",
               "5": "adversarial (apart)", "own": "project probes"}
K = 10


def in_group(q, g: str) -> bool:
    if g == "1-4":
        return q.category in ("1", "2", "3", "4")
    return q.category == g


def retriever(spec: str, **params):
    from memory import registry

    name, _, recipe = spec.partition(":")
    if recipe:
        params = {"recipe": recipe, **params}
    return registry.create("retriever", name, **params)


def run_system(folds, spec: str, queries, **params) -> list[list[str]]:
    r = retriever(spec, **params)
    return [[h.dayid for h in r.search(folds.context(q), q.text, K)] for q in queries]


def scores_of(q, ranked: list[str]) -> dict[str, float]:
    return {"hit@5": M.hit_at_k(q.gold, ranked, 5), "recall@10": M.recall_at_k(q.gold, ranked, 10),
            "mrr@10": M.reciprocal_rank(q.gold, ranked[:10])}


def cross_validate(folds, seed: int = 0, progress=None, fixed=FIXED, learned: bool = True) -> dict:
    """Held-out rankings of every system, the chosen system per fold, and the choice on all folds."""
    from eval import ranktrain
    from memory import messages

    qs = folds.queries
    folds.embedder.encode([q.text for q in qs])  # one batched pass; every later query embedding is cached
    ranked: dict[str, list[list[str]]] = {}
    timing: dict[str, float] = {}
    for spec in fixed:
        if progress:
            progress(f"rank {spec}")
        t = time.perf_counter()
        ranked[spec] = run_system(folds, spec, qs)
        timing[spec] = (time.perf_counter() - t) / len(qs) * 1000
    fold_of = np.array([q.fold for q in qs])
    names = list(folds.names)
    inner: dict[str, dict[str, list[list[str]]]] = {}  # outer fold -> learned's out-of-fold rankings in it
    models: dict[str, dict] = {}
    if learned:
        if progress:
            progress("candidate features of every query")
        tables = ranktrain.tables(folds)
        dayid = {}
        for q in qs:
            if q.participant not in dayid:
                dayid[q.participant] = {m.ordinal: m.dayid for m in messages.read(folds.store, q.participant, 10 ** 9)}
        ranked[LEARNED] = [[] for _ in qs]
        t_total = 0.0
        with tempfile.TemporaryDirectory(prefix="companion-ranker-") as tmp:
            for f in names:
                if progress:
                    progress(f"learned ranker, held-out fold {f}")
                train_idx = np.flatnonzero(fold_of != f).tolist()
                model = models[f] = ranktrain.fit_queries(tables, qs, train_idx, seed)
                path = Path(tmp) / f"ranker-{f}.json"
                path.write_text(json.dumps(model))
                test_idx = np.flatnonzero(fold_of == f).tolist()
                t = time.perf_counter()
                got = run_system(folds, LEARNED, [qs[i] for i in test_idx], model=str(path))
                t_total += time.perf_counter() - t
                for i, r in zip(test_idx, got):
                    ranked[LEARNED][i] = r
                inner[f] = {}
                for g in names:  # nested: the learned ranker's out-of-fold rankings inside the training folds
                    if g == f:
                        continue
                    inner_idx = np.flatnonzero((fold_of != f) & (fold_of != g)).tolist()
                    if not any(ranktrain.trainable(qs[i]) for i in inner_idx):
                        continue  # two folds only: nothing to train on inside; learned is not selectable here
                    m = ranktrain.fit_queries(tables, qs, inner_idx, seed)
                    for i in np.flatnonzero(fold_of == g).tolist():
                        inner[f][i] = [dayid[qs[i].participant][o] for o in ranktrain.ranked(m, tables[i], K)]
        timing[LEARNED] = t_total / len(qs) * 1000
    systems = list(ranked)
    per = {s: [scores_of(q, r) for q, r in zip(qs, ranked[s])] for s in systems}

    def train_score(s: str, f: str) -> float | None:
        idx = [i for i in range(len(qs)) if fold_of[i] != f and ranktrain.trainable(qs[i])]
        if s == LEARNED:
            if any(i not in inner[f] for i in idx):  # no out-of-fold ranking inside: it cannot be chosen fairly
                return None
            return float(np.mean([M.hit_at_k(qs[i].gold, inner[f][i], 5) for i in idx]))
        return float(np.mean([per[s][i]["hit@5"] for i in idx]))

    chosen = {}
    for f in names:
        by = {s: train_score(s, f) for s in systems}
        ok = [s for s in systems if by[s] is not None]
        chosen[f] = {"system": max(ok, key=lambda s: (by[s], -systems.index(s))), "training_hit@5": by}
    # The shipped default: the same rule on all folds, every system scored out of fold
    overall = {s: float(np.mean([per[s][i]["hit@5"] for i in range(len(qs)) if ranktrain.trainable(qs[i])])) for s in systems}
    final = max(systems, key=lambda s: (overall[s], -systems.index(s)))
    ranked["chosen"] = [ranked[chosen[q.fold]["system"]][i] for i, q in enumerate(qs)]
    per["chosen"] = [per[chosen[q.fold]["system"]][i] for i, q in enumerate(qs)]
    return {"ranked": ranked, "per": per, "chosen": chosen, "overall_out_of_fold": overall, "final": final,
            "models": models, "ms_per_query": timing}


def _metric(name, vals, clusters, seed, reps) -> dict:
    m = M.mean_metric(name, vals, clusters, seed=seed, reps=reps)
    return {"value": m.value, "n": m.n, "interval": m.interval, "clusters": len(set(clusters))}


def summarize(folds, cv: dict, seed: int = 0, reps: int = M.BOOTSTRAP) -> dict:
    qs = folds.queries
    systems = list(cv["per"])
    out = {"folds": {}, "pooled": {}, "checks": []}
    scopes = [(f, [i for i, q in enumerate(qs) if q.fold == f]) for f in folds.names]
    loc = [i for i, q in enumerate(qs) if q.locomo]
    own = [i for i, q in enumerate(qs) if not q.locomo]
    for scope, idx in scopes + [("locomo", loc), ("own", own)]:
        block = {}
        for s in systems:
            block[s] = {}
            for g in GROUPS:
                ix = [i for i in idx if in_group(qs[i], g)]
                if not ix:
                    continue
                cl = [qs[i].cluster for i in ix]
                block[s][g] = {m: _metric(m, [cv["per"][s][i][m] for i in ix], cl, seed, reps)
                               for m in ("hit@5", "recall@10", "mrr@10")}
        (out["folds"] if scope in folds.names else out["pooled"])[scope] = block
    # paired difference chosen - bm25 / chosen - old default, pooled over LoCoMo folds, categories 1-4
    for other in ("bm25", OLD_DEFAULT):
        ix = [i for i in loc if in_group(qs[i], "1-4")]
        d = [cv["per"]["chosen"][i]["hit@5"] - cv["per"][other][i]["hit@5"] for i in ix]
        out.setdefault("differences", {})[f"chosen - {other}"] = _metric("diff", d, [qs[i].cluster for i in ix],
                                                                         seed, reps)
    for f in folds.names:  # the guards: never below the best single input, nor below BM25 in any group
        b = out["folds"][f]
        group = "1-4" if "1-4" in b["chosen"] else "own"
        best_single = max(b[s][group]["hit@5"]["value"] for s in SINGLE)
        c = b["chosen"][group]["hit@5"]["value"]
        out["checks"].append({"fold": f, "group": group, "chosen": cv["chosen"][f]["system"], "hit@5": c,
                              "best_single": best_single, "ok": c >= best_single - 1e-12,
                              "what": "chosen >= max(bm25, dense)"})
        for g in ("1", "2", "3", "4"):
            if g in b["chosen"]:
                cg, bg = b["chosen"][g]["hit@5"]["value"], b["bm25"][g]["hit@5"]["value"]
                out["checks"].append({"fold": f, "group": g, "chosen": cv["chosen"][f]["system"], "hit@5": cg,
                                      "best_single": bg, "ok": cg >= bg - 1e-12, "what": "chosen >= bm25"})
    return out


EMBEDDERS = ("minilm", "mpnet")


def run(locomo: str, cache: str | None = None, seed: int = 0, reps: int = M.BOOTSTRAP, own: bool = True,
        progress=None, fixed=FIXED, learned: bool = True, embedder: str = "minilm") -> dict:
    from eval import devfolds
    from eval.embedcache import default_folder
    from memory import messages

    t0 = time.perf_counter()
    other, cost = None, None
    if embedder == "mpnet":
        from eval.embedders import MPNET, MpnetEmbedder

        other = MpnetEmbedder(Path(cache or default_folder()) / "models")
    folds = devfolds.load(locomo, cache=cache, own=own, progress=progress, dense_embedder=other,
                          dense_model=MPNET if other else None)
    try:
        if other is not None:  # what the second model costs, beside the default, in this run
            from eval.embedders import cost as measure_cost

            if progress:
                progress("embedding cost, both models")
            texts = [m.text for m in messages.read(folds.store, folds.queries[0].participant, 10 ** 9)][:256]
            cost = measure_cost({"all-MiniLM-L6-v2": folds.embedder.inner, MPNET: other}, texts,
                                [q.text for q in folds.queries[:40]])
        cv = cross_validate(folds, seed, progress, fixed=fixed, learned=learned)
        summary = summarize(folds, cv, seed, reps)
        summary.update({
            "corpus": str(locomo), "folds_layout": {f: sorted({q.cluster for q in folds.queries if q.fold == f})
                                                    for f in folds.names},
            "queries": {f: sum(q.fold == f for q in folds.queries) for f in folds.names},
            "chosen": cv["chosen"], "final_default": cv["final"], "overall_out_of_fold_hit@5": cv["overall_out_of_fold"],
            "ms_per_query": {k: round(v, 2) for k, v in cv["ms_per_query"].items()},
            "reader_warnings": len(folds.warnings), "seed": seed, "bootstrap": reps,
            "embedder": embedder, "embedding_cost": cost,
            "seconds": round(time.perf_counter() - t0, 1),
        })
    finally:
        folds.close()
    return summary


def _cell(m: dict | None) -> str:
    if not m or m["value"] is None:
        return "—"
    iv = m["interval"]
    return f"{m['value']:.3f} [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else f"{m['value']:.3f}"


def render(r: dict) -> str:
    lines = [f"LoCoMo development benchmark: {r['corpus']} ({r['reader_warnings']} reader repairs), "
             f"dense side {r.get('embedder', 'minilm')}, seed {r['seed']}, "
             f"{r['bootstrap']} bootstrap draws over conversations",
             "folds: " + "; ".join(f"{f} = {', '.join(c[:3])}{' ...' if len(c) > 3 else ''} ({r['queries'][f]} queries)"
                                   for f, c in r["folds_layout"].items()), ""]
    systems = list(next(iter(r["folds"].values())))
    for scope, title in (("locomo", "pooled over the LoCoMo held-out folds"), ("own", "pooled over the project folds")):
        block = r["pooled"].get(scope)
        if not block or not any(block[s] for s in systems):
            continue
        lines.append(f"== {title}: hit@5 [95% interval] (n)")
        groups = [g for g in GROUPS if g in block[systems[0]]]
        lines.append(f"{'system':22}" + "".join(f"{GROUP_NAMES[g]:>27}" for g in groups))
        lines.append(f"{'n':22}" + "".join(f"{block[systems[0]][g]['hit@5']['n']:>27}" for g in groups))
        for s in systems:
            lines.append(f"{s:22}" + "".join(f"{_cell(block[s].get(g, {}).get('hit@5')):>27}" for g in groups))
        if scope == "locomo":
            lines.append("")
            lines.append(f"{'categories 1-4':22}{'recall@10':>27}{'MRR@10':>27}")
            for s in systems:
                lines.append(f"{s:22}{_cell(block[s]['1-4']['recall@10']):>27}{_cell(block[s]['1-4']['mrr@10']):>27}")
        lines.append("")
    lines.append("== per held-out fold: hit@5 on categories 1-4 (LoCoMo folds) or the project's probes (O folds)")
    lines.append(f"{'system':22}" + "".join(f"{f:>24}" for f in r["folds"]))
    for s in systems:
        row = []
        for f, b in r["folds"].items():
            g = "1-4" if "1-4" in b[s] else "own"
            row.append(_cell(b[s][g]["hit@5"]))
        lines.append(f"{s:22}" + "".join(f"{c:>24}" for c in row))
    lines.append(f"{'n':22}" + "".join(
        f"{b[systems[0]]['1-4' if '1-4' in b[systems[0]] else 'own']['hit@5']['n']:>24}" for b in r["folds"].values()))
    lines.append("chosen on the training folds: " + ", ".join(f"{f} {c['system']}" for f, c in r["chosen"].items()))
    lines.append("")
    for name, d in r.get("differences", {}).items():
        lines.append(f"paired difference, LoCoMo categories 1-4, hit@5, {name}: {_cell(d)} (n {d['n']})")
    bad = [c for c in r["checks"] if not c["ok"]]
    lines.append(f"guards: {len(r['checks']) - len(bad)} of {len(r['checks'])} hold "
                 "(chosen >= max(bm25, dense) per fold; chosen >= bm25 per fold and category)")
    for c in bad:
        lines.append(f"  BELOW: fold {c['fold']} group {c['group']}: {c['chosen']} {c['hit@5']:.3f} < {c['best_single']:.3f} ({c['what']})")
    lines.append(f"default chosen on all folds (every system scored out of fold): {r['final_default']} "
                 f"(hit@5 {r['overall_out_of_fold_hit@5'][r['final_default']]:.3f} over the folds' categories 1-4 and probes)")
    lines.append("retrieval time per query (ms, this run): " + ", ".join(f"{k} {v}" for k, v in r["ms_per_query"].items()))
    if r.get("embedding_cost"):
        lines.append("embedding cost (best of 2, this machine, this run): " + "; ".join(
            f"{k} {v['ms_per_message']} ms per ingested message (batches of 64), {v['ms_per_query']} ms per query"
            for k, v in r["embedding_cost"].items()))
    lines.append(f"{r['seconds']} s")
    return "\n".join(lines)


@click.command("locomo")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--cache", type=click.Path(file_okay=False), default=None,
              help="Embedding cache folder (default: ~/.cache/companion/embeddings); it holds vectors of the corpus.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--bootstrap", "reps", type=click.IntRange(min=100), default=M.BOOTSTRAP, show_default=True)
@click.option("--no-own", is_flag=True, help="LoCoMo folds only (without the project's corpora as extra folds).")
@click.option("--embedder", type=click.Choice(EMBEDDERS), default="minilm", show_default=True,
              help="The dense side: the default all-MiniLM-L6-v2, or all-mpnet-base-v2 (PyPI parts) to measure it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def bench_locomo(path, cache, seed, reps, no_own, embedder, as_json):
    """Recall on LoCoMo by conversation-level cross-validation: hit@5, recall@10, MRR@10 per category."""
    from memory import embeddings

    embeddings.prefer_throughput()
    r = run(path, cache=cache, seed=seed, reps=reps, own=not no_own, embedder=embedder,
            progress=lambda s: print(s, file=sys.stderr, flush=True))
    click.echo(json.dumps(r) if as_json else render(r))
