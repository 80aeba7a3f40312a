"""Helpers for the import tests: the sample files, the import command run in a real
subprocess (``import_app.py``: the command registered as the lead registers it), the ledger an
import wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from prefect_waymark.ledger import default_ledger_url, open_ledger

SAMPLES = Path(__file__).resolve().parent / "samples"
TAGGED = SAMPLES / "taskmaster" / "proj" / ".taskmaster" / "tasks" / "tasks.json"
LEGACY = SAMPLES / "taskmaster" / "legacy_tasks.json"
BEADS = SAMPLES / "beads" / "shop" / ".beads" / "issues.jsonl"
KIRO = SAMPLES / "markdown" / "user-auth" / "tasks.md"
TODO = SAMPLES / "markdown" / "TODO.md"
APP = Path(__file__).resolve().parent / "import_app.py"


def run_import(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``waymark import ARGS`` in a real subprocess."""
    full_env = dict(os.environ)
    full_env.pop("WAYMARK_LEDGER_URL", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, str(APP), "import", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ledger_events(folder: Path, plan_id: str) -> list[dict[str, Any]]:
    """The plan's events in the default ledger of ``folder``, as plain dicts."""
    with open_ledger(default_ledger_url(folder), create=False) as led:
        return [
            {
                "kind": str(e.kind),
                "step_id": e.step_id,
                "run_id": e.run_id,
                "branch": e.branch,
                "data": e.data,
            }
            for e in led.events(plan_id)
        ]
