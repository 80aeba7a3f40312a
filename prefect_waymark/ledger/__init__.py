"""The progress ledger: append-only events on SQLite (default) or PostgreSQL.

:class:`SqlLedger` (SQLAlchemy) loads on first use, so read-only commands that open a SQLite
ledger through :func:`open_reader` never import SQLAlchemy.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .base import Hold, Ledger, LedgerReader
from .events import EventKind, ProgressEvent
from .schema import SCHEMA_VERSION
from .step_state import StepState

if TYPE_CHECKING:
    from .sql_ledger import SqlLedger

__all__ = [
    "SCHEMA_VERSION",
    "EventKind",
    "Hold",
    "Ledger",
    "LedgerReader",
    "ProgressEvent",
    "SqlLedger",
    "StepState",
    "default_ledger_url",
    "open_ledger",
    "open_reader",
    "resolve_ledger_url",
]

LEDGER_ENV = "WAYMARK_LEDGER_URL"


def default_ledger_url(workdir: Path) -> str:
    """The embedded default: ``<workdir>/.waymark/ledger.db`` (SQLite).

    The path is URL-quoted (SQLAlchemy unquotes it): a folder named ``a%20b`` or ``a?b`` stays
    itself.
    """
    path = (workdir / ".waymark" / "ledger.db").resolve()
    return f"sqlite:///{quote(str(path), safe='/')}"


def resolve_ledger_url(url: str | None, workdir: Path) -> str:
    """``url``, else ``$WAYMARK_LEDGER_URL``, else the embedded default."""
    return url or os.environ.get(LEDGER_ENV) or default_ledger_url(workdir)


def open_ledger(url: str, *, create: bool = True) -> Ledger:
    """Open (and with ``create``, initialise) the ledger at ``url``."""
    from .sql_ledger import SqlLedger

    return SqlLedger(url, create=create)


def open_reader(url: str) -> LedgerReader:
    """Open an existing ledger for reading only; creates nothing.

    A SQLite file is read through the standard library (no SQLAlchemy import); other URLs
    open a :class:`SqlLedger` without creating tables.
    """
    from .sqlite_reader import SqliteReader, sqlite_path

    if sqlite_path(url) is not None:
        return SqliteReader(url)
    return open_ledger(url, create=False)


def __getattr__(name: str) -> Any:
    if name == "SqlLedger":
        from .sql_ledger import SqlLedger

        return SqlLedger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
