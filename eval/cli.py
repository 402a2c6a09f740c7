"""Commands the eval package adds to `companion` (through the `companion.commands` entry points)."""

from __future__ import annotations

from pathlib import Path

import click

from companion.cli import common, fail


@click.group("gates")
def gates():
    """Train and inspect gates."""


@gates.command("train")
@click.option("--corpus", required=True, type=click.Path(exists=True, file_okay=False),
              help="A release in the benchmark format.")
@click.option("--out", default=None, type=click.Path(dir_okay=False),
              help="Where to write the weights (default: <data dir>/gates/learned.json, where the learned gate looks).")
@click.option("--c", "c", default=1.0, show_default=True, help="Inverse regularization strength.")
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
