"""`companion bench ...`: `recall` here; other packages' benchmarks join through the registry's
`bench_command` kind, so the app package never imports the harness that judges it."""

from __future__ import annotations

import json

import click

from companion.cli.base import PluginGroup, main


@main.group(cls=PluginGroup, kind="bench_command")
def bench():
    """Benchmarks on synthetic data or a scripted chat (your data is not touched)."""


@bench.command("recall")
@click.option("--messages", "n_messages", type=click.IntRange(min=100), default=30000, show_default=True,
              help="Size of the synthetic conversation.")
@click.option("--queries", "n_queries", type=click.IntRange(min=1), default=200, show_default=True,
              help="Query turns timed (decision path and floor each).")
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the synthetic conversation.")
@click.option("--batch-size", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Messages per append_many call while ingesting (one embedding call each).")
@click.option("--bm25-sample", type=click.IntRange(min=1), default=100, show_default=True,
              help="Queries compared with rank-bm25.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Where the bench database goes (default: a temporary directory, removed after).")
def bench_recall(n_messages, n_queries, seed, batch_size, bm25_sample, as_json, data_dir):
    """Ingest rate, decision-path latency against its floor, BM25 against rank-bm25."""
    from companion import bench as bench_mod
    from memory import embeddings

    embeddings.prefer_throughput()  # a batch job: see embeddings.prefer_throughput

    result = bench_mod.run(n_messages=n_messages, n_queries=n_queries, seed=seed, data_dir=data_dir,
                           batch_size=batch_size, bm25_sample=bm25_sample,
                           progress=bench_mod.progress_to_stderr)
    click.echo(json.dumps(result) if as_json else bench_mod.render(result))
