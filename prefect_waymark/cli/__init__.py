"""The ``waymark`` command line. Prefect is imported only by the commands that run plans; typer
and the command modules load when ``app`` is first asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .commands import app

__all__ = ["app", "main"]


def main() -> None:
    """The ``waymark`` console script."""
    from .commands import app

    app()


__getattr__ = _lazy_exports(__name__, {"app": ".commands"})
