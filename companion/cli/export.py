"""`companion export`: anonymized releases, their ledger and recalls."""

from __future__ import annotations

import click

from companion.cli.access import guarded
from companion.cli.base import common, fail, main, open_store
from memory.store import StoreError


@main.command("export")
@click.option("--out", "out", default=None, type=click.Path(file_okay=False),
              help="Release folder to write (benchmark format).")
@click.option("--participants", default=None,
              help="Comma-separated participants (default: everyone who consented to export).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the probe sample and the surrogates.")
@click.option("--deny-list", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Researcher-supplied identifiers, one a line (optionally KIND<TAB>term).")
@click.option("--recent-window", type=int, default=None, help="Default: the configured recent window.")
@click.option("--probe-share", type=float, default=0.1, show_default=True,
              help="Share of participant messages drawn (blind to need) as proportional probes.")
@click.option("--overwrite", is_flag=True, help="Replace an earlier release at --out.")
@click.option("--reissue", default=None, metavar="RELEASE",
              help="Write RELEASE again to --out without the participants who withdrew since (same U-numbers).")
@click.option("--exclude", "exclude", multiple=True, metavar="[PARTICIPANT:]DAYID",
              help="Leave this message (or claim id) out of the release; counted in the manifest. "
                   "PARTICIPANT: is needed when several are exported. Repeatable.")
@click.option("--allow", "allow", multiple=True, metavar="TEXT",
              help="A reviewed false positive: TEXT is no identifier, never replaced or refused; recorded "
                   "in the manifest with --allowed-by. Repeatable.")
@click.option("--allowed-by", default=None, metavar="NAME",
              help="Who reviewed the --allow texts (default: this machine's user name).")
@click.option("--ledger", "show_ledger", is_flag=True, help="List every release: folder, state, U-numbers.")
@click.option("--recalls", is_flag=True, help="List releases holding someone who has withdrawn since.")
@common
@guarded("researcher")
def export_cmd(out, participants, seed, deny_list, recent_window, probe_share, overwrite, reissue, exclude, allow,
               allowed_by, show_ledger, recalls, settings):
    """Write an anonymized release for participants who consented to export; refuse it if a gate fails."""
    from consent import export as exporter
    from consent import ledger

    if show_ledger or recalls:
        if out or reissue:
            fail("--ledger and --recalls only list; do not combine them with --out or --reissue")
        store = open_store(settings)
        if show_ledger:
            for r in ledger.releases(store.conn):
                who = ", ".join(m["pseudonym"] + (" (withdrawn)" if m["withdrawn_at"] else "") for m in r["members"])
                again = f", re-issue of {r['reissue_of']}" if r["reissue_of"] else ""
                click.echo(f"{r['release']}  {r['created_at'][:16]}  {r['state']}{again}  {r['folder']}  [{who}]")
        if recalls:
            todo = ledger.recalls(store, exporter.eligible(store))
            for r in todo:
                click.echo(f"recall {r['release']} at {r['folder']}: withdrawn {', '.join(r['withdrawn'])}; "
                           f"re-issue with: companion export --reissue {r['release']} --out NEW_DIR")
            if not todo:
                click.echo("no release holds anyone who has withdrawn")
        return
    if not out:
        fail("--out is required to write a release")
    names = [p.strip() for p in participants.split(",") if p.strip()] if participants else None
    if allow and not allowed_by:
        import getpass

        allowed_by = getpass.getuser()
    try:
        r = exporter.export(open_store(settings), out, names, seed=seed, deny_list=deny_list,
                            recent_window=settings.recent_window if recent_window is None else recent_window,
                            probe_share=probe_share, overwrite=overwrite, reissue=reissue, exclude=list(exclude),
                            allow=list(allow), allowed_by=allowed_by, show_progress=None)
    except exporter.ReleaseRefused as e:
        fail(str(e))
    except (StoreError, FileExistsError, ValueError) as e:
        fail(str(e))
    for path in r["cleaned"]:
        click.echo(f"removed {path}: an unfinished export's staging folder (it never passed the gates)")
    for pid, c in r["participants"].items():
        left = r["excluded"].get(pid)
        click.echo(f"{pid}: {c['messages']} messages, {c['chat_rows']} probe candidates, {c['claims']} claims"
                   + (f" ({left['messages']} messages, {left['claims']} claims left out)" if left else ""))
    if r["allowed"]:
        click.echo(f"allowed as no identifier (in the manifest): {', '.join(map(repr, r['allowed']))}")
    again = f" (re-issue of {r['reissue_of']})" if r["reissue_of"] else ""
    click.echo(f"release {r['release']}{again} written to {r['path']} ({r['surrogates']} surrogates, "
               "map kept in the database)")
