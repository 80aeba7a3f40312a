"""A parent plan with two sub-plans runs them as Prefect subflows and resumes to completion:
``research`` fails once (its step r2), ``build`` stops for review (its step b2); the review is
answered on the parent (or on the sub-plan); every step of every sub-plan runs once."""

from __future__ import annotations

import json
from pathlib import Path

from tests._support.helpers import run_cli
from tests._support.inprocess import run_inprocess
from tests.subplans._plans import counts, write_family

ONCE = {s: 1 for s in ("b1", "b2", "b3", "final", "prep", "r1", "r2", "r3")}


def _status(plan: Path) -> dict:  # type: ignore[type-arg]
    proc = run_cli("status", str(plan), "--json")
    assert proc.returncode in (0, 1, 4), proc.stderr
    doc: dict = json.loads(proc.stdout)  # type: ignore[type-arg]
    return doc


def test_review_answered_on_the_parent(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.ledger import open_ledger

    parent = write_family(tmp_path)
    first = run_inprocess(parent)
    assert first.result == "needs_review"
    assert first.failed_steps == ["research"]
    assert [i["step"] for i in first.needs_review] == ["build"]
    reason = first.needs_review[0]["reason"]
    assert "sub-plan 'build' stopped for review (1/3 done)" in reason
    assert "b2: b2 wants a person to look at the build inputs" in reason
    assert counts(tmp_path) == {"b1": 1, "prep": 1, "r1": 1}

    # The parent's status: one row per sub-plan with its progress; --json a `subplan` object.
    doc = _status(parent)
    then = run_cli("status", str(parent), "--json").stdout  # for `waymark replay`, below
    with open_ledger(f"sqlite:///{tmp_path}/.waymark/ledger.db", create=False) as led:
        seq_then = max(
            e.seq or 0 for pid in ("parent", "build", "research") for e in led.events(pid)
        )
    rows = {s["id"]: s for s in doc["steps"]}
    assert rows["research"]["status"] == "failed"
    assert rows["research"]["subplan"]["plan_id"] == "research"
    assert (
        rows["research"]["subplan"]["steps_done"],
        rows["research"]["subplan"]["steps_total"],
    ) == (1, 3)
    assert rows["research"]["subplan"]["failed"] == ["r2"]
    assert rows["build"]["subplan"]["needs_review"] == ["b2"]
    assert "subplan" not in rows["prep"]
    table = run_cli("status", str(parent)).stdout
    assert "sub-plan research: 1/3 done" in table
    assert "sub-plan build: 1/3 done" in table
    # The sub-plan's own status: its detail, from the same ledger (found beside the parent).
    sub = _status(tmp_path / "build.yaml")
    assert sub["plan_id"] == "build"
    assert {s["id"]: s["status"] for s in sub["steps"]} == {
        "b1": "completed",
        "b2": "needs_review",
        "b3": "blocked",
    }

    # Answered on the parent: the sub-plan's stop is answered the same way.
    proc = run_cli("review", str(parent), "--step", "build", "--accept")
    assert proc.returncode == 0, proc.stderr
    assert "parent: step 'build': review accepted" in proc.stdout
    assert "sub-plan build: step 'b2': review accepted" in proc.stdout
    sub = _status(tmp_path / "build.yaml")
    assert {s["id"]: s["status"] for s in sub["steps"]}["b2"] == "pending"

    second = run_inprocess(parent)
    assert second.result == "completed", second.text()
    assert counts(tmp_path) == ONCE  # nothing of any sub-plan ran twice

    # The parent step's result: the sub-plan's structured summary, handed to `final`.
    upstream = json.loads((tmp_path / "upstream.json").read_text())
    research = upstream["research"]
    assert research["plan_id"] == "research" and research["result"] == "completed"
    assert (research["steps_done"], research["steps_total"]) == (3, 3)
    assert set(research["outputs"]["r1"]) == {"r1.count"}  # outputs with their hashes
    assert research["needs_review"] == [] and research["next_start"] is None
    assert upstream["build"]["result"] == "completed"

    # Each sub-plan has its own ledger scope in the parent's ledger, linked to the parent step.
    with open_ledger(f"sqlite:///{tmp_path}/.waymark/ledger.db", create=False) as led:
        started = [e for e in led.events("build") if e.kind == "run_started"]
        assert len(started) == 2
        assert started[-1].data["parent"]["plan_id"] == "parent"
        assert started[-1].data["parent"]["step_id"] == "build"
        assert led.step_states("parent")["build"].status == "completed"
    # Its own markers and views, in its own folder.
    marker = tmp_path / ".waymark" / "subplans" / "build" / "EXECUTION_MARKER.json"
    assert json.loads(marker.read_text())["plan_id"] == "build"
    doc = _status(parent)
    assert doc["complete"] is True
    # Replayed at the first run's end: what status showed then, the sub-plan rows included.
    replayed = run_cli("replay", str(parent), "--at", str(seq_then), "--json")
    assert replayed.stdout == then, replayed.stderr
    assert {s["id"]: s["subplan"]["steps_done"] for s in doc["steps"] if "subplan" in s} == {
        "research": 3,
        "build": 3,
    }


def test_review_answered_on_the_subplan(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.ledger import open_ledger

    parent = write_family(tmp_path)
    (tmp_path / "r2.ok").write_text("")  # research does not fail here
    first = run_inprocess(parent)
    assert first.result == "needs_review"
    assert counts(tmp_path) == {"b1": 1, "prep": 1, "r1": 1, "r2": 1, "r3": 1}
    proc = run_cli("review", str(tmp_path / "build.yaml"), "--step", "b2", "--accept")
    assert proc.returncode == 0, proc.stderr
    # `waymark run`: the parent's stop is settled (its sub-plan's stops were answered on it)
    # and the sub-plan resumes where it stopped.
    proc = run_cli("run", str(parent))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert counts(tmp_path) == ONCE
    with open_ledger(f"sqlite:///{tmp_path}/.waymark/ledger.db", create=False) as led:
        accepted = [e for e in led.events("parent") if e.kind == "step_review_accepted"]
        assert [(e.step_id, e.data["by"]) for e in accepted] == [("build", "waymark")]


def test_answer_to_the_parents_pause_reaches_the_subplan(
    prefect_server: str, tmp_path: Path, ledger_url: str
) -> None:
    """An answer recorded on the parent alone (as the Prefect UI form of the parent's pause
    records it) is carried to the sub-plan by the parent step before it runs it again; the
    sub-plan records in the parent's ledger, SQLite or PostgreSQL, found by its URL."""
    from prefect_waymark import load_plan
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.review.decisions import apply_decision

    parent = write_family(tmp_path)
    (tmp_path / "r2.ok").write_text("")
    assert run_inprocess(parent, ledger_url=ledger_url).result == "needs_review"
    with open_ledger(ledger_url, create=False) as led:
        apply_decision(led, load_plan(parent), "rerun", step_id="build", by="someone")
        assert led.step_states("build")["b2"].status == "needs_review"  # not answered yet
    second = run_inprocess(parent, ledger_url=ledger_url)
    assert second.result == "completed", second.text()
    assert counts(tmp_path) == ONCE
    with open_ledger(ledger_url, create=False) as led:
        reruns = [e for e in led.events("build") if e.kind == "step_rerun_requested"]
        assert [(e.step_id, e.data["reason"]) for e in reruns] == [
            ("b2", "answered on parent/build")
        ]


def test_abort_on_the_parent_aborts_the_stopped_subplan(
    prefect_server: str, tmp_path: Path
) -> None:
    parent = write_family(tmp_path)
    (tmp_path / "r2.ok").write_text("")
    assert run_inprocess(parent).result == "needs_review"
    proc = run_cli("review", str(parent), "--step", "build", "--abort")
    assert proc.returncode == 0, proc.stderr
    assert "plan 'parent' aborted" in proc.stdout
    assert "sub-plan build: plan 'build' aborted" in proc.stdout
    assert "aborted" in _status(tmp_path / "build.yaml")
    assert "aborted" not in _status(tmp_path / "research.yaml")  # it did not stop: untouched
