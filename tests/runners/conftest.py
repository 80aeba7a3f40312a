"""One local Dask cluster for the task-runner tests: two worker processes, one thread each."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def dask_address() -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address
