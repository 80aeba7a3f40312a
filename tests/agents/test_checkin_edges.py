"""Check-ins at their edges (found by a hostile pass): forbidden actions before and during a
step, a refused step that must not hide the others, owners, `block` on code steps and behind a
step that completes, evidence named by text, bad `--results` and environment values. Real
`waymark` subprocesses on real SQLite ledgers; no Prefect server is needed for any of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from prefect_waymark import load_plan
from prefect_waymark.ledger import open_ledger
from prefect_waymark.ledger.progress_view import build_view
from tests._support.helpers import run_cli, write_plan

NO_SERVER = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}


def _plan(tmp_path: Path, steps: list[dict[str, Any]], forbidden: list[str] | None = None) -> str:
    doc: dict[str, Any] = {"plan_id": "edges", "steps": steps}
    if forbidden is not None:
        doc["contract"] = {"goal_id": "g", "objective": "Ship it", "forbidden": forbidden}
    return str(write_plan(tmp_path, doc))


def _events(tmp_path: Path, *kinds: str) -> list[Any]:
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        return list(led.events("edges", kinds=list(kinds) or None))


def _cli(*args: str) -> Any:
    return run_cli(*args, env=NO_SERVER, timeout=120)


def test_a_contract_that_forbids_the_action_mid_step_stops_it_and_done_records_nothing(
    tmp_path: Path,
) -> None:
    p = _plan(
        tmp_path,
        [{"id": "ship", "kind": "agent", "instructions": "Deploy.", "action": "deploy-prod"}],
        forbidden=[],
    )
    assert _cli("start", p, "ship", "--executor", "a").returncode == 0
    doc = yaml.safe_load(Path(p).read_text())
    doc["contract"].update(version=2, forbidden=["action:deploy-*"])
    Path(p).write_text(yaml.safe_dump(doc))
    proc = _cli("done", p, "ship", "--executor", "a", "--receipt", "external_id=ch_1")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "forbidden by goal contract" in proc.stdout
    assert _events(tmp_path, "action_applied", "step_completed") == []
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        assert led.step_states("edges")["ship"].status == "needs_review"
        assert led.holds("edges") == []  # the branch is free again
    assert [e.data["drift"] for e in _events(tmp_path, "drift")] == ["forbidden_action"]


def test_a_refused_step_is_refused_once_and_does_not_hide_the_others(tmp_path: Path) -> None:
    p = _plan(
        tmp_path,
        [
            {"id": "deploy", "kind": "agent", "instructions": "Deploy.", "action": "deploy-x"},
            {"id": "write", "kind": "agent", "instructions": "Write.", "branch": "docs"},
        ],
        forbidden=["action:deploy-*"],
    )
    # The forbidden step is refused; next goes on to the step that may be done.
    for _ in range(3):
        proc = _cli("next", p, "--executor", "w", "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert json.loads(proc.stdout)["step"]["id"] == "write"
    assert len(_events(tmp_path, "step_refused")) == 1
    assert _cli("start", p, "write", "--executor", "w").returncode == 0
    assert _cli("done", p, "write", "--executor", "w").returncode == 0
    proc = _cli("next", p, "--executor", "w", "--json")
    assert proc.returncode == 3
    assert json.loads(proc.stdout)["reason"].startswith("refused: step deploy")


def test_owners_block_and_evidence(tmp_path: Path) -> None:
    p = _plan(
        tmp_path,
        [
            {"id": "code", "run": "true"},
            {"id": "mine", "kind": "agent", "owner": "writer", "instructions": "Write.",
             "acceptance": ["note: has a header: yes or no", "short"]},
            {"id": "later", "kind": "manual", "instructions": "Approve.", "branch": "b2"},
        ],
    )  # fmt: skip
    proc = _cli("start", p, "mine", "--executor", "mallory")
    assert proc.returncode == 2 and "is for 'writer'" in proc.stderr
    proc = _cli("block", p, "code", "--reason", "x", "--executor", "w")
    assert proc.returncode == 2 and "is code that a flow run executes" in proc.stderr
    # Blocked behind a step: not offered (nor waited for by a flow) until that step is done.
    assert _cli("block", p, "later", "--on", "mine", "--executor", "w").returncode == 0
    spec = load_plan(Path(p))
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        assert build_view(spec, led.step_states("edges")).step("later").status == "blocked"
    assert _cli("start", p, "mine", "--executor", "writer").returncode == 0
    proc = _cli(
        "done", p, "mine", "--executor", "writer",
        "--evidence", "note: has a header: yes or no: yes", "--evidence", "A2: it is",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        states = led.step_states("edges")
        assert states["mine"].evidence == {"A1": "yes", "A2": "it is"}
        assert build_view(spec, states).step("later").status == "pending"
    doc = json.loads(_cli("next", p, "--executor", "boss", "--json").stdout)
    assert doc["step"]["id"] == "later"


def test_evidence_given_twice_and_bad_results_are_refused_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    p = _plan(tmp_path, [{"id": "a", "kind": "agent", "instructions": "Do.", "acceptance": ["x"]}])
    assert _cli("start", p, "a", "--executor", "w").returncode == 0
    proc = _cli("done", p, "a", "--executor", "w", "--evidence", "A1: one", "--evidence", "x: two")
    assert proc.returncode == 2 and "given twice" in proc.stderr
    proc = _cli("done", p, "a", "--executor", "w", "--results", "./relative/dir")
    assert proc.returncode == 2 and "expected an absolute folder path" in proc.stderr
    proc = _cli("done", p, "a", "--executor", "w", "--results", "local-file-system/shared")
    assert proc.returncode == 2 and "the block cannot be read" in proc.stderr  # no server
    assert "Traceback" not in proc.stderr
    assert _events(tmp_path, "step_completed") == []
    proc = run_cli("run", p, env={**NO_SERVER, "WAYMARK_AGENT_WAIT_SECONDS": "abc"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "$WAYMARK_AGENT_WAIT_SECONDS: expected seconds" in proc.stderr
    proc = run_cli("next", p, "--json", env={**NO_SERVER, "WAYMARK_EXECUTOR": "bad name"})
    assert proc.returncode == 2 and "$WAYMARK_EXECUTOR 'bad name'" in proc.stderr


def test_done_by_another_executor_says_how_to_name_yourself(tmp_path: Path) -> None:
    """An agent that started a step as `agent-a` and forgot `--executor` on `done` is told the
    two ways to say who it is; both work, and the refused `done` recorded nothing."""
    p = _plan(tmp_path, [{"id": "a", "kind": "agent", "instructions": "do a"}])
    assert _cli("start", p, "a", "--executor", "agent-a").returncode == 0
    proc = _cli("done", p, "a")  # the default executor: user@host
    assert proc.returncode != 0
    assert "was started by executor 'agent-a', not by" in proc.stderr, proc.stderr
    assert "add `--executor agent-a`" in proc.stderr and "WAYMARK_EXECUTOR=agent-a" in proc.stderr
    assert _events(tmp_path, "step_completed") == []
    proc = run_cli("done", p, "a", env={**NO_SERVER, "WAYMARK_EXECUTOR": "agent-a"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(_events(tmp_path, "step_completed")) == 1
