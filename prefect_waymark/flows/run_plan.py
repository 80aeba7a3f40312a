"""The ``run_plan`` flow: run a plan's remaining steps and record everything in the ledger.

A run, in order: take its options — checked by whoever started it, else checked here from the
flow's parameters (:func:`~prefect_waymark.run.options.check_run`: the plan, ``until``, the
ledger URL, every folder the run writes, the marker files) —, record ``run_started``, take
over dead runs' steps, read the step states once, assemble the guards and the review gate, let
each guard's run-start verdicts through the gate, run the scheduler (:mod:`.plan_loop`), read
the states once more and hand that view to the summary and the markers. Below the flow,
everything reads the run's options from that one object (:class:`RunOptions`).
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed
from pydantic import InstanceOf
from pydantic.json_schema import SkipJsonSchema

from ..agents.flow_suspend import record_checkin_suspension
from ..boundary import RunBoundary
from ..errors import LedgerDamaged, PlanRunFailed, PlanRunStopped
from ..guards.base import GuardContext, Guards, Verdict
from ..guards.completed import CompletedStepsGuard
from ..guards.observers import RunObserver
from ..guards.outputs import OutputsGuard
from ..guards.plan_edits import see_plan
from ..guards.reanchor import ReanchorGuard
from ..guards.receipts import ReceiptConsistencyGuard
from ..ledger import open_ledger
from ..ledger.base import this_host
from ..ledger.events import EventKind
from ..ledger.identity import flow_executor
from ..ledger.progress_view import PlanView, build_view
from ..ledger.run_hashes import run_hash_fields
from ..ledger.step_state import StepState
from ..markers import marker_history
from ..markers.artifacts import run_observers
from ..markers.concurrent_sends import RunSends
from ..markers.plan_page.publish import PlanPage
from ..models import utcnow
from ..plan.spec import PlanSpec
from ..results.storage import ResultAccess, StorageSpec, as_storage, default_result_storage
from ..review.gate import ReviewGate
from ..review.schedules import after_deployment_run, own_deployment_id
from ..review.suspend import (
    SUSPENSION_EVENT_KINDS,
    in_deployment_run,
    open_suspension,
    record_suspension,
    take_up,
)
from ..run.log_filters import install_log_filters
from ..run.options import AGENT_WAIT_ENV, REVIEW_WAIT_ENV, RunOptions, check_run
from ..run.prefect_ui import final_state
from ..run.resume import prepare_resume
from ..run.runtime import StepRuntime
from ..run.slot_budget import slot_budget
from ..run.summary import RunResult, RunSummary
from ..runners.choice import loop_runner
from ..subplans.answers import settle_answered_subplans
from ..subplans.forbidden import inherited_forbidden, inherited_guards, link_fields
from ..subplans.run_step import run_subplan_step
from ..tasks.step_context import StepContext
from ..text.commands import review_command
from ..text.lists import capped_list
from .json_flow import waymark_flow  # run_plan's runs named and tagged as they start
from .next_start import failed_reason, failed_start, next_reason, stale_reason, waiting_reason
from .plan_loop import PlanLoop
from .run_record import RunRecord, record_crash
from .suspension import run_id_of_execution, suspend_run

__all__ = ["AGENT_WAIT_ENV", "REVIEW_WAIT_ENV", "PlanRunFailed", "PlanRunStopped", "run_plan"]


@waymark_flow(name="waymark-run-plan", log_prints=True, validate_parameters=False)
def run_plan(
    plan: str | dict[str, Any] | PlanSpec,
    workdir: str | None = None,
    ledger_url: str | None = None,
    max_steps: int | None = None,
    until: str | None = None,
    executor: str | None = None,
    result_storage: StorageSpec | None = None,
    markers_dir: str | None = None,
    review_wait_seconds: float | None = None,
    agent_wait_seconds: float | None = None,
    task_runner: str | None = None,
    dask_address: str | None = None,
    options: SkipJsonSchema[InstanceOf[RunOptions] | None] = None,
) -> dict[str, Any]:
    """Run a plan, continuing where the last run stopped.

    Args:
        plan: a plan file path, a plan document, or a validated ``PlanSpec``.
        workdir: working folder (default: the plan file's folder).
        ledger_url: URL of the ledger, a SQLite file or a PostgreSQL database (default: the
            plan's pinned ``ledger:``, else ``$WAYMARK_LEDGER_URL``, else ``sqlite:///<workdir>/.waymark/ledger.db``).
        max_steps: run at most this many steps, then stop (result ``stopped``).
        until: stop once this step and what it needs are done.
        executor: who runs this (default ``<worker>/<flow run>`` in a worker's run, else
            ``user@host``).
        result_storage: a saved Prefect file-system block, its slug, or a folder (default
            ``<workdir>/.waymark/results``); given, it keeps the declared outputs too, and a
            workdir that lacks one restores it from there (results/outputs.py).
        markers_dir: where EXECUTION_MARKER.json, TASKS.md, STATE.md, IMPLEMENTATION_LOG.md
            go (default: the workdir, beside the plan file unless ``workdir`` moves it).
        review_wait_seconds: on any stop for review (a ref or contract conflict, an edited
            output, an action whose outcome is unknown, a lost result), pause this long for an
            answer in the Prefect UI (accept / rerun / abort); 0 stops at once. Default:
            ``$WAYMARK_REVIEW_WAIT_SECONDS``, else 0.
        agent_wait_seconds: when only agent or manual steps (``kind: agent | manual``) stand
            in the way, wait this long for their check-in (``waymark done``) and go on; 0 ends
            the run at once, "waiting for <owner>" (exit 3). Default:
            ``$WAYMARK_AGENT_WAIT_SECONDS``, else 0.
        task_runner: ``threads`` | ``processes`` | ``dask`` (default: the flow's own runner);
        dask_address: the Dask scheduler for ``dask`` (default: a temporary local cluster).
        options: not a form field: the run's options as
            :func:`~prefect_waymark.run.options.check_run` checked them, passed with
            ``options.as_parameter()`` by whoever checked them before the flow run started
            (``waymark run``, a ``plan:`` step for its sub-plan, a test that sets what no
            parameter does). The run then goes by them and checks nothing again; the parameters
            above are only its record (its name and parameters in the Prefect UI). Without
            them the flow checks its parameters itself, before anything is recorded.

    Returns the summary dict, raises :class:`PlanRunFailed` if a step failed (states: prefect_ui).
    """
    install_log_filters()
    logger = get_run_logger()
    if options is None:  # a deployment's run, a Python call: nothing checked its inputs yet
        options = check_run(
            plan,
            workdir=workdir,
            ledger_url=ledger_url,
            max_steps=max_steps,
            until=until,
            executor=executor,
            result_storage=result_storage,
            markers_dir=markers_dir,
            review_wait_seconds=review_wait_seconds,
            agent_wait_seconds=agent_wait_seconds,
            task_runner=task_runner,
            dask_address=dask_address,
            logger=logger,
        )
    return _run(options, logger)


def _run(options: RunOptions, logger: Any) -> dict[str, Any]:
    """The run of a plan whose options are checked: record its start, run its steps, record
    its end (also when an error, Ctrl-C or SIGTERM ends it) and hand Prefect its final state."""
    spec, wd = options.spec, options.workdir
    runner = loop_runner(options.task_runner, options.dask_address)  # made, not started
    storage = options.result_storage
    storage = as_storage(storage) if storage else default_result_storage(wd)
    ledger, sends = open_ledger(options.ledger_url), RunSends()  # sends: the artifacts' threads
    try:
        try:
            run, states, start_view = _begin(options, ledger, logger, storage, runner)
        except LedgerDamaged as exc:  # found before the run recorded its start: one line
            logger.error("%s; nothing was recorded", exc)
            return Failed(message=str(exc), data=exc)  # type: ignore[return-value]
        try:
            summary, states, view, suspend = _run_steps(run, states=states, start_view=start_view)
        except BaseException as exc:  # an error, Ctrl-C or SIGTERM: the run still ends on record
            record_crash(run, exc)
            raise
        run.finish(summary, states, view)
        end = final_state(summary, view, ledger)  # Stopped, NeedsReview, Aborted, Failed, ...
        after_deployment_run(summary.result, end.message, ledger, spec.plan_id, logger)
        logger.info("%s", summary.text())
        if suspend is not None:  # a deployment's run: the process ends here, the worker is free
            # A review stop waits review_wait_seconds; a wait for check-ins agent_wait_seconds.
            review = suspend[1] is not None
            wait = options.review_wait_seconds if review else options.agent_wait_seconds
            suspend_run(run, suspend, wait)
    finally:
        sends.end()  # every send of this run done (or logged) before the run ends
        ledger.close()
    return end  # type: ignore[return-value]  # Prefect hands callers the State's data


def _begin(
    options: RunOptions, ledger: Any, logger: Any, storage: Any, runner: Any
) -> tuple[RunRecord, dict[str, StepState], PlanView]:
    """Read where the plan stands and record the run's start: the run, the steps' states and
    the view the run starts from. A damaged ledger raises here, before anything is recorded."""
    spec, wd = options.spec, options.workdir
    fr_id = flow_run.get_id()
    edits = see_plan(
        ledger, spec, by=options.executor or flow_executor(), source="run"
    )  # a renamed step keeps its completion before anything reads the states
    for line in edits.lines() if edits is not None else ():
        logger.info("%s", line)
    history = marker_history(ledger, spec.plan_id, last=1)  # the last run's next start
    states = ledger.step_states(spec.plan_id)
    start_view = build_view(spec, states)  # where the run starts; also the guards' view
    run = RunRecord(
        options=options,
        ledger=ledger,
        logger=logger,
        run_id=run_id_of_execution(ledger, spec.plan_id, str(fr_id)) if fr_id else uuid.uuid4().hex,
        flow_run_id=str(fr_id) if fr_id else None,
        executor=options.executor or flow_executor(),
        started_at=utcnow().isoformat(),
        started_from=history[-1]["next_start"]["step"] if history else start_view.next_step,
        storage=storage,
        runner=runner,
        boundary=RunBoundary.begin(spec, ledger, wd, options.markers_folder, logger),
        # A deployment's budget is per schedule slot: runs triggered together share it.
        budget=slot_budget(ledger, spec.plan_id, options.max_steps),
    )
    _record_start(run)
    return run, states, start_view


def _record_start(run: RunRecord) -> None:
    """The run's ``run_started`` event: who, where, from which step, with which plan and step
    hashes, its limits and — a deployment's run — its schedule slot; a sub-plan's names its
    parent plan, step and run."""
    spec, options, budget = run.spec, run.options, run.budget
    slot: dict[str, Any] = {}
    if (deployment_id := own_deployment_id()) is not None:
        slot["deployment_id"] = deployment_id
    if budget is not None:
        slot.update(slot_start=budget.slot_start.isoformat(), slot_used=budget.used)
        if budget.used:
            run.logger.info(
                "budget of this schedule slot: %s of --max-steps %s already started by "
                "run(s) %s of this deployment since %s; this run may start %s",
                budget.used,
                options.max_steps,
                ", ".join(budget.by_runs),
                budget.slot_start.isoformat(timespec="seconds"),
                budget.left,
            )
    run.ledger.record(
        spec.plan_id,
        EventKind.run_started,
        run_id=run.run_id,
        flow_run_id=run.flow_run_id,
        executor=run.executor,
        workdir=str(run.workdir),
        host=this_host(),
        pid=os.getpid(),
        **run_hash_fields(run.ledger, spec.plan_id, spec.plan_hash(), spec.step_hashes),
        started_from=run.started_from,
        max_steps=options.max_steps,
        until=options.until,
        **slot,
        **link_fields(options.subplan_of),  # a sub-plan's run names its parent plan, step, run
    )


def _run_steps(
    run: RunRecord, *, states: dict[str, StepState], start_view: PlanView
) -> tuple[RunSummary, dict[str, StepState], PlanView, tuple[str, str | None] | None]:
    """Run the steps; return the summary and the step states read at the end, with their view,
    and — a deployment's run that stops for review — the pause key and form text to suspend
    with. ``states`` are those read at run start, ``start_view`` their view (read again if an
    answer or a take-over moved them)."""
    spec, ledger, logger, options = run.spec, run.ledger, run.logger, run.options
    start_states = states
    deployed = bool(run.flow_run_id) and in_deployment_run()
    results = ResultAccess(run.storage, keep_outputs=run.keeps_outputs)  # storage: outputs too
    report = prepare_resume(ledger, spec, run.run_id)
    for sid in report.interrupted:
        logger.warning("step %s was left in_progress by a dead run: running it again", sid)
    if settle_answered_subplans(ledger, spec, run.run_id) or report.interrupted:
        states = ledger.step_states(spec.plan_id)
    # The guards of a run, in the order they are asked: completed steps' definitions and
    # results first, then re-anchoring (a contract or state conflict stops a step before the
    # remaining checks), receipts against the ledger, edited outputs.
    reanchor = ReanchorGuard(spec, ledger, run.workdir, run.run_id)
    gate = ReviewGate(spec, ledger, run.run_id, logger, wait_seconds=options.review_wait_seconds)
    guards = Guards(
        [
            CompletedStepsGuard(results),
            gate.abort_check(),  # an aborted plan stops here: nothing after it re-anchors
            reanchor,
            ReceiptConsistencyGuard(),
            OutputsGuard(results.outputs),
            *inherited_guards(options.subplan_of),  # a sub-plan: its parents' forbidden actions
        ]
    )
    gate.on_answer.append(reanchor.reload_accepted)
    if deployed and run.flow_run_id:  # a suspended run resumed: its answer, before the loop
        resumed = open_suspension(
            ledger.events(spec.plan_id, kinds=list(SUSPENSION_EVENT_KINDS)), run.flow_run_id
        )
        if resumed is not None:
            take_up(gate, resumed)
            states = ledger.step_states(spec.plan_id)
    observers: list[RunObserver] = (
        run_observers(gate, run.workdir) if options.publish_artifacts else []
    )
    run.pages.extend(o.publisher for o in observers if isinstance(o, PlanPage))
    if run.boundary is not None:
        observers.append(run.boundary)  # looks at the workdir after each step
    runtime = StepRuntime(
        spec,
        run.workdir,
        ledger,
        run.run_id,
        guards=guards,
        gate=gate,
        executor=run.executor,
        forbidden=lambda: reanchor.forbidden + inherited_forbidden(options.subplan_of),
        run_subplan=run_subplan,  # what runs a `plan:` step (subplans/run_step.py)
    )
    loop = PlanLoop(
        runtime,
        run.storage,
        results,
        logger,
        max_steps=run.budget.left if run.budget is not None else options.max_steps,
        until=options.until,
        lease_seconds=options.lease_seconds,
        observers=observers,
        # A deployment's run does not hold its worker while it waits: it suspends (below).
        agent_wait_seconds=0 if deployed else options.agent_wait_seconds,
        task_runner=run.runner,  # None: the flow run's own (runners/submit.py)
    )
    ctx = GuardContext(
        plan=spec,
        ledger=ledger,
        workdir=run.workdir,
        run_id=run.run_id,
        states=states,
        aborted=gate.check_abort(),
    )
    if states is start_states:  # not re-read since: the same view
        ctx.__dict__["view"] = start_view  # GuardContext.view is a cached_property
    ctx = guards.on_run_start(ctx, lambda sid, v: _stop_at_start(loop, sid, v))
    gate.announce_open(ctx.view.needs_review)
    runtime.context = ctx
    for observer in observers:
        observer.run_started(ctx)
    outcome = loop.run()
    states = ledger.step_states(spec.plan_id)
    view = build_view(spec, states, previous=ctx.view)  # the steps moved since, rebuilt
    gate.announce_open(view.needs_review)  # e.g. stops another runner recorded meanwhile
    result: RunResult
    suspend: tuple[str, str | None] | None = None
    if view.needs_review:
        result = "needs_review"
        suspend = record_suspension(gate, view.needs_review)
    elif outcome.failed or outcome.refused:
        result = "failed"
    elif view.complete:
        result = "completed"
    else:
        result = "stopped"
        wait = options.agent_wait_seconds
        if outcome.waiting and deployed and wait > 0 and run.flow_run_id:
            key = record_checkin_suspension(
                ledger, spec.plan_id, run.run_id, run.flow_run_id, outcome.waiting, wait
            )
            suspend = (key, None)
            logger.info(
                "the flow run suspends up to %ss until %s checked in (`waymark done` resumes "
                "it; its worker is free meanwhile)",
                wait,
                capped_list(list(outcome.waiting)),
            )
    start = view.next_start  # a step in review, else the failed step to retry, else the next
    retry = failed_start(view, start)
    left_out = {s for s, st in states.items() if st.skipped is not None}
    summary = run.summary(
        result,
        # Where this run really started: its first claimed step (else where it would have).
        started_from=outcome.started[0] if outcome.started else run.started_from,
        executed_steps=outcome.executed,
        cached_steps=outcome.cached,
        # counts: what this run passed over as done before, and what `waymark skip` left out
        skipped_count=sum(1 for s in outcome.skipped if s not in left_out),
        left_out_count=len(left_out),
        failed_steps=outcome.failed + outcome.refused,
        interrupted_steps=report.interrupted + outcome.interrupted,
        needs_review=view.needs_review,
        next_start=None
        if view.complete or outcome.closed
        else (
            start
            if retry is not None or view.needs_review
            else next(iter(outcome.waiting), None) or start
        ),
        next_start_reason=outcome.closed  # `waymark close` while this run went on
        or (
            failed_reason(retry.id, retry.error)
            if result == "failed" and retry is not None
            else waiting_reason(outcome.waiting)
            if outcome.stopped_by == "waiting" and result == "stopped"
            else next_reason(
                result,
                outcome.stopped_by,
                options.max_steps,
                suspend,
                run.budget,
                review=_review_command(spec.source, view.needs_review),
            )
            or stale_reason(view, start)
        ),
    )
    return summary, states, view, suspend


def _review_command(source: str, needs_review: list[dict[str, Any]]) -> str | None:
    """The exact command that answers the first stop for review (``None`` without one)."""
    if not needs_review:
        return None
    step = str(needs_review[0]["step"])
    return review_command(source, step)


def _stop_at_start(loop: PlanLoop, step_id: str, verdict: Verdict) -> bool:
    """A guard's run-start verdict through the gate; True if it recorded a stop."""
    return loop.stop(step_id, verdict) != "moved"


def run_subplan(ctx: StepContext) -> dict[str, Any]:
    """Run a ``plan:`` step's sub-plan as a subflow of ``run_plan`` (subplans/run_step.py).

    The flow hands this down to its steps (a step never imports the flow that runs it); a
    module-level function, so a step task in another process receives it by reference.
    """
    return run_subplan_step(ctx, _subflow)


def _subflow(subplan_of: dict[str, Any], **parameters: Any) -> Any:
    """``run_plan`` as a sub-plan's subflow, called in the ``plan:`` step's task run; returns
    its final state. The sub-plan's options are checked here, in the step's process, and handed
    to the subflow with them the ledger URL (the parameters the subflow run shows have its
    password masked: flows/json_flow.py)."""
    options = check_run(**parameters, subplan_of=subplan_of)
    return run_plan(**parameters, options=options.as_parameter(), return_state=True)
