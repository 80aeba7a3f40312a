"""Helpers for the hook tests: the recorded payloads, a plan with an agent step, and real
subprocess runs of the hook (``python -m prefect_waymark.hooks``, the ``waymark hook`` commands
until the lead registers them in ``cli/commands.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests._support.helpers import run_cli, write_plan

PAYLOADS = Path(__file__).resolve().parent / "payloads"
EXECUTOR = "claude"

PLAN: dict[str, Any] = {
    "plan_id": "billing-report",
    "title": "March billing report",
    "contract": {
        "goal_id": "billing",
        "version": 2,
        "objective": "Publish a correct March billing report",
        "forbidden": [
            "action:deploy-*",
            "action:mcp__billing__refund_*",
            "never run `git push --force` on a shared branch",
            "no emails to customers",
        ],
    },
    "steps": [
        {
            "id": "draft",
            "kind": "agent",
            "owner": EXECUTOR,
            "milestone": "M1",
            "title": "Draft the report",
            "instructions": "Write report.md from data.csv.",
            "acceptance": ["report.md has a totals table", "totals match data.csv"],
        },
        {
            "id": "approve",
            "kind": "manual",
            "depends_on": ["draft"],
            "milestone": "M1",
            "instructions": "Read report.md and approve it.",
        },
    ],
}


def payload(name: str, work: Path, **changes: Any) -> dict[str, Any]:
    """A recorded event with its ``cwd`` set to ``work`` (and ``changes`` applied)."""
    doc: dict[str, Any] = json.loads((PAYLOADS / name).read_text())
    doc["cwd"] = str(work)
    doc.update(changes)
    return doc


def make_plan(work: Path, doc: dict[str, Any] | None = None) -> Path:
    return write_plan(work, doc or PLAN)


def waymark(*args: str) -> subprocess.CompletedProcess[str]:
    """The real ``waymark`` CLI (check-ins), failing the test on a non-zero exit."""
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def hook(
    *args: str,
    stdin: dict[str, Any] | str | bytes,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    importtime: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m prefect_waymark.hooks ARGS`` with ``stdin`` as its input."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("WAYMARK_", "CLAUDE_"))}
    full.update(env or {})
    data = stdin if isinstance(stdin, str | bytes) else json.dumps(stdin)
    cmd = [
        sys.executable,
        *(["-X", "importtime"] if importtime else []),
        "-m",
        "prefect_waymark.hooks",
        *args,
    ]
    proc = subprocess.run(
        cmd,
        input=data.encode() if isinstance(data, str) else data,
        capture_output=True,
        env=full,
        cwd=cwd,
        timeout=120,
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


def answer(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The hook's JSON answer (exit 0 checked; ``{}`` for an empty stdout)."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if not proc.stdout.strip():
        return {}
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def env_for(plan: Path, **extra: str) -> dict[str, str]:
    return {"WAYMARK_PLAN": str(plan), "WAYMARK_EXECUTOR": EXECUTOR, **extra}
