"""Commands the eval package adds to `companion` (through the `companion.commands` entry points)."""

from __future__ import annotations

from pathlib import Path

import click

from companion.cli import common, fail, plugin_options
from eval.prefcli import EvalCommand  # `eval preferences ...`: the interaction-preference track


@click.group("gates")
def gates():
    """Train and inspect gates."""


@gates.command("train")
@click.option("--corpus", required=True, type=click.Path(exists=True, file_okay=False),
              help="A release in the benchmark format.")
@click.option("--out", default=None, type=click.Path(dir_okay=False),
              help="Where to write the weights (default: <data dir>/gates/learned.json, where the learned gate looks).")
@click.option("--c", "c", default=0.5, show_default=True, help="Inverse regularization strength (the shipped weights use 0.5).")
@common
def gates_train(corpus, out, c, settings):
    """Fit the learned gate: logistic regression, label = memory-bearing, on scoreable chat probes."""
    from eval.readers import CorpusError
    from eval.train import train

    out = Path(out) if out else settings.data_dir / "gates" / "learned.json"
    try:
        r = train(Path(corpus), out, c=c)
    except (CorpusError, ValueError) as e:
        fail(str(e))
    click.echo(f"trained on {r['n']} probes ({r['positives']} memory-bearing); "
               f"in-sample AUROC {r['auroc_in_sample']:.3f} (optimistic: measured on the training probes)")
    for name, w in sorted(zip(r["features"], r["coef"]), key=lambda t: -abs(t[1])):
        click.echo(f"  {name:<24}{w:+.3f}")
    click.echo(f"weights: {out}")


@click.command("eval", cls=EvalCommand)
@click.argument("track_names", metavar="TRACK...", nargs=-1, required=True)
@click.option("--corpus", required=True, type=click.Path(exists=True),
              help="A benchmark release folder, a locomo10.json, or a LongMemEval file.")
@click.option("--format", "fmt", default=None, help="Corpus reader by name: benchmark, locomo, longmemeval "
              "(any registered `companion.readers`); guessed when omitted.")
@plugin_options
@click.option("--k", "ks", multiple=True, type=int, default=(1, 5, 10), show_default=True,
              help="Cut-offs for hit@k and recall@k (repeat the option).")
@click.option("--out", default="eval-report", show_default=True, type=click.Path(file_okay=False),
              help="Folder for report.md, report.json, the PNG plots and outcomes.jsonl.")
@click.option("--work", default=None, type=click.Path(file_okay=False),
              help="Keep the ingested store here and reuse it on the next run over the same corpus "
                   "(default: a temporary folder, ingested afresh).")
@click.option("--seed", default=0, show_default=True, help="Seeds the random baseline, broken-oracle choice and bootstraps.")
@click.option("--judge", default=None, help="Judge model (litellm string) for the judged tracks chat, qa, ablation; "
              "without one they are reported as not computed.")
@click.option("--model", default=None, help="The companion's reply model for the judged tracks (litellm string; "
              "default: the configured model).")
@click.option("--limit", default=None, type=int, help="Only the first N participants (LongMemEval: questions).")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Progress bars on stderr.")
@common
def eval_cmd(track_names, corpus, fmt, gate, retriever, policy, ks, out, work, seed, judge, model, limit, progress,
             settings):
    """Replay a corpus through the turn's decision path and report (docs/METRICS.md).

    TRACK is one or more of: retrieval, abstention, demand, budget, ablation, reconstruction,
    chat, qa. Several tracks in one command share one ingest and one replay. chat, qa and ablation
    generate replies (steps 3-7, never stored) and need --judge MODEL to be scored.
    """
    from memory import embeddings

    embeddings.prefer_throughput()  # ingest is a batch job: see embeddings.prefer_throughput
    from eval.readers import CorpusError
    from eval.run import run
    from memory.registry import RegistryError

    try:
        doc = run(list(track_names), Path(corpus), Path(out), fmt=fmt, gate=gate, retriever=retriever,
                  policy=policy, ks=list(ks), seed=seed, judge=judge, work=Path(work) if work else None,
                  limit=limit, settings=settings, progress=progress, model=model)
    except (CorpusError, RegistryError, ValueError, FileExistsError) as e:
        fail(str(e))
    for name, t in doc["tracks"].items():
        click.echo(f"{name}: " + (f"not computed ({t['not_computed']})" if t["not_computed"] else "done"))
    click.echo(f"timings: {doc['timings']}")
    click.echo(f"report: {Path(out) / 'report.md'}")
