"""The ``waymark`` command line. Prefect is imported only by the commands that run plans."""

from __future__ import annotations

from .app import app

__all__ = ["app", "main"]


def main() -> None:
    app()
