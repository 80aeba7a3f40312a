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
from .urls import check_ledger_url

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


def resolve_ledger_url(url: str | None, workdir: Path, *, source: str = "ledger_url") -> str:
    """``url``, else ``$WAYMARK_LEDGER_URL``, else the embedded default; checked.

    Raises :class:`~prefect_waymark.errors.LedgerUrlError` (naming ``source``, or
    ``$WAYMARK_LEDGER_URL``) for a malformed URL or one whose ledger keeps no record.
    """
    if url:
        return check_ledger_url(url, source=source)
    env = os.environ.get(LEDGER_ENV)
    if env:
        return check_ledger_url(env, source=f"${LEDGER_ENV}")
    return default_ledger_url(workdir)


def open_ledger(url: str, *, create: bool = True) -> Ledger:
    """Open (and with ``create``, initialise) the ledger at ``url``.

    A malformed URL, or one whose ledger keeps no record (in-memory SQLite, a server URL without
    a database), raises :class:`~prefect_waymark.errors.LedgerUrlError` before anything opens.
    """
    check_ledger_url(url)
    from .sql_ledger import SqlLedger

    return SqlLedger(url, create=create)


def open_reader(url: str) -> LedgerReader:
    """Open an existing ledger for reading only; creates nothing.

    A SQLite file is read through the standard library (no SQLAlchemy import); other URLs
    open a :class:`SqlLedger` without creating tables.
    """
    from .sqlite_reader import SqliteReader, sqlite_path

    check_ledger_url(url)
    if sqlite_path(url) is not None:
        return SqliteReader(url)
    return open_ledger(url, create=False)


def __getattr__(name: str) -> Any:
    if name == "SqlLedger":
        from .sql_ledger import SqlLedger

        return SqlLedger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
