"""Prefect artifacts of a run: the marker (markdown, versioned by key), a table of all steps, and
a progress artifact updated as steps complete. Keys: ``waymark-<plan-id>-marker|steps|progress``
with the plan id normalised by :func:`~prefect_waymark.markers.marker_record.artifact_key`."""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any
from uuid import UUID

from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from ..ledger.progress_view import PlanView
from ..run.observers import RunObserver
from .marker_record import artifact_key

if TYPE_CHECKING:
    from ..guards.base import GuardContext
    from ..plan.spec import StepSpec

_log = logging.getLogger("prefect_waymark.markers")

__all__ = ["ProgressArtifact", "marker_markdown", "publish_run_artifacts", "read_latest_marker"]


def marker_markdown(marker: dict[str, Any]) -> str:
    nxt = marker["next_start"]
    lines = [
        f"# Execution marker — {marker['plan_id']}",
        "",
        f"**Result:** {marker['result']}  ",
        f"**Executed at:** {marker['executed_at']} by {marker['executor']}  ",
        f"**Started from:** {marker.get('started_from') or 'the beginning'}  ",
        f"**Next start:** {nxt.get('step') or 'none'} — {nxt.get('why')}",
        "",
        f"- executed: {', '.join(marker['executed_steps']) or 'none'}",
        f"- skipped (completed before): {len(marker['skipped_steps'])}",
        f"- failed: {', '.join(marker['failed_steps']) or 'none'}",
        f"- outputs: {len(marker['outputs'])}; receipts: {len(marker['receipts'])}",
        "",
        "```json",
        json.dumps(marker, indent=2),
        "```",
    ]
    return "\n".join(lines)


def publish_run_artifacts(marker: dict[str, Any], view: PlanView) -> None:
    """Create this run's marker and step-table artifacts (inside the flow run)."""
    plan_id = marker["plan_id"]
    create_markdown_artifact(
        markdown=marker_markdown(marker),
        key=artifact_key(plan_id, "marker"),
        description=f"Execution marker of plan {plan_id}: what ran and where the next run starts.",
    )
    create_table_artifact(
        table=[
            {
                "step": s.id,
                "status": s.status,
                "owner": s.owner or "",
                "branch": s.branch,
                "milestone": s.milestone or "",
                "last event": s.last_event_at or "",
            }
            for s in view.steps
        ],
        key=artifact_key(plan_id, "steps"),
        description=f"Steps of plan {plan_id} and their status after this run.",
    )


def read_latest_marker(plan_id: str) -> dict[str, Any] | None:
    """The latest marker artifact's JSON, read back through Prefect's API (latest version)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactCollectionFilter, ArtifactCollectionFilterKey

    key = artifact_key(plan_id, "marker")
    with get_client(sync_client=True) as client:
        found = client.read_latest_artifacts(
            artifact_filter=ArtifactCollectionFilter(key=ArtifactCollectionFilterKey(any_=[key]))
        )
    if not found or not isinstance(found[0].data, str):
        return None
    text = found[0].data
    start, end = text.find("```json\n"), text.rfind("```")
    if start < 0 or end <= start:
        return None
    doc: dict[str, Any] = json.loads(text[start + len("```json\n") : end])
    return doc


class ProgressArtifact(RunObserver):
    """An observer that keeps a progress artifact current as steps complete."""

    #: Each update is an API call (~25 ms here, as much as a no-op task): send at most one per
    #: this many seconds; the run's last state is sent by :meth:`run_ended`.
    min_interval = 5.0

    def __init__(self) -> None:
        self.artifact_id: UUID | None = None
        self._sent_at = 0.0
        self._dirty = False
        self._done = 0
        self._total = 0

    def _fraction(self) -> tuple[float, str]:
        # Counted as steps complete, from the states the run read at its start: no ledger read
        # and no view per update (a 1,000-step view takes ~40 ms here).
        done, total = min(self._done, self._total), self._total
        return 100.0 * done / total, f"{done} of {total} steps completed"

    def run_started(self, ctx: GuardContext) -> None:
        ids = {s.id for s in ctx.plan.steps}
        self._total = len(ids)
        self._done = sum(
            1 for sid, st in ctx.states.items() if sid in ids and st.status == "completed"
        )
        value, text = self._fraction()
        try:
            created = create_progress_artifact(
                progress=value,
                key=artifact_key(ctx.plan.plan_id, "progress"),
                description=f"Plan {ctx.plan.plan_id}: {text}",
            )
        except Exception as exc:  # noqa: BLE001 - the UI's progress bar must not stop a run
            _log.warning("progress artifact not created: %s", exc)
            return
        self.artifact_id = created if isinstance(created, UUID) else None
        self._sent_at = time.monotonic()

    def step_completed(self, ctx: GuardContext, step: StepSpec) -> None:
        self._done += 1
        if self.artifact_id is None:
            return
        self._dirty = True
        if time.monotonic() - self._sent_at >= self.min_interval:
            self._send(ctx)

    def run_ended(self, ctx: GuardContext) -> None:
        """Send the last progress if it is not out yet."""
        if self.artifact_id is not None and self._dirty:
            self._send(ctx)

    def _send(self, ctx: GuardContext) -> None:
        assert self.artifact_id is not None
        fraction, text = self._fraction()
        try:
            update_progress_artifact(
                self.artifact_id, fraction, description=f"Plan {ctx.plan.plan_id}: {text}"
            )
        except Exception as exc:  # noqa: BLE001 - the UI's progress bar must not stop a run
            _log.warning("progress artifact not updated: %s", exc)
        self._sent_at = time.monotonic()
        self._dirty = False
