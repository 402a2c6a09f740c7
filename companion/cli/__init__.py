"""The `companion` command. Every command takes --data-dir (env COMPANION_HOME).

One module per command group; each adds its commands to `main` (companion.cli.base) when
imported below. A new group is a module here plus one name in the import list; commands from
other packages join through the registry's `command` and `bench_command` kinds instead
(pyproject.toml entry points), so nothing here imports them. Who may run what: access.py.
"""

from __future__ import annotations

from companion.cli.access import check_participant, check_researcher, guarded
from companion.cli.base import common, fail, known_participant, main, open_store, plugin_options, with_plugins

# The command groups: importing a module attaches its commands to `main`.
from companion.cli import (  # noqa: E402,F401,I001
    actions, bench, chat, consent, export, logs, memory, plugins, researcher, serve, trial)

__all__ = ["check_participant", "check_researcher", "common", "fail", "guarded", "known_participant", "main",
           "open_store", "plugin_options", "with_plugins"]
