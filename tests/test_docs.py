"""Docs and code cannot drift apart: every setting and every command is documented in README.md."""

from __future__ import annotations

import re
from pathlib import Path

import click

from companion.cli import main
from companion.settings import Settings

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def command_paths(group: click.Group, ctx: click.Context, prefix: str = "companion") -> list[str]:
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        path = f"{prefix} {name}"
        if isinstance(cmd, click.Group):
            out += command_paths(cmd, click.Context(cmd, parent=ctx, info_name=name), path)
        else:
            out.append(path)
    return out


def _documented(path: str) -> bool:
    # "companion memory show" is documented as such, or inside a code line "companion memory consolidate|rebuild"
    words = path.split()
    pattern = r"\s+".join(re.escape(w) if i < len(words) - 1 else rf"(?:[\w-]+\|)*{re.escape(w)}\b"
                          for i, w in enumerate(words))
    return re.search(pattern, README) is not None


def test_every_setting_is_in_the_configuration_table():
    table = README[README.index("## Configuration"):]
    missing = [f"COMPANION_{name.upper()}" for name in Settings.model_fields
               if f"`COMPANION_{name.upper()}`" not in table]
    assert missing == [], f"settings missing from README's configuration table: {missing}"


def test_every_command_is_documented():
    ctx = click.Context(main, info_name="companion")
    paths = command_paths(main, ctx)
    assert "companion consent withdraw" in paths  # the walk reaches nested groups
    missing = [p for p in paths if not _documented(p)]
    assert missing == [], f"commands missing from README.md: {missing}"
