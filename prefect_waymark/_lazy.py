"""Lazy public names for the packages (``guards``, ``review``, ``run``, ``ledger``, ``plan``,
``results``, ``cli``): importing one module of a package loads no other, nor pydantic or Prefect.

At the package's top, below every room, since the doors (``__init__``) of rooms low and high
use it."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

__all__ = ["_lazy_exports"]


def _lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` that imports each public name from its module on first use,
    so importing one module of a package imports neither the others nor Prefect.

    ``where`` maps each name to its module, relative to ``package``."""

    def attribute(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(module, package), name)

    return attribute
