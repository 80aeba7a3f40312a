"""Plans and ledger helpers shared by the skip and close tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.ledger.base import this_host
from tests._support.helpers import write_plan

BODIES = """
import json
from pathlib import Path


def report(ctx):
    seen = dict(ctx.upstream)
    Path(ctx.workdir, "report.json").write_text(json.dumps(seen, sort_keys=True))
    return seen
"""


def skip_plan(folder: Path, *, flaky_run: str = "exit 1") -> Path:
    """collect → check (fails: its command exits 1) and notify (an action, never run) → report
    (a ``call:`` step that writes what it got from upstream). Side effects are counted."""
    (folder / "bodies.py").write_text(BODIES)
    doc: dict[str, Any] = {
        "plan_id": "skips",
        "title": "Skip a step",
        "steps": [
            {"id": "collect", "run": "echo x >> collect.count; echo data > data.txt",
             "outputs": ["data.txt"]},
            {"id": "check", "depends_on": ["collect"],
             "run": f"echo x >> check.count; {flaky_run}"},
            {"id": "notify", "depends_on": ["collect"], "action": "send-mail",
             "run": "echo x >> notify.count"},
            {"id": "report", "depends_on": ["check", "notify"], "call": "bodies:report"},
        ],
    }  # fmt: skip
    return write_plan(folder, doc)


def close_plan_doc(**contract: Any) -> dict[str, Any]:
    """Two code steps; ``draft`` serves acceptance item A1, ``publish`` item A2."""
    return {
        "plan_id": "closing",
        "title": "Close a plan",
        "contract": {
            "goal_id": "q4",
            "objective": "Publish the Q4 report",
            "acceptance": ["The draft has every figure.", {"id": "A2", "text": "It is published."}],
            "exit_conditions": ["The report is announced."],
            **contract,
        },
        "steps": [
            {"id": "draft", "run": "echo draft > draft.md", "outputs": ["draft.md"],
             "serves": ["A1"]},
            {"id": "publish", "depends_on": ["draft"], "run": "echo x >> publish.count",
             "serves": ["A2"]},
        ],
    }  # fmt: skip


def ledger_of(folder: Path) -> str:
    return f"sqlite:///{folder / '.waymark' / 'ledger.db'}"


def events(url: str, plan_id: str) -> list[Any]:
    with open_ledger(url, create=False) as led:
        return led.events(plan_id)


def start(url: str, plan_id: str, step: str, run_id: str = "run-1") -> None:
    """Record ``step`` in_progress (held by this live process), as a run's start would."""
    with open_ledger(url) as led:
        led.record(
            plan_id,
            EventKind.step_started,
            step_id=step,
            branch="main",
            run_id=run_id,
            lease_seconds=600,
            def_hash="h",
            result_key=None,
            host=this_host(),
            pid=os.getpid(),
        )
