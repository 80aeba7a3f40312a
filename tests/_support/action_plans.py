"""Plans and workdirs of the irreversible-action tests (see tests/_support/action_steps.py)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from prefect_waymark import Plan
from tests._support.helpers import write_plan

STEPS_SOURCE = Path(__file__).with_name("action_steps.py")
PY = sys.executable

# The 20-step plan: three irreversible actions, one of each kind.
ACTION_STEPS = {"s05": "charge_card", "s11": "publish", "s16": "send_invoice"}
ACTION_KEYS = {
    "s05": "{plan}/s05/charge-card",
    "s11": "{plan}/s11/publish",
    "s16": "{plan}/s16/send-invoice",
}


def prepare_workdir(folder: Path) -> None:
    """Put the step bodies where ``call: paysteps:...`` finds them."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(STEPS_SOURCE, folder / "paysteps.py")


def step_entry(sid: str, prev: str | None, *, probes: bool = True) -> dict[str, Any]:
    deps = [prev] if prev else []
    kind = ACTION_STEPS.get(sid)
    if kind == "publish":
        entry: dict[str, Any] = {
            "id": sid,
            "depends_on": deps,
            "action": "publish",
            "run": f"{PY} paysteps.py publish",
        }
        if probes:
            entry["probe"] = f"{PY} paysteps.py probe"
        return entry
    return {"id": sid, "depends_on": deps, "call": f"paysteps:{kind or 'work'}"}


def twenty_step_plan(folder: Path, plan_id: str, *, probes: bool = True) -> Path:
    """s01..s20 in one chain; s05, s11 and s16 are irreversible actions."""
    prepare_workdir(folder)
    plan = Plan(plan_id)
    prev = None
    for i in range(1, 21):
        sid = f"s{i:02d}"
        plan.add_step(**step_entry(sid, prev, probes=probes))
        prev = sid
    return write_plan(folder, plan)


def action_keys(plan_id: str) -> dict[str, str]:
    return {sid: k.format(plan=plan_id) for sid, k in ACTION_KEYS.items()}


def branch_overlaps(events: list[Any]) -> list[str]:
    """Times a step started in a branch while another step of it was still in_progress."""
    active: dict[str, str] = {}
    problems = []
    for ev in events:
        if ev.step_id is None:
            continue
        branch = ev.branch or "main"
        if ev.kind == "step_started":
            if branch in active:
                problems.append(f"seq {ev.seq}: {ev.step_id} started while {active[branch]} ran")
            active[branch] = ev.step_id
        elif ev.kind in ("step_completed", "step_failed", "step_interrupted", "step_needs_review"):
            if active.get(branch) == ev.step_id:
                del active[branch]
    return problems
