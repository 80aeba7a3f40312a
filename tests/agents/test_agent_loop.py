"""Agents and people as executors: a plan that mixes agent, manual and code steps,
driven only through the CLI (`waymark next` → `start` → `tick` → `done`, repeated) by real
`waymark` subprocesses on a real SQLite ledger, with a real flow run (`waymark run`, the
session's Prefect server) that waits on the agent step and continues after `done`.

Side effects are counted: the code steps append a line to `<step>.count` each time they run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan

WAYMARK = str(Path(sys.executable).parent / "waymark")

PLAN: dict[str, Any] = {
    "plan_id": "agent-loop",
    "title": "Write, approve and publish a report",
    "contract": {
        "goal_id": "report",
        "objective": "Publish a reviewed report",
        "acceptance": ["report.md is published"],
        "forbidden": ["action:delete-*", "never push to main"],
    },
    "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
    "steps": [
        {"id": "collect", "run": "echo collect >> collect.count; echo data > data.txt",
         "outputs": ["data.txt"]},
        {"id": "draft", "kind": "agent", "owner": "writer", "depends_on": ["collect"],
         "instructions": "Write draft.md from data.txt.", "outputs": ["draft.md"],
         "acceptance": ["draft.md has an introduction", "figures cite data.txt"],
         "reads": ["terms"]},
        {"id": "approve", "kind": "manual", "depends_on": ["draft"],
         "instructions": "Read draft.md; approve it."},
        {"id": "render", "depends_on": ["approve"],
         "run": "echo render >> render.count; cp draft.md report.md", "outputs": ["report.md"]},
    ],
}  # fmt: skip


def _j(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(proc.stdout + proc.stderr) from exc
    return doc


def _ledger(work: Path) -> str:
    return f"sqlite:///{work / '.waymark' / 'ledger.db'}"


def _kinds(work: Path, step: str) -> list[str]:
    with open_ledger(_ledger(work)) as led:
        return [e.kind.value for e in led.events("agent-loop") if e.step_id == step]


def test_an_agent_loop_through_the_cli_completes_a_mixed_plan_with_a_waiting_flow_run(
    prefect_server: str, tmp_path: Path
) -> None:
    work = tmp_path / "plan"
    plan = write_plan(work, PLAN)
    (work / "terms.md").write_text("v1")
    p = str(plan)

    # Nothing is ready for the agent before the code step ran.
    proc = run_cli("next", p, "--executor", "writer", "--json")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    doc = _j(proc)
    assert doc["step"] is None and "code step collect" in doc["reason"]
    assert doc["contract"]["forbidden"] == ["action:delete-*", "never push to main"]

    # A flow run does collect, then waits for the agent (WAYMARK_AGENT_WAIT_SECONDS).
    env = {**os.environ, "WAYMARK_AGENT_WAIT_SECONDS": "240"}
    flow = subprocess.Popen(
        [WAYMARK, "run", p], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while "step_waiting" not in _kinds(work, "draft") if (work / ".waymark").exists() else True:
            assert time.monotonic() < deadline, "the flow run never reached the agent step"
            assert flow.poll() is None, flow.stdout.read() if flow.stdout else ""
            time.sleep(0.5)

        # The agent's session: next → start → tick → done.
        doc = _j(run_cli("next", p, "--executor", "writer", "--json"))
        step = doc["step"]
        assert step["id"] == "draft" and step["instructions"] == "Write draft.md from data.txt."
        assert [a["id"] for a in step["acceptance"]] == ["A1", "A2"]
        assert step["forbidden"] == ["action:delete-*", "never push to main"]
        assert step["reads"][0]["name"] == "terms" and step["reads"][0]["current"]
        (up,) = step["upstream"]
        assert up["step"] == "collect" and up["outputs"][0]["path"] == "data.txt"
        assert up["outputs"][0]["here"] is True
        assert doc["standing"] == "1/4 done · next after this: approve"
        proc = run_cli("start", p, "draft", "--executor", "writer")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        # A second executor cannot take the branch, nor the step.
        proc = run_cli("start", p, "draft", "--executor", "intruder")
        assert proc.returncode == 2 and "in progress by executor 'writer'" in proc.stderr
        proc = run_cli("tick", p, "draft", "--executor", "writer", "--every", "2")
        assert proc.returncode == 0 and "re-anchored" not in proc.stdout
        proc = run_cli("tick", p, "draft", "--executor", "writer", "--every", "2", "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert _j(proc)["reanchored"]["goal"] == "Publish a reviewed report"
        (work / "draft.md").write_text("# Intro\nfigures from data.txt\n")
        # Unknown evidence items, or another executor's done: refused, nothing recorded.
        proc = run_cli("done", p, "draft", "--executor", "writer", "--evidence", "A9: nope")
        assert proc.returncode == 2 and "has no acceptance item 'A9'" in proc.stderr
        proc = run_cli("done", p, "draft", "--executor", "intruder")
        assert proc.returncode == 2 and "started by executor 'writer'" in proc.stderr
        assert "step_completed" not in _kinds(work, "draft")
        proc = run_cli(
            "done", p, "draft", "--executor", "writer", "--json",
            "--evidence", "A1: the intro is the first section",
            "--evidence", "figures cite data.txt: yes, line 2",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        done = _j(proc)
        assert done["evidence"] == {"A1": "the intro is the first section", "A2": "yes, line 2"}
        assert set(done["outputs"]) == {"draft.md"} and done["no_evidence"] == []

        # A person takes the manual step (any executor: it has no owner).
        doc = _j(run_cli("next", p, "--executor", "boss", "--json"))
        assert doc["step"]["id"] == "approve" and doc["step"]["kind"] == "manual"
        assert doc["step"]["upstream"][0]["evidence"]["A2"] == "yes, line 2"
        assert run_cli("start", p, "approve", "--executor", "boss").returncode == 0
        assert run_cli("done", p, "approve", "--executor", "boss").returncode == 0

        # The waiting flow run goes on: render runs, and the plan completes.
        out, _ = flow.communicate(timeout=240)
    finally:
        if flow.poll() is None:
            flow.kill()
    assert flow.returncode == 0, out[-4000:]
    assert "waits for writer" in out
    assert (work / "collect.count").read_text().split() == ["collect"]
    assert (work / "render.count").read_text().split() == ["render"]
    assert (work / "report.md").read_text() == (work / "draft.md").read_text()
    proc = run_cli("next", p, "--executor", "writer", "--json")
    assert proc.returncode == 3 and _j(proc)["reason"] == "plan complete: every step is done"
    with open_ledger(_ledger(work)) as led:
        states = led.step_states("agent-loop")
    assert {s: st.status for s, st in states.items()} == dict.fromkeys(
        ["collect", "draft", "approve", "render"], "completed"
    )
    assert states["draft"].executor == "writer" and states["approve"].executor == "boss"
    assert states["draft"].run_id == "agent:writer"
    # The marker says what ran: the flow run's entry lists its code steps.
    history = json.loads((work / "EXECUTION_MARKER.json").read_text())["execution_history"]
    assert sorted(history[-1]["executed_steps"]) == ["collect", "render"]


def test_without_waiting_a_flow_run_stops_at_the_agent_step_and_the_next_continues(
    prefect_server: str, tmp_path: Path
) -> None:
    work = tmp_path / "plan"
    plan = write_plan(work, PLAN)
    (work / "terms.md").write_text("v1")
    p = str(plan)
    proc = run_cli("run", p)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "next start: draft (draft waits for writer" in proc.stdout
    assert run_cli("start", p, "draft", "--executor", "writer").returncode == 0
    # While the agent holds the branch, a run does not take it over (no pid to check: lease).
    proc = run_cli("run", p)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "step_interrupted" not in _kinds(work, "draft")
    (work / "draft.md").write_text("draft")
    assert run_cli("done", p, "draft", "--executor", "writer").returncode == 0
    # The views say it at once, as after a run (no run between the check-in and them).
    assert "`draft` — **completed** (owner: writer)" in (work / "TASKS.md").read_text()
    assert run_cli("start", p, "approve", "--executor", "ann").returncode == 0
    assert run_cli("done", p, "approve", "--executor", "ann").returncode == 0
    proc = run_cli("run", p)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (work / "collect.count").read_text().split() == ["collect"]
    assert (work / "render.count").read_text().split() == ["render"]


@pytest.mark.parametrize("how", ["next", "tick"])
def test_a_changed_ref_stops_the_agent_step_for_review(tmp_path: Path, how: str) -> None:
    """No Prefect server at all: check-ins work on the ledger alone."""
    doc = {**PLAN, "steps": [{**PLAN["steps"][1], "depends_on": []}]}
    work = tmp_path / "plan"
    plan = write_plan(work, doc)
    (work / "terms.md").write_text("v1")
    p = str(plan)
    env = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing answers there
    assert run_cli("start", p, "draft", "--executor", "writer", env=env).returncode == 0
    (work / "terms.md").write_text("v2")
    if how == "next":
        proc = run_cli("next", p, "--executor", "writer", "--json", env=env)
        assert proc.returncode == 4, proc.stdout + proc.stderr
        assert "terms" in _j(proc)["reason"] and _j(proc)["step"] is None
    else:
        proc = run_cli("tick", p, "draft", "--executor", "writer", "--every", "1", env=env)
        assert proc.returncode == 4, proc.stdout + proc.stderr
        assert "stopped for review" in proc.stdout and "terms" in proc.stdout
    with open_ledger(_ledger(work)) as led:
        st = led.step_states("agent-loop")["draft"]
        assert st.status == "needs_review" and led.holds("agent-loop") == []
    proc = run_cli("next", p, "--executor", "writer", "--json", env=env)
    assert proc.returncode == 4 and "waymark review" in _j(proc)["reason"]
    proc = run_cli("review", p, "--step", "draft", "--accept", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        _j(run_cli("next", p, "--executor", "writer", "--json", env=env))["step"]["id"] == "draft"
    )


def test_bad_check_ins_are_refused_with_one_line(tmp_path: Path) -> None:
    work = tmp_path / "plan"
    p = str(write_plan(work, PLAN))
    (work / "terms.md").write_text("v1")
    cases = [
        (["start", p, "collect", "--executor", "w"], "is code that a flow run executes"),
        (["start", p, "draft", "--executor", "writer"], "waits for collect"),
        (["start", p, "nope", "--executor", "w"], "has no step 'nope'"),
        (["done", p, "draft", "--executor", "writer"], "not in progress"),
        (["block", p, "draft"], "give --on STEP or --reason TEXT"),
        (["fail", p, "draft", "--reason", " "], "--reason: say what went wrong"),
        (["next", p, "--executor", "bad name!"], "--executor 'bad name!'"),
    ]
    for args, needle in cases:
        proc = run_cli(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert needle in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
    with open_ledger(_ledger(work)) as led:
        assert [e.kind.value for e in led.events("agent-loop") if e.step_id] == []


def test_fail_and_block_check_ins(tmp_path: Path) -> None:
    """`fail` frees the branch and the step is offered again with its error; `block --on`
    keeps it out of `next` until the step it waits behind is done."""
    doc = {
        "plan_id": "agent-loop",
        "steps": [
            {"id": "a", "kind": "agent", "instructions": "Do a."},
            {"id": "b", "kind": "agent", "instructions": "Do b.", "branch": "side"},
        ],
    }
    work = tmp_path / "plan"
    p = str(write_plan(work, doc))
    assert run_cli("start", p, "a", "--executor", "w").returncode == 0
    proc = run_cli("fail", p, "a", "--executor", "w", "--reason", "the API was down")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    step = _j(run_cli("next", p, "--executor", "w", "--json"))["step"]
    assert step["id"] == "a" and step["status"] == "failed"
    assert [(x["event"], x["error"]) for x in step["attempts"]] == [
        ("step_failed", "the API was down")
    ]
    # a is blocked behind b: next offers b; once b is done, a again.
    proc = run_cli("block", p, "a", "--on", "b", "--executor", "w")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _j(run_cli("next", p, "--executor", "w", "--json"))["step"]["id"] == "b"
    assert run_cli("start", p, "b", "--executor", "w").returncode == 0
    assert run_cli("done", p, "b", "--executor", "w").returncode == 0
    step = _j(run_cli("next", p, "--executor", "w", "--json"))["step"]
    assert step["id"] == "a" and step["status"] == "blocked"
    assert run_cli("start", p, "a", "--executor", "w").returncode == 0
    # Blocked for a reason only: not offered; next says why.
    proc = run_cli("block", p, "a", "--reason", "waiting for the legal team", "--executor", "w")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli("next", p, "--executor", "w", "--json")
    assert proc.returncode == 3
    assert _j(proc)["reason"] == "blocked: step a — waiting for the legal team"
    with open_ledger(_ledger(work)) as led:
        assert led.holds("agent-loop") == []  # blocking a started step released its branch
