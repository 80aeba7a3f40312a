"""How the scheduler hands step tasks to a Prefect task runner and waits for them.

It waits through Prefect's own API (``prefect.futures.as_completed``), never on a runner's private
future, so Prefect's thread pool, ``ProcessPoolTaskRunner`` and prefect-dask's
``DaskTaskRunner`` all work. A runner named by the flow's ``task_runner`` parameter is started
on the first submission (a resume with nothing to do starts no Dask cluster) and shut down
when the loop ends; without one the flow run's own task runner is used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prefect import Task
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture, as_completed
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

__all__ = ["Launcher", "runs_in_process"]


def runs_in_process(runner: TaskRunner[Any] | None) -> bool:
    """True for a runner whose tasks run in this process (threads): they get the scheduler's
    own runtime; any other runner's tasks get a :class:`~.remote.RemoteRuntime`."""
    return runner is None or isinstance(runner, ThreadPoolTaskRunner)


class Launcher:
    """Submits step tasks to ``own`` (a runner this loop starts) or the flow run's runner."""

    def __init__(self, own: TaskRunner[Any] | None = None) -> None:
        self.own = own
        self._started = False

    @property
    def runner(self) -> TaskRunner[Any] | None:
        if self.own is not None:
            return self.own
        ctx = FlowRunContext.get()
        return ctx.task_runner if ctx is not None else None

    @property
    def in_process(self) -> bool:
        return runs_in_process(self.runner)

    def submit(self, task: Task[..., Any], parameters: dict[str, Any]) -> PrefectFuture[Any]:
        if self.own is None:
            future: PrefectFuture[Any] = task.submit(**parameters)
            return future
        if not self._started:
            self.own.__enter__()
            self._started = True
        submitted: PrefectFuture[Any] = self.own.submit(task, parameters)
        return submitted

    @staticmethod
    def first_done(
        futures: Iterable[PrefectFuture[Any]], timeout: float
    ) -> set[PrefectFuture[Any]]:
        """The first future to finish within ``timeout`` seconds (empty if none did): the loop
        starts the next step of that branch at once (``prefect.futures.wait`` would wait for
        all of them, or the whole timeout)."""
        found = as_completed(list(futures), timeout=timeout)
        try:
            return {next(found)}
        except (TimeoutError, StopIteration):
            return set()
        finally:
            found.close()

    def close(self) -> None:
        """Shut the loop's own runner down (waits for what still runs there)."""
        if self.own is not None and self._started:
            self._started = False
            self.own.__exit__(None, None, None)
