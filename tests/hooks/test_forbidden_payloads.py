"""``waymark hook claude-code PreToolUse`` on recorded Bash payloads that a hostile review found
misjudged: each problem's commands through the real hook, as a subprocess (the full matrix of
commands is in ``test_forbidden_shell.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hooks._helpers import PAYLOADS, answer, env_for, hook, make_plan, payload

FORCE_PUSH = "never run `git push --force` on a shared branch"
DEPLOY = "action:deploy-*"


def _pre_tool_use(name: str, work: Path) -> dict[str, str]:
    plan = make_plan(work)
    proc = hook(
        "claude-code",
        "PreToolUse",
        stdin=payload(f"pre_tool_use_bash_{name}.json", work),
        env=env_for(plan),
    )
    doc = answer(proc)
    assert proc.stderr == "", proc.stderr
    out = doc.get("hookSpecificOutput") or {}
    assert isinstance(out, dict)
    return out


def _command(name: str) -> str:
    doc = json.loads((PAYLOADS / f"pre_tool_use_bash_{name}.json").read_text())
    return str(doc["tool_input"]["command"])


@pytest.mark.parametrize(
    "name, rule, how",
    [
        # 1. keywords, wrapper options that take a value, xargs, $'...', scripts fed to a shell
        ("force_push_in_if", FORCE_PUSH, "`git push --force origin report-march`"),
        ("force_push_wrapped", FORCE_PUSH, "`git push --force origin report-march`"),
        ("force_push_xargs", FORCE_PUSH, "`git push --force {} report-march`"),
        ("force_push_ansi_c", FORCE_PUSH, "`git push origin report-march --force`"),
        ("force_push_heredoc", FORCE_PUSH, "`git push --force origin report-march`"),
        ("force_push_herestring", FORCE_PUSH, "`git push --force origin report-march`"),
        # 2. a runner's operand after its options, their values and VAR=value words
        ("make_deploy_with_options", DEPLOY, "the subcommand `deploy-prod`"),
        ("npm_deploy_with_prefix", DEPLOY, "the subcommand `deploy-prod`"),
        ("bash_x_deploy_script", DEPLOY, "the script `deploy-prod`"),
        # 4. a quoted newline inside bash -c's script: the script has two commands
        ("force_push_bash_c_newline", FORCE_PUSH, "`git push --force origin report-march`"),
        # 5. case-folded
        ("force_push_upper_case", FORCE_PUSH, "`GIT push --force origin report-march`"),
        ("deploy_script_upper_case", DEPLOY, "the program `DEPLOY-prod`"),
    ],
)
def test_denied_through_the_hook(tmp_path: Path, name: str, rule: str, how: str) -> None:
    out = _pre_tool_use(name, tmp_path)
    assert out.get("permissionDecision") == "deny", (_command(name), out)
    reason = out["permissionDecisionReason"]
    assert f"{rule!r}" in reason and how in reason, reason


@pytest.mark.parametrize(
    "name",
    [
        # 3. cat / grep / shellcheck / ls of a deploy script name no action
        "reads_deploy_script",
        # 4. a commit message that names the forbidden command is one quoted word
        "commit_message_names_force_push",
    ],
)
def test_allowed_through_the_hook(tmp_path: Path, name: str) -> None:
    out = _pre_tool_use(name, tmp_path)
    assert "permissionDecision" not in out, (_command(name), out)


def test_the_recorded_commands_are_what_the_cases_say() -> None:
    """The payloads hold the shapes under test (a quoted newline, a here-document)."""
    assert "\n\ngit push --force is forbidden" in _command("commit_message_names_force_push")
    assert _command("force_push_heredoc").startswith("bash <<'EOF'\n")
    assert "$'--force'" in _command("force_push_ansi_c")
    assert _command("force_push_bash_c_newline").count("\n") == 1
