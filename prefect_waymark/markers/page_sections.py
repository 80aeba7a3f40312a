"""Sections of the plan page that are tables: acceptance evidence, progress per milestone and
branch, steps by status, receipts. Pure functions of the plan, its view and the step states."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ..ledger.progress_view import PlanView, StepView
from ..ledger.step_state import StepState
from ..plan.spec import PlanSpec
from ..text.human_time import ago
from ..text.markdown import blocked_why, cell, code, first_line, table

__all__ = [
    "acceptance_section",
    "progress_section",
    "receipts_section",
    "step_title",
    "steps_section",
]

ROWS_SHOWN = 40
_STATUS_ORDER = ("in_progress", "needs_review", "failed", "blocked", "pending", "completed")
_STATUS_TITLE = {
    "in_progress": "In progress",
    "needs_review": "Needs review",
    "failed": "Failed",
    "blocked": "Blocked",
    "pending": "Pending",
    "completed": "Completed",
}


def step_title(spec: StepView) -> str:
    """ " — Title (owner bob)" after a step's id in a heading; empty for a bare step."""
    bits = [f" — {cell(spec.title, 80)}" if spec.title else ""]
    if spec.owner:
        bits.append(f" (owner {cell(spec.owner, 40)})")
    return "".join(bits)


def _capped(rows: list[list[object]], what: str) -> tuple[list[list[object]], list[str]]:
    if len(rows) <= ROWS_SHOWN:
        return rows, []
    return rows[:ROWS_SHOWN], [f"… and {len(rows) - ROWS_SHOWN} more {what} (see TASKS.md)"]


def _more(total: int, what: str) -> list[str]:
    """The line that says how many rows a capped table left out (none when it shows all)."""
    return [f"… and {total - ROWS_SHOWN} more {what} (see TASKS.md)"] if total > ROWS_SHOWN else []


def _evidence(sid: str, states: Mapping[str, StepState]) -> str:
    st = states.get(sid)
    if st is None:
        return ""
    items = [f"{code(p)} sha256 {h[:12]}" for p, h in sorted(st.outputs.items())]
    items += [f"receipt {code(r.get('key'))}" for r in st.receipts]
    return "; ".join(items)


def acceptance_section(
    plan: PlanSpec, view: PlanView, states: Mapping[str, StepState], now: datetime
) -> list[str]:
    """Each step's acceptance items with their evidence status."""
    rows: list[list[object]] = []
    total = 0
    for spec in plan.steps:
        if not spec.acceptance:
            continue
        total += len(spec.acceptance)
        if len(rows) >= ROWS_SHOWN:  # counted, not rendered: the table shows ROWS_SHOWN rows
            continue
        status = view.step(spec.id).status
        st = states.get(spec.id)
        for item in spec.acceptance:
            if status == "completed" and st is not None and st.skipped is not None:
                evidence, state = "", f"skipped: {cell(st.skipped, 120)}"
            elif status == "completed":
                evidence = _evidence(spec.id, states) or "step completed"
                done = ago(st.completed_at, now) if st and st.completed_at else ""
                state = f"met {done}".strip()
            else:
                evidence, state = "", f"open (step {status})"
            rows.append([cell(item, 160), code(spec.id), state, evidence or "-"])
    if not rows:
        return []
    rows, more = rows[:ROWS_SHOWN], _more(total, "items")
    return [
        "",
        "## Acceptance",
        "",
        *table(["item", "step", "status", "evidence"], rows),
        *more,
    ]


def _tally(counts: dict[str, int]) -> list[object]:
    return [
        f"{counts['completed']}/{sum(counts.values())}",
        counts["in_progress"] or "",
        counts["failed"] or "",
        counts["needs_review"] or "",
        counts["blocked"] or "",
        counts["pending"] or "",
    ]


def progress_section(plan: PlanSpec, view: PlanView) -> list[str]:
    """Done and open steps per milestone and per branch."""
    headers = ["done", "running", "failed", "review", "blocked", "pending"]
    out = ["", "## Progress", ""]
    # Counted in one pass over the steps (a 10,000-step plan has a hundred milestones).
    milestones: dict[str, dict[str, int]] = {}
    branches: dict[str, dict[str, int]] = {}
    for s in view.steps:
        m = s.milestone or "(no milestone)"
        counts = milestones.get(m)
        if counts is None:
            counts = milestones[m] = dict.fromkeys(_STATUS_ORDER, 0)
        counts[s.status] += 1
        counts = branches.get(s.branch)
        if counts is None:
            counts = branches[s.branch] = dict.fromkeys(_STATUS_ORDER, 0)
        counts[s.status] += 1
    if len(milestones) > 1 or next(iter(milestones)) != "(no milestone)":
        rows = [[cell(m, 80), *_tally(counts)] for m, counts in milestones.items()]
        active = f" — active: {code(view.active_milestone)}" if view.active_milestone else ""
        out += [f"Per milestone{active}:", "", *table(["milestone", *headers], rows), ""]
    if len(branches) > 1:
        rows = []
        for b, counts in branches.items():
            current = view.current_step.get(b)
            rows.append([code(b), *_tally(counts), code(current) if current else "-"])
        out += ["Per branch:", "", *table(["branch", *headers, "current step"], rows)]
    if len(out) == 3:  # one milestone-less branch: one line says it
        out.append(f"{_tally(next(iter(milestones.values())))[0]} steps done.")
    return out


def steps_section(view: PlanView, states: Mapping[str, StepState], now: datetime) -> list[str]:
    """Every step, grouped by status, with title, owner, attempts and its last change."""
    out = ["", "## Steps"]
    by_status: dict[str, list[StepView]] = {status: [] for status in _STATUS_ORDER}
    for s in view.steps:  # one pass over the plan, not one per status
        by_status[s.status].append(s)
    for status in _STATUS_ORDER:
        steps = by_status[status]
        if not steps:
            continue
        rows: list[list[object]] = []
        for s in steps[:ROWS_SHOWN]:  # only the rows shown are rendered (a huge plan's page)
            st = states.get(s.id)
            note = first_line(s.error or s.review_reason, 120) if status != "completed" else ""
            if s.skipped is not None:  # `waymark skip`: completed without running
                note = "skipped: " + first_line(s.skipped, 110)
            if status == "blocked":
                note = blocked_why(view, s, 110)
            rows.append(
                [
                    code(s.id),
                    cell(s.title, 80) or "-",
                    cell(s.owner, 40) or "-",
                    s.attempts or "-",
                    ago(st.last_at, now) if st and st.last_at else "-",
                    cell(note, 120) or "-",
                ]
            )
        more = _more(len(steps), "steps")
        out += [
            "",
            f"### {_STATUS_TITLE[status]} ({len(steps)})",
            "",
            *table(["step", "title", "owner", "attempts", "last change", "note"], rows),
            *more,
        ]
    return out


def receipts_section(view: PlanView, now: datetime) -> list[str]:
    """Receipts of irreversible actions, and actions whose outcome is unknown."""
    rows: list[list[object]] = []
    unknown: list[list[object]] = []
    for s in view.steps:
        for r in s.receipts:
            rows.append(
                [
                    code(s.id),
                    code(r.get("action")),
                    code(r.get("key")),
                    r.get("outcome") or "applied",
                    cell(r.get("external_id") or "-", 60),
                    ago(r.get("at"), now) if r.get("at") else "-",
                    cell(r.get("by") or r.get("source") or "-", 40),
                ]
            )
        for a in s.open_actions:
            unknown.append(
                [code(s.id), code(a.get("action")), code(a.get("key")), ago(a.get("at"), now)]
            )
    if not rows and not unknown:
        return []
    out = ["", "## Receipts"]
    if rows:
        rows, more = _capped(rows, "receipts")
        headers = ["step", "action", "key", "outcome", "external id", "when", "by"]
        out += ["", *table(headers, rows), *more]
    if unknown:
        out += [
            "",
            "Outcome unknown (an intent without a receipt: check the business system, then "
            "`waymark receipt PLAN STEP --applied|--not-applied`):",
            "",
            *table(["step", "action", "key", "started"], unknown),
        ]
    return out
