"""What one run did, and where the next one starts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, model_validator

from ..ledger.event_payloads import skip_counts
from ..text.lists import capped_list
from .exit_codes import INTERRUPTED, NEEDS_REVIEW, OK, STEP_FAILED, STOPPED

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

__all__ = ["RunResult", "RunSummary", "summary_from_state"]

RunResult = Literal["completed", "stopped", "failed", "needs_review", "interrupted"]

_EXIT = {
    "completed": OK,
    "failed": STEP_FAILED,
    "stopped": STOPPED,
    "interrupted": INTERRUPTED,
    "needs_review": NEEDS_REVIEW,
}


class RunSummary(BaseModel):
    plan_id: str
    run_id: str
    flow_run_id: str | None = None
    executor: str
    workdir: str
    started_at: str
    finished_at: str
    result: RunResult
    started_from: str | None = Field(default=None, description="Where this run began.")
    executed_steps: list[str] = Field(default_factory=list)
    cached_steps: list[str] = Field(default_factory=list)
    #: Counts, not lists: a run's record holds what this run did, and a list of every step
    #: completed before it grows with the plan's history. ``waymark status`` names them.
    skipped_count: int = Field(default=0, description="Steps passed over: completed before.")
    left_out_count: int = Field(
        default=0, description="The plan's steps left out with `waymark skip` as the run ended."
    )
    failed_steps: list[str] = Field(default_factory=list)
    interrupted_steps: list[str] = Field(default_factory=list)
    needs_review: list[dict[str, Any]] = Field(default_factory=list)
    next_start: str | None = None
    next_start_reason: str = ""

    @model_validator(mode="before")
    @classmethod
    def _counts_from_lists(cls, data: Any) -> Any:
        """A summary recorded before counts (``skipped_steps``, ``left_out``) reads as counts."""
        if (
            isinstance(data, dict)
            and "skipped_count" not in data
            and ("skipped_steps" in data or "left_out" in data)
        ):
            skipped, left_out = skip_counts(data)
            rest = {k: v for k, v in data.items() if k not in ("skipped_steps", "left_out")}
            return {**rest, "skipped_count": skipped, "left_out_count": left_out}
        return data

    @property
    def failed_list(self) -> str:
        """The failed steps on one line, capped (:mod:`~prefect_waymark.text.lists`)."""
        return capped_list(self.failed_steps)

    @property
    def exit_code(self) -> int:
        return _EXIT[self.result]

    def text(self) -> str:
        lines = [
            f"plan {self.plan_id}: {self.result}",
            f"  started from: {self.started_from or 'the beginning'}",
            f"  steps run: {len(self.executed_steps)}"
            + (f" ({capped_list(self.executed_steps)})" if self.executed_steps else ""),
        ]
        if self.cached_steps:
            lines.append(
                f"  recovered from Prefect's cache (finished before a crash): "
                f"{capped_list(self.cached_steps)}"
            )
        lines.append(f"  skipped (done before): {self.skipped_count}")
        if self.left_out_count:
            lines.append(f"  left out (waymark skip): {self.left_out_count}")
        if self.interrupted_steps:
            again = capped_list(self.interrupted_steps)
            lines.append(f"  interrupted by a dead run, run again: {again}")
        lines.append(
            f"  failed: {len(self.failed_steps)}"
            + (f" ({self.failed_list})" if self.failed_steps else "")
        )
        for item in self.needs_review:
            lines.append(f"  needs review: {item['step']}: {item.get('reason')}")
        nxt = self.next_start or (
            "nothing — the plan is complete" if self.result == "completed" else "none ready"
        )
        why = f" ({self.next_start_reason})" if self.next_start_reason else ""
        lines.append(f"  next start: {nxt}{why}")
        return "\n".join(lines)


def summary_from_state(state: State[Any]) -> RunSummary | BaseException:
    """The summary a finished ``run_plan`` flow run carries: its return value when Completed,
    the summary in its :class:`~prefect_waymark.errors.PlanRunStopped` (Cancelled ``Stopped``
    or ``Aborted``, Failed ``NeedsReview``) or :class:`~prefect_waymark.errors.PlanRunFailed`
    (Failed: a step failed); any other end (a crash, an unexpected error) is returned as that
    error."""
    from ..errors import PlanRunFailed, PlanRunStopped

    if state.is_completed():
        return RunSummary.model_validate(state.result())
    error = state.result(raise_on_failure=False)
    if isinstance(error, PlanRunFailed | PlanRunStopped) and isinstance(error.summary, RunSummary):
        return error.summary
    return error if isinstance(error, BaseException) else RuntimeError(str(state.message))
