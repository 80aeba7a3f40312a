"""``waymark hook claude-code EVENT``: each event's answer in Claude Code's hooks protocol, from
recorded payloads, on a real SQLite ledger set up by the real ``waymark start / done``."""

from __future__ import annotations

import json
from pathlib import Path

from prefect_waymark.ledger import open_reader
from tests.hooks._helpers import EXECUTOR, answer, env_for, hook, make_plan, payload, waymark


def _specific(doc: dict[str, object]) -> dict[str, str]:
    out = doc["hookSpecificOutput"]
    assert isinstance(out, dict)
    return out


def test_session_start_gives_the_next_context_and_records_the_reanchor(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    proc = hook(
        "claude-code",
        "SessionStart",
        stdin=payload("session_start.json", tmp_path),
        env=env_for(plan),
    )
    out = _specific(answer(proc))
    assert out["hookEventName"] == "SessionStart"
    ctx = out["additionalContext"]
    assert "waymark plan billing-report: 0/2 done · milestone M1" in ctx
    assert "Goal: Publish a correct March billing report" in ctx
    assert "action:deploy-*; action:mcp__billing__refund_*; never run `git push --force`" in ctx
    assert "The current step for claude is draft — Draft the report (agent, in_progress" in ctx
    assert "Instructions: Write report.md from data.csv." in ctx
    assert "  A1: report.md has a totals table\n  A2: totals match data.csv" in ctx
    assert (
        f'waymark done {plan} draft --executor claude --evidence "A1: ..." --evidence "A2: ..."'
        in ctx
    )
    assert proc.stderr == ""
    # It is `waymark next`'s re-anchor: recorded in the ledger like one.
    with open_reader(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as r:
        last = r.last_event("billing-report", ["reanchor"])
    assert last is not None and last.run_id == "agent:claude"
    state = json.loads(next((tmp_path / ".waymark" / "hooks").glob("*.json")).read_text())
    assert state["since_reminder"] == 0 and state["forbidden"][0] == "action:deploy-*"


def test_session_start_before_any_ledger_points_at_waymark_next(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    proc = hook(
        "claude-code",
        "SessionStart",
        stdin=payload("session_start_compact.json", tmp_path),
        env=env_for(plan),
    )
    ctx = _specific(answer(proc))["additionalContext"]
    assert "nothing is recorded yet" in ctx and f"`waymark next {plan} --executor claude`" in ctx
    assert not (tmp_path / ".waymark" / "ledger.db").exists()  # the hook created no ledger
    assert proc.stderr.count("\n") == 1 and "no ledger yet" in proc.stderr


def test_pre_tool_use_denies_a_forbidden_action_and_allows_the_rest(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)  # no ledger: the contract is in the plan file
    env = env_for(plan)
    cases = {
        "pre_tool_use_bash_deploy.json": ("'action:deploy-*'", "the program `deploy-prod`"),
        "pre_tool_use_bash_marker.json": ("'action:deploy-*'", "the marker `deploy-staging`"),
        "pre_tool_use_mcp.json": ("refund_*", "the tool name `mcp__billing__refund_invoice`"),
        "pre_tool_use_bash_force_push.json": (
            "never run `git push --force`",
            "the command `git push origin report-march --force` matches `git push --force`",
        ),
    }
    for name, (rule, how) in cases.items():
        proc = hook("claude-code", "PreToolUse", stdin=payload(name, tmp_path), env=env)
        out = _specific(answer(proc))
        assert out["hookEventName"] == "PreToolUse"
        assert out["permissionDecision"] == "deny", name
        reason = out["permissionDecisionReason"]
        assert "goal contract (billing v2)" in reason and rule in reason and how in reason, reason
    for name in ("pre_tool_use_bash_allowed.json", "pre_tool_use_read.json"):
        proc = hook("claude-code", "PreToolUse", stdin=payload(name, tmp_path), env=env)
        assert answer(proc) == {}, name  # no permissionDecision: the normal permission flow
        assert proc.stderr == ""


def test_stop_blocks_while_the_step_is_in_progress_and_respects_stop_hook_active(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    doc = answer(hook("claude-code", "Stop", stdin=payload("stop.json", tmp_path), env=env))
    assert doc["decision"] == "block"
    reason = str(doc["reason"])
    assert reason.startswith("Step draft is in progress as claude's and not checked in.")
    assert (
        f'waymark done {plan} draft --executor claude --evidence "A1: ..." --evidence "A2: ..."'
        in reason
    )
    assert "A2: totals match data.csv" in reason and f"waymark block {plan} draft" in reason
    # Claude Code is already continuing because of a Stop hook: no second block.
    proc = hook("claude-code", "Stop", stdin=payload("stop_hook_active.json", tmp_path), env=env)
    assert answer(proc) == {} and "stop_hook_active" in proc.stderr
    # Another executor's open step is not this executor's business.
    proc = hook(
        "claude-code",
        "Stop",
        stdin=payload("stop.json", tmp_path),
        env={**env, "WAYMARK_EXECUTOR": "someone-else"},
    )
    assert answer(proc) == {}


def test_stop_blocks_once_for_a_step_done_without_evidence(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    waymark(
        "done",
        str(plan),
        "draft",
        "--executor",
        EXECUTOR,
        "--evidence",
        "A1: report.md has the table under 'Totals'",
    )
    doc = answer(hook("claude-code", "Stop", stdin=payload("stop.json", tmp_path), env=env))
    assert doc["decision"] == "block"
    reason = str(doc["reason"])
    assert "Step draft was checked in by claude without evidence for A2:" in reason
    assert "A2: totals match data.csv" in reason and "A1: report.md has" not in reason
    assert f'waymark rerun {plan} draft --reason "evidence missing for A2"' in reason
    assert '--evidence "A1: ..." --evidence "A2: ..."' in reason
    # Told once: the next turn may end (a person may accept the gap).
    assert answer(hook("claude-code", "Stop", stdin=payload("stop.json", tmp_path), env=env)) == {}


def test_no_block_after_done_with_evidence_for_every_item(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    waymark(
        "done",
        str(plan),
        "draft",
        "--executor",
        EXECUTOR,
        "--evidence",
        "A1: table under 'Totals'",
        "--evidence",
        "A2: scripts/totals.py data.csv prints 18230.50, as the table",
    )
    proc = hook("claude-code", "Stop", stdin=payload("stop.json", tmp_path), env=env)
    assert answer(proc) == {} and proc.stderr == ""
    with open_reader(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as r:
        st = r.step_states("billing-report")["draft"]
    assert st.status == "completed" and set(st.evidence) == {"A1", "A2"}


def test_a_reminder_every_n_tool_calls_and_prompts(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan, WAYMARK_HOOK_EVERY="3")
    hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    seen: list[int] = []
    for i in range(1, 8):
        pre = answer(
            hook(
                "claude-code",
                "PreToolUse",
                stdin=payload("pre_tool_use_read.json", tmp_path),
                env=env,
            )
        )
        # The session sent PreToolUse first: PostToolUse counts nothing (one count per call).
        post = answer(
            hook(
                "claude-code",
                "PostToolUse",
                stdin=payload("post_tool_use_bash.json", tmp_path),
                env=env,
            )
        )
        assert post == {}
        if pre:
            out = _specific(pre)
            assert "permissionDecision" not in out
            seen.append(i)
            text = out["additionalContext"]
            assert text.startswith(f"waymark re-anchor after {i} prompts and tool calls")
            assert "Goal: Publish a correct March billing report" in text
            assert "Milestone: M1" in text and "no emails to customers" in text
            assert "Current step: draft (in_progress): Write report.md from data.csv." in text
            assert f"waymark done {plan} draft --executor claude" in text
    assert seen == [3, 6]
    # A prompt counts too: 7 calls, the 8th event (this prompt) is not the 9th.
    out = answer(
        hook(
            "claude-code",
            "UserPromptSubmit",
            stdin=payload("user_prompt_submit.json", tmp_path),
            env=env,
        )
    )
    assert out == {}
    out = answer(
        hook(
            "claude-code",
            "UserPromptSubmit",
            stdin=payload("user_prompt_submit.json", tmp_path),
            env=env,
        )
    )
    assert _specific(out)["hookEventName"] == "UserPromptSubmit"
    assert "after 9 prompts and tool calls" in _specific(out)["additionalContext"]


def test_post_tool_use_reminds_when_it_is_the_only_tool_hook(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    outs = [
        answer(
            hook(
                "claude-code",
                "PostToolUse",
                "--every",
                "2",
                stdin=payload("post_tool_use_bash.json", tmp_path, session_id="post-only"),
                env=env,
            )
        )
        for _ in range(4)
    ]
    assert [bool(o) for o in outs] == [False, True, False, True]
    text = _specific(outs[1])["additionalContext"]
    assert _specific(outs[1])["hookEventName"] == "PostToolUse"
    assert "No step is in progress for claude" in text and "waymark next" in text


def test_session_start_names_the_upstream_outputs_and_earlier_attempts(tmp_path: Path) -> None:
    doc = {
        "plan_id": "two-agents",
        "steps": [
            {"id": "collect", "kind": "agent", "instructions": "Write data.csv.",
             "outputs": ["data.csv"]},
            {"id": "draft", "kind": "agent", "depends_on": ["collect"],
             "instructions": "Write report.md from data.csv.", "acceptance": ["has totals"]},
        ],
    }  # fmt: skip
    plan = make_plan(tmp_path, doc)
    waymark("start", str(plan), "collect", "--executor", EXECUTOR)
    (tmp_path / "data.csv").write_text("month,total\nmarch,18230.50\n")
    waymark("done", str(plan), "collect", "--executor", EXECUTOR)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    waymark("fail", str(plan), "draft", "--executor", EXECUTOR, "--reason", "the API was down")
    proc = hook(
        "claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path),
        env=env_for(plan),
    )  # fmt: skip
    ctx = _specific(answer(proc))["additionalContext"]
    assert f"Upstream collect: {(tmp_path / 'data.csv').resolve()} (sha256 " in ctx
    assert "Earlier: step_failed at " in ctx and ": the API was down" in ctx
    assert f"Start: waymark start {plan} draft --executor claude" in ctx
    assert "Goal:" not in ctx  # a plan without a contract says none
