"""`companion bench ...`: the benchmarks (eval's `recall` and `chat`) join through the registry's
`bench_command` kind, so the app package never imports the harnesses that judge it."""

from __future__ import annotations

from companion.cli.base import PluginGroup, main


@main.group(cls=PluginGroup, kind="bench_command")
def bench():
    """Benchmarks on synthetic data or a scripted chat (your data is not touched)."""
