"""The ``run_plan`` flow: run a plan's remaining steps and record everything in the ledger."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.logging import get_run_logger
from prefect.runtime import flow_run

from ..errors import StepError
from ..guards import build_guards
from ..identity import default_executor
from ..ledger import Ledger, open_ledger, resolve_ledger_url
from ..ledger.base import this_host
from ..log_filters import install_log_filters
from ..markers import marker_history, markers_folder, preflight_markers, write_run_markers
from ..markers.artifacts import ProgressArtifact
from ..markers.output_guard import OutputsGuard
from ..models import ProgressEvent, utcnow
from ..plan_loader import load_plan, validate_plan_data
from ..plan_spec import PlanSpec
from ..progress_view import build_view
from ..results import ResultAccess, StorageSpec, default_result_storage
from ..resume import prepare_resume
from ..run_summary import RunResult, RunSummary
from ..tasks.step_task import StepRuntime
from .plan_loop import PlanLoop

__all__ = ["PlanRunFailed", "run_plan"]


class PlanRunFailed(StepError):
    """A step failed in this run; the flow run ends Failed and carries the run's summary."""

    def __init__(self, summary: RunSummary) -> None:
        self.summary = summary
        super().__init__(
            f"plan {summary.plan_id}: step(s) failed: {', '.join(summary.failed_steps)}"
        )


def _load(plan: str | dict[str, Any] | PlanSpec, workdir: str | None) -> PlanSpec:
    if isinstance(plan, PlanSpec):
        return plan
    if isinstance(plan, dict):
        base = Path(workdir) if workdir else Path.cwd()
        return validate_plan_data(plan, source="<plan parameter>", base_dir=base)
    return load_plan(plan)


def _next_reason(result: RunResult, loop_stop: str | None, max_steps: int | None) -> str:
    if result == "needs_review":
        return "stopped for review: answer with `waymark review` or `waymark rerun`"
    if result == "failed":
        return "a step failed; the next run retries it"
    if loop_stop == "max-steps":
        return f"budget reached (--max-steps {max_steps})"
    if loop_stop == "until":
        return "--until step reached"
    if loop_stop == "busy":
        return "another run holds the branch and goes on with it"
    return ""


@flow(name="waymark-run-plan", log_prints=True, validate_parameters=False)
def run_plan(
    plan: str | dict[str, Any] | PlanSpec,
    workdir: str | None = None,
    ledger_url: str | None = None,
    max_steps: int | None = None,
    until: str | None = None,
    executor: str | None = None,
    result_storage: StorageSpec | None = None,
    lease_seconds: float = 60.0,
    markers_dir: str | None = None,
    publish_artifacts: bool = True,
    review_wait_seconds: float = 0,
) -> dict[str, Any]:
    """Run a plan, continuing where the last run stopped.

    Args:
        plan: a plan file path, a plan document, or a validated ``PlanSpec``.
        workdir: working folder (default: the plan file's folder).
        ledger_url: SQLAlchemy URL of the ledger (default: ``$WAYMARK_LEDGER_URL``, else
            ``sqlite:///<workdir>/.waymark/ledger.db``).
        max_steps: run at most this many steps, then stop (result ``stopped``).
        until: stop once this step and what it needs are done.
        executor: who runs this (default ``user@host``).
        result_storage: a saved Prefect file-system block, its slug, or a path (default
            ``<workdir>/.waymark/results``).
        lease_seconds: how long a step's in_progress hold lives without renewal.
        markers_dir: where EXECUTION_MARKER.json, TASKS.md, STATE.md and
            IMPLEMENTATION_LOG.md go (default: the workdir, i.e. beside the plan file unless
            ``workdir`` moves it).
        publish_artifacts: create the marker, step-table and progress Prefect artifacts.
        review_wait_seconds: on a stop for review, pause this long for an answer in the Prefect
            UI (accept / rerun / abort; read by the re-anchoring guard); 0 stops at once.

    Returns the run summary as a dict; raises :class:`PlanRunFailed` if a step failed.
    """
    install_log_filters()
    logger = get_run_logger()
    spec = _load(plan, workdir)
    wd = Path(workdir).resolve() if workdir else (spec.base_dir or Path.cwd()).resolve()
    storage = result_storage or default_result_storage(wd)
    results = ResultAccess(storage)
    fr_id = flow_run.get_id()
    run_id = str(fr_id) if fr_id else uuid.uuid4().hex
    who = executor or default_executor()
    started_at = utcnow().isoformat()
    ledger = open_ledger(resolve_ledger_url(ledger_url, wd))
    try:
        folder = markers_folder(spec, wd, markers_dir)
        preflight_markers(spec, ledger, folder)  # refuse before anything is recorded
        before = build_view(spec, ledger.step_states(spec.plan_id))
        history = marker_history(ledger, spec.plan_id)
        started_from = history[-1]["next_start"]["step"] if history else before.next_step
        ledger.record(
            spec.plan_id,
            "run_started",
            run_id=run_id,
            flow_run_id=str(fr_id) if fr_id else None,
            executor=who,
            workdir=str(wd),
            host=this_host(),
            pid=os.getpid(),
            plan_hash=spec.plan_hash(),
            step_hashes=spec.step_hashes(),
            started_from=started_from,
            max_steps=max_steps,
            until=until,
        )
        try:
            summary = _run_steps(
                spec,
                ledger,
                logger,
                results,
                storage,
                wd,
                run_id,
                who,
                started_at,
                fr_id,
                started_from,
                max_steps,
                until,
                lease_seconds,
                publish_artifacts,
            )
        except Exception as exc:
            _record_crash(
                spec,
                ledger,
                logger,
                run_id,
                who,
                wd,
                started_at,
                fr_id,
                started_from,
                exc,
                folder,
                publish_artifacts,
            )
            raise
        write_run_markers(
            spec, ledger, summary.model_dump(), folder, logger, artifacts=publish_artifacts
        )
    finally:
        ledger.close()
    logger.info("%s", summary.text())
    if summary.failed_steps or summary.result == "failed":  # Failed even beside a review stop
        raise PlanRunFailed(summary)
    return summary.model_dump()


def _record_crash(
    spec: PlanSpec,
    ledger: Ledger,
    logger: Any,
    run_id: str,
    who: str,
    wd: Path,
    started_at: str,
    fr_id: Any,
    started_from: str | None,
    exc: BaseException,
    folder: Path,
    publish_artifacts: bool,
) -> None:
    """An unexpected error still leaves a run_finished event and a marker (result: failed)."""
    try:
        view = build_view(spec, ledger.step_states(spec.plan_id))
        summary = RunSummary(
            plan_id=spec.plan_id,
            run_id=run_id,
            flow_run_id=str(fr_id) if fr_id else None,
            executor=who,
            workdir=str(wd),
            started_at=started_at,
            finished_at=utcnow().isoformat(),
            result="failed",
            started_from=started_from,
            needs_review=view.needs_review,
            next_start=view.next_step,
            next_start_reason=f"the run stopped on an error: {type(exc).__name__}: {exc}",
        )
        ledger.append(
            ProgressEvent(
                plan_id=spec.plan_id, kind="run_finished", run_id=run_id, data=summary.model_dump()
            )
        )
        write_run_markers(
            spec, ledger, summary.model_dump(), folder, logger, artifacts=publish_artifacts
        )
    except Exception as inner:  # noqa: BLE001 - never hide the original error
        logger.error("could not record the failed run's marker: %s", inner)


def _run_steps(
    spec: PlanSpec,
    ledger: Ledger,
    logger: Any,
    results: ResultAccess,
    storage: StorageSpec,
    wd: Path,
    run_id: str,
    who: str,
    started_at: str,
    fr_id: Any,
    started_from: str | None,
    max_steps: int | None,
    until: str | None,
    lease_seconds: float,
    publish_artifacts: bool,
) -> RunSummary:
    report = prepare_resume(ledger, spec, results, run_id)
    for sid in report.interrupted:
        logger.warning("step %s was left in_progress by a dead run: running it again", sid)
    for sid in report.new_reviews:
        logger.warning("step %s needs review", sid)
    runtime = StepRuntime(spec, wd, ledger, run_id)
    runtime.executor = who
    runtime.guards = build_guards(runtime)
    runtime.guards.append(OutputsGuard())
    if publish_artifacts:
        runtime.guards.append(ProgressArtifact())
    loop = PlanLoop(
        runtime,
        storage,
        results,
        logger,
        max_steps=max_steps,
        until=until,
        lease_seconds=lease_seconds,
        guards=runtime.guards,
    )
    for guard in runtime.guards:
        for sid, verdict in guard.on_run_start(runtime):
            loop.record_verdict(sid, verdict)
    outcome = loop.run()
    view = build_view(spec, ledger.step_states(spec.plan_id))
    result: RunResult
    if view.needs_review:
        result = "needs_review"
    elif outcome.failed or outcome.refused:
        result = "failed"
    elif view.complete:
        result = "completed"
    else:
        result = "stopped"
    summary = RunSummary(
        plan_id=spec.plan_id,
        run_id=run_id,
        flow_run_id=str(fr_id) if fr_id else None,
        executor=who,
        workdir=str(wd),
        started_at=started_at,
        finished_at=utcnow().isoformat(),
        result=result,
        started_from=started_from,
        executed_steps=outcome.executed,
        cached_steps=outcome.cached,
        skipped_steps=outcome.skipped,
        failed_steps=outcome.failed + outcome.refused,
        interrupted_steps=report.interrupted + outcome.interrupted,
        needs_review=view.needs_review,
        next_start=None
        if view.complete
        else (view.needs_review[0]["step"] if view.needs_review else view.next_step),
        next_start_reason=_next_reason(result, outcome.stopped_by, max_steps),
    )
    ledger.append(
        ProgressEvent(
            plan_id=spec.plan_id, kind="run_finished", run_id=run_id, data=summary.model_dump()
        )
    )
    return summary
