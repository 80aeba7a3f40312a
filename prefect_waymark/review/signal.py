"""Telling people a plan stopped for review: the ``waymark.plan.needs-review`` Prefect event,
and (optionally) pausing the flow run with a typed form they answer from the Prefect UI."""

from __future__ import annotations

from typing import Any, Literal

from prefect.input import RunInput
from pydantic import Field

__all__ = ["NEEDS_REVIEW_EVENT", "ReviewInput", "emit_needs_review", "wait_for_review"]

NEEDS_REVIEW_EVENT = "waymark.plan.needs-review"


class ReviewInput(RunInput):
    """The answer to a review, given in the Prefect UI when a waymark flow run pauses."""

    decision: Literal["accept", "rerun", "abort"] = Field(
        description="accept the current state, re-run the step, or abort the plan."
    )
    receipt: Literal["", "applied", "not-applied"] = Field(
        default="",
        description="For an action whose outcome is unknown: applied commits its receipt (it "
        "is never run again), not-applied lets the run do it; empty for other stops.",
    )
    reason: str = Field(default="", description="Why, for the record.")
    by: str = Field(default="", description="Who decides (default: prefect-ui).")


def plan_resource_id(plan_id: str) -> str:
    return f"waymark.plan.{plan_id}"


def emit_needs_review(plan_id: str, run_id: str, steps: list[dict[str, Any]]) -> None:
    """Emit ``waymark.plan.needs-review`` about the plan, related to the current flow run."""
    from prefect.events import emit_event
    from prefect.runtime import flow_run

    related: list[dict[str, str]] = []
    fr_id = flow_run.get_id()
    if fr_id:
        related.append(
            {
                "prefect.resource.id": f"prefect.flow-run.{fr_id}",
                "prefect.resource.role": "flow-run",
                "prefect.resource.name": str(flow_run.get_name() or ""),
            }
        )
    emit_event(
        event=NEEDS_REVIEW_EVENT,
        resource={
            "prefect.resource.id": plan_resource_id(plan_id),
            "prefect.resource.name": plan_id,
            "waymark.plan-id": plan_id,
        },
        related=related,
        payload={"plan_id": plan_id, "run_id": run_id, "steps": steps},
    )


def wait_for_review(
    timeout_seconds: float, poll_seconds: int = 2, *, description: str | None = None
) -> ReviewInput | None:
    """Pause the current flow run until someone answers the form; ``None`` on timeout.

    ``description`` (Markdown) is shown above the form in the Prefect UI: why the run paused
    and what each answer does (:func:`~.reasons.form_description`)."""
    from prefect.exceptions import FlowPauseTimeout
    from prefect.flow_runs import pause_flow_run

    form = ReviewInput.with_initial_data(description=description) if description else ReviewInput
    try:
        answer: ReviewInput = pause_flow_run(
            wait_for_input=form,
            timeout=max(1, int(timeout_seconds)),
            poll_interval=poll_seconds,
        )
    except FlowPauseTimeout:
        return None
    return answer
