"""The `companion` command. Every command takes --data-dir (env COMPANION_HOME)."""

from __future__ import annotations

import functools
import json
import sys

import click

import companion  # noqa: F401  (no-telemetry environment first)
from companion import settings as settings_mod
from memory.store import Store, StoreError


def common(fn):
    """--data-dir and --model on every command; builds Settings and the Store."""

    @click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
                  help="Data directory (default: $COMPANION_HOME or ~/.companion).")
    @functools.wraps(fn)
    def wrapper(*args, data_dir=None, **kwargs):
        s = settings_mod.load(home=data_dir)
        kwargs["settings"] = s
        return fn(*args, **kwargs)

    return wrapper


def open_store(s) -> Store:
    return Store(s.data_dir)


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.group()
@click.version_option(companion.__version__)
def main():
    """A local-first chat companion with instrumented memory."""


@main.command()
@click.option("--participant", "-p", required=True)
@click.option("--context", type=click.Choice(["work", "personal"]), default="personal", show_default=True)
@click.option("--model", default=None, help="Any litellm model string, or `echo` (default: embedded SmolLM2).")
@common
def chat(participant, context, model, settings):
    """Chat as PARTICIPANT. At a terminal it is interactive; otherwise one message a line."""
    from companion.turn import turn
    from consent import records as consent

    if model:
        settings = settings.model_copy(update={"model": model})
    store = open_store(settings)
    state = consent.status(store, participant)
    if not state.accepted:
        fail(consent.refusal(participant, state))
    interactive = sys.stdin.isatty()
    if interactive:
        click.echo(f"Chatting as {participant} ({context}) with {settings.model}. Ctrl-D to stop.")
    while True:
        try:
            line = input("you> " if interactive else "")
        except EOFError:
            break
        if not line.strip():
            if interactive:
                continue
            click.echo("error: empty message skipped", err=True)
            continue
        if interactive:
            click.echo("companion> ", nl=False)
            on_token = lambda piece: click.echo(piece, nl=False)  # noqa: E731
        else:
            on_token = None
        try:
            result = turn(store, participant, line, context=context, settings=settings, on_token=on_token)
        except (StoreError, ValueError) as e:
            click.echo(f"error: {e}", err=True)
            continue
        if interactive:
            click.echo("" if result.reply else f"\r{result.shown}")
        else:
            click.echo(result.shown)
            sys.stdout.flush()


@main.group()
def consent():
    """Read, accept or withdraw consent."""


@consent.command("show")
@click.option("--participant", "-p", default=None)
@common
def consent_show(participant, settings):
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
@common
def consent_accept(participant, scopes, tz, passphrase, settings):
    from companion import auth
    from consent import records

    store = open_store(settings)
    try:
        pass_hash = auth.hash_passphrase(passphrase) if passphrase else None
        st = records.accept(store, participant,
                            scopes=tuple(s.strip() for s in scopes.split(",")) if scopes else None,
                            pass_hash=pass_hash, tz=tz)
    except (StoreError, ValueError) as e:
        fail(str(e))
    click.echo(f"{participant}: consent version {st.version} accepted (scopes: {', '.join(st.scopes)})")


@consent.command("withdraw")
@click.option("--participant", "-p", required=True)
@common
def consent_withdraw(participant, settings):
    from consent import records

    try:
        records.withdraw(open_store(settings), participant)
    except StoreError as e:
        fail(str(e))
    click.echo(f"{participant}: consent withdrawn; nothing more will be stored.")


@main.command("messages")
@click.option("--participant", "-p", required=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
def messages_cmd(participant, as_json, settings):
    """The participant's messages, oldest first."""
    from memory import messages, participants

    store = open_store(settings)
    if not participants.exists(store, participant):
        fail(f"unknown participant {participant!r}")
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


@main.command()
@click.option("--host", default=None)
@click.option("--port", type=int, default=None)
@click.option("--model", default=None, help="Any litellm model string, or `echo`.")
@common
def serve(host, port, model, settings):
    """Serve the Gradio app (default http://127.0.0.1:7860)."""
    from companion import app

    settings = settings.model_copy(update={k: v for k, v in
                                           {"host": host, "port": port, "model": model}.items() if v})
    app.serve(settings)


if __name__ == "__main__":
    main()
