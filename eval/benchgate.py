"""`companion bench gate LOCOMO LABELS`: the gate on real messages, replayed as of each labelled one.

LABELS is JSON Lines, one labelled participant message a line:

    {"sample_id": "conv-26", "dia_id": "D3:5", "locus": "none|thread|episode|profile|companion_past",
     "refs": ["D1:3"], "draw": "uniform|callback|session_first"}

`session_first`: the first message of a session (drawn apart, as callbacks are; counted in "all").

`speaker_a` of each LoCoMo conversation is the participant, `speaker_b` the companion. A message
*needs memory* when its locus is episode, profile or companion_past (`refs`: the turns before the
recent window that ground it); none and thread need nothing from before the recent window of 6.

Each conversation is ingested as live chat would hold it: the words only, without the "Name: "
prefix the retrieval benchmark stores. Each labelled message is then decided by the gate as the
live turn does, as of its own position (it is stored, nothing at or after it is visible, the
recent window is the 6 messages before it). Printed, for the uniform draw and for all labelled
messages: AUROC (need vs not) with a 95% bootstrap interval over conversations, the share of
messages that need nothing which the gate abstains on, the share of those that need memory which
it retrieves on, at the gate's own threshold; the demand rate π on the uniform draw (Wilson
interval); and the same AUROC for the lexical and dense gates beside it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from eval import metrics as M
from eval.readers import CorpusError

LOCI = ("none", "thread", "episode", "profile", "companion_past")
NEED = frozenset({"episode", "profile", "companion_past"})
DRAWS = ("uniform", "callback", "session_first")
WINDOW = 6  # the live recent window
COMPARE = ("lexical", "dense")


@dataclass
class Label:
    sample_id: str
    dia_id: str
    locus: str
    refs: list[str]
    draw: str
    line: int

    @property
    def need(self) -> bool:
        return self.locus in NEED


def read_labels(path: str | Path) -> list[Label]:
    """Labels from JSON Lines; a malformed line is a CorpusError naming the file, line and field."""
    name = Path(path).name
    out: list[Label] = []
    seen: dict[tuple[str, str], int] = {}
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as e:
        raise CorpusError(f"{name}: cannot read ({e.strerror})") from e
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name} line {n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(row, dict):
            raise CorpusError(f"{where}: expected a JSON object")
        for field, kind in (("sample_id", str), ("dia_id", str), ("locus", str), ("draw", str)):
            if not isinstance(row.get(field), kind):
                raise CorpusError(f"{where}: field '{field}' missing or not a string")
        if row["locus"] not in LOCI:
            raise CorpusError(f"{where}: field 'locus': {row['locus']!r} is not one of {', '.join(LOCI)}")
        if row["draw"] not in DRAWS:
            raise CorpusError(f"{where}: field 'draw': {row['draw']!r} is not one of {', '.join(DRAWS)}")
        refs = row.get("refs", [])
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise CorpusError(f"{where}: field 'refs' must be a list of dia_ids")
        key = (row["sample_id"], row["dia_id"].strip())
        if key in seen:
            raise CorpusError(f"{where}: {key[0]} {key[1]} is labelled twice (first at line {seen[key]})")
        seen[key] = n
        out.append(Label(row["sample_id"], key[1], row["locus"], refs, row["draw"], n))
    if not out:
        raise CorpusError(f"{name}: no labels")
    return out


@dataclass
class Item:
    label: Label
    participant: str
    ordinal: int
    text: str


def _plain(row) -> str:
    """The turn's words as the participant typed them (without the reader's "Name: " prefix)."""
    prefix = f"{row.speaker}: " if getattr(row, "speaker", None) else ""
    return row.text[len(prefix):] if prefix and row.text.startswith(prefix) else row.text


def replay_store(locomo: str | Path, labels: list[Label], cache=None, progress=None):
    """(store, items, tmp): the labelled conversations ingested as plain chat; the items in label order."""
    from eval.embedcache import CachedEmbedder, default_folder
    from eval.ingest import ingest
    from eval.locomo import _participant_id, read_locomo
    from memory import embeddings
    from memory.store import Store

    release = read_locomo(locomo)
    by_sample = {s: release.participants[pid] for lab in labels
                 if (pid := _participant_id(s := lab.sample_id)) in release.participants}
    wanted = list(dict.fromkeys(lab.sample_id for lab in labels))
    missing = [s for s in wanted if s not in by_sample]
    if missing:
        raise CorpusError(f"labels name conversations the corpus does not hold: {', '.join(missing)}")
    tmp = tempfile.TemporaryDirectory(prefix="companion-gate-")
    store = Store(Path(tmp.name), synchronous="NORMAL")
    cached = CachedEmbedder(store.vectors.embedder, cache or default_folder(), embeddings.MODEL_NAME)
    store.vectors.embedder = cached
    where: dict[str, dict[str, int]] = {}
    for s in wanted:
        part = by_sample[s]
        if progress:
            progress(f"ingest {s} ({len(part.conversation)} messages)")
        rows = [r.model_copy(update={"text": _plain(r)}) for r in part.conversation]
        ingest(store, s, rows)
        where[s] = {r.dia_id.strip(): i for i, r in enumerate(part.conversation, 1) if r.dia_id}
    cached.save()
    items, bad = [], []
    for lab in labels:
        o = where[lab.sample_id].get(lab.dia_id)
        if o is None:
            bad.append(f"line {lab.line}: {lab.sample_id} has no turn {lab.dia_id}")
            continue
        row = by_sample[lab.sample_id].conversation[o - 1]
        if row.sender != "user":
            bad.append(f"line {lab.line}: {lab.sample_id} {lab.dia_id} is speaker_b's (the companion's), not the participant's")
            continue
        for r in lab.refs:
            if where[lab.sample_id].get(r.strip()) is None:
                bad.append(f"line {lab.line}: ref {r} is no turn of {lab.sample_id}")
        items.append(Item(lab, lab.sample_id, o, _plain(row)))
    if bad:
        store.close()
        tmp.cleanup()
        raise CorpusError("labels that do not fit the corpus: " + "; ".join(bad[:10])
                          + (f"; and {len(bad) - 10} more" if len(bad) > 10 else ""))
    return store, items, tmp, cached


def context(store, item: Item):
    from memory import messages
    from memory.context import TurnContext, TurnTime

    return TurnContext(store=store, participant=item.participant, text=item.text, context="personal",
                       as_of=item.ordinal, recent=messages.read(store, item.participant, item.ordinal, limit=WINDOW),
                       time=TurnTime.at(store, item.participant, item.ordinal))


def decide_all(store, items: list[Item], gate: str = "learned", **params) -> list:
    from memory import registry

    g = registry.create("gate", gate, **params)
    store.vectors.embedder.encode([it.text for it in items])  # batched; the turn's embeddings come from the memo
    return [g.decide(context(store, it)) for it in items]


def rates(scores, retrieved, need, clusters, seed: int = 0, reps: int = M.BOOTSTRAP) -> dict:
    s, r, y = np.asarray(scores, float), np.asarray(retrieved, bool), np.asarray(need, bool)
    au = M.auroc_metric(s, y, clusters, seed=seed, reps=reps)
    out = {"n": len(y), "need": int(y.sum()), "auroc": au.value, "auroc_interval": au.interval,
           "auroc_reason": au.reason}
    for name, mask, flag in (("abstained_on_no_need", ~y, ~r), ("retrieved_on_need", y, r)):
        k, n = int(flag[mask].sum()), int(mask.sum())
        out[name] = {"value": k / n if n else None, "k": k, "n": n, "interval": M.wilson(k, n)}
    return out


def run(locomo: str, labels_path: str, gate: str = "learned", cache=None, seed: int = 0, reps: int = M.BOOTSTRAP,
        progress=None, threshold: float | None = None) -> dict:
    labels = read_labels(labels_path)
    store, items, tmp, cached = replay_store(locomo, labels, cache, progress)
    try:
        params = {} if threshold is None else {"threshold": threshold}
        decisions = decide_all(store, items, gate, **params)
        compare = {g: [d.score for d in decide_all(store, items, g)] for g in COMPARE if g != gate}
    finally:
        cached.save()
        store.close()
        tmp.cleanup()
    need = [it.label.need for it in items]
    clusters = [it.participant for it in items]
    result = {"gate": gate, "threshold": decisions[0].threshold if decisions else None, "labels": str(labels_path),
              "corpus": str(locomo), "conversations": sorted(set(clusters)), "by_draw": {}}
    for scope in ("uniform", "all"):
        ix = [i for i, it in enumerate(items) if scope == "all" or it.label.draw == scope]
        if not ix:
            continue
        block = rates([decisions[i].score for i in ix], [decisions[i].retrieve for i in ix], [need[i] for i in ix],
                      [clusters[i] for i in ix], seed, reps)
        block["compare_auroc"] = {g: M.auroc([v[i] for i in ix], [need[i] for i in ix]) for g, v in compare.items()}
        result["by_draw"][scope] = block
    uni = [need[i] for i, it in enumerate(items) if it.label.draw == "uniform"]
    if uni:
        result["demand_rate_uniform"] = {"value": sum(uni) / len(uni), "k": sum(uni), "n": len(uni),
                                         "interval": M.wilson(sum(uni), len(uni))}
    result["misses"] = [f"{it.participant} {it.label.dia_id} ({it.label.locus}, {decisions[i].score:.3f})"
                        for i, it in enumerate(items) if need[i] and not decisions[i].retrieve]
    return result


def _pct(d: dict) -> str:
    if d["value"] is None:
        return "— (none)"
    iv = d["interval"]
    return f"{d['value']:.3f} ({d['k']}/{d['n']}) [{iv[0]:.2f}, {iv[1]:.2f}]"


def render(r: dict) -> str:
    lines = [f"gate {r['gate']} at threshold {r['threshold']:.3f} on {r['labels']} "
             f"({len(r['conversations'])} conversations of {r['corpus']}; recent window {WINDOW})"]
    if "demand_rate_uniform" in r:
        lines.append(f"demand on the uniform draw: π = {_pct(r['demand_rate_uniform'])} (Wilson 95%)")
    for scope, b in r["by_draw"].items():
        iv = b["auroc_interval"]
        au = "—" if b["auroc"] is None else f"{b['auroc']:.3f}" + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "")
        lines += [f"", f"{scope}: {b['n']} messages, {b['need']} need memory",
                  f"  AUROC {au}" + (f" ({b['auroc_reason']})" if b["auroc"] is None else "")
                  + "; beside it " + ", ".join(f"{g} {v:.3f}" if v is not None else f"{g} —"
                                              for g, v in b["compare_auroc"].items()),
                  f"  abstained on messages that need nothing: {_pct(b['abstained_on_no_need'])}",
                  f"  retrieved on messages that need memory:  {_pct(b['retrieved_on_need'])}"]
    if r["misses"]:
        lines += ["", "needed memory, abstained: " + "; ".join(r["misses"])]
    return "\n".join(lines)


@click.command("gate")
@click.argument("locomo", type=click.Path(exists=True, dir_okay=False))
@click.argument("labels", type=click.Path(exists=True, dir_okay=False))
@click.option("--gate", "gate", default="learned", show_default=True, help="The gate to replay (a registered name).")
@click.option("--threshold", type=float, default=None, help="Override the gate's own threshold.")
@click.option("--cache", type=click.Path(file_okay=False), default=None, help="Embedding cache folder.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def bench_gate(locomo, labels, gate, threshold, cache, seed, as_json):
    """The gate on labelled real messages: AUROC, abstention on no-need, retrieval on need."""
    from memory import embeddings

    embeddings.prefer_throughput()
    r = run(locomo, labels, gate=gate, cache=cache, seed=seed, threshold=threshold,
            progress=lambda s: print(s, file=sys.stderr, flush=True))
    click.echo(json.dumps(r) if as_json else render(r))
