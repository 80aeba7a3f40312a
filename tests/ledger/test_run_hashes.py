"""A ``run_started`` records every step's hash only when the plan changed (ledger/run_hashes.py).

Real ``run_plan`` flow runs of one plan, edited between runs: the first run and the first run after
each edit hold ``step_hashes`` in full; every other run names the run that holds them
(``step_hashes_run``), and :func:`run_step_hashes` reads each run's hashes back as they were. The
ledger no longer grows by every step's hash on each run of an unchanged plan. Then on both ledgers
(SQLite, PostgreSQL): a ledger written by an earlier version (each run holding its hashes) and
forged history.
"""

from __future__ import annotations

from pathlib import Path

from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.ledger.run_hashes import run_hash_fields, run_step_hashes
from prefect_waymark.plan.loader import load_plan
from tests._support.helpers import write_plan
from tests._support.inprocess import run_inprocess
from tests._support.plans import counting_chain

IDS = [f"s{i:03d}" for i in range(60)]


def _started(url: str, plan_id: str) -> list[tuple[str, dict[str, object]]]:
    with open_ledger(url, create=False) as led:
        return [(str(e.run_id), e.data) for e in led.events(plan_id, kinds=[EventKind.run_started])]


def test_runs_of_an_unchanged_plan_name_the_run_that_holds_its_hashes(
    prefect_server: str, tmp_path: Path
) -> None:
    plan_path = write_plan(tmp_path, counting_chain("hashes", IDS))
    url = f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}"
    hashes_then = []
    for _ in range(3):
        run_inprocess(plan_path, max_steps=1, publish_artifacts=False)
        hashes_then.append(load_plan(plan_path).step_hashes())
    # An edit of one step's definition: the next run records the new hashes in full.
    edited = counting_chain("hashes", IDS).to_dict()
    edited["steps"][5]["run"] = "echo s005 --again >> s005.count"
    write_plan(tmp_path, edited)
    for _ in range(2):
        run_inprocess(plan_path, max_steps=1, publish_artifacts=False)
        hashes_then.append(load_plan(plan_path).step_hashes())
    assert hashes_then[2] != hashes_then[3] and hashes_then[3]["s005"] != hashes_then[2]["s005"]

    started = _started(url, "hashes")
    assert len(started) == 5
    (r1, d1), (_, d2), (_, d3), (r4, d4), (_, d5) = started
    assert d1["step_hashes"] == hashes_then[0] and "step_hashes_run" not in d1
    assert d2["step_hashes_run"] == d3["step_hashes_run"] == r1
    assert "step_hashes" not in d2 and "step_hashes" not in d3
    assert d4["step_hashes"] == hashes_then[3] and d5["step_hashes_run"] == r4
    with open_ledger(url, create=False) as led:
        assert [run_step_hashes(led, "hashes", run) for run, _ in started] == hashes_then
        assert run_step_hashes(led, "hashes", "no-such-run") is None
    # Each run's steps ran once: 5 runs of one step each.
    assert [(tmp_path / f"{s}.count").read_text().count("\n") for s in IDS[:5]] == [1] * 5
    assert not (tmp_path / "s005.count").exists()
    # What the ledger keeps of each run_started: two full sets of hashes, not five.
    sizes = [len(str(d)) for _, d in started]
    assert sizes[1] < sizes[0] / 4 and sizes[2] < sizes[0] / 4 and sizes[4] < sizes[3] / 4


def test_a_ledger_of_an_earlier_version_and_forged_history(ledger_url: str) -> None:
    full = {"a": "1" * 64, "b": "2" * 64}
    with open_ledger(ledger_url) as led:

        def fields(plan_hash: str) -> dict[str, object]:
            return run_hash_fields(led, "p", plan_hash, lambda: full)

        # No run yet: in full.
        assert fields("h1") == {"plan_hash": "h1", "step_hashes": full}
        # Runs recorded by an earlier version hold their hashes: the newest one is named.
        led.record("p", EventKind.run_started, run_id="old-1", plan_hash="h1", step_hashes=full)
        led.record("p", EventKind.run_started, run_id="old-2", plan_hash="h1", step_hashes=full)
        assert fields("h1") == {"plan_hash": "h1", "step_hashes_run": "old-2"}
        # A run that named its holder passes the name on.
        led.record("p", EventKind.run_started, run_id="new-1", **fields("h1"))
        assert fields("h1") == {"plan_hash": "h1", "step_hashes_run": "old-2"}
        # Another plan hash than the last run's, or a last run holding neither: in full.
        assert fields("h2") == {"plan_hash": "h2", "step_hashes": full}
        led.record("p", EventKind.run_started, run_id="forged", plan_hash="h1")
        assert fields("h1") == {"plan_hash": "h1", "step_hashes": full}
        assert run_step_hashes(led, "p", "new-1") == full
        assert run_step_hashes(led, "p", "forged") is None
        # A loop of names, or a name of a run of another plan hash (only a foreign writer makes
        # either): no hashes, never another plan's.
        led.record("p", EventKind.run_started, run_id="x", plan_hash="h", step_hashes_run="y")
        led.record("p", EventKind.run_started, run_id="y", plan_hash="h", step_hashes_run="x")
        assert run_step_hashes(led, "p", "x") is None
        led.record("p", EventKind.run_started, run_id="z", plan_hash="h2", step_hashes_run="old-1")
        assert run_step_hashes(led, "p", "z") is None


def test_a_renamed_plan_keeps_its_runs_hashes_and_records_its_own(ledger_url: str) -> None:
    """``waymark rename-plan`` carries the runs over with their names; the plan hash covers the
    plan id, so the first run under the new id records its hashes in full."""
    full = {"a": "1" * 64}
    with open_ledger(ledger_url) as led:
        started = EventKind.run_started
        led.record("old", started, run_id="r1", plan_hash="h-old", step_hashes=full)
        led.record("old", started, run_id="r2", plan_hash="h-old", step_hashes_run="r1")
        led.rename_plan("old", "new", by="tester")
        assert run_step_hashes(led, "new", "r2") == full
        assert run_hash_fields(led, "new", "h-new", lambda: full) == {
            "plan_hash": "h-new",
            "step_hashes": full,
        }
