"""The hook path imports no Prefect (read from ``python -X importtime``). How long one hook call
takes is a benchmark's to say (``bench/bench_hook.py``), not a test's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.hooks._helpers import EXECUTOR, answer, env_for, make_plan, payload, waymark
from tests.hooks._helpers import hook as run_hook

PER_EVENT = {
    "UserPromptSubmit": "user_prompt_submit.json",
    "PreToolUse": "pre_tool_use_bash_force_push.json",
    "PostToolUse": "post_tool_use_bash.json",
    "Stop": "stop.json",
}


def _imported(stderr: str) -> list[str]:
    """The modules ``-X importtime`` reports."""
    return [
        line.rsplit("|", 1)[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ]


def _prefect(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "prefect" or m.startswith("prefect.")]


def test_the_import_reader_sees_prefect_when_it_is_imported() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import prefect.settings"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "prefect.settings" in _prefect(_imported(proc.stderr))


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("hook-import")
    plan = make_plan(work)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    return plan


@pytest.mark.parametrize("event", sorted(PER_EVENT))
def test_no_prefect_on_the_hook_path(started: Path, event: str) -> None:
    work = started.parent
    proc = run_hook(
        "claude-code",
        event,
        "--every",
        "1",
        importtime=True,
        stdin=payload(PER_EVENT[event], work),
        env=env_for(started),
    )
    modules = _imported(proc.stderr)
    assert "prefect_waymark.hooks.decisions" in modules and "prefect_waymark.ledger" in modules
    assert _prefect(modules) == []
    doc = answer(proc)  # each decided something: the path was walked, not skipped
    assert doc, proc.stderr[-500:]


def test_no_prefect_at_session_start(started: Path) -> None:
    proc = run_hook(
        "claude-code",
        "SessionStart",
        importtime=True,
        stdin=payload("session_start.json", started.parent),
        env=env_for(started),
    )
    assert "additionalContext" in answer(proc)["hookSpecificOutput"]
    assert _prefect(_imported(proc.stderr)) == []
