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


def plugin_options(fn):
    """--gate, --retriever, --policy: registered plugins chosen by name."""
    for kind in ("policy", "retriever", "gate"):
        fn = click.option(f"--{kind}", default=None, help=f"A registered {kind}, by name (see `companion plugins`).")(fn)
    return fn


def with_plugins(settings, **chosen):
    from memory import registry

    for kind in ("gate", "retriever", "policy"):
        if chosen.get(kind):
            try:
                registry.get(kind, chosen[kind])
            except LookupError as e:
                fail(str(e))
    return settings.model_copy(update={k: v for k, v in chosen.items() if v})


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
@plugin_options
@common
def chat(participant, context, model, gate, retriever, policy, settings):
    """Chat as PARTICIPANT. At a terminal it is interactive; otherwise one message a line."""
    from companion.turn import turn
    from consent import records as consent

    settings = with_plugins(settings, model=model, gate=gate, retriever=retriever, policy=policy)
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
@common
def plugins(settings):
    """Every registered gate, retriever, policy and model backend, by name."""
    from memory import registry

    for kind in ("gate", "retriever", "policy", "model"):
        rows = []
        for name in registry.names(kind):
            obj = registry.get(kind, name)
            doc = (obj.__doc__ or "").strip().splitlines()
            tag = " (eval only)" if getattr(obj, "eval_only", False) else ""
            rows.append(f"  {name:<16}{doc[0] if doc else ''}{tag}")
        click.echo(f"{kind.replace('policy', 'policie')}s:\n" + "\n".join(rows))


@main.group()
def trial():
    """Live gate trials: fix an arm per participant, or randomize per turn with a seed."""


@trial.command("set")
@click.option("--participant", "-p", required=True)
@click.option("--gate", required=True)
@click.option("--retriever", default=None, help="Default: the configured retriever.")
@click.option("--policy", default=None, help="Default: the configured policy.")
@common
def trial_set(participant, gate, retriever, policy, settings):
    from companion import trials

    try:
        trials.set_arm(open_store(settings), participant, gate, retriever or settings.retriever,
                       policy or settings.policy)
    except (StoreError, LookupError) as e:
        fail(str(e))
    click.echo(f"{participant}: every turn runs gate {gate}")


@trial.command("randomize")
@click.option("--participant", "-p", required=True)
@click.option("--gates", required=True, help="Comma-separated gate names, e.g. lexical,dense,never.")
@click.option("--seed", type=int, required=True)
@click.option("--retriever", default=None)
@click.option("--policy", default=None)
@common
def trial_randomize(participant, gates, seed, retriever, policy, settings):
    from companion import trials

    names = [g.strip() for g in gates.split(",") if g.strip()]
    try:
        trials.randomize(open_store(settings), participant, names, seed, retriever or settings.retriever,
                         policy or settings.policy)
    except (StoreError, LookupError) as e:
        fail(str(e))
    click.echo(f"{participant}: each turn draws one of {', '.join(names)} (blocked, seed {seed})")


@trial.command("show")
@click.option("--participant", "-p", required=True)
@common
def trial_show(participant, settings):
    from companion import trials

    click.echo(json.dumps(trials.current(open_store(settings), participant)))


@trial.command("clear")
@click.option("--participant", "-p", required=True)
@common
def trial_clear(participant, settings):
    from companion import trials

    trials.clear(open_store(settings), participant)
    click.echo(f"{participant}: back to the configured arm")


@main.command()
@click.option("--host", default=None)
@click.option("--port", type=int, default=None)
@click.option("--model", default=None, help="Any litellm model string, or `echo`.")
@plugin_options
@click.option("--researcher-password", envvar="COMPANION_RESEARCHER_PASSWORD", default=None,
              help="Opens the researcher page (env COMPANION_RESEARCHER_PASSWORD); without it the page stays shut.")
@common
def serve(host, port, model, gate, retriever, policy, researcher_password, settings):
    """Serve the Gradio app (default http://127.0.0.1:7860)."""
    from companion import app

    settings = with_plugins(settings, host=host, port=port, model=model, gate=gate, retriever=retriever,
                            policy=policy, researcher_password=researcher_password)
    app.serve(settings)


def _load_command_plugins() -> None:
    # Commands of other packages (eval's `eval` and `gates`) join through entry points, so
    # the app does not import the eval package.
    from importlib.metadata import entry_points

    for ep in entry_points(group="companion.commands"):
        if ep.name not in main.commands:
            main.add_command(ep.load(), ep.name)


_load_command_plugins()

if __name__ == "__main__":
    main()
