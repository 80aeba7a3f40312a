"""The progress ledger: append-only events on SQLite (default) or PostgreSQL.

:class:`SqlLedger` loads on first use: one path, straight on the driver (``sqlite3``, psycopg
3), for both back-ends; read-only commands open one through :func:`open_reader`.

Importing this package loads no pydantic: the ledger's models, readers and writers (and
:class:`EventKind`, whose enum base lives with the models) load on first use of their name, the
driver when a ledger is opened. The hooks import it on every call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from .._lazy import _lazy_exports
from ..errors import LedgerUrlError
from .urls import check_ledger_url, shown_url

if TYPE_CHECKING:
    from .base import Hold, Ledger, LedgerReader
    from .event_kinds import EventKind
    from .events import ProgressEvent
    from .pin import LedgerPin
    from .pin import pinned_url as pinned_url
    from .schema import SCHEMA_VERSION
    from .sql_ledger import SqlLedger
    from .step_state import StepState

__all__ = [
    "SCHEMA_VERSION",
    "EventKind",
    "Hold",
    "Ledger",
    "LedgerPin",
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


def resolve_ledger_url(
    url: str | None,
    workdir: Path,
    *,
    source: str = "ledger_url",
    pin: LedgerPin | None = None,
    pin_source: str = "the plan file",
) -> str:
    """The ledger URL of a run, checked: the plan's pinned ledger (``pin``, the plan file's
    ``ledger:``), else ``url``, else ``$WAYMARK_LEDGER_URL``, else the embedded default.

    A required pin wins and refuses a ``url`` that names another ledger; a pin that is not
    required yields to ``url`` and, when its variable or block is missing, falls back.
    Raises :class:`~prefect_waymark.errors.LedgerUrlError` (naming ``source``, the pin, or
    ``$WAYMARK_LEDGER_URL``) for a malformed URL, one whose ledger keeps no record, a pinned
    ledger that cannot be had or is contradicted.
    """
    if pin is not None:
        from .pin import pinned_url

        pinned = pinned_url(pin, pin_source)
        if pinned is not None and (not url or url == pinned):
            return pinned
        if pinned is not None and pin.required:
            raise LedgerUrlError(
                f"{source} names the ledger {shown_url(url or '')!r}, but the plan pins "
                f"{shown_url(pinned)!r} ({pin.describe(pin_source)}); nothing ran. Leave "
                f"{source} out: a run of this plan uses its pinned ledger"
            )
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
    The URL's password is masked in everything this process stores or sends from now on.
    """
    check_ledger_url(url)
    from .._masking import remember_secret
    from .sql_ledger import SqlLedger
    from .urls import ledger_target

    remember_secret(ledger_target(url).password)

    return SqlLedger(url, create=create)


def open_reader(url: str) -> LedgerReader:
    """Open an existing ledger for reading only: a :class:`SqlLedger` that creates, migrates
    and writes nothing when it opens (a missing ledger raises
    :class:`~prefect_waymark.errors.LedgerNotFound`)."""
    return open_ledger(url, create=False)


__getattr__ = _lazy_exports(
    __name__,
    {
        "EventKind": ".event_kinds",
        "Hold": ".base",
        "Ledger": ".base",
        "LedgerReader": ".base",
        "ProgressEvent": ".events",
        "LedgerPin": ".pin",
        "pinned_url": ".pin",
        "SCHEMA_VERSION": ".schema",
        "SqlLedger": ".sql_ledger",
        "StepState": ".step_state",
    },
)
