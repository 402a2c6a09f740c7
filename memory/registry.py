"""One registry for every plugin kind, fed by Python entry points.

The built-ins are registered in pyproject.toml exactly as a third party would register
theirs, so the extension point is exercised by the project itself every day.
"""

from __future__ import annotations

from importlib.metadata import entry_points

# Every plugin kind and its entry-point group: the only table of them. The app chooses among
# gates, retrievers, policies, models, IX sources and extractors by name (defaults:
# companion/settings.py); eval reads benchmarks with readers; a release writes what every
# export source gives; the CLI adds commands and bench commands from other packages.
GROUPS = {
    "gate": "companion.gates",
    "retriever": "companion.retrievers",
    "policy": "companion.policies",
    "model": "companion.models",
    "reader": "companion.readers",
    "ix_source": "companion.ix_sources",
    "extractor": "companion.extractors",
    "export_source": "companion.export_sources",
    "command": "companion.commands",
    "bench_command": "companion.bench",
}

_cache: dict[str, dict[str, object]] = {}


class RegistryError(LookupError):
    pass


def _group(kind: str) -> str:
    if kind not in GROUPS:
        raise RegistryError(f"unknown plugin kind {kind!r}; kinds are {sorted(GROUPS)}")
    return GROUPS[kind]


def _load(kind: str) -> dict[str, object]:
    if kind not in _cache:
        found = {}
        for ep in entry_points(group=_group(kind)):
            found.setdefault(ep.name, ep)
        _cache[kind] = found
    return _cache[kind]


def refresh() -> None:
    """Forget what was loaded, so plugins installed since are seen."""
    _cache.clear()


def names(kind: str) -> list[str]:
    return sorted(_load(kind))


def get(kind: str, name: str):
    eps = _load(kind)
    if name not in eps:
        raise RegistryError(f"no {kind} named {name!r}; available: {', '.join(sorted(eps)) or 'none'}")
    obj = eps[name]
    if hasattr(obj, "load") and hasattr(obj, "group"):  # still an EntryPoint: load on first use
        obj = eps[name] = obj.load()
    return obj


def create(kind: str, name: str, **params):
    return get(kind, name)(**params)
