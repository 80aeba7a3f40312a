"""Which resolver reads which kind of ref: the built-ins plus the ``prefect_waymark.resolvers``
entry-point group, so users add their own kinds without changing prefect-waymark."""

from __future__ import annotations

import importlib
import threading
from importlib.metadata import entry_points
from typing import Any

from ..errors import ResolverError, UnknownRefKind
from .base import RefConfig, StateResolver

__all__ = [
    "ENTRY_POINT_GROUP",
    "UnknownRefKind",
    "config_model_for",
    "get_resolver",
    "known_kinds",
    "register_resolver",
]

ENTRY_POINT_GROUP = "prefect_waymark.resolvers"

_BUILTINS = {
    "http": "prefect_waymark.resolvers.http:HttpResolver",
    "sql": "prefect_waymark.resolvers.sql:SqlResolver",
    "git": "prefect_waymark.resolvers.git:GitResolver",
    "file": "prefect_waymark.resolvers.file:FileResolver",
    "prefect-variable": "prefect_waymark.resolvers.prefect_variable:PrefectVariableResolver",
}

_lock = threading.Lock()
_resolvers: dict[str, StateResolver] = {}
_entry_points: dict[str, str] | None = None


def _load_target(target: str) -> StateResolver:
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    resolver = obj() if isinstance(obj, type) else obj
    if not isinstance(resolver, StateResolver):
        raise ResolverError(
            f"{target} is not a state resolver (needs kind, config_model and read_version)"
        )
    return resolver


def _plugin_targets() -> dict[str, str]:
    global _entry_points
    if _entry_points is None:
        _entry_points = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return _entry_points


def register_resolver(resolver: StateResolver) -> None:
    """Add (or replace) the resolver of ``resolver.kind`` in this process."""
    with _lock:
        _resolvers[resolver.kind] = resolver


def known_kinds() -> list[str]:
    return sorted(set(_BUILTINS) | set(_plugin_targets()) | set(_resolvers))


def get_resolver(kind: str) -> StateResolver:
    """The resolver of ``kind``; plug-ins (entry points) may replace the built-ins."""
    with _lock:
        found = _resolvers.get(kind)
        if found is not None:
            return found
        target = _plugin_targets().get(kind) or _BUILTINS.get(kind)
        if target is None:
            raise UnknownRefKind(
                f"unknown state ref kind {kind!r} (known: {', '.join(known_kinds())})"
            )
        try:
            resolver = _load_target(target)
        except (ImportError, AttributeError) as exc:
            raise ResolverError(
                f"cannot load the resolver of kind {kind!r} ({target}): {exc}"
            ) from exc
        _resolvers[kind] = resolver
        return resolver


def config_model_for(kind: str) -> type[RefConfig]:
    return get_resolver(kind).config_model
