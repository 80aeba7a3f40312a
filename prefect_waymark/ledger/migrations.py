"""Versioned, transactional schema migrations of a ledger.

A ledger records its schema version in ``waymark_meta``. Opening an older ledger migrates it in
place: every step from its version to :data:`~.schema.SCHEMA_VERSION` runs in **one**
transaction together with the new version number and a record of each step
(``migration_<N>`` = when, from which version, by which release), so a migration that cannot
finish leaves the ledger exactly as it was and is refused with a message. Concurrent openers
queue on the version row (SQLite: the write lock; PostgreSQL: ``SELECT ... FOR UPDATE``) and the
later ones find nothing left to do. A ledger from a newer release is refused, never touched.

Steps:

- **2** — the ledger gets an identity: a UUID under ``ledger_id`` (new ledgers get one at
  creation). Markers record it, so a workdir whose marker names another ledger is refused.
- **3** — the events table keeps the indexes its reads use: ``(plan_id, seq)``,
  ``(plan_id, kind, seq)`` and ``(plan_id, run_id, seq)`` (the last two created if an older
  ledger lacks them), and drops ``(plan_id, step_id, seq)``, which no read used and every append
  wrote a page of. On PostgreSQL a role that may write the tables but does not own them
  migrates without that DDL (the version still moves to 3; an index left as it was changes no
  result). Release 0.2.0 refuses a ledger of schema 3 ("written by a newer
  prefect-waymark"), as every release refuses a newer schema.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..errors import LedgerError
from .schema import LEDGER_ID_KEY, SCHEMA_VERSION, SCHEMA_VERSION_KEY
from .sql import EVENT_INDEXES, EVENTS, INSERT_META, META_VALUE, UPDATE_META, index_statements

if TYPE_CHECKING:
    from .connection import DbConnection as Connection

__all__ = ["MIGRATIONS", "Migration", "migrate", "new_ledger_meta"]


@dataclass(frozen=True)
class Migration:
    """One step: the version it brings a ledger to, what it does (for the record), and how."""

    to_version: int
    what: str
    apply: Callable[[Connection], None]


def _meta_value(conn: Connection, key: str) -> str | None:
    row = conn.execute(META_VALUE, {"p_key": key}).first()
    return None if row is None else str(row.value)


def _set_meta(conn: Connection, key: str, value: str) -> None:
    if _meta_value(conn, key) is None:
        conn.execute(INSERT_META, {"key": key, "value": value})
    else:
        conn.execute(UPDATE_META, {"p_key": key, "value": value})


def _add_identity(conn: Connection) -> None:
    if _meta_value(conn, LEDGER_ID_KEY) is None:
        conn.execute(INSERT_META, {"key": LEDGER_ID_KEY, "value": str(uuid.uuid4())})


#: The events index schema 3 drops.
DROPPED_INDEX = "ix_waymark_events_plan_step_seq"


def _index_names(conn: Connection) -> set[str]:
    """The events table's indexes as the database has them."""
    if conn.backend == "sqlite":
        q = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = :t"
    else:
        q = (
            "SELECT indexname FROM pg_indexes WHERE tablename = :t "
            "AND schemaname = ANY (current_schemas(false))"
        )
    return {str(name) for name in conn.execute(q, {"t": EVENTS}).scalars()}


def _index_ddl(conn: Connection, statement: str) -> None:
    """One index statement; on PostgreSQL a role that does not own the table (runs with
    read/write grants, a DBA owning the tables) is let through without it: the indexes make
    reads and appends cheaper, they change no result."""
    if conn.backend == "sqlite":
        conn.execute_raw(statement)
        return
    conn.execute_raw("SAVEPOINT waymark_index")
    try:
        conn.execute_raw(statement)
    except Exception as exc:
        if getattr(exc, "sqlstate", None) != _INSUFFICIENT_PRIVILEGE:
            raise
        conn.execute_raw("ROLLBACK TO SAVEPOINT waymark_index")
    conn.execute_raw("RELEASE SAVEPOINT waymark_index")


_INSUFFICIENT_PRIVILEGE = "42501"


def _event_indexes(conn: Connection) -> None:
    """Only the statements needed, looked up first: a ledger that has its indexes takes no DDL."""
    have = _index_names(conn)
    for name, statement in zip(EVENT_INDEXES, index_statements(), strict=True):
        if name not in have:
            _index_ddl(conn, statement)
    if DROPPED_INDEX in have:
        _index_ddl(conn, f"DROP INDEX IF EXISTS {DROPPED_INDEX}")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(2, "a ledger identity (ledger_id)", _add_identity),
    Migration(
        3,
        "the events indexes its reads use (plan, kind and run; the step index dropped)",
        _event_indexes,
    ),
)


def _release() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prefect-waymark")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return "unknown"


def new_ledger_meta() -> dict[str, str]:
    """The meta rows of a ledger created now: the current version and a fresh identity."""
    return {
        SCHEMA_VERSION_KEY: str(SCHEMA_VERSION),
        LEDGER_ID_KEY: str(uuid.uuid4()),
        "created": json.dumps(
            {"at": datetime.now(timezone.utc).isoformat(), "by": _release()}, sort_keys=True
        ),
    }


def migrate(conn: Connection, found: int, where: str) -> int:
    """Bring the ledger on ``conn`` (in a transaction holding the version row) from version
    ``found`` to :data:`SCHEMA_VERSION`; return the version it is at now.

    Raises :class:`LedgerError` if a step fails; the caller's transaction then rolls back and
    the ledger is unchanged.
    """
    steps = [m for m in MIGRATIONS if found < m.to_version <= SCHEMA_VERSION]
    at = datetime.now(timezone.utc).isoformat()
    version = found
    for step in sorted(steps, key=lambda m: m.to_version):
        try:
            step.apply(conn)
            record = {"at": at, "from": version, "what": step.what, "by": _release()}
            _set_meta(conn, f"migration_{step.to_version}", json.dumps(record, sort_keys=True))
        except Exception as exc:
            raise LedgerError(
                f"cannot migrate the ledger {where} from schema version {found} to "
                f"{SCHEMA_VERSION} (step {step.to_version}: {step.what}): "
                f"{type(exc).__name__}: {exc}; nothing was changed (a migration is one "
                "transaction). Nothing ran; the ledger still works with the prefect-waymark "
                "release that wrote it."
            ) from exc
        version = step.to_version
    if version != found:
        _set_meta(conn, SCHEMA_VERSION_KEY, str(version))
    return version
