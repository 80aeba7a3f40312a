"""A denied tool call's reason says what to do next: block the executor's step in progress by
its id, or — with no step in progress — how to find one (never a bare ``STEP`` while a step
is open)."""

from __future__ import annotations

from pathlib import Path

from tests.hooks._helpers import EXECUTOR, answer, env_for, hook, make_plan, payload, waymark


def _reason(work: Path, plan: Path, **env: str) -> str:
    proc = hook(
        "claude-code",
        "PreToolUse",
        stdin=payload("pre_tool_use_bash_deploy.json", work),
        env={**env_for(plan), **env},
    )
    out = answer(proc)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    return str(out["permissionDecisionReason"])


def test_the_step_in_progress_is_named(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    reason = _reason(tmp_path, plan)
    block = f'`waymark block {plan} draft --executor claude --reason "..."`'
    assert f"If step draft cannot go on without it: {block}" in reason
    assert "STEP" not in reason
    # The generic form says which step the decision is about.
    proc = hook(
        "generic", "--json", stdin=payload("pre_tool_use_bash_deploy.json", tmp_path),
        env=env_for(plan),
    )  # fmt: skip
    assert answer(proc)["step"] == "draft"


def test_no_step_in_progress_points_at_waymark_next(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    for reason in (
        _reason(tmp_path, plan),  # no ledger yet
        _reason(tmp_path, plan, WAYMARK_EXECUTOR="someone-else"),  # not this executor's
    ):
        assert "No step is in progress for " in reason
        assert f"`waymark next {plan} --executor " in reason
        assert f"`waymark block {plan} STEP --executor " in reason
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    other = _reason(tmp_path, plan, WAYMARK_EXECUTOR="someone-else")
    assert "No step is in progress for someone-else" in other and "draft" not in other
