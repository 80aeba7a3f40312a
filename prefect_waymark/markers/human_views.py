"""TASKS.md, STATE.md and IMPLEMENTATION_LOG.md: the plan's human views, made from the ledger."""

from __future__ import annotations

from typing import Any

from ..ledger.progress_view import PlanView
from ..plan.spec import PlanSpec
from .generated_files import GENERATED_LINE
from .marker_file import MARKER_FILE

__all__ = ["implementation_log_md", "state_md", "tasks_md"]

_BOX = {
    "completed": "[x]",
    "in_progress": "[~]",
    "failed": "[!]",
    "needs_review": "[?]",
    "blocked": "[-]",
    "pending": "[ ]",
}


def tasks_md(plan: PlanSpec, view: PlanView) -> str:
    lines = [GENERATED_LINE, f"# Tasks — {plan.title or plan.plan_id}", ""]
    for s in view.steps:
        owner = f" (owner: {s.owner})" if s.owner else ""
        deps = f" — after {', '.join(s.depends_on)}" if s.depends_on else ""
        title = f": {s.title}" if s.title else ""
        lines.append(f"- {_BOX.get(s.status, '[ ]')} `{s.id}`{title} — **{s.status}**{owner}{deps}")
    return "\n".join(lines) + "\n"


def state_md(plan: PlanSpec, view: PlanView, last_marker: dict[str, Any] | None) -> str:
    done = [s.id for s in view.steps if s.status == "completed"]
    not_done = [f"{s.id} ({s.status})" for s in view.steps if s.status != "completed"]
    problems = [f"{s.id}: {s.error}" for s in view.steps if s.status == "failed" and s.error]
    phase = "complete" if view.complete else (view.active_milestone or "in progress")
    lines = [
        GENERATED_LINE,
        f"# State — {plan.title or plan.plan_id}",
        "",
        "## Summary",
        f"- plan: `{plan.plan_id}`",
        f"- phase: {phase}",
        f"- next step: {view.next_step or ('none — plan complete' if view.complete else 'none')}",
        f"- Latest execution record: {MARKER_FILE}",
    ]
    if last_marker is not None:
        lines.append(
            f"- last run: {last_marker['executed_at']} by {last_marker['executor']} — "
            f"{last_marker['result']}"
        )
    lines += ["", "## Done"] + ([f"- {d}" for d in done] or ["- nothing yet"])
    lines += ["", "## Not done"] + ([f"- {d}" for d in not_done] or ["- nothing"])
    lines += ["", "## Known problems"] + ([f"- {p}" for p in problems] or ["- none"])
    lines += ["", "## Needs review"]
    lines += [f"- {r['step']}: {r.get('reason')}" for r in view.needs_review] or ["- none"]
    return "\n".join(lines) + "\n"


def _run_section(plan: PlanSpec, marker: dict[str, Any], index: int) -> list[str]:
    steps = {s.id: s for s in plan.steps}
    lines = [
        f"## Run {index}: {marker['executed_at']} — {marker['result']}",
        "",
        f"- executor: {marker['executor']}; flow run: {marker.get('flow_run_id') or '-'}",
        f"- started from: {marker.get('started_from') or 'the beginning'}",
        f"- ran: {', '.join(marker['executed_steps']) or 'nothing'}",
        f"- skipped as completed: {len(marker['skipped_steps'])}",
    ]
    if marker["failed_steps"]:
        lines.append(f"- failed: {', '.join(marker['failed_steps'])}")
    verified: list[str] = []
    outputs_by_step: dict[str, list[str]] = {}
    for o in marker.get("outputs", []):
        outputs_by_step.setdefault(o["step"], []).append(f"`{o['path']}` sha256 {o['sha256'][:12]}")
    receipts_by_step: dict[str, list[str]] = {}
    for r in marker.get("receipts", []):
        receipts_by_step.setdefault(r["step"], []).append(
            f"receipt {r.get('key')} ({r.get('outcome', 'applied')})"
        )
    for sid in marker["executed_steps"]:
        spec = steps.get(sid)
        if spec is None:
            continue
        evidence = outputs_by_step.get(sid, []) + receipts_by_step.get(sid, [])
        ev = "; ".join(evidence) or "step completed"
        for item in spec.acceptance:
            verified.append(f"  - {sid}: {item} — evidence: {ev}")
    if verified:
        lines += ["- verified:", *verified]
    nxt = marker["next_start"]
    lines.append(f"- next start: {nxt.get('step') or 'none'} ({nxt.get('why')})")
    return lines


def implementation_log_md(plan: PlanSpec, history: list[dict[str, Any]], view: PlanView) -> str:
    lines = [GENERATED_LINE, f"# Implementation log — {plan.title or plan.plan_id}", ""]
    for i, marker in enumerate(history, start=1):
        lines += _run_section(plan, marker, i) + [""]
    open_problems = [f"- {r['step']}: {r.get('reason')}" for r in view.needs_review]
    open_problems += [f"- {s.id}: {s.error}" for s in view.steps if s.status == "failed"]
    lines += ["## Open problems", *(open_problems or ["- none"])]
    return "\n".join(lines) + "\n"
