"""`companion memory ...`: derived memory (claims, preference cells, persona, file memory)."""

from __future__ import annotations

import json

import click

from companion.cli.access import guarded
from companion.cli.base import common, fail, known_participant, main, open_store
from memory.store import StoreError


# ---------------------------------------------------------------- derived memory (issue 4)

@main.group("memory")
def memory_group():
    """Derived memory: profile claims, preference cells, persona, file memory."""




def extractor_options(fn):
    from companion.settings import DEFAULT_EXTRACTOR

    fn = click.option("--extractor", default=DEFAULT_EXTRACTOR, show_default=True,
                      help="A registered extractor (see `companion plugins`): rule: explicit first-person "
                           "statements, no model; model: a capable model proposes (prompt as versioned data), "
                           "the same verification decides; combined: the rules, then the model.")(fn)
    return click.option("--model", "extract_model", default=None,
                        help="The model of an extractor that asks one (any litellm string; default: the "
                             "configured model).")(fn)


def _extractor(name: str, model: str | None, settings):
    from companion import gateway
    from memory import extract

    model = model or settings.model
    try:
        return extract.build(name, lambda msgs: gateway.complete(model, msgs, timeout=settings.timeout,
                                                                 max_tokens=600, retries=settings.retries).text)
    except LookupError as e:
        fail(str(e))


@memory_group.command("consolidate")
@click.option("--participant", "-p", required=True)
@click.option("--budget-chars", type=click.IntRange(min=100), default=None,
              help="File-memory size budget (default: memory.filememory.DEFAULT_BUDGET_CHARS).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@extractor_options
@common
@guarded("participant")
def memory_consolidate(participant, budget_chars, as_json, extractor, extract_model, settings):
    """Extract from the messages not yet processed, verify, merge."""
    from memory import extract, filememory

    store = open_store(settings)
    known_participant(store, participant)
    report = extract.consolidate(store, participant, _extractor(extractor, extract_model, settings),
                                 budget_chars=budget_chars or filememory.DEFAULT_BUDGET_CHARS)
    _memory_report(report, as_json)


def _memory_report(report, as_json):
    if as_json:
        click.echo(json.dumps(report.public(), ensure_ascii=False))
    else:
        click.echo(f"{report.participant}: {report.messages} messages, {report.proposals} proposals "
                   f"{report.verdicts}; claims {report.claims}; cells {report.cells}; persona {report.persona}; "
                   f"file lines +{report.lines_added} refused {report.lines_refused}; "
                   f"tombstoned {report.tombstoned}; processed up to ordinal {report.processed_ordinal}")


@memory_group.command("rebuild")
@click.option("--participant", "-p", required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@extractor_options
@common
@guarded("participant")
def memory_rebuild(participant, as_json, extractor, extract_model, settings):
    """Derive profile claims, preference cells and persona items again from the full history."""
    from memory import extract

    store = open_store(settings)
    known_participant(store, participant)
    _memory_report(extract.rebuild(store, participant, _extractor(extractor, extract_model, settings)), as_json)


@memory_group.command("show")
@click.option("--participant", "-p", required=True)
@click.option("--all", "show_all", is_flag=True, help="Superseded claims and cells too.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@common
@guarded("participant")
def memory_show(participant, show_all, as_json, settings):
    """Everything remembered: claims, preference cells, persona items, file memory (with sources)."""
    from memory import cells, claims, filememory, persona

    store = open_store(settings)
    known_participant(store, participant, need_consent=False)
    cl = claims.all_(store, participant) if show_all else claims.current(store, participant)
    ce = cells.all_(store, participant) if show_all else cells.current(store, participant)
    pe = persona.all_(store, participant) if show_all else persona.current(store, participant)
    if as_json:
        click.echo(json.dumps({
            "claims": [c.public() for c in cl], "cells": [c.public() for c in ce],
            "persona": [x.public() for x in pe],
            "file": [line.public() for line in filememory.lines(store, participant)],
            "file_versions": filememory.versions(store, participant),
        }, ensure_ascii=False, indent=1))
        return
    click.echo("## Claims")
    for c in cl:
        window = f"{c.from_dayid}..{c.to_dayid or ''}"
        click.echo(f"[{c.id}] {c.text}  ({c.category}, {c.confidence:.2f}, {c.verdict}, {c.status}, "
                   f"{window}, sources {', '.join(c.source_dayids)})")
    click.echo("\n## Preference cells")
    for c in ce:
        click.echo(f"[{c.id}] {c.context}/{c.attribute} = {c.setting}  ({c.status}, sources {', '.join(c.source_dayids)})")
    click.echo("\n## Persona")
    for x in pe:
        click.echo(f"[{x.id}] {x.slot} = {x.value}: {x.text}  ({x.strength}, {x.status}, "
                   f"sources {', '.join(x.source_dayids)})")
    click.echo("\n## File memory")
    click.echo(filememory.render(store, participant))


@memory_group.command("delete")
@click.option("--participant", "-p", required=True)
@click.option("--claim", "claim_id", type=int, default=None)
@click.option("--cell", "cell_id", type=int, default=None)
@click.option("--line", "line_id", type=int, default=None)
@click.option("--persona", "persona_id", type=int, default=None)
@common
@guarded("participant")
def memory_delete(participant, claim_id, cell_id, line_id, persona_id, settings):
    """Delete one item everywhere; it is not derived again from the same messages."""
    from memory import cells, claims, filememory, persona

    store = open_store(settings)
    known_participant(store, participant, need_consent=False)
    if [claim_id, cell_id, line_id, persona_id].count(None) != 3:
        fail("give exactly one of --claim, --cell, --line, --persona")
    try:
        if claim_id is not None:
            claims.delete(store, participant, claim_id)
        elif persona_id is not None:
            persona.delete(store, participant, persona_id)
        elif cell_id is not None:
            cells.delete(store, participant, cell_id)
        else:
            filememory.delete_line(store, participant, line_id)
    except StoreError as e:
        fail(str(e))
    click.echo("deleted")


@memory_group.command("restore")
@click.option("--participant", "-p", required=True)
@click.option("--version", "version", type=int, required=True)
@common
@guarded("participant")
def memory_restore(participant, version, settings):
    """Make the file memory equal to an earlier version (recorded as a new version)."""
    from memory import filememory

    store = open_store(settings)
    known_participant(store, participant, need_consent=False)
    try:
        v = filememory.restore(store, participant, version)
    except StoreError as e:
        fail(str(e))
    click.echo(f"restored version {version} as version {v}")


@memory_group.command("export")
@click.option("--participant", "-p", required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False))
@common
@guarded("participant")
def memory_export(participant, out, settings):
    """Write profile.jsonl and persona.json (docs/FORMAT.md) under OUT. Text is not pseudonymized
    here: releases go through `companion export`. The persona holds what consolidation derived
    (memory.persona): Big Five, demographic slots, descriptions by facet, quirks."""
    from pathlib import Path

    from memory import extract, persona

    store = open_store(settings)
    known_participant(store, participant, need_consent=False)
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    rows = extract.profile_rows(store, participant)
    with open(d / "profile.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    p = persona.persona(store, participant)
    (d / "persona.json").write_text(json.dumps(p, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    click.echo(f"wrote {len(rows)} claims to {d / 'profile.jsonl'} and a persona ({len(p['big_five'])} Big Five "
               f"traits, {len(p['slots'])} slots, {len(p['descriptions'])} descriptions, {len(p['quirks'])} quirks) "
               f"to {d / 'persona.json'}")
