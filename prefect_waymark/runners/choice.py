"""A task runner by name: ``threads`` (Prefect's thread pool, the default), ``processes``
(``ProcessPoolTaskRunner``) or ``dask`` (prefect-dask's ``DaskTaskRunner``, a temporary local
cluster or the scheduler at ``dask_address``). Which names a run may give is checked with its
options (:func:`~prefect_waymark.run.options.check_task_runner`)."""

from __future__ import annotations

from typing import Any

from ..run.options import check_task_runner

__all__ = ["loop_runner", "make_task_runner"]


def make_task_runner(name: str, dask_address: str | None = None) -> Any:
    """A new (not started) Prefect task runner for ``name`` (checked first)."""
    check_task_runner(name, dask_address)
    if name == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner()
    if name == "processes":
        from prefect.task_runners import ProcessPoolTaskRunner

        return ProcessPoolTaskRunner()
    from prefect_dask.task_runners import (
        DaskTaskRunner,
    )  # an optional extra: imported only when chosen

    if dask_address:
        return DaskTaskRunner(address=dask_address)
    return DaskTaskRunner()


def loop_runner(name: str | None, dask_address: str | None = None) -> Any:
    """The runner a run's loop starts for the ``task_runner`` parameter, or ``None`` for the
    flow run's own (no name, or ``threads`` while the flow's own runner is Prefect's thread
    pool: the fast path stays)."""
    if name is None:
        return None
    check_task_runner(name, dask_address)
    if name == "threads":
        from prefect.context import FlowRunContext
        from prefect.task_runners import ThreadPoolTaskRunner

        ctx = FlowRunContext.get()
        if ctx is None or isinstance(ctx.task_runner, ThreadPoolTaskRunner):
            return None
    return make_task_runner(name, dask_address)
