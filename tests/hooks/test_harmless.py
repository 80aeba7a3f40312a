"""A hook never breaks the agent's session: every failure is exit 0, no decision, one line on
stderr (and, for SessionStart, a ``systemMessage`` for the person). Never exit 2: Claude Code
reads it as "block this"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.hooks._helpers import (
    PAYLOADS,
    answer,
    env_for,
    hook,
    make_plan,
    payload,
    waymark,
)


def _harmless(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    assert proc.returncode == 0, proc
    assert proc.stdout == ""
    err = proc.stderr
    assert err.startswith("waymark hook: ") and err.count("\n") == 1, err
    assert needle in err, err


@pytest.mark.parametrize("name", ["malformed.json", "not_an_object.json"])
@pytest.mark.parametrize("event", ["PreToolUse", "Stop", "UserPromptSubmit"])
def test_bad_stdin_is_no_decision(tmp_path: Path, name: str, event: str) -> None:
    plan = make_plan(tmp_path)
    proc = hook("claude-code", event, stdin=(PAYLOADS / name).read_bytes(), env=env_for(plan))
    _harmless(proc, "stdin is ")


def test_bad_stdin_at_session_start_tells_the_person(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    proc = hook(
        "claude-code",
        "SessionStart",
        stdin=(PAYLOADS / "malformed.json").read_bytes(),
        env=env_for(plan),
    )
    doc = answer(proc)
    assert list(doc) == ["systemMessage"] and "stdin is not JSON" in doc["systemMessage"]


def test_no_plan_configured(tmp_path: Path) -> None:
    for event, name in [
        ("PreToolUse", "pre_tool_use_bash_force_push.json"),
        ("Stop", "stop.json"),
        ("PostToolUse", "post_tool_use_bash.json"),
    ]:
        proc = hook("claude-code", event, stdin=payload(name, tmp_path))
        _harmless(proc, "no plan configured: set $WAYMARK_PLAN")
    doc = answer(hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path)))
    assert "no plan configured" in doc["systemMessage"]


def test_a_plan_file_with_problems(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text("plan_id: x\nsteps: []\n")
    proc = hook(
        "claude-code",
        "PreToolUse",
        stdin=payload("pre_tool_use_read.json", tmp_path),
        env=env_for(tmp_path / "plan.yaml"),
    )
    _harmless(proc, f"plan {tmp_path / 'plan.yaml'}: ")


def test_no_ledger_yet_at_stop(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    proc = hook("claude-code", "Stop", stdin=payload("stop.json", tmp_path), env=env_for(plan))
    _harmless(proc, "no ledger yet at")
    assert not (tmp_path / ".waymark" / "ledger.db").exists()


def test_mistyped_arguments_never_exit_2(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    stdin = payload("pre_tool_use_bash_force_push.json", tmp_path)
    # A missing option value (click's usage error, exit 2) and an unknown option: the hook still
    # answers — the event from the payload, the configuration from the environment.
    for args in (["PreToolUse", "--every"], ["--no-such-option", "PreToolUse"]):
        proc = hook("claude-code", *args, stdin=stdin, env=env_for(plan))
        doc = answer(proc)
        assert doc["hookSpecificOutput"]["permissionDecision"] == "deny", args
        assert "arguments ignored" in proc.stderr
    proc = hook("claude-code", "PreToolUse", "--every", "often", stdin=stdin, env=env_for(plan))
    assert answer(proc)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "--every 'often': expected a number >= 0" in proc.stderr


def test_an_event_it_does_not_answer(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    proc = hook(
        "claude-code",
        "SubagentStop",
        stdin=payload("stop.json", tmp_path, hook_event_name="SubagentStop"),
        env=env_for(plan),
    )
    _harmless(proc, "'SubagentStop' is not one of")


def test_an_unwritable_session_state_still_denies(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    (tmp_path / ".waymark").mkdir()
    (tmp_path / ".waymark" / "hooks").write_text("a file where the folder would be")
    proc = hook(
        "claude-code",
        "PreToolUse",
        stdin=payload("pre_tool_use_bash_deploy.json", tmp_path),
        env=env_for(plan),
    )
    assert answer(proc)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "session state not kept" in proc.stderr


def test_a_torn_session_file_starts_the_count_again(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    waymark("start", str(plan), "draft", "--executor", "claude")
    stdin = payload("pre_tool_use_read.json", tmp_path, session_id="torn")
    hook("claude-code", "PreToolUse", stdin=stdin, env=env_for(plan))
    state = tmp_path / ".waymark" / "hooks" / "torn.json"
    assert json.loads(state.read_text())["tool_calls"] == 1
    state.write_text('{"session_id": "torn", "tool_ca')
    proc = hook("claude-code", "PreToolUse", stdin=stdin, env=env_for(plan))
    assert answer(proc) == {} and proc.stderr == ""
    assert json.loads(state.read_text())["tool_calls"] == 1


def test_a_session_id_is_only_a_file_name(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    stdin = payload("pre_tool_use_read.json", tmp_path, session_id="../../../escape")
    answer(hook("claude-code", "PreToolUse", stdin=stdin, env=env_for(plan)))
    hooks = tmp_path / ".waymark" / "hooks"  # session files beside plans/, the plan facts
    assert [p.name for p in hooks.iterdir() if p.is_file()] == [".._.._.._escape.json"]
    assert not (tmp_path.parent / "escape.json").exists()
