"""The active view of one step, folded from its events. Pure functions: the ledger applies them
on every append and :meth:`Ledger.rebuild` applies them to the whole event history."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field
from pydantic_core import to_json

from ..errors import TransitionError
from ..models import StepStatus
from .events import ACTION_EVENT_KINDS, EventKind, ProgressEvent

__all__ = [
    "StepState",
    "apply_event",
    "apply_to_fields",
    "check_status_transition",
    "folded_json",
    "has_history",
    "new_state_fields",
    "row_fields",
    "states_by_step",
]

# Which statuses each event may follow. ``None`` means any status.
_ALLOWED_FROM: dict[EventKind, frozenset[str] | None] = {
    EventKind.step_started: frozenset({"pending", "failed", "blocked"}),
    EventKind.step_attempt_failed: frozenset({"in_progress"}),
    EventKind.step_completed: frozenset({"in_progress"}),
    EventKind.step_failed: frozenset({"in_progress"}),
    EventKind.step_interrupted: frozenset({"in_progress"}),
    EventKind.step_needs_review: frozenset({"pending", "failed", "completed", "in_progress"}),
    EventKind.step_rerun_requested: frozenset({"failed", "completed", "needs_review"}),
    EventKind.step_review_accepted: frozenset({"needs_review"}),
    EventKind.step_refused: frozenset({"pending", "failed"}),
    EventKind.step_blocked: frozenset({"pending", "failed", "in_progress", "blocked"}),
    EventKind.step_skipped: frozenset({"pending", "failed", "blocked"}),
    EventKind.step_renamed: None,
    EventKind.step_stale: frozenset({"completed"}),
    EventKind.action_intent: None,
    EventKind.action_applied: None,
    EventKind.action_not_applied: None,
}

_HINTS = {
    EventKind.step_started: "a completed step runs again only after an explicit `waymark rerun`",
    EventKind.step_rerun_requested: "only a failed, completed or needs_review step can be re-run; "
    "a pending step simply runs on the next `waymark run`",
    EventKind.step_skipped: "only a pending, blocked or failed step can be skipped; a running "
    "step first ends, a step that needs review is answered with `waymark review`",
}


class StepState(BaseModel):
    """What the ledger knows about one step."""

    step_id: str
    branch: str | None = None
    status: StepStatus = StepStatus.pending
    last_event: str | None = None
    last_at: str | None = None
    run_id: str | None = None
    attempts: int = 0
    error: str | None = None
    review_reason: str | None = None
    review_data: dict[str, Any] = Field(default_factory=dict)
    def_hash: str | None = None
    result_key: str | None = None
    generation: int = 0
    cached: bool = False
    interrupted: int = 0
    completed_at: str | None = None
    output_tail: str | None = None
    outputs: dict[str, str] = Field(default_factory=dict)
    receipts: list[dict[str, Any]] = Field(default_factory=list)
    open_actions: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Actions whose intent has no receipt yet, by key."
    )
    status_before_review: StepStatus | None = None
    #: Checked-in steps (agents/): who completed it, the evidence per acceptance item, and
    #: what a ``waymark block`` said (the step it waits behind, if any).
    executor: str | None = None
    evidence: dict[str, str] = Field(default_factory=dict)
    blocked_on: str | None = None
    workdir: str | None = None  # where a checked-in step's executor made its outputs
    #: ``waymark skip``: the reason the step was left out on purpose. A skipped step's status is
    #: ``completed`` without a result or outputs, so the steps after it go on.
    skipped: str | None = None
    #: A completed step whose inputs changed after it completed: ``because`` (the upstream
    #: step), ``why``, ``by`` and ``at``. Cleared when it runs again or a review accepts it.
    stale: dict[str, Any] | None = None
    #: How many times a review's rerun gave the step's action a new idempotency key (0: the
    #: key ``plan/step/action``): an applied action is applied again only on such a rerun.
    action_round: int = 0
    #: A person accepted that this step's persisted result could not be read (``waymark review
    #: --accept``): the step stays completed and its key is kept — another folder or the result
    #: storage may still hold it — and the run-start check no longer stops on it.
    result_lost: bool = False


#: A step with no events yet: :class:`StepState`'s fields and defaults as JSON values, in order.
STATE_FIELDS: dict[str, Any] = StepState(step_id="").model_dump(mode="json")
_NAMES = tuple(STATE_FIELDS)
_CONTAINERS = tuple((k, v) for k, v in STATE_FIELDS.items() if isinstance(v, dict | list))


def has_history(state: StepState | None) -> bool:
    """Whether the ledger holds anything of the step beyond a fresh start: it ran, was stopped,
    skipped or rerun, or claimed an action (a renamed step's old id, started afresh, has
    none)."""
    if state is None:
        return False
    return bool(
        state.status != StepStatus.pending
        or state.completed_at
        or state.receipts
        or state.open_actions
        or state.attempts
        or state.interrupted
        or state.generation
    )


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


def check_status_transition(status: str | None, event: ProgressEvent) -> None:
    """Raise :class:`TransitionError` if ``event`` may not follow the step's current status
    (``None``: the step has no events yet)."""
    allowed = _ALLOWED_FROM.get(event.kind)
    current = StepStatus(status) if status is not None else StepStatus.pending
    if allowed is not None and current not in allowed:
        wanted = event.kind.removeprefix("step_")
        raise TransitionError(
            event.plan_id, event.step_id or "?", current, wanted, _HINTS.get(event.kind, "")
        )


def apply_event(state: StepState | None, event: ProgressEvent) -> StepState:
    """Return the step's state after ``event`` (the fold of :func:`apply_to_fields`). Not
    validated, as the ledger's appends are not: a rebuild never fails on an odd old value."""
    if state is None:
        fields = new_state_fields(event.step_id or "")
    else:  # a shallow copy with fresh containers: apply_to_fields changes some in place
        fields = dict(state.__dict__)
        fields["review_data"] = dict(state.review_data)
        fields["outputs"] = dict(state.outputs)
        fields["receipts"] = [dict(r) for r in state.receipts]
        fields["open_actions"] = {k: dict(v) for k, v in state.open_actions.items()}
    at = event.at.isoformat()
    apply_to_fields(fields, event.kind, at, event.branch, event.run_id, event.data)
    fields["status"] = StepStatus(fields["status"])
    if fields["status_before_review"] is not None:
        fields["status_before_review"] = StepStatus(fields["status_before_review"])
    return StepState.model_construct(**fields)


def folded_json(fields: dict[str, Any], event: ProgressEvent, at: str, data_json: str) -> str:
    """The step's row after ``event``, from its stored form (``at``, its ``data`` as written):
    the fields (a new step's: :func:`new_state_fields`) folded in place, as the row's
    ``state``."""
    apply_to_fields(fields, event.kind, at, event.branch, event.run_id, json.loads(data_json))
    # pydantic's serializer, as StepState.model_dump_json writes it (its float forms; NaN and
    # infinities as null): the row is what a rebuild writes.
    return to_json(fields, inf_nan_mode="null").decode()


def apply_to_fields(
    s: dict[str, Any],
    kind: EventKind,
    at: str,
    branch: str | None,
    run_id: str | None,
    d: dict[str, Any],
) -> None:
    """Fold one event (its kind, ISO time, branch, run and ``data``) into a step's fields, in
    place: the one definition of what each event does to a step, for the ledger's appends
    (plain fields, no model) and for :func:`apply_event` (rebuilds, replays)."""
    s["last_event"] = kind.value
    s["last_at"] = at
    if branch is not None:
        s["branch"] = branch
    if kind == EventKind.step_started:
        s["status"] = "in_progress"
        s["run_id"] = run_id
        s["attempts"] = 0
        s["error"] = None
        s["review_reason"] = None
        s["review_data"] = {}
        s["def_hash"] = d.get("def_hash", s["def_hash"])
        s["result_key"] = d.get("result_key", s["result_key"])
        s["blocked_on"] = None
        s["stale"] = None
    elif kind == EventKind.step_attempt_failed:
        s["attempts"] = int(d.get("attempt", s["attempts"] + 1))
        s["error"] = d.get("error")
        s["output_tail"] = d.get("output_tail", s["output_tail"])
    elif kind == EventKind.step_completed:
        s["status"] = "completed"
        s["cached"] = cached = bool(d.get("cached", False))
        s["attempts"] = int(d.get("attempts", s["attempts"] + (0 if cached else 1)))
        s["def_hash"] = d.get("def_hash", s["def_hash"])
        s["result_key"] = d.get("result_key", s["result_key"])
        s["completed_at"] = at
        s["error"] = None
        s["output_tail"] = d.get("output_tail", s["output_tail"])
        s["outputs"] = dict(d.get("outputs", {}))
        s["executor"] = d.get("executor")
        s["evidence"] = dict(d.get("evidence") or {})
        s["workdir"] = d.get("workdir")
        s["blocked_on"] = None
        s["skipped"] = None
        s["stale"] = None
        s["result_lost"] = False
    elif kind == EventKind.step_skipped:
        s["status"] = "completed"
        s["skipped"] = d.get("reason") or "skipped"
        s["executor"] = d.get("by")
        s["completed_at"] = at
        s["result_key"] = None
        s["outputs"] = {}
        s["error"] = None
        s["blocked_on"] = None
        s["stale"] = None
    elif kind == EventKind.step_stale:
        s["stale"] = {
            "because": d.get("because"),
            "why": d.get("why"),
            "by": d.get("by"),
            "at": at,
        }
    elif kind == EventKind.step_blocked:
        s["status"] = "blocked"
        s["blocked_on"] = d.get("on")
        s["error"] = d.get("reason") or (f"blocked behind step {d['on']}" if d.get("on") else None)
    elif kind == EventKind.step_failed:
        s["status"] = "failed"
        s["attempts"] = int(d.get("attempts", s["attempts"]))
        s["error"] = d.get("error")
        s["output_tail"] = d.get("output_tail", s["output_tail"])
    elif kind == EventKind.step_interrupted:
        s["status"] = "pending"
        s["interrupted"] += 1
        s["error"] = d.get("reason")
    elif kind == EventKind.step_needs_review:
        # A step stopped while in_progress has released its hold: accepting it means "pending".
        in_progress = s["status"] == "in_progress"
        s["status_before_review"] = "pending" if in_progress else str(s["status"])
        s["status"] = "needs_review"
        s["review_reason"] = d.get("reason")
        s["review_data"] = dict(d.get("details", {}))
    elif kind == EventKind.step_rerun_requested:
        s["status"] = "pending"
        s["generation"] += 1
        s["review_reason"] = None
        s["review_data"] = {}
        s["cached"] = False
        s["skipped"] = None
        s["stale"] = None
        if d.get("new_key"):
            s["action_round"] += 1
        s["result_lost"] = False
    elif kind == EventKind.step_review_accepted:
        s["status"] = str(
            StepStatus(d.get("resume_status") or s["status_before_review"] or "pending")
        )
        # Accepting an edited output accepts its current content as the step's output.
        review_data = s["review_data"]
        if review_data.get("stale"):  # accepted as it is: no longer stale
            s["stale"] = None
        s["outputs"].update(review_data.get("current_outputs", {}))
        if review_data.get("result_key") and s["status"] == "completed":
            # Accepting a lost result: the step stays completed and keeps its key (another
            # folder or the result storage may still hold the value: it is never erased); a
            # step that needs the value and cannot read it stops again, and `waymark rerun` is
            # the way to recompute it.
            s["result_lost"] = True
        s["review_reason"] = None
        s["review_data"] = {}
        if "def_hash" in d:
            s["def_hash"] = d["def_hash"]
        if "outputs" in d:
            s["outputs"] = dict(d["outputs"])
    elif kind == EventKind.step_refused:
        s["status"] = "failed"
        s["error"] = d.get("reason")
    elif kind == EventKind.step_renamed:
        _apply_rename(s, d)
    elif kind in ACTION_EVENT_KINDS:
        _apply_action(s, kind, at, run_id, d)


def _apply_rename(s: dict[str, Any], d: dict[str, Any]) -> None:
    """A renamed step takes its old id's state (``state``, as it was when renamed); the old id
    starts afresh (``to_step``: a step of that id added later has no history); a step renamed,
    or whose dependencies were, takes the definition hash under the new ids (``def_hash``)."""
    kept = {k: s[k] for k in ("step_id", "last_event", "last_at")}
    if isinstance(d.get("state"), dict):
        s.update((k, v) for k, v in d["state"].items() if k in s)
        s.update(kept)
    if d.get("to_step"):
        s.update(new_state_fields(str(s["step_id"])))
        s.update(kept)
    if d.get("def_hash"):
        s["def_hash"] = d["def_hash"]


def _apply_action(
    s: dict[str, Any], kind: EventKind, at: str, run_id: str | None, d: dict[str, Any]
) -> None:
    """Intents are open until settled; only applied receipts are listed in ``receipts``."""
    key = str(d.get("key"))
    if kind == EventKind.action_intent:
        s["open_actions"][key] = {
            "key": key,
            "action": d.get("action"),
            "at": at,
            "run_id": run_id,
            "by": d.get("by"),
        }
        return
    s["open_actions"].pop(key, None)
    if kind == EventKind.action_applied:
        receipt = {k: d.get(k) for k in _RECEIPT_FIELDS}
        receipt["run_id"] = run_id
        s["receipts"] = [r for r in s["receipts"] if r.get("key") != key] + [receipt]


_RECEIPT_FIELDS = (
    "key",
    "action",
    "outcome",
    "external_id",
    "response_hash",
    "at",
    "by",
    "source",
)


def states_by_step(states_json: Iterable[str]) -> dict[str, StepState]:
    """The projection from the ``state`` column of a plan's projection rows."""
    states = [StepState.model_validate_json(s) for s in states_json]
    return {s.step_id: s for s in states}
