"""`companion plugins`: every registered plugin, by kind."""

from __future__ import annotations

import click

from companion.cli.base import common, main


@main.command()
@common
def plugins(settings):
    """Every registered gate, retriever, policy, model backend, IX source, extractor, reader and
    export source, by name (commands are in --help)."""
    from memory import registry

    kinds = ("gate", "retriever", "policy", "model", "ix_source", "extractor", "reader", "export_source")
    names = {kind: registry.names(kind) for kind in kinds}
    # One width for every section, from the longest name, so a name never runs into its description.
    width = max(len(n) for ns in names.values() for n in ns) + 2
    for kind in kinds:
        rows = []
        for name in names[kind]:
            obj = registry.get(kind, name)
            doc = (obj.__doc__ or "").strip().splitlines()
            tag = " (eval only)" if getattr(obj, "eval_only", False) else ""
            rows.append(f"  {name:<{width}}{doc[0].strip() if doc else ''}{tag}".rstrip())
        click.echo(f"{kind.replace('policy', 'policie')}s:\n" + "\n".join(rows))
