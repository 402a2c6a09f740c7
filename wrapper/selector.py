"""Which interaction settings hold this turn, and who declared them.

Precedence per attribute: a model's IX tool call this turn > the model's declaration earlier in
the session > what the selector's source found > the inventory default for the context. Models
without tool calling (the embedded default) never declare, so the selector decides from its
source. The sources (none, cells, file, retrieval, oracle) read memory, so they are a plugin
kind of their own (`memory.ix_sources`, entry-point group `companion.ix_sources`); the app asks
the one named by `Settings.ix_source` and hands its answer here.

The result is traced the same way on both paths: {attribute: {setting, by, source}}.
"""

from __future__ import annotations

from dataclasses import dataclass

from wrapper import inventory


@dataclass(frozen=True)
class Declared:
    setting: str
    by: str  # model | selector
    source: str  # turn | session | cells | file | retrieval | oracle | default

    def public(self) -> dict:
        return {"setting": self.setting, "by": self.by, "source": self.source}


def select(context: str, source: str, found: dict[str, str], session: dict[str, str],
           declared_now: dict[str, str]) -> dict[str, Declared]:
    inv = inventory.load()
    out = {}
    for name, attr in inv.attributes.items():
        if name in declared_now:
            out[name] = Declared(attr.check(declared_now[name]), "model", "turn")
        elif name in session:
            out[name] = Declared(attr.check(session[name]), "model", "session")
        elif name in found and found[name] in attr.settings:
            out[name] = Declared(found[name], "selector", source)
        else:
            out[name] = Declared(attr.default[context], "selector", "default")
    return out


def plain(selected: dict[str, Declared]) -> dict[str, str]:
    return {a: d.setting for a, d in selected.items()}
