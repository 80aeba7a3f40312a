"""CLI edge cases found in review: each must end with a clear message and the right exit code,
and leave nothing behind that a user did not ask for."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain

SIMPLE = counting_chain("edges", "ab")


def test_rerun_of_a_never_run_plan_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, SIMPLE)
    proc = run_cli("rerun", str(plan), "a")
    assert proc.returncode == 2
    assert "no recorded run" in proc.stderr
    assert not (tmp_path / ".waymark").exists()


def test_missing_workdir_is_bad_input(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, SIMPLE)
    for args in (["run", str(plan)], ["status", str(plan)]):
        proc = run_cli(*args, "--workdir", str(tmp_path / "nope"))
        assert proc.returncode == 2, proc.stderr
        assert "no such folder" in proc.stderr
    assert not (tmp_path / "nope").exists()


def test_marker_on_a_plan_that_never_ran(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, SIMPLE)
    proc = run_cli("marker", str(plan), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout) is None
    proc = run_cli("marker", str(plan), "--rebuild")
    assert proc.returncode == 2 and "nothing to rebuild" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.yaml"]


def test_rebuild_never_replaces_a_hand_written_marker(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import run_plan

    plan = write_plan(tmp_path, SIMPLE)
    assert run_plan(plan=str(plan))["result"] == "completed"
    own = {"plan_id": "edges", "execution_history": [{"executed_at": "2026-05-30T10:00:00+08:00"}]}
    (tmp_path / "EXECUTION_MARKER.json").write_text(json.dumps(own))
    proc = run_cli("marker", str(plan), "--rebuild")
    assert proc.returncode == 2 and "not written by prefect-waymark" in proc.stderr
    assert json.loads((tmp_path / "EXECUTION_MARKER.json").read_text()) == own


def test_accepting_a_lost_result_lets_the_plan_finish(prefect_server: str, tmp_path: Path) -> None:
    """A completed step whose persisted result vanished stops at needs_review; accepting it is
    recorded once and does not stop every later run again."""
    from prefect_waymark.flows import run_plan

    plan = write_plan(tmp_path, SIMPLE)
    assert run_plan(plan=str(plan), until="a")["result"] == "stopped"
    shutil.rmtree(tmp_path / ".waymark" / "results")
    (tmp_path / ".waymark" / "results").mkdir()
    first = run_plan(plan=str(plan))
    assert first["result"] == "needs_review"
    assert "persisted result is missing" in first["needs_review"][0]["reason"]
    proc = run_cli("review", str(plan), "--step", "a", "--accept", "--reason", "value not needed")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # b needs a's value, which is gone: it stops again, now asking for a re-run of a.
    second = run_plan(plan=str(plan))
    assert second["result"] == "needs_review"
    assert second["needs_review"][0]["step"] == "a"
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        before_a = led.step_states("edges")["a"].result_key
    assert before_a  # accepted as lost, the key kept
    proc = run_cli("rerun", str(plan), "a")
    assert proc.returncode == 0, proc.stderr
    third = run_plan(plan=str(plan))
    assert third["result"] == "completed"
    assert third["executed_steps"] == ["a", "b"]
    assert (tmp_path / "a.count").read_text() == "a\na\n"
    assert (tmp_path / "b.count").read_text() == "b\n"
    # Both results lost, nothing left that needs them: accepted once, the plan is complete.
    shutil.rmtree(tmp_path / ".waymark" / "results")
    (tmp_path / ".waymark" / "results").mkdir()
    stopped = run_plan(plan=str(plan))
    assert stopped["result"] == "needs_review"
    assert sorted(r["step"] for r in stopped["needs_review"]) == ["a", "b"]
    for step in ("a", "b"):
        assert run_cli("review", str(plan), "--step", step, "--accept").returncode == 0
    last = run_plan(plan=str(plan))
    assert last["result"] == "completed"
    assert last["executed_steps"] == [] and last["skipped_count"] == 2
    assert (tmp_path / "a.count").read_text() == "a\na\n"
    # Accepting never erased the keys: another folder or a storage may still hold the values.
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        states = led.step_states("edges")
    assert all(states[s].result_key and states[s].result_lost for s in "ab")
    assert states["a"].result_key != before_a  # a was re-run: its new key
