"""Ledger rows as plain records, without pydantic: a step's projection row as its fields, and an
event row as an event, for the readers that must start fast and the ledger's own appends.

:data:`STATE_FIELDS` is a new step's state as :meth:`StepState.model_dump` gives it (JSON
values, the model's field order); ``tests/ledger/test_plain_rows.py`` holds the two equal, and
the records read here equal the models read from the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from .event_kinds import EventKind
from .schema import event_fields
from .statuses import StepStatus

__all__ = [
    "STATE_FIELDS",
    "PlainEvent",
    "PlainState",
    "new_state_fields",
    "plain_event",
    "plain_states",
    "row_fields",
]

#: A step with no events yet: :class:`~.step_state.StepState`'s fields and defaults, in order.
STATE_FIELDS: dict[str, Any] = {
    "step_id": "",
    "branch": None,
    "status": "pending",
    "last_event": None,
    "last_at": None,
    "run_id": None,
    "attempts": 0,
    "error": None,
    "review_reason": None,
    "review_data": {},
    "def_hash": None,
    "result_key": None,
    "generation": 0,
    "cached": False,
    "interrupted": 0,
    "completed_at": None,
    "output_tail": None,
    "outputs": {},
    "receipts": [],
    "open_actions": {},
    "status_before_review": None,
    "executor": None,
    "evidence": {},
    "blocked_on": None,
    "workdir": None,
    "skipped": None,
}
_NAMES = tuple(STATE_FIELDS)
_CONTAINERS = tuple((k, v) for k, v in STATE_FIELDS.items() if isinstance(v, dict | list))


def new_state_fields(step_id: str) -> dict[str, Any]:
    """The fields of a step with no events yet (fresh containers: a fold changes them in
    place)."""
    fields = STATE_FIELDS.copy()
    for name, empty in _CONTAINERS:
        fields[name] = empty.copy()
    fields["step_id"] = step_id
    return fields


def row_fields(text: str | None, step_id: str) -> dict[str, Any] | None:
    """A projection row's ``state`` as fields (``None`` for no row or a new row's placeholder).
    A row an older version wrote may lack a newer field: it gets the default, and the fields
    come in the model's order, only the model's."""
    if not text:
        return None
    fields: dict[str, Any] = json.loads(text)
    if tuple(fields) != _NAMES:
        found, fields = fields, new_state_fields(step_id)
        fields.update((k, found[k]) for k in fields.keys() & found.keys())
    return fields


class PlainState:
    """A step's state read from its projection row without pydantic: the attributes of a
    :class:`~.step_state.StepState` (the statuses as :class:`StepStatus`), read-only by use."""

    step_id: str
    branch: str | None
    status: StepStatus
    last_event: str | None
    last_at: str | None
    run_id: str | None
    attempts: int
    error: str | None
    review_reason: str | None
    review_data: dict[str, Any]
    def_hash: str | None
    result_key: str | None
    generation: int
    cached: bool
    interrupted: int
    completed_at: str | None
    output_tail: str | None
    outputs: dict[str, str]
    receipts: list[dict[str, Any]]
    open_actions: dict[str, dict[str, Any]]
    status_before_review: StepStatus | None
    executor: str | None
    evidence: dict[str, str]
    blocked_on: str | None
    workdir: str | None
    skipped: str | None


_NONE = type(None)
_OPTIONAL_STR = (str, _NONE)
#: Each field's type as a row holds it (JSON values): a row whose values are not exactly these
#: is one the model would coerce or refuse, so :func:`plain_states` leaves it to the model.
_STATE_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(STATE_FIELDS, _OPTIONAL_STR),
    "step_id": (str,),
    "status": (str,),
    "attempts": (int,),
    "generation": (int,),
    "interrupted": (int,),
    "cached": (bool,),
    "review_data": (dict,),
    "outputs": (dict,),
    "evidence": (dict,),
    "receipts": (list,),
    "open_actions": (dict,),
}
_STATUSES = frozenset(s.value for s in StepStatus)


def _checked(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields``, their values exactly of the model's types (raises ``ValueError`` if not)."""
    for name, value in fields.items():
        if type(value) not in _STATE_TYPES[name]:
            raise ValueError(f"a projection row's {name!r} is {type(value).__name__}")
    ok = (
        fields["status"] in _STATUSES
        and fields["status_before_review"] in (None, *_STATUSES)
        and all(type(v) is str for v in fields["outputs"].values())
        and all(type(v) is str for v in fields["evidence"].values())
        and all(type(r) is dict for r in fields["receipts"])
        and all(type(a) is dict for a in fields["open_actions"].values())
    )
    if not ok:
        raise ValueError(f"a projection row of step {fields['step_id']!r} holds odd values")
    return fields


def plain_states(states_json: Iterable[str]) -> dict[str, PlainState]:
    """The projection from the ``state`` column of a plan's rows, as
    :func:`~.step_state.states_by_step` reads it, without pydantic. Raises ``ValueError`` for a
    row whose values the model would coerce or refuse (the caller then reads it with the
    model)."""
    states: dict[str, PlainState] = {}
    for text in states_json:
        fields = row_fields(text, "")
        if fields is None:
            raise ValueError("an empty projection row")
        _checked(fields)
        fields["status"] = StepStatus(fields["status"])
        if fields["status_before_review"] is not None:
            fields["status_before_review"] = StepStatus(fields["status_before_review"])
        state = object.__new__(PlainState)
        state.__dict__.update(fields)
        states[state.step_id] = state
    return states


class PlainEvent:
    """An event read from its row without pydantic: what a
    :class:`~.events.ProgressEvent` read from the same row holds."""

    __slots__ = ("at", "branch", "data", "kind", "plan_id", "run_id", "seq", "step_id")

    def __init__(self, fields: dict[str, Any]) -> None:
        self.seq: int | None = fields["seq"]
        self.plan_id: str = fields["plan_id"]
        self.kind = EventKind(fields["kind"])
        self.step_id: str | None = fields["step_id"]
        self.branch: str | None = fields["branch"]
        self.run_id: str | None = fields["run_id"]
        self.at: datetime = fields["at"]
        self.data: dict[str, Any] = fields["data"]


def plain_event(row: Sequence[Any]) -> PlainEvent:
    """The event of one :data:`~.schema.EVENTS` row."""
    return PlainEvent(event_fields(row))
