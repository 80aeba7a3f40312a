"""Who runs a plan, and where: cheap helpers used by the CLI without importing Prefect."""

from __future__ import annotations

import getpass
import os
import socket


def default_executor() -> str:
    """``user@host``, the executor recorded when none is given."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def worker_name() -> str | None:
    """The Prefect worker that started this process's flow run, if one did (workers set
    ``PREFECT__WORKER_NAME`` in the environment of the runs they start)."""
    return os.environ.get("PREFECT__WORKER_NAME") or None


def flow_executor() -> str:
    """The executor of a flow run given none: ``<worker>/<flow-run-name>`` in a run a worker
    started (two workers on one host are told apart), else ``user@host``."""
    worker = worker_name()
    if worker is None:
        return default_executor()
    from prefect.runtime import flow_run

    return f"{worker}/{flow_run.get_name() or flow_run.get_id() or '?'}"


def execution_run_id(flow_run_id: str, run_count: int) -> str:
    """A run's id in the ledger: its flow run's id; the ``run_count``-th execution of the same
    flow run (a suspended run resumed), from the second on, gets ``-r<N>``, so each execution
    has runs, holds and markers of its own."""
    return flow_run_id if run_count <= 1 else f"{flow_run_id}-r{run_count}"


def flow_run_of(run_id: str) -> str:
    """The flow run id inside a run id of :func:`execution_run_id`."""
    head, sep, tail = run_id.rpartition("-r")
    return head if sep and tail.isdigit() else run_id
