"""Who may run a command: the one access policy of the CLI (check_participant,
check_researcher, guarded, the failure limiter)."""

from __future__ import annotations

import functools

import click

from companion.cli.base import fail, open_store, unknown
from memory import participants


# ---------------------------------------------------------------- who may run a command
#
# A command that reads or writes one participant needs that participant's own passphrase
# (--passphrase, env COMPANION_PASSPHRASE) or the researcher credential of the data directory
# (--researcher-password, env COMPANION_RESEARCHER_PASSWORD, checked against the scrypt hash
# that `companion researcher set-password` stores in the data directory). A command over every
# participant, or a researcher operation (trials, export, audit, sweep), needs the researcher
# credential as soon as any participant has a passphrase.
# Participants created without a passphrase (`consent accept` without one, corpus ingest) stay
# open to whoever can run the CLI on the data directory: they were made by that operator, there
# is no secret of theirs to check, and they cannot sign in to the app (no passphrase matches).
# Failed checks are rate-limited per name across processes (auth.RateLimiter: counted in the
# database, like the app's sign-in guard, under their own keys "cli-participant" and
# "cli-researcher"). The CLI check guards the CLI; the data directory's file permissions remain
# what keeps a local user from opening the SQLite file directly.


def limiter(settings, kind: str):
    from companion import auth

    return auth.RateLimiter(open_store(settings), f"cli-{kind}", participants=kind == "participant")


def check_researcher_password(settings, password: str) -> None:
    from companion import auth

    stored = auth.researcher_hash(settings.data_dir)
    if stored is None:
        fail("no researcher password is set for this data directory: set one with "
             "`companion researcher set-password`")
    failures = limiter(settings, "researcher")
    wait = failures.blocked_for("researcher")
    if wait > 0:
        fail(f"too many failed researcher password checks; try again in {wait:.0f} s")
    if not auth.verify(password, stored):
        failures.failed("researcher")
        fail("wrong researcher password")
    failures.succeeded("researcher")


def check_participant(settings, participant, passphrase=None, researcher_password=None) -> dict | None:
    """Let the command go on, or fail: see the comment above. Returns the participant's row as
    it was when checked (None: no such participant), for a caller that must act on exactly it."""
    from companion import auth
    from memory import participants

    store = open_store(settings)
    try:
        record = participants.get(store, participant)
    finally:
        store.close()
    if researcher_password:
        check_researcher_password(settings, researcher_password)
        return record
    if record is None or not record["pass_hash"]:
        return record  # unknown: the command says so; no passphrase: open (see above)
    if not passphrase:
        fail(f"{participant!r} has a passphrase: give it with --passphrase or COMPANION_PASSPHRASE "
             "(or use --researcher-password)")
    failures = limiter(settings, "participant")
    wait = failures.blocked_for(participant)
    if wait > 0:
        fail(f"too many failed passphrase checks for {participant!r}; try again in {wait:.0f} s")
    if not auth.verify(passphrase, record["pass_hash"]):
        failures.failed(participant)
        fail(f"wrong passphrase for {participant!r}")
    failures.succeeded(participant)
    return record


def check_researcher(settings, researcher_password=None) -> None:
    if researcher_password:
        check_researcher_password(settings, researcher_password)
        return
    store = open_store(settings)
    try:
        protected = store.conn.execute(
            "SELECT count(*) FROM participants WHERE pass_hash IS NOT NULL").fetchone()[0]
    finally:
        store.close()
    if protected:
        fail("this command reaches participants who have a passphrase: it needs the researcher "
             "credential (--researcher-password or COMPANION_RESEARCHER_PASSWORD)")


def guarded(scope: str):
    """Put under @common. scope "participant": the --participant's own passphrase or the
    researcher credential (without --participant, as "researcher"); "participant-if-named":
    the same, but no check without --participant; "researcher": the researcher credential.
    Adds --passphrase (the participant scopes) and --researcher-password."""

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, passphrase=None, researcher_password=None, **kwargs):
            s = kwargs["settings"]
            named = kwargs.get("participant")
            if scope in ("participant", "participant-if-named") and named:
                if check_participant(s, named, passphrase, researcher_password) is None:
                    unknown(named)
            elif scope == "participant-if-named":
                pass  # nothing of anyone's (e.g. `consent show` without -p: the consent text)
            else:
                check_researcher(s, researcher_password)
                if named:  # after the credential: a name's existence is itself the researcher's to know
                    store = open_store(s)
                    try:
                        record = participants.get(store, named)
                    finally:
                        store.close()
                    if record is None:
                        unknown(named)
            return fn(*args, **kwargs)

        wrapper = click.option(
            "--researcher-password", "researcher_password", envvar="COMPANION_RESEARCHER_PASSWORD",
            default=None, help="The researcher credential (env COMPANION_RESEARCHER_PASSWORD).")(wrapper)
        if scope != "researcher":
            wrapper = click.option(
                "--passphrase", envvar="COMPANION_PASSPHRASE", default=None,
                help="The participant's own passphrase (env COMPANION_PASSPHRASE).")(wrapper)
        return wrapper

    return deco
