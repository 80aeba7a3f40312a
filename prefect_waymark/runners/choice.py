"""A task runner by name: ``threads`` (Prefect's thread pool, the default), ``processes``
(``ProcessPoolTaskRunner``) or ``dask`` (prefect-dask's ``DaskTaskRunner``, a temporary local
cluster or the scheduler at ``dask_address``)."""

from __future__ import annotations

import importlib.util
from typing import Any

from ..errors import TaskRunnerError

__all__ = ["DASK_INSTALL", "TASK_RUNNERS", "check_task_runner", "loop_runner", "make_task_runner"]

TASK_RUNNERS = ("threads", "processes", "dask")
DASK_INSTALL = "pip install 'prefect-waymark[dask]'"


def check_task_runner(name: str | None, dask_address: str | None = None) -> None:
    """Raise :class:`TaskRunnerError` for a name that is not a runner, ``dask`` without
    prefect-dask installed, or a Dask address with another runner; nothing is started."""
    if name is None:
        if dask_address:
            raise TaskRunnerError("--dask-address needs --task-runner dask")
        return
    if name not in TASK_RUNNERS:
        raise TaskRunnerError(
            f"--task-runner: unknown task runner {name!r}; expected one of "
            + ", ".join(TASK_RUNNERS)
        )
    if dask_address and name != "dask":
        raise TaskRunnerError(f"--dask-address needs --task-runner dask, not {name!r}")
    if name == "dask" and (
        importlib.util.find_spec("prefect_dask") is None
        or importlib.util.find_spec("distributed") is None
    ):
        raise TaskRunnerError(
            f"--task-runner dask needs prefect-dask and distributed: {DASK_INSTALL}"
        )
    if dask_address is not None and not dask_address.strip():
        raise TaskRunnerError("--dask-address: expected a scheduler address, e.g. tcp://HOST:8786")


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
