"""The body of a ``plan:`` step: run the sub-plan as a Prefect subflow and hand its summary up.

The parent step's task calls :func:`run_subplan_step` through what the ``run_plan`` flow
handed down to its steps (the step runtime's ``run_subplan``: neither the step task nor this
room imports the flow), with ``subflow``: what checks the sub-plan's options and calls the flow
with them (flows/run_plan.py); a flow called inside a task run is a subflow run in Prefect 3
(its ``parent_task_run_id`` is the step's task run), so the Prefect UI shows the sub-plan's run
under the parent step. The subflow:

- records in the parent's ledger (same URL, handed over in its options: a password never
  reaches the parameters Prefect keeps) under the sub-plan's own plan id, its ``run_started``
  naming the parent plan, step and run (``parent``);
- runs in the parent's workdir (its steps' files are the parent's), with its markers and views
  in ``<workdir>/.waymark/subplans/<sub-plan id>/``;
- keeps its own contract, and the parent's forbidden ``action:<glob>`` entries hold inside;
- never waits for an answer itself (``review_wait_seconds=0``): a stop for review inside ends
  the subflow, and the parent step stops at needs_review with the sub-plan's reasons (the
  parent's gate may pause for an answer there).

Outcomes: completed -> the parent step completes with :func:`~.summary.subplan_summary`;
failed -> :class:`~prefect_waymark.errors.SubplanFailed` naming the sub-plan's failed steps;
needs_review -> :class:`~prefect_waymark.errors.NeedsReview` with the sub-plan's stops; stopped
(e.g. waiting for an agent's check-in) -> :class:`~prefect_waymark.errors.SubplanFailed` too:
the parent's next run runs the step again, and the sub-plan resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NeedsReview, StepError, SubplanFailed, WaymarkError
from ..models import GoalContract
from .answers import carry_parent_answer
from .summary import subplan_summary

if TYPE_CHECKING:
    from ..tasks.step_context import StepContext

__all__ = ["run_subplan_step", "subplan_markers"]


def subplan_markers(workdir: Path, sub_plan_id: str) -> Path:
    """Where a sub-plan's markers and views go: ``<workdir>/.waymark/subplans/<id>/``."""
    return workdir / ".waymark" / "subplans" / sub_plan_id


def run_subplan_step(ctx: StepContext, subflow: Callable[..., Any]) -> dict[str, Any]:
    """Run the step's sub-plan with ``subflow`` (as the parent's run handed it down: called with
    the parent link and ``run_plan``'s parameters, it checks the sub-plan's options and runs
    the flow, which resumes where it stopped, returning its final state); return its summary."""
    step, parent = ctx.step, ctx.plan
    sub = step.subplan_spec
    if sub is None or ctx.ledger is None:
        raise StepError(
            f"step {step.id!r}: sub-plan {step.plan!r} was not loaded with its plan "
            "(run the plan file, or a PlanSpec from load_plan, through run_plan)"
        )
    for line in carry_parent_answer(ctx.ledger, parent, step, by=ctx.executor or "waymark"):
        ctx.logger.info("step %s: %s", step.id, line)
    goal = parent.contract if isinstance(parent.contract, GoalContract) else None
    link = {
        "plan_id": parent.plan_id,
        "step_id": step.id,
        "run_id": ctx.run_id,
        "forbidden": list(ctx.forbidden),
        "goal": {"goal_id": goal.goal_id, "version": goal.version} if goal else None,
    }
    folder = subplan_markers(ctx.workdir, sub.plan_id)
    folder.mkdir(parents=True, exist_ok=True)
    from prefect.transactions import CommitMode, transaction

    from ..run.summary import summary_from_state

    # The sub-plan's step tasks would be nested in this task's transaction and their results
    # written only when it commits (never, if this step stops for review or fails): each
    # commits its own as it ends, as in a plan run by itself.
    try:
        with transaction(commit_mode=CommitMode.EAGER):
            state = subflow(
                link,
                plan=sub,
                workdir=str(ctx.workdir),
                ledger_url=ctx.ledger.url,
                markers_dir=str(folder),
                executor=ctx.executor,
                review_wait_seconds=0,
                agent_wait_seconds=0,
            )
    except WaymarkError as exc:  # its options refused (a marker file, a rename): no subflow
        raise StepError(f"step {step.id!r}: sub-plan {sub.plan_id!r} crashed: {exc}") from exc
    run = summary_from_state(state)
    if isinstance(run, BaseException):
        raise StepError(f"step {step.id!r}: sub-plan {sub.plan_id!r} crashed: {run}") from run
    file = str(step.subplan_path or step.plan)
    summary = subplan_summary(sub, ctx.ledger, result=run.result, file=file, run_id=run.run_id)
    progress = f"{summary['steps_done']}/{summary['steps_total']} done"
    if run.result == "completed":
        ctx.logger.info("step %s: sub-plan %s completed (%s)", step.id, sub.plan_id, progress)
        return summary
    if run.result == "needs_review":
        reasons = "; ".join(f"{i['step']}: {i['reason']}" for i in summary["needs_review"])
        raise NeedsReview(
            f"sub-plan {sub.plan_id!r} stopped for review ({progress}): {reasons}",
            {"subplan": summary},
        )
    if run.result == "failed":
        failed = ", ".join(f"{sid!r} ({err})" for sid, err in summary["failed"].items())
        raise SubplanFailed(
            f"step {step.id!r}: sub-plan {sub.plan_id!r} failed at step {failed or '?'} "
            f"({progress}); the next run runs it again from there",
            summary,
        )
    raise SubplanFailed(
        f"step {step.id!r}: sub-plan {sub.plan_id!r} stopped before completing ({progress}, "
        f"next start {summary['next_start']!r}: {run.next_start_reason or 'see its status'}); "
        "the next run resumes it",
        summary,
    )
