"""`companion eval preferences`: the interaction-preference track (docs/PREFERENCES.md).

`companion eval TRACK... --corpus PATH` replays corpora; a suite of personas is not a corpus, so
the preference track is a subcommand of `eval` with its own options. `EvalCommand` lets the
`eval` command keep its track arguments and still hand `eval preferences ...` to this command.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from companion.cli import common, fail


@click.command("preferences")
@click.option("--suite", "suite_path", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A probe suite (ix-prefsuite-v1 JSON; default: the shipped eval/data/prefsuite-v1.json).")
@click.option("--condition", "conditions", multiple=True,
              type=click.Choice(["none", "file", "retrieval", "cells", "oracle"]),
              help="Memory condition: what the IX selector reads (repeat the option for several).")
@click.option("--repeats", "-r", default=1, show_default=True, type=click.IntRange(min=1),
              help="Each probe runs r times, each on a fresh copy of the state at its checkpoint.")
@click.option("--out", default="prefs-report", show_default=True, type=click.Path(file_okay=False),
              help="Folder for report.md, report.json, outcomes.jsonl and the PNG plots.")
@click.option("--model", default=None, help="The companion's model (litellm string or echo; default: the configured one).")
@click.option("--simulator", default=None, metavar="MODEL",
              help="A model plays the participant (sees only the public behaviour); default: the scripted one.")
@click.option("--judge", default=None, metavar="MODEL",
              help="Judge model for BRS; without one BRS is reported as not computed.")
@click.option("--work", default=None, type=click.Path(file_okay=False),
              help="Keep the replayed stores here (an empty or new folder; default: a temporary one, deleted).")
@click.option("--oracle-row/--no-oracle-row", default=True, show_default=True,
              help="Also run the oracle condition as the report's sanity row.")
@click.option("--seed", default=0, show_default=True, help="Seeds the bootstraps.")
@click.option("--lint", "lint_only", is_flag=True, help="Only check the suite and print its problems.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Progress bars on stderr.")
@common
def preferences_cmd(suite_path, conditions, repeats, out, model, simulator, judge, work, oracle_row, seed, lint_only,
                    progress, settings):
    """Replay a preference probe suite on-policy through the turn and report PSA, CS, PET,
    carry-over, BRS and PRS (docs/METRICS.md, "Interaction preferences")."""
    from eval import prefreport, prefsuite

    if lint_only:
        try:
            suite, sha = prefsuite.load(suite_path)
        except prefsuite.SuiteError as e:
            fail(str(e))
        lint = prefsuite.lint(suite)
        click.echo(f"{suite.name} v{suite.version} (sha256 {sha[:16]}…): "
                   + ("clean" if lint.ok else f"{len(lint.problems)} problem(s)"))
        for p in lint.problems:
            click.echo(f"  {p}")
        for pid, cov in lint.coverage.items():
            click.echo(f"  {pid}: {cov}")
        words = lint.coverage.get("words", {})
        click.echo(f"  coverage (informative, not required): {words.get('corrections_read')}/{words.get('corrections')} "
                   f"correction phrasings x contexts read as their setting, {words.get('changes_read')}/"
                   f"{words.get('changes')} change transcripts read as their settings, {len(lint.leaks)} neutral "
                   "text(s) read as a preference")
        for p in lint.leaks + lint.unread:
            click.echo(f"    {p}")
        sys.exit(0 if lint.ok else 1)
    if not conditions:
        fail("give at least one --condition (none, file, retrieval, cells, oracle)")
    if model:
        settings = settings.model_copy(update={"model": model})
    try:
        doc = prefreport.run(Path(suite_path) if suite_path else None, list(conditions), Path(out), settings,
                             repeats=repeats, simulator=simulator, judge=judge,
                             work=Path(work) if work else None, seed=seed, oracle_row=oracle_row,
                             progress=progress, command=_command())
    except (prefsuite.SuiteError, ValueError, FileExistsError) as e:
        fail(str(e))
    for m in doc["metrics"]:
        if m["subset"] == "all" and m["name"] in ("psa", "cs", "pet", "carry_over"):
            v = "—" if m["value"] is None else f"{m['value']:.3f}"
            click.echo(f"{m['system']:<10}{m['name']:<11}{v} (n={m['n']})")
    for r in doc["runs"]:
        click.echo(f"{r['condition']}: {r['seconds']:.1f} s, path {'/'.join(r['paths'])}")
    for c in doc["checks"]:
        if c["ok"] is False:
            click.echo(f"CHECK FAILED: {c['check']}", err=True)
    click.echo(f"report: {Path(out) / 'report.md'}")


def _command() -> str:
    args = click.get_current_context().meta.get("eval.argv")
    return "companion eval " + shlex.join(args) if args is not None else "companion " + shlex.join(sys.argv[1:])


SUBCOMMANDS = {"preferences": preferences_cmd}


class EvalCommand(click.Command):
    """`eval TRACK... --corpus PATH` as before; `eval preferences ...` goes to its own command."""

    def parse_args(self, ctx, args):
        if args and args[0] in SUBCOMMANDS:
            sub = SUBCOMMANDS[args[0]]
            ctx.meta["eval.argv"] = list(args)
            ctx.meta["eval.subcommand"] = sub.make_context(f"{ctx.info_name} {args[0]}", list(args[1:]),
                                                                parent=ctx.parent)
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        sub_ctx = ctx.meta.pop("eval.subcommand", None)
        if sub_ctx is not None:
            with sub_ctx:
                return sub_ctx.command.invoke(sub_ctx)
        return super().invoke(ctx)

    def format_usage(self, ctx, formatter):
        super().format_usage(ctx, formatter)
        formatter.write_text("       (or: eval preferences --suite PATH --condition C ..., see `eval preferences --help`)")
