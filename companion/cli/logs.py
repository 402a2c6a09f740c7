"""`companion messages` and `companion traces`: what was said, and what each turn did."""

from __future__ import annotations

import json

import click

from companion.cli.access import guarded
from companion.cli.base import common, main, open_store, unknown


@main.command("messages")
@click.option("--participant", "-p", required=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
@guarded("participant")
def messages_cmd(participant, as_json, settings):
    """The participant's messages, oldest first."""
    from memory import messages, participants

    store = open_store(settings)
    if not participants.exists(store, participant):
        unknown(participant)
    rows = messages.read(store, participant, messages.next_ordinal(store, participant))
    if as_json:
        click.echo(json.dumps([m.public() for m in rows], ensure_ascii=False, indent=1))
    else:
        for m in rows:
            click.echo(f"{m.dayid:>10}  {m.sender:<9} {m.text}")


@main.command("traces")
@click.option("--participant", "-p", default=None)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
@guarded("participant")
def traces_cmd(participant, as_json, settings):
    """Every turn's trace: gate, decision, hits, what was applied, model, latency, errors."""
    from memory import traces

    rows = traces.list_(open_store(settings), participant=participant)
    if as_json:
        click.echo(json.dumps([t.model_dump() for t in rows], ensure_ascii=False, indent=1))
    else:
        for t in rows:
            d = t.decision or {}
            click.echo(f"{t.participant} {t.dayid}: {t.gate.get('name')} retrieve={d.get('retrieve')} "
                       f"score={d.get('score')} hits={[h['dayid'] for h in t.hits]} errors={len(t.errors)}")
