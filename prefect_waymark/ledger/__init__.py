"""The progress ledger: append-only events on SQLite (default) or PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

from .base import SCHEMA_VERSION, Hold, Ledger
from .sql_ledger import SqlLedger
from .step_state import StepState

__all__ = [
    "SCHEMA_VERSION",
    "Hold",
    "Ledger",
    "SqlLedger",
    "StepState",
    "default_ledger_url",
    "open_ledger",
    "resolve_ledger_url",
]

LEDGER_ENV = "WAYMARK_LEDGER_URL"


def default_ledger_url(workdir: Path) -> str:
    """The embedded default: ``<workdir>/.waymark/ledger.db`` (SQLite)."""
    return f"sqlite:///{(workdir / '.waymark' / 'ledger.db').resolve()}"


def resolve_ledger_url(url: str | None, workdir: Path) -> str:
    """``url``, else ``$WAYMARK_LEDGER_URL``, else the embedded default."""
    return url or os.environ.get(LEDGER_ENV) or default_ledger_url(workdir)


def open_ledger(url: str, *, create: bool = True) -> Ledger:
    """Open (and with ``create``, initialise) the ledger at ``url``."""
    return SqlLedger(url, create=create)
