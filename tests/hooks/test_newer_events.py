"""Claude Code's newer events (issue 34, point 3): ``TaskCompleted`` keeps a session task that
names an unfinished step open, ``SubagentStart`` gives a subagent the step and the contract,
``SessionStart`` after a compaction puts the contract, the step and the forbidden list back.
Real subprocess runs of the hook on a real SQLite ledger set up by the real ``waymark``."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_waymark.hooks.decisions import COMPACTED, named_steps
from prefect_waymark.hooks.harness import HOOK_EVENTS
from prefect_waymark.plan.spec import PlanSpec
from tests.hooks._helpers import EXECUTOR, PLAN, answer, env_for, hook, make_plan, payload, waymark


def _task(work: Path, subject: str) -> dict[str, object]:
    return payload("task_completed.json", work, task_subject=subject)


def test_task_completed_keeps_the_steps_task_open_until_the_step_is_checked_in(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    # The task that is the step: exit 2 (the task stays open), the reason alone on stderr.
    for subject in ("draft: Draft the report", "Draft the report", "Finish step `draft`"):
        proc = hook("claude-code", "TaskCompleted", stdin=_task(tmp_path, subject), env=env)
        assert proc.returncode == 2, (subject, proc.stdout, proc.stderr)
        assert proc.stdout == ""
        assert proc.stderr.startswith("Step draft is in progress as claude's and not checked in.")
        assert (
            f'waymark done {plan} draft --executor claude --evidence "A1: ..." '
            '--evidence "A2: ..."' in proc.stderr
        )
    # The agent's own smaller tasks close freely, even when they use the id as a word.
    for subject in ("draft the intro paragraph", "Check data.csv for gaps", "approve-ish notes"):
        proc = hook("claude-code", "TaskCompleted", stdin=_task(tmp_path, subject), env=env)
        assert proc.returncode == 0 and answer(proc) == {}, subject
    # Another executor's session: not its step.
    proc = hook(
        "claude-code",
        "TaskCompleted",
        stdin=_task(tmp_path, "draft: Draft the report"),
        env={**env, "WAYMARK_EXECUTOR": "someone-else"},
    )
    assert proc.returncode == 0 and answer(proc) == {}
    # Checked in with evidence for every item: the task closes.
    waymark(
        "done", str(plan), "draft", "--executor", EXECUTOR,
        "--evidence", "A1: table under 'Totals'", "--evidence", "A2: totals.py agrees",
    )  # fmt: skip
    proc = hook("claude-code", "TaskCompleted", stdin=_task(tmp_path, "draft: x"), env=env)
    assert proc.returncode == 0 and answer(proc) == {} and proc.stderr == ""


def test_task_completed_blocks_once_for_a_step_checked_in_without_evidence(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    waymark("done", str(plan), "draft", "--executor", EXECUTOR, "--evidence", "A1: the table")
    proc = hook("claude-code", "TaskCompleted", stdin=_task(tmp_path, "draft"), env=env)
    assert proc.returncode == 2
    assert "Step draft was checked in by claude without evidence for A2:" in proc.stderr
    assert f'waymark rerun {plan} draft --reason "evidence missing for A2"' in proc.stderr
    # Told once, and Stop does not tell it again: a person may accept the gap.
    proc = hook("claude-code", "TaskCompleted", stdin=_task(tmp_path, "draft"), env=env)
    assert proc.returncode == 0 and answer(proc) == {}
    assert answer(hook("claude-code", "Stop", stdin=payload("stop.json", tmp_path), env=env)) == {}


def test_task_completed_in_the_generic_form_is_a_block_decision(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    proc = hook("generic", "--json", stdin=_task(tmp_path, "draft: Draft the report"), env=env)
    doc = answer(proc)  # the generic form always exits 0: the decision says it
    assert doc["event"] == "TaskCompleted" and doc["decision"] == "block"
    assert doc["step"] == "draft" and "not checked in" in str(doc["reason"])


def test_subagent_start_gives_the_subagent_the_step_and_the_contract(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    proc = hook("claude-code", "SubagentStart", stdin=payload("subagent_start.json", tmp_path),
                env=env)  # fmt: skip
    doc = answer(proc)
    out = doc["hookSpecificOutput"]
    assert out["hookEventName"] == "SubagentStart"
    ctx = out["additionalContext"]
    assert ctx.startswith("waymark: this subagent works on the plan's step")
    assert "Goal: Publish a correct March billing report" in ctx
    assert "Forbidden by the goal contract: action:deploy-*; action:mcp__billing__refund_*" in ctx
    assert "Current step: draft (in_progress): Write report.md from data.csv." in ctx
    assert "  A2: totals match data.csv" in ctx
    assert f'waymark done {plan} draft --executor claude --evidence "A1: ..."' in ctx
    # With nothing in progress it still carries the contract, and says how to find the step.
    other = hook("claude-code", "SubagentStart", stdin=payload("subagent_start.json", tmp_path),
                 env={**env, "WAYMARK_EXECUTOR": "nobody"})  # fmt: skip
    ctx = answer(other)["hookSpecificOutput"]["additionalContext"]
    assert "Forbidden by the goal contract: action:deploy-*" in ctx
    assert f"`waymark next {plan} --executor nobody` names the next one" in ctx


def test_session_start_after_a_compaction_puts_the_anchor_back(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path), env=env)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    proc = hook(
        "claude-code",
        "SessionStart",
        stdin=payload("session_start_compact.json", tmp_path),
        env=env,
    )
    ctx = answer(proc)["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith(COMPACTED)
    assert "Goal: Publish a correct March billing report" in ctx
    assert (
        "Forbidden by the goal contract: action:deploy-*; action:mcp__billing__refund_*; "
        "never run `git push --force` on a shared branch; no emails to customers" in ctx
    )
    assert "The current step for claude is draft — Draft the report (agent, in_progress" in ctx
    assert "  A1: report.md has a totals table\n  A2: totals match data.csv" in ctx
    # A plain start says nothing of a compaction.
    plain = hook("claude-code", "SessionStart", stdin=payload("session_start.json", tmp_path),
                 env=env)  # fmt: skip
    assert COMPACTED not in answer(plain)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(
    ("subject", "named"),
    [
        ("draft", {"draft"}),
        ("DRAFT: write it", {"draft"}),
        ("draft — Draft the report", {"draft"}),
        ("draft - the report", {"draft"}),
        ("  Draft   the report. ", {"draft"}),
        ("Close step draft", {"draft"}),
        ("step `approve` after draft", {"approve"}),
        ("draft the intro", set()),
        ("drafting", set()),
        ("step drafts", set()),
        ("", set()),
    ],
)
def test_which_steps_a_task_names(subject: str, named: set[str]) -> None:
    spec = PlanSpec.model_validate(PLAN)
    assert named_steps(spec, subject) == named


def test_init_wires_the_newer_events() -> None:
    assert {"TaskCompleted", "SubagentStart"} <= set(HOOK_EVENTS)
