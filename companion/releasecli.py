"""`companion release check` and `companion annotate`: the release toolkit's commands.

They work on a release folder's files (file permissions guard it, as for any copy of a release);
only `release check --surrogate-map`, which reads the exporting store's originals, needs the
researcher credential.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from companion.cli import check_researcher, common, fail, open_store


@click.group("release")
def release():
    """Check a written release (benchmark format) mechanically."""


@release.command("check")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--surrogate-map", is_flag=True,
              help="Also look for every original of the export's surrogate map (reads this data directory's "
                   "store; needs the researcher credential).")
@click.option("--researcher-password", envvar="COMPANION_RESEARCHER_PASSWORD", default=None)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@common
def release_check(folder, surrogate_map, researcher_password, as_json, settings):
    """Run every named check; exit 1 if any fails, 2 if the folder is not a release that can be
    read (a link, FIFO, device or unknown file in it, a file that is no JSON rows, a broken manifest)."""
    from consent import releasecheck

    originals = None
    if surrogate_map:
        check_researcher(settings, researcher_password)
        try:
            rid = json.loads((Path(folder) / releasecheck.MANIFEST).read_text(encoding="utf-8")).get("release")
        except (OSError, ValueError):
            rid = None
        originals = releasecheck.originals_from_store(open_store(settings), rid) if rid else None
        if originals is None:
            fail(f"release {rid!r} was not exported from {settings.data_dir}: no surrogate map to check against")
    report = releasecheck.check(folder, originals, show_progress=None)
    if as_json:
        click.echo(json.dumps(report.summary(), ensure_ascii=False, indent=2))
    else:
        for c in releasecheck.CHECKS:
            bad = report.failed(c)
            click.echo(f"{c:<12} {'ok' if not bad else f'FAILED ({len(bad)})'}")
            for f in bad:
                click.echo(f"    {f.file}" + (f" line {f.row}" if f.row else "") + f": {f.message}")
        for n in report.notes:
            click.echo(f"note: {n}")
        if originals is not None:
            click.echo(f"note: looked for {len(originals)} originals of the surrogate map")
        if report.unreadable:
            click.echo(f"error: {folder} is not a release that can be read (see files and schema above)", err=True)
    sys.exit(0 if report.ok else 2 if report.unreadable else 1)


@click.group("annotate")
def annotate():
    """Annotate a release's pending chat probes, stage by stage (A-E), then finalize."""


def _err(fn):
    import functools

    from consent.annotate import AnnotationError

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except AnnotationError as e:
            fail(str(e))

    return wrapper


def _read_input(value: str | None) -> dict:
    raw = value if value is not None else sys.stdin.read()
    if value is not None and value.startswith("@"):
        raw = open(value[1:], encoding="utf-8").read()
    try:
        data = json.loads(raw)
    except ValueError as e:
        fail(f"input is not JSON ({e})")
    if not isinstance(data, dict):
        fail("input must be a JSON object (one stage's fields, or {\"A\": {...}, \"B\": {...}})")
    return data


@annotate.command("list")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--annotator", default=None, help="Show this annotator's progress per probe.")
@click.option("--all", "show_all", is_flag=True, help="Every probe, not only pending ones.")
@click.option("--json", "as_json", is_flag=True)
@_err
def annotate_list(folder, annotator, show_all, as_json):
    """Probes waiting for annotation."""
    from consent import annotate as A

    st = A.state(folder, annotator) if annotator else {}
    rows = []
    for p in A.probes(folder, status=None if show_all else "pending"):
        stages = st.get(p.key, {})
        rows.append({"key": p.key, "stratum": p.row.get("stratum"), "annotation": p.row.get("annotation"),
                     "text": p.text, "stages": {s: ("confirmed" if r.get("confirmed") else "draft")
                                                for s, r in sorted(stages.items())}})
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for r in rows:
        done = " ".join(f"{s}:{v}" for s, v in r["stages"].items())
        click.echo(f"{r['key']:<16} {r['stratum']:<13} {r['annotation']:<8} {done:<30} {r['text'][:60]}")


@annotate.command("show")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.argument("key")
@click.option("--query", "-q", default=None, help="Only history messages holding every word of this.")
@click.option("--annotator", default=None)
@click.option("--json", "as_json", is_flag=True)
@_err
def annotate_show(folder, key, query, annotator, as_json):
    """One probe: its text, the recent window, the (searched) history and the stages set so far."""
    from consent import annotate as A

    p = A.probe(folder, key)
    out = {"key": p.key, "probe": {"dayid": p.row["probe_dayid"], "text": p.text},
           "stratum": p.row.get("stratum"), "annotation": p.row.get("annotation"),
           "recent_window": A.window(folder, p), "history": A.history(folder, p, query),
           "claims": list(p.claims.values()),
           "stages": A.state(folder, annotator, key).get(key, {}) if annotator else {}}
    if as_json:
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    click.echo(f"probe {p.key} ({out['stratum']}, {out['annotation']}): {p.text}")
    click.echo("recent window:")
    for r in out["recent_window"]:
        click.echo(f"  {r['dayid']:<10} {r['sender']:<9} {r['text']}")
    click.echo(f"history{f' matching {query!r}' if query else ''}: {len(out['history'])} messages")
    for r in out["history"]:
        click.echo(f"  {r['dayid']:<10} {r['sender']:<9} {r['text']}")
    for s, r in out["stages"].items():
        click.echo(f"stage {s} ({'confirmed by ' + r['by'] if r.get('confirmed') else 'draft by ' + str(r.get('drafted_by'))}): "
                   f"{json.dumps({k: v for k, v in r.items() if k not in ('key', 'stage', 'seq', 'by', 'at')}, ensure_ascii=False)}")


@annotate.command("set")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.argument("key")
@click.argument("stage", required=False)
@click.option("--annotator", required=True)
@click.option("--input", "value", default=None,
              help="JSON (or @file); default: stdin. With STAGE, that stage's fields; without, {\"A\": {...}, ...}.")
@_err
def annotate_set(folder, key, stage, annotator, value):
    """Set (and confirm) one stage, or several in order."""
    from consent import annotate as A

    data = _read_input(value)
    recs = [A.set_stage(folder, key, stage, data, annotator)] if stage else A.set_many(folder, key, data, annotator)
    for r in recs:
        click.echo(f"{key} stage {r['stage']} confirmed by {annotator}"
                   + (f" (final check: {r['checks']})" if r["stage"] == "E" else ""))


@annotate.command("confirm")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.argument("key")
@click.argument("stage")
@click.option("--annotator", required=True)
@click.option("--note", default=None, help="Replace the draft's note with your own.")
@_err
def annotate_confirm(folder, key, stage, annotator, note):
    """A person confirms a model's draft of a stage."""
    from consent import annotate as A

    r = A.confirm(folder, key, stage, annotator, note)
    click.echo(f"{key} stage {r['stage']} confirmed by {annotator}")


@annotate.command("draft")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.argument("key")
@click.argument("stage")
@click.option("--annotator", required=True)
@click.option("--model", default=None, help="A capable litellm model (default: the configured one; "
                                            "the embedded demo model is refused).")
@common
@_err
def annotate_draft(folder, key, stage, annotator, model, settings):
    """A configured capable model drafts a stage; it counts only once a person confirms it."""
    from companion import gateway
    from consent import annotate as A

    model = model or settings.model
    A.refuse_model(model)

    def complete(prompt: str) -> str:
        try:
            return gateway.complete(model, [{"role": "user", "content": prompt}], timeout=settings.timeout,
                                    max_tokens=600, retries=settings.retries).text
        except gateway.ModelError as e:
            fail(f"{model}: {e}")

    r = A.draft(folder, key, stage, annotator, model, complete)
    click.echo(json.dumps({k: v for k, v in r.items() if k not in ("key", "at")}, ensure_ascii=False))
    click.echo(f"draft stored, not confirmed: `companion annotate confirm {folder} {key} {stage.upper()} "
               f"--annotator {annotator}`")


@annotate.command("finalize")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--annotator", required=True, help="Whose confirmed annotations go into the release.")
@_err
def annotate_finalize(folder, annotator):
    """Write the fully confirmed probes into chat_gold.jsonl as scoreable rows, if `release check` passes."""
    from consent import annotate as A

    r = A.finalize(folder, annotator, show_progress=None)
    click.echo(f"{len(r['finalized'])} probes finalized ({r['scoreable']} scoreable); "
               f"{len(r['unfinished'])} started but unfinished; release check passed")
    for n in r["notes"]:
        click.echo(f"note: {n}")


@annotate.command("agreement")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--annotators", required=True, help="Two annotators, comma-separated.")
@click.option("--json", "as_json", is_flag=True)
@_err
def annotate_agreement(folder, annotators, as_json):
    """Cohen's kappa between two annotators on locus, tier and demand."""
    from consent import annotate as A

    names = [a.strip() for a in annotators.split(",") if a.strip()]
    if len(names) != 2:
        fail(f"--annotators takes exactly two names, got {names}")
    r = A.agreement(folder, *names)
    if as_json:
        click.echo(json.dumps(r, ensure_ascii=False, indent=2))
        return
    for k in ("locus", "tier", "demand"):
        x = r[k]
        kappa = f"{x['kappa']:.3f}" if x["kappa"] is not None else f"not computed ({x['reason']})"
        obs = f"{x['observed']:.3f}" if x["observed"] is not None else "-"
        click.echo(f"{k:<7} n={x['n']:<4} observed={obs:<6} kappa={kappa}"
                   + (f"  disagree: {' '.join(x['disagreements'])}" if x["disagreements"] else ""))
