"""Each plan step is one Prefect task run, named after the step, with a persisted result."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import Any

from prefect import Task, task
from prefect.client.schemas.objects import State, TaskRun
from prefect.context import TaskRunContext
from prefect.logging import get_run_logger

from ..errors import ForbiddenActionError, NeedsReview, StepError
from ..ledger.events import EventKind
from ..plan.spec import StepSpec
from ..results.storage import StorageSpec
from ..run.runtime import StepRuntime
from ..runners.remote import RemoteRuntime
from .cache_policy import StepCachePolicy
from .step_action import run_step_action
from .step_body import call_step, run_shell_step
from .step_context import StepContext

__all__ = ["StepRuntime", "step_task", "waymark_step"]


@task(name="waymark-step", persist_result=True)
def waymark_step(
    runtime: StepRuntime | RemoteRuntime,
    step_id: str,
    upstream: dict[str, Any],
    result_key: str | None = None,
) -> Any:
    """Run one step's body; a failed attempt is recorded in the ledger before Prefect retries.

    ``result_key`` is the step's cache key (see :func:`step_task`); the body does not use it.
    ``runtime`` is the scheduler's own (threads) or, on a runner whose tasks run in other
    processes, a :class:`RemoteRuntime` (see runners/remote.py for what runs where).
    """
    step = runtime.plan.step(step_id)
    task_ctx = TaskRunContext.get()
    attempt = task_ctx.task_run.run_count if task_ctx is not None else 1
    ctx = StepContext(
        plan=runtime.plan,
        step=step,
        workdir=runtime.workdir,
        upstream=upstream,
        logger=get_run_logger(),
        run_id=runtime.run_id,
        attempt=attempt,
        forbidden=runtime.forbidden,
        ledger=runtime.ledger,
        executor=runtime.executor,
        on_tick=partial(runtime.tick, step),
    )
    try:
        if step.action is not None:
            value = run_step_action(ctx)
        elif step.run is not None:
            value = run_shell_step(ctx, step.run)
        elif step.plan is not None:  # a sub-plan, run as a subflow (subplans/run_step.py)
            if runtime.run_subplan is None:
                raise StepError(
                    f"step {step.id!r}: a sub-plan step runs only in a run of run_plan "
                    "(the flow hands its steps what runs a sub-plan)"
                )
            value = runtime.run_subplan(ctx)
        else:
            assert step.call is not None
            value = call_step(ctx, step.call)
    except NeedsReview:
        raise  # not a failed attempt: the run stops the step at needs_review
    except BaseException as exc:
        if isinstance(runtime, RemoteRuntime) and runtime.lost(step):
            raise  # an orphan of a dead scheduler: the step is another run's now
        runtime.after_failed_attempt(step, f"{type(exc).__name__}: {exc}")
        runtime.ledger.record(
            runtime.plan.plan_id,
            EventKind.step_attempt_failed,
            step_id=step.id,
            branch=step.branch,
            run_id=runtime.run_id,
            attempt=attempt,
            error=f"{type(exc).__name__}: {exc}",
            output_tail=getattr(exc, "output_tail", None),
            will_retry=attempt <= step.retries and not isinstance(exc, ForbiddenActionError),
        )
        raise
    if isinstance(runtime, StepRuntime) and task_ctx is not None and not isinstance(value, State):
        with runtime.returned_lock:  # a late attempt (timed out, still running) never wins
            seen = runtime.returned.get(step.id)
            if seen is None or seen[0] != task_ctx.task_run.id or seen[1] <= attempt:
                runtime.returned[step.id] = (task_ctx.task_run.id, attempt, value)
    return value


def _worth_retrying(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """A step that needs review, or tried a forbidden action, fails the same way every retry."""
    exc = state.data if isinstance(state.data, BaseException) else None
    return not isinstance(exc, (NeedsReview, ForbiddenActionError))


_TASKS: dict[tuple[Any, ...], Task[..., Any]] = {}
_TASKS_LOCK = threading.Lock()


def _storage_identity(storage: StorageSpec) -> Any:
    return str(storage) if isinstance(storage, (str, Path)) else id(storage)


def step_task(step: StepSpec, key: str | None, storage: StorageSpec) -> Task[..., Any]:
    """The Prefect task for ``step``: retries, timeout, result storage and a run-independent key.

    With ``key``, the task carries it. Without, the key comes from the task run's
    ``result_key`` parameter, and steps of the same shape (retries, delay, timeout, storage)
    share one task object: ``Task.with_options`` reads the function's source every
    time (~2 ms here, as much as a no-op task run), too much to pay on every step. Either way
    the task run is named after the step (its ``step_id`` parameter).
    """
    timeout = step.timeout_seconds if step.call is not None else None
    shape = (step.retries, step.retry_delay_seconds, timeout, _storage_identity(storage), key)
    with _TASKS_LOCK:
        found = _TASKS.get(shape)
        if found is not None:
            return found
        made = waymark_step.with_options(
            name="waymark-step" if key is None else step.id,
            task_run_name="{step_id}",
            cache_policy=StepCachePolicy(key=key or ""),
            result_storage=storage,
            persist_result=True,
            retries=step.retries,
            retry_delay_seconds=step.retry_delay_seconds,
            retry_condition_fn=_worth_retrying,
            timeout_seconds=timeout,
            # No tags: any task tag makes Prefect acquire tag concurrency slots through the
            # API on every task run (~1.7 ms here, a fifth of a no-op task run).
        )
        if key is None:  # only shared tasks are kept; a keyed one is the caller's
            if len(_TASKS) > 256:
                _TASKS.clear()
            _TASKS[shape] = made
        return made
