"""Reads of events without their bulky data, for readers that never look at it.

A ``run_started`` whose plan hash differs from the last run's (a plan's first, the first after
an edit) carries the hash of each step (``step_hashes``: ~75 bytes a step, 750 KB for a
10,000-step plan; ledgers written before :mod:`.run_hashes` hold them in every run). The plan
page, the metrics, a run's marker and its run id read run_started events at every run: with the
hashes, each of those reads grows by that much per such run in the plan's history.
:func:`light_events` leaves them out (in the database, on SQLite) and filters on the run in SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .base import LedgerReader
from .events import EventKind, ProgressEvent
from .schema import EVENTS, event_from_row, kind_names

__all__ = ["HEAVY_KEYS", "light_events"]

#: What :func:`light_events` leaves out of the events' data.
HEAVY_KEYS = ("step_hashes",)
#: The kinds whose data may hold :data:`HEAVY_KEYS` (and is written by waymark: valid JSON).
_HEAVY_KINDS = (EventKind.run_started.value,)


def light_events(
    ledger: LedgerReader,
    plan_id: str,
    kinds: Iterable[EventKind | str],
    *,
    run_id: str | None = None,
    after_seq: int = 0,
) -> list[ProgressEvent]:
    """``ledger.events(plan_id, after_seq=..., kinds=...)`` of ``run_id`` only (if given), each
    without :data:`HEAVY_KEYS` in its data."""
    from .sql_ledger import SqlLedger

    kinds = list(kinds)
    if isinstance(ledger, SqlLedger) and ledger._lean is not None:  # a SQLite file
        return _sqlite_events(ledger, plan_id, kinds, run_id, after_seq)
    return [
        _without_heavy(e)
        for e in ledger.events(plan_id, after_seq=after_seq, kinds=kinds)
        if run_id is None or e.run_id == run_id
    ]


def _without_heavy(ev: ProgressEvent) -> ProgressEvent:
    if not any(k in ev.data for k in HEAVY_KEYS):
        return ev
    data = {k: v for k, v in ev.data.items() if k not in HEAVY_KEYS}
    return ev.model_copy(update={"data": data})


def _sqlite_events(
    ledger: Any, plan_id: str, kinds: list[EventKind | str], run_id: str | None, after_seq: int
) -> list[ProgressEvent]:
    names = kind_names(kinds)
    heavy = ", ".join(f"'$.{k}'" for k in HEAVY_KEYS)
    light = ", ".join("?" for _ in _HEAVY_KINDS)
    data = (
        f"CASE WHEN kind IN ({light}) AND json_valid(data) = 1 "
        f"THEN json_remove(data, {heavy}) ELSE data END AS data"
    )
    columns = ", ".join(data if c == "data" else c for c in EVENTS.columns)
    where = f"plan_id = ? AND seq > ? AND kind IN ({', '.join('?' for _ in names)})"
    params: list[Any] = [*_HEAVY_KINDS, plan_id, after_seq, *names]
    if run_id is not None:
        where, params = f"{where} AND run_id = ?", [*params, run_id]
    sql = f"SELECT {columns} FROM {EVENTS.name} WHERE {where} ORDER BY seq"
    with ledger._lean.read() as lean:
        # (A run_started whose data SQLite cannot read as JSON keeps its keys: dropped here.)
        return [_without_heavy(event_from_row(r)) for r in lean.raw.execute(sql, params)]
