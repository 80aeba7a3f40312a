"""The plan facts the hook keeps (``hooks/loaded.py``): an allowed tool call reads them instead of
parsing the plan, so it imports no pydantic, SQLAlchemy or typer — and they never outlive what
they were read from: the plan file's bytes, the environment the ledger's URL was read from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests._support.helpers import run_cli
from tests.hooks._helpers import EXECUTOR, PLAN, answer, env_for, hook, make_plan, payload, waymark

#: What an allowed call must not load: the plan's and the ledger's models, SQLAlchemy, the CLI.
HEAVY = ("pydantic", "sqlalchemy", "sqlmodel", "typer", "click", "yaml", "prefect")


def _modules(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def _generic(work: Path, name: str, env: dict[str, str], **changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = answer(
        hook("generic", "--json", stdin=payload(name, work, **changes), env=env)
    )
    return doc


def test_an_allowed_call_imports_no_models_ledger_or_cli(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    waymark("start", str(plan), "draft", "--executor", EXECUTOR)
    stdin = payload("pre_tool_use_read.json", tmp_path)
    first = hook("claude-code", "PreToolUse", stdin=stdin, env=env_for(plan), importtime=True)
    assert answer(first) == {}  # the first call of a session loads the plan and asks the ledger
    again = hook("claude-code", "PreToolUse", stdin=stdin, env=env_for(plan), importtime=True)
    assert answer(again) == {} and "prefect_waymark.hooks.forbidden" in _modules(again.stderr)
    assert _heavy(_modules(again.stderr)) == []
    script = str(Path(sys.executable).with_name("waymark"))  # the console script alike
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", script, "hook", "claude-code", "PreToolUse"],
        input=json.dumps(stdin),
        env={**_clean_env(), **env_for(plan)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr[-2000:]
    assert _heavy(_modules(proc.stderr)) == []
    # A deny loads what its hint needs (the plan's steps, the ledger), as before.
    deny = hook(
        "claude-code",
        "PreToolUse",
        stdin=payload("pre_tool_use_bash_deploy.json", tmp_path),
        env=env_for(plan),
        importtime=True,
    )
    assert "step draft" in answer(deny)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "prefect_waymark.ledger.connection" in _modules(deny.stderr)


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("WAYMARK_", "CLAUDE_"))}


def test_a_forbidden_entry_added_holds_on_the_very_next_call(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    name = "pre_tool_use_bash_allowed.json"  # python -m pytest, then a plain git push
    for _ in range(2):  # the second reads the kept facts
        assert _generic(tmp_path, name, env)["decision"] == "allow"
    doc = json.loads(json.dumps(PLAN))
    # Added without a version bump: it waits for review, and holds at once.
    doc["contract"]["forbidden"].append("never run `python -m pytest`")
    make_plan(tmp_path, doc)
    d = _generic(tmp_path, name, env)
    assert d["decision"] == "deny" and "never run `python -m pytest`" in d["reason"]
    make_plan(tmp_path)  # back as it was: allowed again
    assert _generic(tmp_path, name, env)["decision"] == "allow"


def test_a_plan_id_changed_in_place_is_seen(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    assert _generic(tmp_path, "pre_tool_use_read.json", env)["plan_id"] == "billing-report"
    make_plan(tmp_path, {**PLAN, "plan_id": "billing-report-2"})
    assert _generic(tmp_path, "pre_tool_use_read.json", env)["plan_id"] == "billing-report-2"


def test_the_ledger_pins_variable_is_read_again_when_it_changes(tmp_path: Path) -> None:
    """``ledger: {env: X}``: the kept URL is the one ``X`` held; another value is another
    ledger (here one where the executor has no step under way)."""
    work = tmp_path / "work"
    plan = make_plan(work, {**PLAN, "ledger": {"env": "WAYMARK_TEST_PINNED_LEDGER"}})
    busy = f"sqlite:///{tmp_path / 'busy.db'}"
    idle = f"sqlite:///{tmp_path / 'idle.db'}"
    for url, steps in ((busy, ["draft"]), (idle, [])):
        pin = {"WAYMARK_TEST_PINNED_LEDGER": url}
        assert run_cli("next", str(plan), "--executor", EXECUTOR, env=pin).returncode == 0
        for step in steps:
            started = run_cli("start", str(plan), step, "--executor", EXECUTOR, env=pin)
            assert started.returncode == 0, started.stderr
    deploy = "pre_tool_use_bash_deploy.json"
    for url, step in ((busy, "draft"), (busy, "draft"), (idle, None), (busy, "draft")):
        d = _generic(work, deploy, env_for(plan, WAYMARK_TEST_PINNED_LEDGER=url))
        assert (d["decision"], d["step"]) == ("deny", step), url
    d = _generic(work, deploy, env_for(plan))  # unset: the required pin cannot be had, the
    assert (d["decision"], d["step"]) == ("deny", None)  # file's list is still checked


def test_a_torn_facts_file_is_read_again_from_the_plan(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    env = env_for(plan)
    assert _generic(tmp_path, "pre_tool_use_bash_deploy.json", env)["decision"] == "deny"
    (kept,) = (tmp_path / ".waymark" / "hooks" / "plans").glob("*.json")
    kept.write_text('{"key": {"schema": 1, "sha2')
    d = _generic(tmp_path, "pre_tool_use_bash_deploy.json", env)
    assert d["decision"] == "deny" and d["notices"] == []
    assert json.loads(kept.read_text())["facts"]["plan_id"] == "billing-report"
