"""Which Prefect task runner runs a plan's steps (threads, processes, Dask), how the scheduler
submits and waits (:mod:`.submit`), and what a step task receives when it runs in another
process (:mod:`.remote`: ``RemoteRuntime``).

Importing this package imports neither Prefect nor Dask: ``waymark run`` checks
``--task-runner`` before it points Prefect at a server (Prefect reads its settings once, on
import), and only choosing ``dask`` imports ``prefect_dask``.
"""

from __future__ import annotations

from ..run.options import DASK_INSTALL, TASK_RUNNERS, check_task_runner
from .choice import loop_runner, make_task_runner

__all__ = ["DASK_INSTALL", "TASK_RUNNERS", "check_task_runner", "loop_runner", "make_task_runner"]
