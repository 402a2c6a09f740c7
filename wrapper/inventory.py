"""The IX inventory: interaction-preference attributes, their settings and the companion's
actions, shipped as data (`wrapper/data/inventory.json`) and read here.

Fourteen attributes in five groups, each with discrete settings, a one-line operational
definition per setting, the kind of processing the wrapper applies (pass_through,
selective_rendering, delivery_control, execution_control), the payload field it acts on, and a
default per context: what the companion does with no memory of the participant. A context is
added by adding it to `contexts` and a default for it under every attribute.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

PROCESSING = ("pass_through", "selective_rendering", "delivery_control", "execution_control")


class InventoryError(ValueError):
    pass


@dataclass(frozen=True)
class Attribute:
    name: str
    group: str
    title: str
    definition: str
    processing: str
    settings: dict[str, str]  # setting -> operational definition
    default: dict[str, str]  # context -> setting
    field: str | None = None  # the IX tool payload field the wrapper acts on

    def check(self, setting: str) -> str:
        if setting not in self.settings:
            raise InventoryError(f"unknown setting {setting!r} of {self.name}; settings: {list(self.settings)}")
        return setting


@dataclass(frozen=True)
class Action:
    name: str
    title: str
    external: bool
    required: tuple[str, ...]
    definition: str
    outreach: bool = False


@dataclass(frozen=True)
class Inventory:
    version: str
    contexts: tuple[str, ...]
    groups: dict[str, str]
    attributes: dict[str, Attribute]
    actions: dict[str, Action]

    def attribute(self, name: str) -> Attribute:
        try:
            return self.attributes[name]
        except KeyError:
            raise InventoryError(f"unknown interaction attribute {name!r}; known: {sorted(self.attributes)}") from None

    def action(self, name: str) -> Action:
        try:
            return self.actions[name]
        except KeyError:
            raise InventoryError(f"unknown action {name!r}; known: {sorted(self.actions)}") from None

    def defaults(self, context: str) -> dict[str, str]:
        if context not in self.contexts:
            raise InventoryError(f"unknown context {context!r}; known: {list(self.contexts)}")
        return {a.name: a.default[context] for a in self.attributes.values()}


def parse(data: dict) -> Inventory:
    """Build and check an inventory from its JSON form; errors name the attribute and field."""
    try:
        contexts = tuple(data["contexts"])
        groups = dict(data["groups"])
        attributes = {}
        for name, a in data["attributes"].items():
            where = f"attribute {name!r}"
            if a["group"] not in groups:
                raise InventoryError(f"{where}: unknown group {a['group']!r}")
            if a["processing"] not in PROCESSING:
                raise InventoryError(f"{where}: processing must be one of {PROCESSING}, got {a['processing']!r}")
            if len(a["settings"]) < 2:
                raise InventoryError(f"{where}: needs at least two settings")
            for c in contexts:
                if a["default"].get(c) not in a["settings"]:
                    raise InventoryError(f"{where}: default for context {c!r} is not one of its settings")
            attributes[name] = Attribute(name, a["group"], a["title"], a["definition"], a["processing"],
                                         dict(a["settings"]), dict(a["default"]), a.get("field"))
        actions = {n: Action(n, v["title"], bool(v["external"]), tuple(v["required"]), v["definition"],
                             bool(v.get("outreach", False))) for n, v in data["actions"].items()}
    except KeyError as e:
        raise InventoryError(f"inventory is missing field {e.args[0]!r}") from None
    return Inventory(data["version"], contexts, groups, attributes, actions)


@lru_cache(maxsize=1)
def load() -> Inventory:
    text = resources.files("wrapper").joinpath("data/inventory.json").read_text(encoding="utf-8")
    return parse(json.loads(text))
