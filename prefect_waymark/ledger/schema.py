"""The ledger schema's version, and how an event becomes a row and a row an event again.

Standard library only (the event model loads when a row becomes an event): the tables
themselves and every statement are written once, in :mod:`.sql`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._masking import mask_data
from ..errors import LedgerDamaged, LedgerVersionError
from .event_kinds import EventKind

if TYPE_CHECKING:
    from .events import ProgressEvent

__all__ = [
    "LEDGER_ID_KEY",
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_KEY",
    "check_schema_version",
    "event_fields",
    "event_from_row",
    "event_values",
    "kind_names",
    "schema_version_of",
]

#: The version of this schema, stored in ``waymark_meta`` under :data:`SCHEMA_VERSION_KEY`.
#: 1: prefect-waymark 0.1.0; 2 (0.2.0): a ledger identity; 3 (0.3.0): the events table's
#: indexes are the three its reads use. :mod:`.migrations` brings older ledgers up.
SCHEMA_VERSION = 3
SCHEMA_VERSION_KEY = "schema_version"
#: The ledger's identity, a UUID written when it is created (or migrated to version 2).
LEDGER_ID_KEY = "ledger_id"


def check_schema_version(found: int, where: str) -> None:
    """Refuse a ledger whose schema was written by a newer prefect-waymark."""
    if found > SCHEMA_VERSION:
        raise LedgerVersionError(
            f"the ledger {where} has schema version {found}, written by a newer "
            f"prefect-waymark; this version reads up to {SCHEMA_VERSION}: "
            "upgrade prefect-waymark"
        )


def event_fields(row: Any) -> dict[str, Any]:
    """An event's fields from its row (a row of every column of the events table): ``at`` a
    datetime, ``data`` a dict, ``kind`` as stored (a plain string)."""
    values: dict[str, Any] = row._asdict()
    values["at"] = datetime.fromisoformat(values["at"])
    values["data"] = json.loads(values["data"])
    return values


def event_from_row(row: Any) -> ProgressEvent:
    """An event from its row (a row of every column of the events table); a row waymark could
    not have written is :class:`LedgerDamaged`, naming its ``seq`` and what is wrong."""
    from .events import ProgressEvent

    try:
        return ProgressEvent(**event_fields(row))
    except (ValueError, TypeError, KeyError) as exc:  # JSON, a time, pydantic: all ValueErrors
        raise LedgerDamaged(
            f"the ledger's event seq {getattr(row, 'seq', '?')} (plan "
            f"{getattr(row, 'plan_id', '?')!r}, kind {getattr(row, 'kind', '?')!r}) cannot be "
            f"read: {_first_line(exc)}; restore the ledger from a backup or from an export "
            "(see `waymark restore --help`)"
        ) from None


def schema_version_of(value: object, where: str) -> int:
    """The stored schema version as a number, or :class:`LedgerDamaged` naming what is there."""
    try:
        return int(str(value))
    except ValueError:
        raise LedgerDamaged(
            f"the ledger {where} has schema_version {str(value)[:40]!r} in its "
            f"waymark_meta table, not a number: it was not written by prefect-waymark or was "
            "damaged; restore it from a backup or from an export (see `waymark restore --help`)"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def event_values(ev: ProgressEvent) -> dict[str, Any]:
    """The row of a new event (``seq`` is the database's to give); ``kind`` as its plain name.

    Every event is stored through here, so here its data is masked (``_masking``): a secret a
    step printed, an error quoted or an executor wrote in a reason is stored as ``***``. A
    ``run_started``'s step hashes are left as they are (:func:`_masked`)."""
    return {
        "plan_id": ev.plan_id,
        "step_id": ev.step_id,
        "branch": ev.branch,
        "kind": (kind if type(kind := ev.kind) is EventKind else EventKind(kind)).value,
        "run_id": ev.run_id,
        "at": ev.at.isoformat(),
        "data": _DATA_JSON(_masked(ev.data)),
    }


#: Data fields whose values waymark computed itself as SHA-256 hex digests, by step id: a
#: digest holds no secret, and scanning each of a 10,000-step plan's digests for secret shapes
#: took ~0.9 s of the plan's first run (issue 36).
_DIGESTS = "step_hashes"


def _masked(data: dict[str, Any]) -> Any:
    """``data`` masked, its digests (:data:`_DIGESTS`) aside when they are digests."""
    digests = data.get(_DIGESTS)
    if not isinstance(digests, dict) or not all(map(_is_digest, digests.values())):
        return mask_data(data)
    rest = mask_data({k: v for k, v in data.items() if k != _DIGESTS})
    return {**rest, _DIGESTS: digests}


_HEX = frozenset("0123456789abcdef")


def _is_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value)


# ``json.dumps(data, default=str, sort_keys=True)`` with its encoder made once, not per event.
_DATA_JSON = json.JSONEncoder(default=str, sort_keys=True).encode


def kind_names(kinds: Iterable[EventKind | str]) -> list[str]:
    """Kinds as the plain strings stored in the ``kind`` column (for ``kind IN (...)``).

    Plain ``str``: a database driver need not know the enum (psycopg would write its name).
    """
    return [k.value if isinstance(k, EventKind) else str(k) for k in kinds]
