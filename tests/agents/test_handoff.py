"""Hand-off across machines: executor A works part of a plan in one folder,
executor B continues in another folder (another path, nothing shared but the ledger file and
the result storage) from `waymark next` alone. Code steps run by flow runs in both folders;
agent steps are checked in through the CLI. Every step runs once; B finds A's outputs restored
from the storage (hash checked); both folders' markers tell the same history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan

PLAN: dict[str, Any] = {
    "plan_id": "handoff",
    "steps": [
        {"id": "collect", "run": "echo x >> collect.count; echo data > data.txt",
         "outputs": ["data.txt"]},
        {"id": "draft", "kind": "agent", "owner": "agent-a", "depends_on": ["collect"],
         "instructions": "Write draft.md from data.txt.", "outputs": ["draft.md"],
         "acceptance": ["cites data.txt"]},
        {"id": "check", "kind": "agent", "owner": "agent-b", "depends_on": ["draft"],
         "instructions": "Check draft.md against data.txt; write check.txt.",
         "outputs": ["check.txt"]},
        {"id": "render", "depends_on": ["check"],
         "run": "echo x >> render.count; cat data.txt draft.md check.txt > report.md",
         "outputs": ["report.md"]},
    ],
}  # fmt: skip


def test_two_executors_in_two_folders_hand_a_plan_over(prefect_server: str, tmp_path: Path) -> None:
    ledger = f"sqlite:///{tmp_path / 'shared' / 'ledger.db'}"
    (tmp_path / "shared").mkdir()
    results = str(tmp_path / "shared" / "results")
    a, b = tmp_path / "machine-1" / "work", tmp_path / "elsewhere" / "m2"
    plan_a, plan_b = str(write_plan(a, PLAN)), str(write_plan(b, PLAN))
    shared = ["--ledger", ledger, "--results", results]

    # Machine 1: a flow run does collect, then stops at A's agent step.
    proc = run_cli("run", plan_a, *shared)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "draft waits for agent-a" in proc.stdout
    doc = json.loads(run_cli("next", plan_a, "--executor", "agent-a", "--json", *shared).stdout)
    assert doc["step"]["id"] == "draft"
    assert (
        run_cli("start", plan_a, "draft", "--executor", "agent-a", "--ledger", ledger).returncode
        == 0
    )
    (a / "draft.md").write_text((a / "data.txt").read_text() + "draft\n")
    proc = run_cli(
        "done", plan_a, "draft", "--executor", "agent-a", "--evidence", "A1: line 1", *shared
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Nothing more for A: the next step is B's.
    proc = run_cli("next", plan_a, "--executor", "agent-a", "--json", *shared)
    assert proc.returncode == 3 and "is for agent-b" in json.loads(proc.stdout)["reason"]

    # Machine 2, another folder: B starts from `next` alone; A's output is restored here.
    assert not (b / "draft.md").exists()
    proc = run_cli("next", plan_b, "--executor", "agent-b", "--json", *shared)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    step = json.loads(proc.stdout)["step"]
    assert step["id"] == "check"
    (out,) = step["upstream"][0]["outputs"]
    assert out["path"] == "draft.md" and out["restored"] is True and out["here"] is True
    assert out["made_in"] == str(a / "draft.md")
    assert (b / "draft.md").read_text() == (a / "draft.md").read_text()
    assert step["upstream"][0]["evidence"] == {"A1": "line 1"}
    assert (
        run_cli("start", plan_b, "check", "--executor", "agent-b", "--ledger", ledger).returncode
        == 0
    )
    (b / "check.txt").write_text("checked\n")
    assert run_cli("done", plan_b, "check", "--executor", "agent-b", *shared).returncode == 0

    # A flow run on machine 2 finishes the plan: collect's output comes back from the storage,
    # nothing is redone.
    proc = run_cli("run", plan_b, *shared)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (a / "collect.count").read_text().split() == ["x"] and not (b / "collect.count").exists()
    assert (b / "render.count").read_text().split() == ["x"] and not (a / "render.count").exists()
    assert (b / "report.md").read_text() == "data\ndata\ndraft\nchecked\n"
    with open_ledger(ledger) as led:
        states = led.step_states("handoff")
        started = [e.step_id for e in led.events("handoff", kinds=["step_started"])]
    assert all(st.status == "completed" for st in states.values()) and len(states) == 4
    assert started == ["collect", "draft", "check", "render"]  # each step started once
    # One history in both folders' markers: machine 2's marker lists machine 1's run too.
    hist_b = json.loads((b / "EXECUTION_MARKER.json").read_text())["execution_history"]
    hist_a = json.loads((a / "EXECUTION_MARKER.json").read_text())["execution_history"]
    assert [h["workdir"] for h in hist_b] == [str(a), str(b)]
    assert hist_a[0] == hist_b[0]
