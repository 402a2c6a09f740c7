"""`companion researcher set-password`."""

from __future__ import annotations

import click

from companion.cli.access import check_researcher_password
from companion.cli.base import common, fail, main, open_store


@main.group("researcher")
def researcher_group():
    """The researcher credential of this data directory (for the CLI)."""


@researcher_group.command("set-password")
@click.option("--new-password", envvar="COMPANION_NEW_RESEARCHER_PASSWORD", prompt=True, hide_input=True,
              confirmation_prompt=True, help="The new password (env COMPANION_NEW_RESEARCHER_PASSWORD).")
@click.option("--researcher-password", "researcher_password", envvar="COMPANION_RESEARCHER_PASSWORD",
              default=None, help="The current password, when one is set.")
@common
def researcher_set_password(new_password, researcher_password, settings):
    """Set (or change, given the current one) the researcher password; stored as a scrypt hash."""
    from companion import auth

    if auth.researcher_hash(settings.data_dir) is not None:
        if not researcher_password:
            fail("a researcher password is already set: give the current one with --researcher-password")
        check_researcher_password(settings, researcher_password)
    try:
        settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        auth.set_researcher_password(settings.data_dir, new_password)
    except ValueError as e:
        fail(str(e))
    from memory import sessions

    ended = sessions.end_researcher_sessions(open_store(settings))  # pages opened with the old one close
    click.echo(f"researcher password set for {settings.data_dir}" +
               (f"; {ended} open researcher page(s) closed" if ended else ""))
