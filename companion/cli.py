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


class _Main(click.Group):
    """The top-level group; other packages' commands (eval's `eval` and `gates`) join through
    the `companion.commands` entry points when a command is looked up, not at import time."""

    _plugins_loaded = False

    def _load_plugins(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            from importlib.metadata import entry_points

            for ep in entry_points(group="companion.commands"):
                if ep.name not in self.commands:
                    self.add_command(ep.load(), ep.name)

    def list_commands(self, ctx):
        self._load_plugins()
        return super().list_commands(ctx)

    def get_command(self, ctx, name):
        self._load_plugins()
        return super().get_command(ctx, name)


@click.group(cls=_Main)
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
@click.option("--scope", default=None,
              help="Withdraw only this scope (e.g. export) and keep chatting; without it, withdraw "
                   "entirely and erase the participant everywhere.")
@click.option("--json", "as_json", is_flag=True, help="Print the erasure report as JSON.")
@common
def consent_withdraw(participant, scope, as_json, settings):
    from consent import records

    store = open_store(settings)
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
def consent_audit(participant, limit, settings):
    """The consent audit log (no names, no text), one JSON object a line."""
    from consent import audit

    for e in audit.events(open_store(settings), participant=participant, limit=limit):
        click.echo(json.dumps(e))


@consent.command("sweep")
@click.option("--older-than-days", type=float, required=True,
              help="Delete messages and traces older than this many days.")
@common
def consent_sweep(older_than_days, settings):
    """Run the retention sweep once (the app also schedules it)."""
    from consent import retention

    try:
        r = retention.sweep(open_store(settings), older_than_days)
    except ValueError as e:
        fail(str(e))
    click.echo(f"retention sweep (before {r['cutoff']}): {r['total']['messages']} messages, "
               f"{r['total']['traces']} traces removed")


@main.command("export")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
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
@common
def export_cmd(out, participants, seed, deny_list, recent_window, probe_share, overwrite, settings):
    """Write an anonymized release for participants who consented to export; refuse it if a gate fails."""
    from consent import export as exporter

    names = [p.strip() for p in participants.split(",") if p.strip()] if participants else None
    try:
        r = exporter.export(open_store(settings), out, names, seed=seed, deny_list=deny_list,
                            recent_window=settings.recent_window if recent_window is None else recent_window,
                            probe_share=probe_share, overwrite=overwrite)
    except exporter.ReleaseRefused as e:
        fail(str(e))
    except (StoreError, FileExistsError, ValueError) as e:
        fail(str(e))
    for pid, c in r["participants"].items():
        click.echo(f"{pid}: {c['messages']} messages, {c['chat_rows']} probe candidates, {c['claims']} claims")
    click.echo(f"release {r['release']} written to {r['path']} ({r['surrogates']} surrogates, map kept in the database)")


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


@main.group()
def bench():
    """Benchmarks of the memory machinery on synthetic data (your data is not touched)."""


@bench.command("recall")
@click.option("--messages", "n_messages", type=click.IntRange(min=100), default=30000, show_default=True,
              help="Size of the synthetic conversation.")
@click.option("--queries", "n_queries", type=click.IntRange(min=1), default=200, show_default=True,
              help="Query turns timed (decision path and floor each).")
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the synthetic conversation.")
@click.option("--batch-size", type=click.IntRange(min=1), default=256, show_default=True,
              help="Messages per append_many call while ingesting.")
@click.option("--bm25-sample", type=click.IntRange(min=1), default=100, show_default=True,
              help="Queries compared with rank-bm25.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Where the bench database goes (default: a temporary directory, removed after).")
def bench_recall(n_messages, n_queries, seed, batch_size, bm25_sample, as_json, data_dir):
    """Ingest rate, decision-path latency against its floor, BM25 against rank-bm25."""
    from companion import bench as bench_mod

    result = bench_mod.run(n_messages=n_messages, n_queries=n_queries, seed=seed, data_dir=data_dir,
                           batch_size=batch_size, bm25_sample=bm25_sample,
                           progress=bench_mod.progress_to_stderr)
    click.echo(json.dumps(result) if as_json else bench_mod.render(result))


if __name__ == "__main__":
    main()
