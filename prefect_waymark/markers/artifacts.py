"""Prefect artifacts of a run. Keys carry the plan copy (:mod:`.plan_copy`):

- ``waymark-<plan>-<copy>-plan-page``: the plan page (:mod:`.plan_page`), one version per run;
- ``waymark-<plan>-<copy>-marker``: what this run did, in words (:mod:`.run_marker_page`), one
  version per run, with the run's identity in the artifact's metadata;
- ``waymark-<plan>-<copy>-steps``: a table of every step after the run;
- ``waymark-<plan>-<copy>-progress``: a progress bar updated as steps complete.

Every description is the plan's live one-line summary (``failed at check-figures · 3/6 done ·
next: check-figures``) followed by the copy (``copy 3f9a2c1d · /home/me/report``); the plan
page's starts with ``Plan page · ``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ..guards.observers import RunObserver
from ..ledger.progress_view import PlanView, StepView
from ..text.markdown import first_line
from .concurrent_sends import Send, send_all, send_soon
from .plan_copy import PlanCopy, plan_copy

if TYPE_CHECKING:
    from prefect.client.schemas.actions import ArtifactCreate

    from ..guards.base import GuardContext
    from ..ledger.base import Ledger, LedgerReader
    from ..ledger.step_state import StepState
    from ..plan.spec import StepSpec
    from ..review.gate import ReviewGate

_log = logging.getLogger("prefect_waymark.markers")

__all__ = [
    "ProgressArtifact",
    "create_send",
    "marker_metadata",
    "publish_run_artifacts",
    "read_latest_marker",
    "run_artifact_sends",
    "run_observers",
    "steps_table",
]

#: Marker fields kept in the marker artifact's metadata (Prefect keeps 500 characters a value).
_META_FIELDS = (
    "run_id",
    "flow_run_id",
    "executed_at",
    "started_at",
    "executor",
    "result",
    "started_from",
    "executed_steps",
    "failed_steps",
    "next_start",
)


_META_MAX = 480  # Prefect cuts a metadata value at 500 characters


def marker_metadata(marker: Mapping[str, Any], copy: PlanCopy) -> dict[str, str]:
    """The run's identity and boundary as artifact metadata: lists and objects as JSON. A list
    too long for one value keeps its first items and says how many there are (``<name>-count``);
    the whole marker is in the ledger and ``EXECUTION_MARKER.json``."""
    meta = copy.metadata()
    for name in _META_FIELDS:
        value = marker.get(name)
        if isinstance(value, list):
            kept = list(value)
            while kept and len(json.dumps(kept)) > _META_MAX:
                kept.pop()
            if len(kept) < len(value):
                meta[f"{name}-count"] = str(len(value))
            value = kept
        elif isinstance(value, dict):  # next_start: {step, why}; a long why is cut, not the JSON
            value = {k: v[:300] if isinstance(v, str) else v for k, v in value.items()}
        text = value if isinstance(value, str) else json.dumps(value)
        meta[name] = text[:_META_MAX]
    return meta


def _artifact(
    kind: str, key: str, data: Any, description: str, metadata: dict[str, str] | None
) -> ArtifactCreate:
    """The artifact to create, with this flow (and task) run's ids: built in the run's thread,
    sent from any (:mod:`.concurrent_sends`)."""
    from prefect.client.schemas.actions import ArtifactCreate
    from prefect.utilities.context import get_task_and_flow_run_ids

    task_run_id, flow_run_id = get_task_and_flow_run_ids()
    return ArtifactCreate(
        key=key,
        type=kind,
        description=description,
        data=data,
        metadata_=metadata,
        flow_run_id=flow_run_id,
        task_run_id=task_run_id,
    )


def create_send(what: str, artifact: ArtifactCreate) -> Send:
    """Creating ``artifact`` as a send; a failure is logged ``<what>: <error>``."""
    return Send(what, lambda client: client.create_artifact(artifact=artifact))


def run_artifact_sends(
    marker: dict[str, Any],
    view: PlanView,
    ledger: Ledger,
    states: Mapping[str, StepState],
) -> list[Send]:
    """This run's marker and step-table artifacts (inside the flow run), rendered here."""
    from ..models import utcnow
    from .plan_copy import ui_base_url
    from .run_marker_page import marker_line, render_run_marker

    copy = plan_copy(marker["plan_id"], ledger, marker["workdir"])
    description = f"{marker_line(marker, view)} — {copy.label}"
    markdown = render_run_marker(
        marker, view, states, copy=copy, now=utcnow(), ui_url=ui_base_url()
    )
    meta = marker_metadata(marker, copy)
    what = "marker artifacts not published"
    return [
        create_send(what, _artifact("markdown", copy.key("marker"), markdown, description, meta)),
        create_send(
            what,
            _artifact("table", copy.key("steps"), steps_table(view), description, copy.metadata()),
        ),
    ]


def publish_run_artifacts(
    marker: dict[str, Any],
    view: PlanView,
    ledger: Ledger,
    states: Mapping[str, StepState],
) -> None:
    """Create this run's marker and step-table artifacts (inside the flow run), side by side;
    a failure to send is logged."""
    send_all(run_artifact_sends(marker, view, ledger, states), _log)


def steps_table(view: PlanView) -> str:
    """The steps table artifact's data (JSON rows; a huge plan's says what it left out)."""
    rows = [
        {
            "step": s.id,
            "title": s.title,
            "status": str(s.status),
            "owner": s.owner or "",
            "attempts": s.attempts,
            "branch": s.branch,
            "milestone": s.milestone or "",
            "error": first_line(s.error or s.review_reason, 200),
            "last change": _local(s.last_event_at),
        }
        for s in _table_steps(view)
    ]
    if len(rows) < len(view.steps):  # a huge plan: the table says what it left out
        left = len(view.steps) - len(rows)
        more = f"{left} more steps: `waymark status` lists all"
        rows.append({**dict.fromkeys(rows[0], ""), "step": "…", "title": more})
    return json.dumps(rows)


#: The steps table lists at most this many steps (a person does not read 10,000 rows; sending
#: them cost the run and the server ~2 MB of JSON per run).
STEPS_TABLE_MAX = 1000


_FIRST = frozenset({"in_progress", "needs_review", "failed"})


def _table_steps(view: PlanView) -> list[StepView]:
    """Every step, or for a plan of more than :data:`STEPS_TABLE_MAX` steps the ones a person
    looks for first, shown in plan order: running, stopped for review and failed steps, then
    the other steps with a record (the latest first), then blocked, then pending ones."""
    if len(view.steps) <= STEPS_TABLE_MAX:
        return list(view.steps)
    steps = list(enumerate(view.steps))
    first = [p for p in steps if p[1].status in _FIRST]
    recorded = sorted(
        (p for p in steps if p[1].status not in _FIRST and p[1].last_event_at),
        key=lambda p: str(p[1].last_event_at),
        reverse=True,
    )
    rest = [p for p in steps if p[1].status not in _FIRST and not p[1].last_event_at]
    rest.sort(key=lambda p: p[1].status != "blocked")  # blocked before pending, stable
    kept = (first + recorded + rest)[:STEPS_TABLE_MAX]
    return [s for _, s in sorted(kept, key=lambda p: p[0])]


def _local(at: str | None) -> str:
    from ..text.human_time import local_stamp

    return local_stamp(at) if at else ""


def read_latest_marker(
    plan_id: str, ledger: LedgerReader, workdir: Path | str
) -> dict[str, Any] | None:
    """This copy's latest marker artifact, read back through Prefect's API: the run's identity
    and boundary (from the metadata) with the artifact's key, id, description and Markdown.
    Another copy's artifacts (another workdir or ledger, same plan id) are never returned."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    copy = plan_copy(plan_id, ledger, workdir)
    key = copy.key("marker")
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
            sort=ArtifactSort.CREATED_DESC,
            limit=20,
        )
    for art in found:
        meta = dict(art.metadata_ or {})
        if meta.get("waymark-copy") != copy.copy_id or meta.get("waymark-plan") != plan_id:
            continue  # a slug shared by two plan ids, or an artifact written by hand
        doc: dict[str, Any] = {"plan_id": plan_id}
        for name in _META_FIELDS:
            raw = meta.get(name)
            try:
                doc[name] = json.loads(raw) if raw is not None else None
            except json.JSONDecodeError:
                doc[name] = raw
        doc["copy"] = {
            "copy_id": copy.copy_id,
            "workdir": meta.get("workdir"),
            "ledger": meta.get("ledger"),
            "ledger_id": meta.get("ledger-id") or None,
        }
        doc["artifact"] = {
            "key": key,
            "id": str(art.id),
            "created": art.created.isoformat() if art.created else None,
            "description": art.description,
        }
        doc["markdown"] = art.data if isinstance(art.data, str) else None
        return doc
    return None


def run_observers(gate: ReviewGate, workdir: Path) -> list[RunObserver]:
    """The observers that keep a run's artifacts current: the progress bar and the plan page."""
    from .plan_page.publish import PlanPage

    return [ProgressArtifact(gate, workdir), PlanPage(gate, workdir)]


class ProgressArtifact(RunObserver):
    """An observer that keeps a progress artifact current as steps complete; it exists from the
    run's start or from a pause for review that comes first."""

    #: Each update is an API call (~25 ms here, as much as a no-op task): send at most one per
    #: this many seconds; the run's last state is sent by :meth:`run_ended`.
    min_interval = 5.0

    def __init__(self, gate: ReviewGate | None = None, workdir: Path | None = None) -> None:
        self.artifact_id: UUID | None = None
        self._sent_at = 0.0
        self._dirty = False
        self._done = 0
        self._total = 0
        self._copy: PlanCopy | None = None
        self._paused: str | None = None
        self._creating: Future[None] | None = None
        self._gate = gate
        if gate is not None:
            self._copy = plan_copy(gate.plan.plan_id, gate.ledger, workdir or "")
            gate.on_pause.append(self._on_pause)
            gate.on_answer.append(self._on_answer)

    def _text(self) -> tuple[float, str]:
        # Counted as steps complete, from the states the run read at its start: no ledger read
        # and no view per update (a 1,000-step view takes ~40 ms here).
        done, total = min(self._done, self._total), self._total
        state = f"paused for review at {self._paused} · " if self._paused else ""
        where = f" — {self._copy.label}" if self._copy else ""
        return 100.0 * done / max(1, total), f"{state}{done}/{total} done{where}"

    def _count(self, plan_ids: set[str], states: Mapping[str, StepState]) -> None:
        self._total = len(plan_ids)
        self._done = sum(
            1 for sid, st in states.items() if sid in plan_ids and st.status == "completed"
        )

    def _create(
        self, plan_id: str, ledger: LedgerReader, workdir: Path, *, soon: bool = False
    ) -> None:
        """Create the artifact; ``soon``: from another thread, as the run starts (its first
        update, or the run's end, waits for it)."""
        from prefect.artifacts import create_progress_artifact

        if self._copy is None:
            self._copy = plan_copy(plan_id, ledger, workdir)
        value, text = self._text()
        key = self._copy.key("progress")

        def create(_: object = None) -> None:
            created = create_progress_artifact(progress=value, key=key, description=text)
            self.artifact_id = created if isinstance(created, UUID) else None
            self._sent_at = time.monotonic()

        if soon:  # goes out while the plan page renders and the first step runs
            what = "progress artifact not created"
            self._creating = send_soon(Send(what, create, logging.WARNING), _log)
            return
        try:
            create()
        except Exception as exc:  # noqa: BLE001 - the UI's progress bar must not stop a run
            _log.warning("progress artifact not created: %s", exc)

    def _created(self) -> None:
        """Wait for the artifact's creation, if it is under way."""
        if self._creating is not None:
            self._creating.result()
            self._creating = None

    def run_started(self, ctx: GuardContext) -> None:
        self._count({s.id for s in ctx.plan.steps}, ctx.states)
        self._created()
        if self.artifact_id is None:
            self._create(ctx.plan.plan_id, ctx.ledger, ctx.workdir, soon=True)
        else:
            self._send()

    def _on_pause(self, step_id: str) -> None:
        gate = self._gate
        assert gate is not None
        self._created()
        self._paused = step_id
        self._count({s.id for s in gate.plan.steps}, gate.ledger.step_states(gate.plan.plan_id))
        if self.artifact_id is None:
            self._create(
                gate.plan.plan_id, gate.ledger, Path(self._copy.workdir if self._copy else "")
            )
        else:
            self._send()

    def _on_answer(self) -> None:
        self._created()
        if self._paused is not None:
            self._paused = None
            if self.artifact_id is not None:
                self._send()

    def step_completed(self, ctx: GuardContext, step: StepSpec) -> None:
        self._done += 1
        self._created()
        if self.artifact_id is None:
            return
        self._dirty = True
        if time.monotonic() - self._sent_at >= self.min_interval:
            self._send()

    def run_ended(self, ctx: GuardContext) -> None:
        """Start sending the last progress if it is not out yet: it goes out while the run
        writes its last records (the run's markers wait for it, :mod:`.concurrent_sends`)."""
        self._created()
        if self.artifact_id is not None and self._dirty:
            self._send(soon=True)

    def _send(self, *, soon: bool = False) -> None:
        from prefect.artifacts import update_progress_artifact

        assert self.artifact_id is not None
        artifact_id = self.artifact_id
        fraction, text = self._text()

        def update(_: object = None) -> None:
            update_progress_artifact(artifact_id, fraction, description=text)

        if soon:
            send_soon(Send("progress artifact not updated", update, logging.WARNING), _log)
        else:
            try:
                update()
            except Exception as exc:  # noqa: BLE001 - the UI's progress bar must not stop a run
                _log.warning("progress artifact not updated: %s", exc)
        self._sent_at = time.monotonic()
        self._dirty = False
