"""What every command shares: --data-dir and the settings, plugin options, one `open_store`
that closes with the command, `fail`, and the top-level group whose other commands join through
the registry's `command` kind."""

from __future__ import annotations

import functools
import sys

import click

import companion  # noqa: F401  (no-telemetry environment first)
from companion import settings as settings_mod
from memory import registry
from memory.store import Store


def common(fn):
    """--data-dir and --model on every command; builds Settings and the Store."""

    @click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
                  help="Data directory (default: $COMPANION_HOME or ~/.companion).")
    @click.option("--database", "database", default=None, metavar="URL",
                  help="postgresql://user:pass@host/db to share one PostgreSQL (with pgvector) between "
                       "processes; default: $COMPANION_DATABASE_URL, else the SQLite file in the data directory.")
    @functools.wraps(fn)
    def wrapper(*args, data_dir=None, database=None, **kwargs):
        if database is not None:
            import os

            from memory.store import ENV, database_url

            try:
                database_url(database)
            except Exception as e:  # noqa: BLE001  (a bad URL is named, nothing is opened)
                fail(str(e))
            os.environ[ENV] = database  # every store this command (and what it starts) opens
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
    for kind in ("gate", "retriever", "policy"):
        if chosen.get(kind):
            try:
                registry.get(kind, chosen[kind])
            except LookupError as e:
                fail(str(e))
    return settings.model_copy(update={k: v for k, v in chosen.items() if v})


def open_store(s) -> Store:
    """The data directory's store, closed when the running command ends (also when it fails)."""
    store = Store(s.data_dir)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(store.close)
    return store


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def unknown(participant: str) -> None:
    """The one refusal of a -p/--participant naming nobody (exit 2), in every command."""
    fail(f"unknown participant {participant!r}: no participant of that name in this data directory "
         f"(a new participant starts with `companion consent accept --participant {participant}`)")


def known_participant(store, participant, need_consent: bool = True):
    """Fail unless PARTICIPANT exists (and, with need_consent, consented to the memory scope)."""
    from consent import records as consent_records
    from memory import participants

    if not participants.exists(store, participant):
        unknown(participant)
    if need_consent and not consent_records.status(store, participant).allows("memory"):
        fail(f"{participant!r} has not consented to the memory scope: nothing is derived")


class PluginGroup(click.Group):
    """A group whose further commands are a registry kind (memory.registry): other packages'
    commands join when a command is looked up, not at import time."""

    def __init__(self, *args, kind: str = "command", **kwargs):
        super().__init__(*args, **kwargs)
        self.kind = kind
        self._plugins_loaded = False

    def _load_plugins(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            for name in registry.names(self.kind):
                if name not in self.commands:
                    self.add_command(registry.get(self.kind, name), name)

    def list_commands(self, ctx):
        self._load_plugins()
        return super().list_commands(ctx)

    def get_command(self, ctx, name):
        self._load_plugins()
        return super().get_command(ctx, name)


# Eval's `eval` and `gates` join as the registry's `command` kind.
@click.group(cls=PluginGroup, kind="command")
@click.version_option(companion.__version__)
def main():
    """A local-first chat companion with instrumented memory."""
