"""The full ``waymark`` app: every command of the registry (:mod:`._registry`), each imported
from its own module. ``waymark --help``, the CLI reference (docs) and the tests use it; the
console script builds the app with the one command it runs (:func:`prefect_waymark.cli.main`)."""

from __future__ import annotations

import sys

from ._registry import build_app

__all__ = ["app"]

app = build_app()

if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
