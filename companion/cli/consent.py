"""`companion consent ...`: read, accept, withdraw, download; the researcher's list, audit, sweep."""

from __future__ import annotations

import json

import click

import companion.cli.access as access
from companion.cli.access import guarded
from companion.cli.base import common, fail, known_participant, main, open_store
from memory.store import StoreError


@main.group()
def consent():
    """Read, accept or withdraw consent."""


@consent.command("show")
@click.option("--participant", "-p", default=None)
@common
@guarded("participant-if-named")
def consent_show(participant, settings):
    """Print the current consent text and its scopes; with -p, also that participant's consent state."""
    from consent import records

    cur = records.current()
    click.echo(f"Consent version {cur.version}; scopes: {', '.join(cur.scopes)}\n")
    click.echo(cur.text)
    if participant:
        st = records.status(open_store(settings), participant)
        state = "accepted" if st.accepted else ("re-consent needed" if st.needs_reconsent else "not given")
        click.echo(f"\n{participant}: {state}" + (f" (version {st.version}, scopes {', '.join(st.scopes)})" if st.version else ""))


@consent.command("accept")
@click.option("--participant", "-p", required=True)
@click.option("--scopes", default=None, help="Comma-separated scopes (default: all of the current text).")
@click.option("--tz", default=None, help="IANA time zone for day boundaries (default: the machine's).")
@click.option("--passphrase", envvar="COMPANION_PASSPHRASE", default=None,
              help="Passphrase for signing in to the app (env COMPANION_PASSPHRASE).")
@click.option("--researcher-password", "researcher_password", envvar="COMPANION_RESEARCHER_PASSWORD",
              default=None, help="The researcher credential (env COMPANION_RESEARCHER_PASSWORD).")
@common
def consent_accept(participant, scopes, tz, passphrase, researcher_password, settings):
    from companion import auth
    from consent import records

    # Consent goes to exactly the account that was checked: a name created by someone else
    # after the check (a sign-up in the app) is refused, not joined.
    checked = access.check_participant(settings, participant, passphrase, researcher_password)
    store = open_store(settings)
    try:
        pass_hash = auth.hash_passphrase(passphrase) if passphrase else None
        st = records.accept(store, participant,
                            scopes=tuple(s.strip() for s in scopes.split(",")) if scopes else None,
                            pass_hash=pass_hash, tz=tz, new=checked is None,
                            verified=None if checked is None else (checked["uid"], checked["pass_hash"]))
    except (StoreError, ValueError) as e:
        fail(str(e))
    click.echo(f"{participant}: consent version {st.version} accepted (scopes: {', '.join(st.scopes)})")


@consent.command("withdraw")
@click.option("--participant", "-p", required=True)
@click.option("--scope", default=None,
              help="Withdraw only this scope (e.g. export) and keep chatting; without it, withdraw "
                   "entirely and erase the participant everywhere.")
@click.option("--json", "as_json", is_flag=True, help="Print the erasure report as JSON.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (for scripts).")
@common
@guarded("participant")
def consent_withdraw(participant, scope, as_json, yes, settings):
    """Withdraw PARTICIPANT's consent. Without --scope this erases everything stored about them,
    everywhere, and cannot be undone: it asks first unless --yes is given."""
    from consent import records

    store = open_store(settings)
    if not scope and not yes:
        known_participant(store, participant, need_consent=False)  # an unknown name fails before asking
        if not click.confirm(f"Erase everything stored about {participant} (messages, memory, traces, "
                             "actions)? This cannot be undone", default=False, err=True):
            fail("nothing was erased")
    try:
        if scope:
            st = records.withdraw_scope(store, participant, scope.strip())
            click.echo(f"{participant}: scope {scope} withdrawn; remaining scopes: {', '.join(st.scopes) or 'none'}")
            return
        report = records.withdraw(store, participant)
    except StoreError as e:
        fail(str(e))
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=1))
    else:
        click.echo(f"{participant}: consent withdrawn; nothing more will be stored.")
        click.echo(report.message())


@consent.command("download")
@click.option("--participant", "-p", required=True)
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="File to write (JSON); '-' prints it.")
@common
@guarded("participant")
def consent_download(participant, out, settings):
    """All the participant's data as one JSON file."""
    from consent import access

    store = open_store(settings)
    try:
        data = access.download(store, participant)
    except StoreError as e:
        fail(str(e))
    text = json.dumps(data, ensure_ascii=False, indent=1)
    if out == "-":
        click.echo(text)
        return
    from pathlib import Path

    Path(out).write_text(text + "\n", encoding="utf-8")
    click.echo(f"{participant}: {len(data['messages'])} messages, {len(data['traces'])} traces written to {out}",
               err=True)


@consent.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
@guarded("researcher")
def consent_list(as_json, settings):
    """Every participant with their consent state (the researcher's view)."""
    from consent import access

    rows = access.participants_view(open_store(settings))
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    for r in rows:
        click.echo(f"{r['participant']:<16} {r['consent']:<18} v{r['version'] or '-':<3} "
                   f"scopes={','.join(r['scopes']) or '-':<22} messages={r['messages']}")


@consent.command("audit")
@click.option("--participant", "-p", default=None, help="Only this participant's events.")
@click.option("--limit", type=int, default=None)
@common
@guarded("participant")
def consent_audit(participant, limit, settings):
    """The consent audit log (no names, no text), one JSON object a line."""
    from consent import audit

    for e in audit.events(open_store(settings), participant=participant, limit=limit):
        click.echo(json.dumps(e))


@consent.command("sweep")
@click.option("--older-than-days", type=float, required=True,
              help="Delete messages and traces older than this many days.")
@common
@guarded("researcher")
def consent_sweep(older_than_days, settings):
    """Run the retention sweep once (the app also schedules it)."""
    from consent import retention

    try:
        r = retention.sweep(open_store(settings), older_than_days)
    except ValueError as e:
        fail(str(e))
    click.echo(f"retention sweep (before {r['cutoff']}): {r['total']['messages']} messages, "
               f"{r['total']['traces']} traces removed")
