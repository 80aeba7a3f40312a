"""A plan file with problems: SessionStart tells the person the first problem, and PreToolUse
checks tool calls against the forbidden list recorded while the plan was valid — this
session's, else the ledger's last re-anchor — or, with neither, says the check cannot run."""

from __future__ import annotations

from pathlib import Path

from tests.hooks._helpers import answer, env_for, hook, make_plan, payload, waymark

BROKEN = "plan_id: billing-report\nsteps: []\n"  # still says which plan it is
UNREADABLE = "plan_id: billing-report\nsteps: [\n"  # not even YAML


def _deny_reason(doc: dict[str, object]) -> str | None:
    out = doc.get("hookSpecificOutput")
    if not isinstance(out, dict) or out.get("permissionDecision") != "deny":
        return None
    return str(out["permissionDecisionReason"])


def test_session_start_names_the_first_problem(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(BROKEN)
    doc = answer(
        hook(
            "claude-code",
            "SessionStart",
            stdin=payload("session_start.json", tmp_path),
            env=env_for(tmp_path / "plan.yaml"),
        )
    )
    message = doc["systemMessage"]
    assert message.startswith(f"waymark hook: plan {tmp_path / 'plan.yaml'}: invalid plan (1 ")
    assert "plan.yaml:2: steps: the plan has no steps" in message, message


def test_this_sessions_list_holds_while_the_plan_is_invalid(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)  # no ledger: the contract is the plan file's
    env = env_for(plan)
    read = hook(
        "claude-code", "PreToolUse", stdin=payload("pre_tool_use_read.json", tmp_path), env=env
    )
    assert answer(read) == {}
    for text in (BROKEN, UNREADABLE):
        plan.write_text(text)
        for name in ("pre_tool_use_bash_deploy.json", "pre_tool_use_bash_force_push.json"):
            proc = hook("claude-code", "PreToolUse", stdin=payload(name, tmp_path), env=env)
            reason = _deny_reason(answer(proc))
            assert reason is not None, (text, name, proc.stderr)
            assert "(as recorded by this session; the plan file is invalid now)" in reason
            assert proc.stderr.count("\n") == 1 and "invalid plan (1 problem)" in proc.stderr
            assert "checked against the forbidden list of this session" in proc.stderr
        allowed = hook(
            "claude-code", "PreToolUse", stdin=payload("pre_tool_use_bash_allowed.json", tmp_path),
            env=env,
        )  # fmt: skip
        assert answer(allowed) == {}


def test_a_new_session_falls_back_to_the_contract_the_ledger_accepted(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    waymark("next", str(plan), "--executor", "claude")  # accepts the contract, with its list
    env = env_for(plan)
    for text in (BROKEN, UNREADABLE):  # not even YAML: its plan_id line still names the plan
        plan.write_text(text)
        push = payload("pre_tool_use_bash_force_push.json", tmp_path, session_id="fresh")
        proc = hook("claude-code", "PreToolUse", stdin=push, env=env)
        reason = _deny_reason(answer(proc))
        assert reason is not None and "never run `git push --force`" in reason, proc.stderr
        assert "as recorded by the contract the ledger last accepted (billing v2)" in reason
        # The accepted contract's record keeps every entry, action: ones too (issue 33).
        deploy = payload("pre_tool_use_bash_deploy.json", tmp_path, session_id="fresh")
        proc = hook("claude-code", "PreToolUse", stdin=deploy, env=env)
        assert _deny_reason(answer(proc)) is not None, proc.stderr


def test_nothing_recorded_says_the_check_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(BROKEN)
    proc = hook(
        "claude-code",
        "PreToolUse",
        stdin=payload("pre_tool_use_bash_force_push.json", tmp_path),
        env=env_for(tmp_path / "plan.yaml"),
    )
    assert answer(proc) == {}
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "the forbidden check cannot run until it is valid" in proc.stderr
    assert not (tmp_path / ".waymark").exists()  # reading for a record created nothing
