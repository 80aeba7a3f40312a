"""``waymark hook generic [EVENT] --json``: the same decisions, harness-neutral; and the sub-app
itself through typer's CliRunner (how the lead's ``waymark hook`` will call it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from prefect_waymark.cli.commands import app
from prefect_waymark.hooks.loaded import agent_run_id, item_ids
from tests.hooks._helpers import PLAN, answer, env_for, hook, make_plan, payload, waymark

KEYS = {
    "schema",
    "event",
    "decision",
    "reason",
    "context",
    "reminder",
    "plan_id",
    "executor",
    "step",
    "notices",
}


def _generic(*args: str, **kw: Any) -> dict[str, Any]:
    doc = answer(hook("generic", *args, "--json", **kw))
    assert set(doc) == KEYS and doc["schema"] == 1
    return doc


def test_the_generic_form_carries_each_decision(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    # The event from the payload's hook_event_name when none is given.
    deny = _generic(stdin=payload("pre_tool_use_bash_deploy.json", tmp_path), env=env)
    assert deny["event"] == "PreToolUse" and deny["decision"] == "deny"
    assert "'action:deploy-*'" in deny["reason"] and deny["plan_id"] == "billing-report"
    allow = _generic("pre-tool-use", stdin=payload("pre_tool_use_read.json", tmp_path), env=env)
    assert allow["decision"] == "allow" and allow["reason"] is None
    start = _generic("SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    assert start["decision"] == "none" and "nothing is recorded yet" in start["context"]
    waymark("start", str(plan), "draft", "--executor", "claude")
    start = _generic("SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    assert start["step"] == "draft" and "Instructions: Write report.md" in start["context"]
    block = _generic("Stop", stdin=payload("stop.json", tmp_path), env=env)
    assert block["decision"] == "block" and block["step"] == "draft"
    assert f"waymark done {plan} draft --executor claude" in block["reason"]
    again = _generic("Stop", stdin=payload("stop_hook_active.json", tmp_path), env=env)
    assert again["decision"] == "allow" and "stop_hook_active" in again["notices"][0]
    bad = answer(hook("generic", "--json", stdin=b"{not json", env=env))
    assert bad["decision"] == "none" and bad["event"] is None and "not JSON" in bad["notices"][0]


def test_the_generic_text_form(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    proc = hook(
        "generic",
        "PreToolUse",
        stdin=payload("pre_tool_use_bash_force_push.json", tmp_path),
        env=env_for(plan),
    )
    assert proc.returncode == 0 and proc.stdout.startswith("PreToolUse: deny: Forbidden by")


def test_waymark_hook_json_without_a_command_is_the_generic_form(tmp_path: Path) -> None:
    """The issue's ``waymark hook --json`` (event from stdin, or ``waymark hook EVENT --json``):
    the same document as ``waymark hook generic``, through the real ``waymark`` script too; a
    bad option is still a notice, exit 0."""
    plan = make_plan(tmp_path)
    env = env_for(plan)
    event = payload("pre_tool_use_bash_deploy.json", tmp_path)
    want = _generic(stdin=event, env=env)
    assert want["decision"] == "deny"
    assert answer(hook("--json", stdin=event, env=env)) == want
    assert answer(hook("PreToolUse", "--json", stdin=event, env=env)) == want
    script = str(Path(sys.executable).with_name("waymark"))
    full = {k: v for k, v in os.environ.items() if not k.startswith(("WAYMARK_", "CLAUDE_"))}
    proc = subprocess.run(
        [script, "hook", "--json", "--bogus"],
        input=json.dumps(event),
        env={**full, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["notices"] == ["arguments ignored: --bogus"]
    assert {**doc, "notices": []} == {**want, "notices": []}
    text = hook("PreToolUse", stdin=event, env=env)
    assert text.returncode == 0 and text.stdout.startswith("PreToolUse: deny: ")


def test_the_hook_command_through_typers_cli_runner(tmp_path: Path) -> None:
    """The typer app's ``hook`` forwards its arguments, unparsed, to the hooks' own parser (the
    one the console script and ``python -m prefect_waymark.hooks`` call without typer)."""
    plan = make_plan(tmp_path)
    runner = CliRunner()
    stdin = json.dumps(payload("pre_tool_use_bash_deploy.json", tmp_path))
    res = runner.invoke(
        app,
        ["hook", "claude-code", "PreToolUse", "--plan", str(plan), "--executor", "claude"],
        input=stdin,
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    res = runner.invoke(
        app,
        ["hook", "generic", "--json", "--plan", str(plan)],
        input=json.dumps(payload("pre_tool_use_read.json", tmp_path)),
    )
    assert res.exit_code == 0 and json.loads(res.stdout)["decision"] == "allow"
    res = runner.invoke(app, ["hook", "--help"])
    assert res.exit_code == 0 and "claude-code" in res.stdout and "generic" in res.stdout
    res = runner.invoke(app, ["hook", "claude-code", "--help"])
    assert res.exit_code == 0 and "--every" in res.stdout and "--json" not in res.stdout


def test_a_relative_plan_is_found_from_the_project_dir(tmp_path: Path) -> None:
    project = tmp_path / "project"
    make_plan(project)
    elsewhere = project / "sub"  # the agent cd'ed; $CLAUDE_PROJECT_DIR stays the root
    elsewhere.mkdir()
    doc = _generic(
        stdin=payload("pre_tool_use_bash_deploy.json", elsewhere),
        env={"WAYMARK_PLAN": "plan.yaml", "CLAUDE_PROJECT_DIR": str(project)},
    )
    assert doc["decision"] == "deny"
    doc = _generic(
        stdin=payload("pre_tool_use_bash_deploy.json", project), env={"WAYMARK_PLAN": "plan.yaml"}
    )
    assert doc["decision"] == "deny"  # no project dir: from the event's cwd


def test_a_contract_block_uses_the_last_reanchors_words(tmp_path: Path) -> None:
    """A contract in a Prefect block is not in the plan file, and hooks read no Prefect: the
    forbidden check uses what the last re-anchor recorded (its free-text entries)."""
    plan = make_plan(tmp_path)
    waymark("next", str(plan), "--executor", "claude")  # records a re-anchor
    doc = dict(PLAN, contract={"block": "billing-goal"})
    plan.write_text(yaml.safe_dump(doc, sort_keys=False))
    deny = _generic(stdin=payload("pre_tool_use_bash_force_push.json", tmp_path), env=env_for(plan))
    assert deny["decision"] == "deny" and "(block billing-goal)" in deny["reason"]
    # The re-anchor records no action: entries: those are checked only with an inline contract.
    other = _generic(stdin=payload("pre_tool_use_bash_deploy.json", tmp_path), env=env_for(plan))
    assert other["decision"] == "allow"


def test_the_hooks_names_agree_with_the_check_ins() -> None:
    from prefect_waymark.agents.checkin import acceptance_ids
    from prefect_waymark.agents.checkin import agent_run_id as checkin_run_id
    from prefect_waymark.plan.spec import StepSpec

    step = StepSpec(id="s", kind="agent", instructions="x", acceptance=["a", "b", "c"])
    assert item_ids(step.acceptance) == acceptance_ids(step)
    assert agent_run_id("claude") == checkin_run_id("claude")


def test_the_hooks_parser_keeps_what_it_can_use_and_names_the_rest() -> None:
    from prefect_waymark.hooks.command import parse_args

    got = parse_args(["claude-code", "--bogus", "PreToolUse", "--every=3", "--plan", "p.yaml", "x"])
    assert (got.command, got.event, got.options) == (
        "claude-code",
        "PreToolUse",
        {"every": "3", "plan": "p.yaml"},
    )
    assert got.ignored == ["--bogus", "x"] and not got.as_json and got.help is None
    got = parse_args(["--json", "Stop", "--executor"])  # no command name: generic
    assert (got.command, got.event, got.as_json) == ("generic", "Stop", True)
    assert got.ignored == ["--executor (no value)"]
    assert parse_args(["claude-code", "--json"]).ignored == ["--json"]  # generic's option only
    assert parse_args(["generic", "--", "-odd"]).event == "-odd"
    assert parse_args([]).help == "group" and parse_args(["generic", "-h"]).help == "generic"
