"""`companion chat`."""

from __future__ import annotations

import sys

import click

from companion.cli.access import guarded
from companion.cli.base import common, fail, main, open_store, plugin_options, with_plugins
from memory.store import StoreError


@main.command()
@click.option("--participant", "-p", required=True)
@click.option("--context", type=click.Choice(["work", "personal"]), default="personal", show_default=True)
@click.option("--model", default=None, help="Any litellm model string, or `echo` (default: embedded SmolLM2).")
@plugin_options
@common
@guarded("participant")
def chat(participant, context, model, gate, retriever, policy, settings):
    """Chat as PARTICIPANT. At a terminal it is interactive; otherwise one message a line."""
    from companion.turn import turn
    from consent import records as consent

    settings = with_plugins(settings, model=model, gate=gate, retriever=retriever, policy=policy)
    store = open_store(settings)
    state = consent.status(store, participant)
    if not state.accepted:
        fail(consent.refusal(participant, state))
    interactive = _is_terminal()
    # Undecodable input must reach the message check (which refuses it by name), not crash input().
    sys.stdin.reconfigure(errors="surrogateescape")
    if interactive:
        click.echo(f"Chatting as {participant} ({context}) with {settings.model}. Type quit or exit "
                   "(or Ctrl-D) to stop.")
    taken = refused = 0  # a script whose every line was refused must not look like success
    first = True
    while True:
        try:
            line = input("you> " if interactive else "")
        except EOFError:
            break
        if not line.strip():
            if interactive:
                continue
            click.echo("error: empty message skipped", err=True)
            refused += 1
            continue
        if interactive and line.strip().lower() in LEAVE_WORDS:
            break  # at a terminal these leave; a script's lines are all messages
        if first:
            # The first turn loads the embedding model and, for the embedded default, the chat model:
            # say so (on stderr, so a script's stdout stays one reply a line).
            first = False
            click.echo(f"(loading the memory index and the model {settings.model} for the first reply; "
                       "this can take a while)", err=True)
        streamed: list[str] = []
        if interactive:
            click.echo("companion> ", nl=False)

            def on_token(piece: str) -> None:
                streamed.append(piece)
                click.echo(piece, nl=False)
        else:
            on_token = None
        try:
            result = turn(store, participant, line, context=context, settings=settings, on_token=on_token)
        except (StoreError, ValueError) as e:
            click.echo(f"error: {e}", err=True)
            refused += 1
            continue
        taken += 1
        if interactive:
            said = "".join(streamed).strip()
            if not result.reply or not said:
                click.echo(f"\r{result.shown}")
            elif result.shown.startswith(said):  # the wrapper added to the model's words
                click.echo(result.shown[len(said):])
            else:  # the wrapper reshaped them (questions deferred, topics grouped ...)
                click.echo(f"\n(as delivered)\n{result.shown}")
        else:
            click.echo(one_line(result.shown))
            sys.stdout.flush()
    if refused and not taken:
        fail(f"none of the {refused} message{'s' if refused != 1 else ''} was taken")


LEAVE_WORDS = {"quit", "exit", "/quit", "/exit", ":q"}


def _is_terminal() -> bool:
    return sys.stdin.isatty()


def one_line(text: str) -> str:
    """A reply as one line of a scripted chat: backslashes and line breaks escaped (\\, \\n), so a
    reader splits replies on newlines and gets paragraphs back by unescaping."""
    return text.replace("\\", "\\\\").replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
