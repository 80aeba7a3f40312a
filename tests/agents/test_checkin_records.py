"""What check-ins record and what ``waymark next --json`` shows: the last marker's boundary, the
refs changed since they were accepted, the milestone in ``standing``; ``done --output`` hashes
and records an extra output; ``done --receipt`` on an action step records the receipt and the
step is not started again. Real ``waymark`` subprocesses, a real SQLite ledger; one real flow
run (``waymark run``, the session's Prefect server) writes the marker."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan

PLAN: dict[str, Any] = {
    "plan_id": "records",
    "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
    "steps": [
        {"id": "collect", "run": "echo c > data.txt", "outputs": ["data.txt"],
         "milestone": "data"},
        {"id": "write", "kind": "agent", "depends_on": ["collect"], "milestone": "draft",
         "instructions": "Write draft.md.", "outputs": ["draft.md"]},
        {"id": "ship", "kind": "agent", "depends_on": ["write"], "milestone": "draft",
         "instructions": "Publish draft.md.", "action": "publish-report"},
    ],
}  # fmt: skip


def _j(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(proc.stdout + proc.stderr) from exc
    return doc


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_next_json_boundary_refs_changed_and_milestone_then_outputs_and_receipts(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = str(write_plan(tmp_path, PLAN))
    (tmp_path / "terms.md").write_text("v1\n")
    run = run_cli("run", plan)
    assert run.returncode == 3, run.stdout + run.stderr  # collect done; write waits for an agent
    (tmp_path / "terms.md").write_text("v2\n")

    # The changed ref stops the agent's step for review; the document says why and what changed.
    proc = run_cli("next", plan, "--executor", "w", "--json")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    doc = _j(proc)
    assert doc["step"] is None and "state ref 'terms'" in doc["reason"]
    (changed,) = doc["refs_changed"]
    assert changed["name"] == "terms" and changed["where"] == "file terms.md"
    assert changed["current"] == f"sha256:{_sha(tmp_path / 'terms.md')}"
    assert changed["accepted"] != changed["current"]
    assert doc["standing"] == "1/3 done · milestone draft"
    boundary = doc["boundary"]
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    assert boundary["run_id"] == marker["execution_history"][-1]["flow_run_id"]
    assert boundary["result"] == "stopped" and boundary["next_start"]["step"] == "write"

    assert run_cli("review", plan, "--step", "write", "--accept").returncode == 0
    doc = _j(run_cli("next", plan, "--executor", "w", "--json"))
    assert doc["step"]["id"] == "write" and doc["refs_changed"] == []
    assert doc["standing"] == "1/3 done · milestone draft · next after this: ship"
    assert doc["boundary"] == boundary  # no run since: the same marker

    # done --output: an output the plan does not declare is hashed and recorded too.
    assert run_cli("start", plan, "write", "--executor", "w").returncode == 0
    (tmp_path / "draft.md").write_text("draft\n")
    (tmp_path / "notes.md").write_text("notes\n")
    proc = run_cli("done", plan, "write", "--executor", "w", "--output", "notes.md", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    want = {p: _sha(tmp_path / p) for p in ("draft.md", "notes.md")}
    assert _j(proc)["outputs"] == want
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        assert led.step_states("records")["write"].outputs == want

    # done --receipt on an action step: the receipt is recorded; the step is not started again.
    assert run_cli("start", plan, "ship", "--executor", "w").returncode == 0
    proc = run_cli("done", plan, "ship", "--executor", "w")
    assert proc.returncode == 2 and "give --receipt external_id=" in proc.stderr
    proc = run_cli(
        "done", plan, "ship", "--executor", "w",
        "--receipt", "external_id=pub_1", "--receipt", "channel=web",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        (rec,) = led.receipts("records")
        assert led.step_states("records")["ship"].status == "completed"
    assert (rec.step_id, rec.action, rec.state) == ("ship", "publish-report", "applied")
    assert (rec.external_id, rec.note, rec.settled_by) == ("pub_1", "channel=web", "w")
    for who in ("w", "other"):
        again = run_cli("start", plan, "ship", "--executor", who)
        assert again.returncode == 2, again.stdout + again.stderr
        assert "step ship is completed; nothing to start" in again.stderr
    doc = _j(run_cli("next", plan, "--executor", "w", "--json"))
    assert doc["step"] is None and doc["reason"] == "plan complete: every step is done"
