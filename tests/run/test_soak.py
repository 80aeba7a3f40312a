"""The soak (``bench/soak.py``) with small numbers: three executors in three folders — a flow run
and two agents through the CLI — one PostgreSQL ledger and one result storage pinned in the plan
file, random SIGKILLs at step boundaries and check-ins, reruns, a ref changed, outputs edited and
answered by review, steps added, renamed and removed, and a PostgreSQL restart during a run. The
invariants are checked after every operation: no action applied twice, no completed step stale
without saying so, no step redone without a recorded reason, a marker for every run that ended,
the status equal to a rebuild from events. About two and a half minutes here."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests._support import postgres as pg

pytestmark = [pytest.mark.slow, pytest.mark.prefect, pytest.mark.postgres]

BENCH = Path(__file__).resolve().parents[2] / "bench"
RUNS = 18
SEED = 5
RESTART_AT = 9


def _soak_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_soak", BENCH / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def own_cluster() -> Iterator[pg.ThrowawayCluster]:
    """A PostgreSQL cluster of this test's own: it is restarted during a run (never the
    shared server)."""
    bindir = pg.find_bindir()
    if bindir is None:
        pytest.fail("no initdb/pg_ctl: the soak restarts a PostgreSQL cluster of its own")
    cluster = pg.ThrowawayCluster(bindir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def test_soak_keeps_every_invariant(
    prefect_server: str, own_cluster: pg.ThrowawayCluster, tmp_path: Path
) -> None:
    import psycopg

    soak = _soak_module()
    server = own_cluster.server
    assert server is not None
    name = f"waymark_soak_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    lines: list[str] = []
    driver = soak.Soak(
        tmp_path, server.url(name), seed=SEED, restart_pg=own_cluster.restart, log=lines.append
    )
    counts = driver.run(RUNS, pg_restart_at=RESTART_AT)
    story = "\n".join(lines[-40:])
    assert not counts.broken, f"{counts.broken}\n{story}"
    assert not counts.failures, f"{counts.failures}\n{story}"
    assert not counts.unexplained_reviews, counts.unexplained_reviews
    # It did what it says: kills, reruns, hand-offs, reviews, edits, one PostgreSQL restart.
    assert counts.runs == RUNS and counts.pg_restarts == 1
    assert counts.kills >= 2 and counts.handoffs >= 2 and counts.checkins >= 2, counts
    assert counts.reviews >= 1 and counts.edits >= 2 and counts.reruns >= 1, counts
    # The plan ends complete, its action applied once per round a review asked for.
    assert driver._complete(), story
    assert 1 <= counts.effects <= 1 + driver.review_reruns_of_action
