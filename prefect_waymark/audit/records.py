"""The lines of an audit export (``waymark export --format jsonl``), schema version 1.

One JSON object per line, each with a ``type``:

- ``header`` (the first line, once): ``schema_version``, ``plan_id``, ``ledger_id`` and
  ``ledger`` (the exported ledger's identity and URL, password masked), ``exported_at``,
  ``exported_by`` (the prefect-waymark release), ``last_seq``, ``counts`` (``events`` — every
  event line, markers included —, ``markers``, ``receipts``) and ``kinds`` (events per kind);
- ``event``: one ledger event — ``seq``, ``kind``, ``step_id``, ``branch``, ``run_id``, ``at``
  (ISO 8601, UTC), ``data`` (the kind's payload); in ``seq`` order;
- ``marker``: a ``marker_written`` event (an execution marker), the same fields as ``event``;
  it appears once, as this line (``jq 'select(.type == "marker")'`` lists the markers);
- ``receipt``: one row of the receipts table (intent and receipt of an irreversible action):
  the fields of :class:`~prefect_waymark.ledger.receipts.ReceiptRecord` but ``plan_id``
  (the header's).

Events then receipts; a field is always present (``null`` when empty).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from ..ledger.events import EventKind, ProgressEvent
from ..ledger.receipts import ReceiptRecord, ReceiptState
from ..ledger.restored_refs import SEQ_MAX
from ..models import EVIDENCE, OBJECTIVE, OUTPUT_TAIL, REASON, TextLimit
from ..plan.spec import ID_MAX, ID_PATTERN

__all__ = [
    "SCHEMA_VERSION",
    "Counts",
    "EventLine",
    "HeaderLine",
    "ReceiptLine",
    "StepId",
    "data_problem",
    "event_line",
    "header_line",
    "receipt_line",
]

#: The version of the export's line format; a restore reads this version only.
SCHEMA_VERSION = 1


def _text(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError("expected an ISO 8601 time with its timezone, as a string")
    return value


def _aware(value: str) -> str:
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("expected an ISO 8601 time with its timezone") from None
    if when.utcoffset() is None:
        raise ValueError("expected an ISO 8601 time with its timezone (this one has none)")
    return value


#: A time: an ISO 8601 string with its timezone (not a number: no guessing of its unit).
Time = Annotated[AwareDatetime, BeforeValidator(_text)]
#: The same, kept as the text it was (the receipts table stores its times as text).
TimeText = Annotated[StrictStr, AfterValidator(_aware)]
Seq = Annotated[StrictInt, Field(ge=1, le=SEQ_MAX)]
#: A step id (a branch, an action name) as the plan file holds it.
StepId = Annotated[StrictStr, Field(pattern=ID_PATTERN, max_length=ID_MAX)]
_STEP_IDS: TypeAdapter[list[str]] = TypeAdapter(list[StepId])

#: Kinds whose ``reason`` a person gave (``--reason``: fail, block, skip, review, rerun, close);
#: the reasons a run writes (a guard's stop, an interruption) are its own.
_PERSONS_REASON = frozenset(
    {
        EventKind.step_blocked,
        EventKind.step_skipped,
        EventKind.step_rerun_requested,
        EventKind.step_review_accepted,
        EventKind.plan_aborted,
        EventKind.plan_closed,
    }
)
#: Payload fields holding step ids: a run's lists, an import's completed steps.
_STEP_LISTS = ("executed_steps", "cached_steps", "failed_steps", "interrupted_steps", "completed")


def _texts(kind: EventKind, data: dict[str, Any]) -> list[tuple[str, Any, TextLimit]]:
    """(field path, value, its limit) of each text in ``data`` that has one."""
    found: list[tuple[str, Any, TextLimit]] = [
        ("output_tail", data.get("output_tail"), OUTPUT_TAIL)
    ]
    found.append(("note", data.get("note"), REASON))
    if kind in _PERSONS_REASON:
        found.append(("reason", data.get("reason"), REASON))
    for key in (
        ("evidence", "given", "acceptance") if kind == EventKind.plan_closed else ("evidence",)
    ):
        items = data.get(key)
        if isinstance(items, dict):
            found += [(f"{key}.{item}", text, EVIDENCE) for item, text in items.items()]
    contract = data.get("contract")
    if isinstance(contract, dict):
        found.append(("contract.objective", contract.get("objective"), OBJECTIVE))
    return found


def data_problem(kind: EventKind, data: dict[str, Any]) -> str | None:
    """What in an event's payload is past the limits the plan file, a check-in or a run holds it
    to (a text too long, a step id outside the id pattern), as ``data.FIELD: what``; or None."""
    for where, value, limit in _texts(kind, data):
        if isinstance(value, str) and (why := limit.problem(value)) is not None:
            return f"data.{where}: {why}"
    for key in _STEP_LISTS:
        if key not in data:
            continue
        try:
            _STEP_IDS.validate_python(data[key])
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            at = "".join(f"[{p}]" for p in err["loc"])
            return f"data.{key}{at}: {err['msg']} (a step id as the plan file holds it)"
    return None


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    events: StrictInt = Field(ge=0)
    markers: StrictInt = Field(ge=0)
    receipts: StrictInt = Field(ge=0)


class HeaderLine(BaseModel):
    """The first line: what was exported, from where, when, and how many lines follow."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["header"]
    schema_version: StrictInt
    plan_id: str = Field(pattern=ID_PATTERN, max_length=ID_MAX)
    ledger_id: str | None = Field(min_length=1, max_length=256)
    ledger: str | None
    exported_at: Time
    exported_by: str | None
    last_seq: StrictInt = Field(ge=0, le=SEQ_MAX)
    counts: Counts
    kinds: dict[str, StrictInt]


class EventLine(BaseModel):
    """An ``event`` or ``marker`` line."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["event", "marker"]
    seq: Seq
    kind: EventKind
    step_id: StepId | None
    branch: StepId | None
    run_id: str | None = Field(max_length=64)
    at: Time
    data: dict[str, Any]

    def to_event(self, plan_id: str) -> ProgressEvent:
        return ProgressEvent(
            seq=self.seq,
            plan_id=plan_id,
            kind=self.kind,
            step_id=self.step_id,
            branch=self.branch,
            run_id=self.run_id,
            at=self.at,
            data=self.data,
        )


class ReceiptLine(BaseModel):
    """A ``receipt`` line: every field of a receipts row (``null`` where empty) but
    ``plan_id``, within the table's column sizes."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["receipt"]
    key: str = Field(min_length=1, max_length=400)
    step_id: StepId
    action: StepId
    state: ReceiptState
    run_id: str = Field(max_length=64)
    token: str
    claims: StrictInt = Field(ge=0, le=SEQ_MAX)
    intent_at: TimeText
    intent_by: str | None
    host: str | None
    pid: StrictInt | None
    outcome: str | None
    external_id: str | None
    response_hash: str | None
    result: Any
    settled_at: TimeText | None
    settled_by: str | None
    source: str | None
    note: str | None

    def to_record(self, plan_id: str) -> ReceiptRecord:
        return ReceiptRecord(plan_id=plan_id, **self.model_dump(exclude={"type"}))


def _release() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"prefect-waymark {version('prefect-waymark')}"
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return None


def header_line(
    plan_id: str,
    *,
    ledger_id: str | None,
    ledger: str | None,
    exported_at: datetime,
    last_seq: int,
    kinds: dict[str, int],
    receipts: int,
) -> dict[str, Any]:
    return {
        "type": "header",
        "schema_version": SCHEMA_VERSION,
        "plan_id": plan_id,
        "ledger_id": ledger_id,
        "ledger": ledger,
        "exported_at": exported_at.isoformat(),
        "exported_by": _release(),
        "last_seq": last_seq,
        "counts": {
            "events": sum(kinds.values()),
            "markers": kinds.get(EventKind.marker_written.value, 0),
            "receipts": receipts,
        },
        "kinds": kinds,
    }


def event_line(ev: ProgressEvent) -> dict[str, Any]:
    marker = ev.kind == EventKind.marker_written
    return {
        "type": "marker" if marker else "event",
        "seq": ev.seq,
        "kind": EventKind(ev.kind).value,
        "step_id": ev.step_id,
        "branch": ev.branch,
        "run_id": ev.run_id,
        "at": ev.at.isoformat(),
        "data": ev.data,
    }


def receipt_line(rec: ReceiptRecord) -> dict[str, Any]:
    return {"type": "receipt", **rec.model_dump(mode="json", exclude={"plan_id"})}
