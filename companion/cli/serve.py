"""`companion serve`: the app."""

from __future__ import annotations

import sys
import threading

import click

from companion.cli.base import common, fail, main, plugin_options, with_plugins


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

    from companion import gateway

    settings = with_plugins(settings, host=host, port=port, model=model, gate=gate, retriever=retriever,
                            policy=policy, researcher_password=researcher_password)
    resolved = gateway.resolve(settings.model)
    embedded = resolved.startswith("local/")
    click.echo(f"companion: model {resolved}" + (
        " (the embedded demo model: small, it loses the thread; see \"Connecting a real model\" in the README)"
        if embedded else ""))
    from memory.store import describe_database

    click.echo(f"companion: data in {settings.data_dir}, database {describe_database()}")
    if embedded:
        from companion.backends import local

        click.echo("companion: loading the model ...")
        try:
            local.load(resolved)  # now, once, not inside the first participant's turn
        except local.LocalModelError as e:
            fail(str(e))
    for line in describe_tools(settings):
        click.echo(line)
    url = _url(settings.host, settings.port)
    click.echo(f"companion: starting on {url} ...")
    sys.stdout.flush()
    threading.Thread(target=_say_ready, args=(settings.host, settings.port, url), daemon=True).start()
    app.serve(settings)


def describe_tools(settings) -> list[str]:
    """Where requests go and whether the tool path is on: the probe runs here, at start (not in the
    first participant's turn), and its result is what every turn uses (companion.toolprobe)."""
    from companion import toolprobe

    url = toolprobe.base_url(settings.model)
    lines = [f"companion: requests go to {url or 'the provider endpoint litellm knows for this model'}"]
    choice = toolprobe.choose(settings.model, settings.tools, settings.timeout)
    on = "on" if choice.path == "model" else "off"
    lines.append(f"companion: tools {on} (COMPANION_TOOLS={settings.tools}): {choice.why}")
    return lines


def _say_ready(host: str, port: int, url: str, wait: float = 300.0) -> None:
    """Print the ready line once the app answers on its port (app.serve blocks until Ctrl-C)."""
    import socket
    import time

    target = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((target, port), timeout=1):
                click.echo(f"companion: ready at {url} (Ctrl-C to stop)")
                sys.stdout.flush()
                return
        except OSError:
            time.sleep(0.2)


def _url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"
