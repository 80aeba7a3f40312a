"""``waymark init --agent``: a harness wired to a plan in one command — on an empty project and on
one with settings of its own, idempotently — and the hook commands it wrote, fed real payloads
through a real shell, answer as the hooks guide says (deny a forbidden call, put the step in a
new session's context, block a Stop while the step is open)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests._support.helpers import WAYMARK, run_cli
from tests.hooks._helpers import EXECUTOR, make_plan, payload, waymark

NO_SERVER = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}


def _init(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("init", str(project), *args, env=NO_SERVER, timeout=120)


def _settings(project: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((project / ".claude" / "settings.json").read_text())
    return doc


def _run_hook(project: Path, event: str, stdin: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The command written for ``event``, run as Claude Code runs it: through a shell, in the
    project, with the settings' ``env`` and ``$CLAUDE_PROJECT_DIR``."""
    settings = _settings(project)
    (group,) = [g for g in settings["hooks"][event] if "waymark" in json.dumps(g)]
    command = group["hooks"][0]["command"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WAYMARK_", "CLAUDE_"))}
    env.update(settings["env"], CLAUDE_PROJECT_DIR=str(project), **NO_SERVER)
    return subprocess.run(
        ["bash", "-c", command], input=json.dumps(stdin), capture_output=True, text=True,
        cwd=project, env=env, timeout=120,
    )  # fmt: skip


def test_claude_code_on_an_empty_project_works_and_a_second_init_changes_nothing(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path)
    proc = _init(tmp_path, "--agent", "claude-code")
    assert proc.returncode == 0, proc.stderr
    assert "settings.json: created: env WAYMARK_PLAN, env WAYMARK_EXECUTOR" in proc.stdout
    assert "CLAUDE.md: created" in proc.stdout and ".mcp.json: created" in proc.stdout
    settings = _settings(tmp_path)
    assert settings["env"] == {"WAYMARK_PLAN": "plan.yaml", "WAYMARK_EXECUTOR": "claude"}
    assert set(settings["hooks"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "Stop",
        "TaskCompleted",
        "SubagentStart",
    }
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "*"
    loop = (tmp_path / "CLAUDE.md").read_text()
    assert "waymark next plan.yaml --executor claude" in loop
    assert 'waymark done plan.yaml STEP --executor claude --evidence "A1: …"' in loop

    files = [tmp_path / ".claude" / "settings.json", tmp_path / "CLAUDE.md", tmp_path / ".mcp.json"]
    before = {p: p.read_bytes() for p in files}
    again = _init(tmp_path, "--agent", "claude-code")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count(": unchanged") == 3, again.stdout
    assert {p: p.read_bytes() for p in before} == before

    # The written commands, fed real payloads: a new session is told where to begin (no ledger
    # yet), and once there is one, gets the step to work on ...
    start = _run_hook(tmp_path, "SessionStart", payload("session_start.json", tmp_path))
    assert start.returncode == 0, start.stderr
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "nothing is recorded yet" in context and "--executor claude" in context
    waymark("next", str(plan), "--executor", EXECUTOR)
    start = _run_hook(tmp_path, "SessionStart", payload("session_start.json", tmp_path))
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "draft" in context and "Write report.md from data.csv." in context
    # ... a forbidden call is denied ...
    push = _run_hook(tmp_path, "PreToolUse", payload("pre_tool_use_bash_force_push.json", tmp_path))
    assert push.returncode == 0, push.stderr
    answer = json.loads(push.stdout)["hookSpecificOutput"]
    assert (
        answer["permissionDecision"] == "deny"
        and "git push --force" in answer["permissionDecisionReason"]
    )
    ok = _run_hook(tmp_path, "PreToolUse", payload("pre_tool_use_bash_allowed.json", tmp_path))
    assert ok.returncode == 0 and "deny" not in ok.stdout, ok.stdout + ok.stderr
    # ... and, with the step started by the executor the settings name, Stop blocks.
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    stop = _run_hook(tmp_path, "Stop", payload("stop.json", tmp_path))
    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout)["decision"] == "block"
    # The MCP server .mcp.json names starts as a client starts it (in the project) and answers.
    assert _mcp_tools_and_status(tmp_path)["steps"][0]["status"] == "in_progress"


def _mcp_tools_and_status(project: Path) -> dict[str, Any]:
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["waymark"]
    path = f"{Path(WAYMARK).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    params = StdioServerParameters(
        command=server["command"], args=server["args"], cwd=project,
        env={"PATH": path, "HOME": str(project), **NO_SERVER},
    )  # fmt: skip
    found: dict[str, Any] = {}

    async def call() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"next", "start", "done", "status"} <= names, names
            result = await session.call_tool("status", {})
            assert not result.is_error, result
            found.update(result.structured_content or {})

    anyio.run(call)
    return found


def test_existing_settings_are_merged_and_kept(tmp_path: Path) -> None:
    make_plan(tmp_path)
    own_hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
    settings = {
        "model": "opus",
        "env": {"WAYMARK_EXECUTOR": "reviewer", "OTHER": "1"},
        "hooks": {"PreToolUse": [own_hook]},
        "permissions": {"allow": ["Bash(ls)"]},
    }
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    (tmp_path / "CLAUDE.md").write_text("# Our project\n\nHouse rules.\n")
    proc = _init(tmp_path, "--agent", "claude-code")
    assert proc.returncode == 0, proc.stderr
    assert "env WAYMARK_EXECUTOR kept as 'reviewer'" in proc.stdout
    merged = _settings(tmp_path)
    assert merged["model"] == "opus" and merged["permissions"] == settings["permissions"]
    assert merged["env"] == {"WAYMARK_EXECUTOR": "reviewer", "OTHER": "1",
                             "WAYMARK_PLAN": "plan.yaml"}  # fmt: skip
    assert merged["hooks"]["PreToolUse"][0] == own_hook and len(merged["hooks"]["PreToolUse"]) == 2
    claude_md = (tmp_path / "CLAUDE.md").read_text()
    assert claude_md.startswith("# Our project\n\nHouse rules.\n\n<!-- waymark:begin")
    assert "--executor reviewer" not in claude_md  # the loop names the executor init was given
    # A hand edit inside waymark's section is replaced by the next init; outside it, kept.
    (tmp_path / "CLAUDE.md").write_text(claude_md.replace("Work on one step", "Work on ONE step")
                                        + "\nAfter the section.\n")  # fmt: skip
    again = _init(tmp_path, "--agent", "claude-code", "--executor", "reviewer")
    assert again.returncode == 0, again.stderr
    text = (tmp_path / "CLAUDE.md").read_text()
    assert "Work on one step" in text and "ONE" not in text
    assert text.endswith("After the section.\n")
    assert "waymark next plan.yaml --executor reviewer" in text
    assert text.count("<!-- waymark:begin") == 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object, found list"),
        ('{"hooks": {"PreToolUse": {"matcher": "*"}}}', "hooks.PreToolUse: expected a list"),
        ('{"env": "x"}', "env: expected a JSON object"),
    ],
)
def test_a_settings_file_that_is_not_one_is_refused_and_nothing_written(
    tmp_path: Path, content: str, expected: str
) -> None:
    make_plan(tmp_path)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(content)
    proc = _init(tmp_path, "--agent", "claude-code")
    assert proc.returncode == 2
    assert expected in proc.stderr and "settings.json" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "nothing was written" in proc.stderr
    assert (tmp_path / ".claude" / "settings.json").read_text() == content
    assert not (tmp_path / "CLAUDE.md").exists()


def test_codex_and_generic_write_agents_md_and_bad_input_is_exit_2(tmp_path: Path) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    make_plan(plans)
    proc = _init(tmp_path, "--agent", "codex", "--plan", str(plans / "plan.yaml"))
    assert proc.returncode == 0, proc.stderr
    agents = (tmp_path / "AGENTS.md").read_text()
    assert "waymark next plans/plan.yaml --executor codex" in agents
    assert not (tmp_path / ".claude").exists()
    config = (tmp_path / ".codex" / "config.toml").read_text()
    assert config.startswith("[mcp_servers.waymark]\n") and (
        '"mcp", "--plan", "plans/plan.yaml", "--executor", "codex"' in config
    )
    (tmp_path / ".codex" / "config.toml").write_text('model = "o4"\n\n' + config)
    again = _init(tmp_path, "--agent", "codex", "--plan", str(plans / "plan.yaml"))
    assert again.returncode == 0 and again.stdout.count(": unchanged") == 2, again.stdout
    generic = _init(tmp_path, "--agent", "generic", "--plan", str(plans / "plan.yaml"))
    assert generic.returncode == 0 and "waymark hook generic EVENT --json" in generic.stdout
    assert "AGENTS.md: updated" in generic.stdout  # the executor changed: codex -> agent
    for args, message in [
        (("--agent", "cursor"), "--agent 'cursor': expected one of claude-code, codex, generic"),
        (("--agent", "codex"), "no plan.yaml in"),
        (("--agent", "codex", "--plan", str(plans / "plan.yaml"), "--executor", "a b"),
         "--executor 'a b': expected a name"),
        (("--plan", str(plans / "plan.yaml")), "--plan and --executor go with --agent"),
    ]:  # fmt: skip
        bad = _init(tmp_path / "plans" if "cursor" in args else tmp_path, *args)
        assert bad.returncode == 2 and message in bad.stderr, (args, bad.stderr)
    (plans / "broken.yaml").write_text("plan_id: x\nsteps: 3\n")
    bad = _init(tmp_path, "--agent", "codex", "--plan", str(plans / "broken.yaml"))
    assert bad.returncode == 2 and "broken.yaml" in bad.stderr and "Traceback" not in bad.stderr
