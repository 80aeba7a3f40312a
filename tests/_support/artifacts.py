"""Read artifacts and logs back through Prefect's client, as the UI does."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["artifact_versions", "flow_run_logs", "latest_artifact", "plan_copy_of"]


def artifact_versions(key: str) -> list[Any]:
    """Every version of ``key``, oldest first."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
            sort=ArtifactSort.CREATED_DESC,
        )
    return list(reversed(found))


def latest_artifact(key: str) -> Any:
    """The latest version of ``key`` (what the UI's key page shows); fails if there is none."""
    versions = artifact_versions(key)
    assert versions, f"no artifact with key {key!r}"
    return versions[-1]


def flow_run_logs(flow_run_id: str, want: str | None = None, wait: float = 20) -> list[Any]:
    """The flow run's log records, oldest first. Logs reach the API in the background: with
    ``want``, poll until a message containing it arrived (or ``wait`` seconds passed)."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.client.schemas.sorting import LogSort

    deadline = time.monotonic() + wait
    while True:
        with get_client(sync_client=True) as client:
            logs = client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[UUID(flow_run_id)])),
                sort=LogSort.TIMESTAMP_ASC,
            )
        if want is None or any(want in log.message for log in logs):
            return list(logs)
        if time.monotonic() > deadline:
            return list(logs)
        time.sleep(0.5)


def plan_copy_of(plan_id: str, ledger_url: str, workdir: Any) -> Any:
    """The :class:`~prefect_waymark.markers.plan_copy.PlanCopy` of a plan in a workdir."""
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.markers.plan_copy import plan_copy

    with open_ledger(ledger_url, create=False) as led:
        return plan_copy(plan_id, led, workdir)
