"""The two-branch plan of the task-runner tests, and how to read its ledger back.

Branch ``a``: ``a1`` (shell), ``a2`` (``call:`` in the worker, ticks, returns its pid), ``a3``
(``call:``, checks ``a2``'s value reached it). Branch ``b``: ``b1`` (shell), ``b2`` (an
``action:`` with a receipt). Each body sleeps ~1 s and appends a line to ``<step>.count``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests._support.helpers import write_plan

STEPS = ["a1", "a2", "a3", "b1", "b2"]

STEPS_MODULE = """
import os
import time


def work(ctx):
    time.sleep(1)
    ctx.tick(1)  # in a worker: the hold is still this run's, the contract re-anchored
    with open(ctx.path(ctx.step_id + ".count"), "a") as f:
        f.write(str(os.getpid()) + "\\n")
    return {"pid": os.getpid()}


def hold(ctx):
    # Once: say it is inside, then tick until this run no longer holds the step (its
    # runner was killed and a resume took the step over); the next time, finish.
    with open(ctx.path(ctx.step_id + ".count"), "a") as f:
        f.write(str(os.getpid()) + "\\n")
    inside = ctx.path("inside." + ctx.step_id)
    if not inside.exists():
        inside.touch()
        try:
            while True:
                time.sleep(0.05)
                ctx.tick(5)  # raises once the step is another run's
        except Exception as exc:
            ctx.path("lost." + ctx.step_id).write_text(str(exc))
            raise
    return {}


def check(ctx):
    pid = ctx.upstream["a2"]["pid"]  # a2's value, read back by the scheduler
    with open(ctx.path(ctx.step_id + ".count"), "a") as f:
        f.write(str(pid) + "\\n")
    return {"a2_pid": pid}
"""


def two_branch_plan(folder: Path, plan_id: str, *, hold: str | None = None) -> Path:
    """The plan; with ``hold``, that step is ``rsteps:hold`` (blocks once until it loses its
    hold)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rsteps.py").write_text(STEPS_MODULE)

    def shell(sid: str, extra: str = "") -> dict[str, str]:
        if sid == hold:
            return {"call": "rsteps:hold"}
        return {"run": f"echo x >> {sid}.count; sleep 1{extra}"}

    receipt = '; echo \'{"external_id": "mail-1"}\' > "$WAYMARK_RECEIPT_FILE"'
    doc: dict[str, Any] = {
        "plan_id": plan_id,
        "contract": {
            "goal_id": "runners",
            "objective": "two branches on any task runner",
            "forbidden": ["action:drop-*"],
        },
        "steps": [
            {"id": "a1", "branch": "a", **shell("a1")},
            {"id": "a2", "branch": "a", "call": "rsteps:work", "depends_on": ["a1"]},
            {"id": "a3", "branch": "a", "call": "rsteps:check", "depends_on": ["a2"]},
            {"id": "b1", "branch": "b", **shell("b1")},
            {
                "id": "b2",
                "branch": "b",
                "action": "send-mail",
                **shell("b2", receipt),
                "depends_on": ["b1"],
            },
        ],
    }
    return write_plan(folder, doc)


def intervals(events: list[Any]) -> dict[str, tuple[float, float]]:
    """step -> (last start, its end) times from the ledger's step_started/step_completed."""
    start: dict[str, float] = {}
    out: dict[str, tuple[float, float]] = {}
    for ev in events:
        if ev.kind == "step_started":
            start[ev.step_id] = ev.at.timestamp()
        elif ev.kind == "step_completed" and ev.step_id in start:
            out[ev.step_id] = (start[ev.step_id], ev.at.timestamp())
    return out


def overlapping(spans: dict[str, tuple[float, float]], x: str, y: str) -> bool:
    return spans[x][0] < spans[y][1] and spans[y][0] < spans[x][1]
