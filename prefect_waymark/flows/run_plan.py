"""The ``run_plan`` flow: run a plan's remaining steps and record everything in the ledger."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.logging import get_run_logger
from prefect.runtime import flow_run

from ..errors import StepError
from ..guards.base import build_guards
from ..guards.outputs import OutputsGuard
from ..ledger import Ledger, open_ledger, resolve_ledger_url
from ..ledger.base import this_host
from ..ledger.progress_view import build_view
from ..markers import marker_history, markers_folder, preflight_markers, write_run_markers
from ..markers.artifacts import ProgressArtifact
from ..models import ProgressEvent, utcnow
from ..plan.loader import load_plan, validate_plan_data
from ..plan.spec import PlanSpec
from ..run.identity import default_executor
from ..run.log_filters import install_log_filters
from ..run.results import ResultAccess, StorageSpec, default_result_storage
from ..run.resume import prepare_resume
from ..run.summary import RunResult, RunSummary
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
    fr_id = flow_run.get_id()
    ledger = open_ledger(resolve_ledger_url(ledger_url, wd))
    try:
        folder = markers_folder(spec, wd, markers_dir)
        preflight_markers(spec, ledger, folder)  # refuse before anything is recorded
        history = marker_history(ledger, spec.plan_id)
        run = _Run(
            spec=spec,
            ledger=ledger,
            logger=logger,
            workdir=wd,
            run_id=str(fr_id) if fr_id else uuid.uuid4().hex,
            flow_run_id=str(fr_id) if fr_id else None,
            executor=executor or default_executor(),
            started_at=utcnow().isoformat(),
            started_from=history[-1]["next_start"]["step"]
            if history
            else build_view(spec, ledger.step_states(spec.plan_id)).next_step,
            markers_folder=folder,
            publish_artifacts=publish_artifacts,
        )
        ledger.record(
            spec.plan_id,
            "run_started",
            run_id=run.run_id,
            flow_run_id=run.flow_run_id,
            executor=run.executor,
            workdir=str(wd),
            host=this_host(),
            pid=os.getpid(),
            plan_hash=spec.plan_hash(),
            step_hashes=spec.step_hashes(),
            started_from=run.started_from,
            max_steps=max_steps,
            until=until,
        )
        try:
            summary = _run_steps(run, storage, max_steps, until, lease_seconds)
        except Exception as exc:
            _record_crash(run, exc)
            raise
        run.finish(summary)
    finally:
        ledger.close()
    logger.info("%s", summary.text())
    if summary.failed_steps or summary.result == "failed":  # Failed even beside a review stop
        raise PlanRunFailed(summary)
    return summary.model_dump()


@dataclass(frozen=True)
class _Run:
    """Who runs the plan, where and since when: what every summary of this run repeats."""

    spec: PlanSpec
    ledger: Ledger
    logger: Any
    workdir: Path
    run_id: str
    flow_run_id: str | None
    executor: str
    started_at: str
    started_from: str | None
    markers_folder: Path
    publish_artifacts: bool

    def summary(self, result: RunResult, **fields: Any) -> RunSummary:
        return RunSummary(
            plan_id=self.spec.plan_id,
            run_id=self.run_id,
            flow_run_id=self.flow_run_id,
            executor=self.executor,
            workdir=str(self.workdir),
            started_at=self.started_at,
            finished_at=utcnow().isoformat(),
            result=result,
            started_from=self.started_from,
            **fields,
        )

    def finish(self, summary: RunSummary) -> None:
        """The run's last records: the run_finished event, then its marker."""
        data = summary.model_dump()
        self.ledger.append(
            ProgressEvent(
                plan_id=self.spec.plan_id, kind="run_finished", run_id=self.run_id, data=data
            )
        )
        write_run_markers(
            self.spec,
            self.ledger,
            data,
            self.markers_folder,
            self.logger,
            artifacts=self.publish_artifacts,
        )


def _record_crash(run: _Run, exc: BaseException) -> None:
    """An unexpected error still leaves a run_finished event and a marker (result: failed)."""
    try:
        view = build_view(run.spec, run.ledger.step_states(run.spec.plan_id))
        run.finish(
            run.summary(
                "failed",
                needs_review=view.needs_review,
                next_start=view.next_step,
                next_start_reason=f"the run stopped on an error: {type(exc).__name__}: {exc}",
            )
        )
    except Exception as inner:  # noqa: BLE001 - never hide the original error
        run.logger.error("could not record the failed run's marker: %s", inner)


def _run_steps(
    run: _Run,
    storage: StorageSpec,
    max_steps: int | None,
    until: str | None,
    lease_seconds: float,
) -> RunSummary:
    spec, ledger, logger = run.spec, run.ledger, run.logger
    results = ResultAccess(storage)
    report = prepare_resume(ledger, spec, results, run.run_id)
    for sid in report.interrupted:
        logger.warning("step %s was left in_progress by a dead run: running it again", sid)
    for sid in report.new_reviews:
        logger.warning("step %s needs review", sid)
    runtime = StepRuntime(spec, run.workdir, ledger, run.run_id)
    runtime.executor = run.executor
    runtime.guards = build_guards(runtime)
    runtime.guards.append(OutputsGuard())
    if run.publish_artifacts:
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
    return run.summary(
        result,
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
