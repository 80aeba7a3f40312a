"""A plan waiting for a person is announced once per stop, not by every scheduled run: the
``waymark.plan.needs-review`` event goes out when the stop is recorded; the runs after it, still
stopped at the same place, do not send it again; a new stop is news again. Real CLI runs on the
session's Prefect server; the events are read back from it."""

from __future__ import annotations

import time
from pathlib import Path

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain
from tests._support.prefect_events import needs_review_events


def _announced(folder: Path, plan_id: str) -> list[dict[str, int]]:
    with open_ledger(f"sqlite:///{folder / '.waymark' / 'ledger.db'}") as led:
        return [dict(e.data["stops"]) for e in led.events(plan_id, kinds=["review_announced"])]


def _settled_events(plan_id: str, at_least: int) -> int:
    """The number of needs-review events the server holds, once ingestion settled."""
    deadline = time.monotonic() + 60
    while len(needs_review_events(plan_id)) < at_least and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(3)  # a late duplicate would arrive within this
    return len(needs_review_events(plan_id))


def test_one_needs_review_event_per_stop(prefect_server: str, tmp_path: Path) -> None:
    plan_id = f"once-{time.monotonic_ns() % 10**8}"
    (tmp_path / "terms.md").write_text("v1")
    refs = [{"name": "terms", "kind": "file", "path": "terms.md"}]
    plan = write_plan(tmp_path, counting_chain(plan_id, "ab", reads=["terms"], state_refs=refs))
    assert run_cli("run", str(plan), "--max-steps", "1").returncode == 3

    (tmp_path / "terms.md").write_text("v2")
    for _ in range(3):  # the stop, then two "scheduled" runs that find it still open
        proc = run_cli("run", str(plan))
        assert proc.returncode == 4, proc.stdout + proc.stderr
    stops = _announced(tmp_path, plan_id)
    assert len(stops) == 1 and list(stops[0]) == ["b"]
    assert _settled_events(plan_id, 1) == 1

    # Answered, then the ref changes again: a new stop, announced once more.
    assert run_cli("review", str(plan), "--accept").returncode == 0
    (tmp_path / "terms.md").write_text("v3")
    for _ in range(2):
        proc = run_cli("run", str(plan))
        assert proc.returncode == 4, proc.stdout + proc.stderr
    stops = _announced(tmp_path, plan_id)
    assert len(stops) == 2 and stops[0]["b"] != stops[1]["b"]
    assert _settled_events(plan_id, 2) == 2
    assert not (tmp_path / "b.count").exists()
