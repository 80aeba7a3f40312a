"""TASKS.md, STATE.md and IMPLEMENTATION_LOG.md: the plan's human views, made from the ledger."""

from __future__ import annotations

from typing import Any

from ..ledger.event_payloads import skip_counts
from ..ledger.progress_view import PlanView
from ..plan.spec import PlanSpec, StepSpec
from ..text.lists import capped_list
from ..text.markdown import cell
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


def _closed_words(closed: dict[str, Any]) -> str:
    """``closed on 2026-12-01 18:20 UTC by ann: done`` (a ``waymark close`` record)."""
    when = str(closed.get("at") or "")[:16].replace("T", " ")
    forced = " (forced)" if closed.get("forced") else ""
    # A reason (and who) is one line in a view: a newline in it must not start a forged line.
    why = f": {cell(closed['reason'])}" if closed.get("reason") else ""
    return f"closed{forced} on {when} UTC by {cell(closed.get('by'), 100)}{why}"


#: Each status's box and words in TASKS.md, made once (a 10,000-step plan's file has a line each).
_MARKS = {status: (box, f"**{status}**") for status, box in _BOX.items()}


def tasks_md(plan: PlanSpec, view: PlanView, closed: dict[str, Any] | None = None) -> str:
    lines = [GENERATED_LINE, f"# Tasks — {plan.title or plan.plan_id}", ""]
    if closed is not None:
        lines += [f"The plan is {_closed_words(closed)}. Nothing is next.", ""]
    for s in view.steps:
        if s.skipped is not None:
            box, words = "[s]", f"**skipped** ({cell(s.skipped)})"
        else:
            box, words = _MARKS.get(s.status) or ("[ ]", f"**{s.status}**")
        owner = f" (owner: {s.owner})" if s.owner else ""
        deps = f" — after {', '.join(s.depends_on)}" if s.depends_on else ""
        title = f": {s.title}" if s.title else ""
        lines.append(f"- {box} `{s.id}`{title} — {words}{owner}{deps}")
    return "\n".join(lines) + "\n"


def state_md(
    plan: PlanSpec,
    view: PlanView,
    last_marker: dict[str, Any] | None,
    closed: dict[str, Any] | None = None,
) -> str:
    done = [
        f"{s.id} (skipped: {cell(s.skipped)})" if s.skipped is not None else s.id
        for s in view.steps
        if s.status == "completed"
    ]
    not_done = [f"{s.id} ({s.status})" for s in view.steps if s.status != "completed"]
    problems = [f"{s.id}: {cell(s.error)}" for s in view.steps if s.status == "failed" and s.error]
    phase = "complete" if view.complete else (view.active_milestone or "in progress")
    nxt = view.next_step or ("none — plan complete" if view.complete else "none")
    if closed is not None:
        phase, nxt = _closed_words(closed), "none — the plan is closed"
    lines = [
        GENERATED_LINE,
        f"# State — {plan.title or plan.plan_id}",
        "",
        "## Summary",
        f"- plan: `{plan.plan_id}`",
        f"- phase: {phase}",
        f"- next step: {nxt}",
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
    lines += [f"- {r['step']}: {cell(r.get('reason'))}" for r in view.needs_review] or ["- none"]
    if closed is not None:
        lines += ["", "## Closed", f"- {_closed_words(closed)}"]
        for item, text in {**closed.get("acceptance", {}), **closed.get("evidence", {})}.items():
            lines.append(f"- evidence {cell(item, 40)}: {cell(text, 400)}")
        lines += [f"- left unmet: {cell(u, 400)}" for u in closed.get("unmet", [])]
    return "\n".join(lines) + "\n"


def _run_section(steps: dict[str, StepSpec], marker: dict[str, Any], index: int) -> list[str]:
    skipped, left_out = skip_counts(marker)  # counts (older markers: lists, read as counts)
    lines = [
        f"## Run {index}: {marker['executed_at']} — {marker['result']}",
        "",
        f"- executor: {marker['executor']}; flow run: {marker.get('flow_run_id') or '-'}",
        f"- started from: {marker.get('started_from') or 'the beginning'}",
        f"- ran: {capped_list(marker['executed_steps']) or 'nothing'}",
        f"- skipped (done before): {skipped}",
    ]
    if left_out:
        lines.append(f"- left out (waymark skip): {left_out}")
    if marker["failed_steps"]:
        lines.append(f"- failed: {capped_list(marker['failed_steps'])}")
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


def implementation_log_md(
    plan: PlanSpec, history: list[dict[str, Any]], view: PlanView, *, capped: bool = False
) -> str:
    """The runs' log; ``capped``: ``history`` is the newest runs only, as the marker file keeps
    them (the whole history is in the ledger)."""
    lines = [GENERATED_LINE, f"# Implementation log — {plan.title or plan.plan_id}", ""]
    if capped:
        lines += [
            f"The newest {len(history)} runs, numbered from the oldest of them; every run: "
            f"`waymark marker {plan.source} --history`.",
            "",
        ]
    steps = {s.id: s for s in plan.steps} if history else {}  # once: not once per run
    for i, marker in enumerate(history, start=1):
        lines += _run_section(steps, marker, i) + [""]
    open_problems = [f"- {r['step']}: {cell(r.get('reason'))}" for r in view.needs_review]
    open_problems += [f"- {s.id}: {cell(s.error)}" for s in view.steps if s.status == "failed"]
    lines += ["## Open problems", *(open_problems or ["- none"])]
    return "\n".join(lines) + "\n"
