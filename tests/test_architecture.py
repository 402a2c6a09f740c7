"""The import directions of docs/DESIGN.md, held by a test: every import of the product counts,
also those inside functions and string targets ("pkg.module:attr") handed to a scheduler or a
registry. A forbidden direction or a cycle between modules fails with the places named."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("companion", "memory", "wrapper", "consent", "eval")
# Which other packages each package may import (docs/DESIGN.md, "Layout"). The live app never
# depends on eval; memory and wrapper import no other package of ours.
ALLOWED = {
    "companion": {"memory", "wrapper", "consent"},
    "consent": {"memory"},
    "eval": {"companion", "memory", "wrapper", "consent"},
    "memory": set(),
    "wrapper": set(),
}
_TARGET = re.compile(r"([a-z_]+(?:\.[a-z_]+)+):[A-Za-z_]\w*")


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports_of(source: str, module: str) -> set[str]:
    """Project modules named by `source`'s imports (relative ones resolved against `module`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level] if node.level else []
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.add(name)
            # `from memory import cells` imports the module memory.cells
            found.update(f"{name}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _TARGET.fullmatch(node.value)
            if m:
                found.add(m.group(1))
    return {n for n in found if n.split(".")[0] in PARTS}


def graph() -> dict[str, set[str]]:
    files = [p for part in PARTS for p in (ROOT / part).rglob("*.py")]
    modules = {_module(p): p for p in files}
    edges: dict[str, set[str]] = defaultdict(set)
    for mod, path in modules.items():
        for name in imports_of(path.read_text(encoding="utf-8"), mod):
            # keep the longest prefix that is a module of ours
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != mod:
                edges[mod].add(name)
    return edges


def forbidden(edges: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, targets in edges.items():
        a = mod.split(".")[0]
        for t in sorted(targets):
            b = t.split(".")[0]
            if a != b and b not in ALLOWED[a]:
                bad.append(f"{mod} imports {t} ({a} -> {b} is not a direction of the design)")
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_checker_sees_function_level_imports_and_string_targets():
    src = "def f():\n    from wrapper import actions\n\nJOB = 'companion.scheduler:run'\n"
    assert imports_of(src, "memory.x") == {"wrapper", "wrapper.actions", "companion.scheduler"}
    assert forbidden({"memory.x": {"wrapper.actions"}}) == [
        "memory.x imports wrapper.actions (memory -> wrapper is not a direction of the design)"]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_imports_follow_the_design():
    assert forbidden(graph()) == []


def test_no_import_cycles_between_modules():
    assert cycles(graph()) == []


def test_migrations_are_numbered_in_order_and_unique():
    # The list order is the application order on a new database; a number out of place or used
    # twice means two branches wrote the same step, or a reader will misjudge which came first.
    from memory.migrations import MIGRATIONS

    names = [fn.__name__ for fn in MIGRATIONS]
    numbers = [int(re.match(r"m(\d{3})_", n).group(1)) for n in names]
    assert len(set(names)) == len(names), f"a migration name is used twice: {names}"
    assert len(set(numbers)) == len(numbers), f"a migration number is used twice: {names}"
    assert numbers == sorted(numbers), f"migrations out of order: {names}"
