"""``waymark review`` on SQLite and PostgreSQL ledgers: every decision is an event; accepting
takes the versions the review showed, never whatever is newest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect_waymark.guards.conflicts import load_accepted
from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan


def _plan(tmp_path: Path) -> Path:
    return write_plan(
        tmp_path,
        {
            "plan_id": "rv",
            "state_refs": [
                {"name": "orders", "kind": "file", "path": "orders.json"},
                {"name": "prices", "kind": "file", "path": "prices.json"},
            ],
            "steps": [
                {"id": "a", "run": "true", "reads": ["orders"]},
                {"id": "b", "branch": "side", "run": "true", "reads": ["prices"]},
            ],
        },
    )


def _conflict(ref: str, accepted: str, current: str | None, problem: str) -> dict[str, Any]:
    return {
        "ref": ref,
        "kind": "file",
        "problem": problem,
        "message": f"{ref} {problem}",
        "at": "2026-11-30T10:00:00+00:00",
        "accepted": accepted,
        "current": current,
        "error": None if current else "boom",
        "on_error": "review",
    }


def _stop(led: Any, step_id: str, branch: str, conflict: dict[str, Any]) -> None:
    """A stop for review of ``step_id`` over one ref conflict, as a run records it."""
    led.record(
        "rv",
        "step_needs_review",
        step_id=step_id,
        branch=branch,
        reason="conflict",
        details={"ref": conflict["ref"], "conflicts": [conflict]},
    )


def test_review_decisions(ledger_url: str, tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    led_args = ("--ledger", ledger_url)
    proc = run_cli("review", str(plan), "--accept", *led_args)
    assert proc.returncode == 2 and "nothing needs review" in proc.stderr  # no ledger yet
    with open_ledger(ledger_url) as led:
        led.record("rv", "accepted_versions", refs={"orders": "o1", "prices": "p1"})
        _stop(led, "a", "main", _conflict("orders", "o1", "o2", "changed"))
        _stop(led, "b", "side", _conflict("prices", "p1", None, "unreadable"))
    proc = run_cli("review", str(plan), "--accept", *led_args)
    assert proc.returncode == 2 and "several steps need review (a, b)" in proc.stderr
    assert run_cli("review", str(plan), *led_args).returncode == 2  # no decision given
    proc = run_cli("review", str(plan), "--accept", "--rerun", "--step", "a", *led_args)
    assert proc.returncode == 2 and "exactly one" in proc.stderr
    assert run_cli("review", str(plan), "--step", "zz", "--accept", *led_args).returncode == 2

    proc = run_cli("review", str(plan), "--step", "a", "--accept", "--by", "ann", *led_args)
    assert proc.returncode == 0, proc.stderr
    assert "accepted: orders = o2" in proc.stdout
    proc = run_cli("review", str(plan), "--step", "a", "--accept", *led_args)
    assert proc.returncode == 2 and "not needs_review" in proc.stderr
    # An unreadable ref shows no current version: re-running accepts nothing new for it.
    proc = run_cli("review", str(plan), "--rerun", "--reason", "retry the read", *led_args)
    assert proc.returncode == 0, proc.stderr
    with open_ledger(ledger_url) as led:
        states = led.step_states("rv")
        accepted = load_accepted(led, "rv")
        decided = led.events("rv", kinds=["step_review_accepted", "step_rerun_requested"])
    assert accepted.refs == {"orders": "o2", "prices": "p1"}
    assert states["a"].status == "pending" and states["b"].status == "pending"
    assert states["b"].generation == 1
    assert [(e.kind, e.data["by"]) for e in decided][0] == ("step_review_accepted", "ann")
    assert decided[1].data["reason"] == "retry the read"

    assert run_cli("review", str(plan), "--abort", "--reason", "stop", *led_args).returncode == 0
    proc = run_cli("review", str(plan), "--abort", *led_args)
    assert proc.returncode == 0 and "already aborted" in proc.stdout
    shown = run_cli("status", str(plan), "--json", *led_args)  # status says it is aborted
    assert shown.returncode == 4, shown.stderr
    assert json.loads(shown.stdout)["aborted"]["reason"] == "stop"
    assert "aborted by" in run_cli("status", str(plan), *led_args).stdout
    with open_ledger(ledger_url) as led:
        led.record("rv", "step_needs_review", step_id="a", branch="main", reason="again")
    proc = run_cli("review", str(plan), "--accept", *led_args)
    assert proc.returncode == 0 and "lifts the abort" in proc.stdout
    with open_ledger(ledger_url) as led:
        kinds = [e.kind for e in led.events("rv")]
    assert kinds.count("plan_aborted") == 1 and kinds[-2:] == [
        "plan_abort_lifted",
        "step_review_accepted",
    ]
    lifted = run_cli("status", str(plan), "--json", *led_args)
    assert "aborted" not in json.loads(lifted.stdout)


def test_review_all_answers_every_stop_at_once(ledger_url: str, tmp_path: Path) -> None:
    """Several steps stopped (a second folder, a changed ref read by many): `--all` answers every
    one the same way, in plan order, instead of one `--step` at a time."""
    plan = _plan(tmp_path)
    led_args = ("--ledger", ledger_url)
    with open_ledger(ledger_url) as led:
        led.record("rv", "accepted_versions", refs={"orders": "o1", "prices": "p1"})
        _stop(led, "a", "main", _conflict("orders", "o1", "o2", "changed"))
        _stop(led, "b", "side", _conflict("prices", "p1", "p2", "changed"))
    one = run_cli("review", str(plan), "--accept", *led_args)
    assert one.returncode == 2 and "answer them all with --all" in one.stderr
    for bad in (("--abort", "--all"), ("--accept", "--all", "--step", "a")):
        proc = run_cli("review", str(plan), *bad, *led_args)
        assert proc.returncode == 2 and "--all" in proc.stderr, proc.stderr
    with open_ledger(ledger_url) as led:  # the refusals recorded nothing
        assert not led.events("rv", kinds=["step_review_accepted", "plan_aborted"])

    proc = run_cli("review", str(plan), "--accept", "--all", "--by", "ann", *led_args)
    assert proc.returncode == 0, proc.stderr
    assert "step 'a': review accepted" in proc.stdout
    assert "step 'b': review accepted" in proc.stdout
    with open_ledger(ledger_url) as led:
        states = led.step_states("rv")
        accepted = [
            (e.step_id, e.data["by"]) for e in led.events("rv", kinds=["step_review_accepted"])
        ]
        refs = load_accepted(led, "rv").refs
    assert accepted == [("a", "ann"), ("b", "ann")]
    assert states["a"].status == states["b"].status == "pending"
    assert refs == {"orders": "o2", "prices": "p2"}
    again = run_cli("review", str(plan), "--accept", "--all", *led_args)
    assert again.returncode == 2 and "needs review" in again.stderr
