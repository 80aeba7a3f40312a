"""The ledger's storage schema, defined once: its tables, their columns, and how a row becomes a
record again.

Standard library only (the event model loads when a row becomes an event), so the stdlib reader
(:mod:`.sqlite_reader`) builds its SQL from it without importing SQLAlchemy or pydantic. The
SQLModel tables (:mod:`._tables`) take their names from here and are checked against these
columns when they load; :class:`.SqlLedger` and the reader turn rows into events with the same
functions below, and projection rows into step states with
:func:`.step_state.states_by_step` (:mod:`.plain_rows` without pydantic).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import LedgerVersionError
from .event_kinds import EventKind

if TYPE_CHECKING:
    from .events import ProgressEvent

__all__ = [
    "EVENTS",
    "HOLDS",
    "LEDGER_ID_KEY",
    "META",
    "RECEIPTS",
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_KEY",
    "STEPS",
    "TABLES",
    "TableDef",
    "check_schema_version",
    "event_fields",
    "event_from_row",
    "event_values",
    "kind_names",
]

#: The version of this schema, stored in ``waymark_meta`` under :data:`SCHEMA_VERSION_KEY`.
#: 1: prefect-waymark 0.1.0; 2 (0.2.0): a ledger identity. :mod:`.migrations` brings older
#: ledgers up.
SCHEMA_VERSION = 2
SCHEMA_VERSION_KEY = "schema_version"
#: The ledger's identity, a UUID written when it is created (or migrated to version 2).
LEDGER_ID_KEY = "ledger_id"


@dataclass(frozen=True)
class TableDef:
    """A table's name and its columns, in their order in the table."""

    name: str
    columns: tuple[str, ...]

    def select(self, where: str, tail: str = "") -> str:
        """``SELECT <every column> FROM <table> WHERE <where> <tail>`` (for the stdlib reader)."""
        return f"SELECT {', '.join(self.columns)} FROM {self.name} WHERE {where} {tail}".rstrip()


META = TableDef("waymark_meta", ("key", "value"))
#: Append-only progress events; ``data`` is the kind's payload as JSON.
EVENTS = TableDef(
    "waymark_events", ("seq", "plan_id", "step_id", "branch", "kind", "run_id", "at", "data")
)
#: The projection: one row per step, ``state`` is a :class:`StepState` as JSON.
STEPS = TableDef("waymark_steps", ("plan_id", "step_id", "last_seq", "state"))
#: The single in_progress slot of each (plan, branch); columns in the order of ``Hold``'s fields.
HOLDS = TableDef(
    "waymark_holds",
    ("plan_id", "branch", "step_id", "run_id", "host", "pid", "since", "lease_until"),
)
#: Intents and receipts of irreversible actions; the rest of a record is ``data`` (JSON).
RECEIPTS = TableDef(
    "waymark_receipts", ("key", "plan_id", "step_id", "action", "state", "run_id", "data")
)
TABLES = (META, EVENTS, STEPS, HOLDS, RECEIPTS)


def check_schema_version(found: int, where: str) -> None:
    """Refuse a ledger whose schema was written by a newer prefect-waymark."""
    if found > SCHEMA_VERSION:
        raise LedgerVersionError(
            f"the ledger {where} has schema version {found}, written by a newer "
            f"prefect-waymark; this version reads up to {SCHEMA_VERSION}: "
            "upgrade prefect-waymark"
        )


def event_fields(row: Sequence[Any]) -> dict[str, Any]:
    """An event's fields from its row (the values of :data:`EVENTS`'s columns, in their
    order): ``at`` a datetime, ``data`` a dict, ``kind`` as stored (a plain string)."""
    values = dict(zip(EVENTS.columns, row, strict=True))
    values["at"] = datetime.fromisoformat(values["at"])
    values["data"] = json.loads(values["data"])
    return values


def event_from_row(row: Sequence[Any]) -> ProgressEvent:
    """An event from its row: the values of :data:`EVENTS`'s columns, in their order."""
    from .events import ProgressEvent

    return ProgressEvent(**event_fields(row))


def event_values(ev: ProgressEvent) -> dict[str, Any]:
    """The row of a new event (``seq`` is the database's to give); ``kind`` as its plain name."""
    return {
        "plan_id": ev.plan_id,
        "step_id": ev.step_id,
        "branch": ev.branch,
        "kind": (kind if type(kind := ev.kind) is EventKind else EventKind(kind)).value,
        "run_id": ev.run_id,
        "at": ev.at.isoformat(),
        "data": _DATA_JSON(ev.data),
    }


# ``json.dumps(data, default=str, sort_keys=True)`` with its encoder made once, not per event.
_DATA_JSON = json.JSONEncoder(default=str, sort_keys=True).encode


def kind_names(kinds: Iterable[EventKind | str]) -> list[str]:
    """Kinds as the plain strings stored in the ``kind`` column (for ``kind IN (...)``).

    Plain ``str``: a database driver need not know the enum (psycopg would write its name).
    """
    return [k.value if isinstance(k, EventKind) else str(k) for k in kinds]
