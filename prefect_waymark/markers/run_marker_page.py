"""The per-run marker artifact in words: what this run did, like a dbt run summary — counts, the
unsuccessful steps with their quoted error, the steps it did not run and why, receipts, where the
next run starts. The marker's JSON stays in the ledger and ``EXECUTION_MARKER.json``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..ledger.event_payloads import skip_counts
from ..ledger.progress_view import PlanView
from ..ledger.step_state import StepState
from ..text.human_time import as_datetime, when
from ..text.markdown import (
    blocked_why,
    cell,
    code,
    code_block,
    first_line,
    last_lines,
    link,
    quote,
    table,
)
from .boundary_section import boundary_section
from .plan_copy import PlanCopy, artifact_url, flow_run_url
from .plan_page.render import plan_line

__all__ = ["marker_line", "render_run_marker"]

_LISTED = 40


def marker_line(marker: Mapping[str, Any], view: PlanView) -> str:
    """The plan in one line after this run (the run artifacts' description)."""
    return plan_line(view, result=str(marker["result"]), executed=len(marker["executed_steps"]))


def _took(marker: Mapping[str, Any]) -> str:
    start, end = as_datetime(marker.get("started_at")), as_datetime(marker.get("executed_at"))
    if start is None or end is None:
        return ""
    seconds = max(0, int((end - start).total_seconds()))
    if seconds < 120:
        return f" · took {seconds} s"
    if seconds < 7200:
        return f" · took {seconds // 60} min"
    return f" · took {seconds / 3600:.1f} h"


def _why_not_run(sid: str, view: PlanView, marker: Mapping[str, Any]) -> str:
    s = view.step(sid)
    nxt = marker.get("next_start") or {}
    if s.status == "blocked":
        return blocked_why(view, s)
    if s.status == "needs_review":
        return f"waits for an answer: {cell(first_line(s.review_reason), 160)}"
    if s.status == "in_progress":
        return "another run holds its branch and runs it"
    if sid == nxt.get("step"):
        return f"next start — {cell(nxt.get('why') or 'next pending step', 160)}"
    waiting = [d for d in s.depends_on if view.step(d).status != "completed"]
    if waiting:
        return "waits for " + ", ".join(code(d) for d in waiting)
    if s.status == "failed":
        return f"failed in an earlier run: {cell(first_line(s.error), 160)}"
    return "not reached"


def render_run_marker(
    marker: Mapping[str, Any],
    view: PlanView,
    states: Mapping[str, StepState],
    *,
    copy: PlanCopy,
    now: datetime,
    ui_url: str | None = None,
) -> str:
    """The Markdown of one run's marker artifact."""
    executed, failed = list(marker["executed_steps"]), list(marker["failed_steps"])
    skipped, _ = skip_counts(marker)
    nxt = marker.get("next_start") or {}
    run_link = link("flow run", flow_run_url(ui_url, marker.get("flow_run_id")))
    page_link = link("the plan page", artifact_url(ui_url, copy.page_key()))
    out = [
        f"# Run of {view.title or marker['plan_id']} — {marker['result']}",
        "",
        f"Plan {code(marker['plan_id'])} · {copy.label} · {page_link}",
        "",
        f"**After this run:** {marker_line(marker, view)}  ",
        f"**When:** ended {when(marker['executed_at'], now)}{_took(marker)} · by "
        f"{cell(marker['executor'], 80)} · {run_link}  ",
        f"**Started from:** {_step_or(marker.get('started_from'), 'the beginning')}  ",
        f"**Next start:** {code(nxt['step']) if nxt.get('step') else 'none'} — "
        f"{cell(nxt.get('why') or '', 200)}",
        "",
        *table(
            ["ran", "failed", "skipped (done before)", "not run", "outputs", "receipts"],
            [
                [
                    len(executed),
                    len(failed),
                    skipped,
                    len(_not_run(marker, view)),
                    len(marker.get("outputs", [])),
                    len(marker.get("receipts", [])),
                ]
            ],
        ),
    ]
    out += _unsuccessful(failed, view, states)
    out += _reviews(view, now)
    out += _not_run_section(marker, view)
    out += _ran_section(marker, view)
    out += _receipts(marker, now)
    out += boundary_section(marker)
    refs = marker.get("state_refs") or []
    if refs or marker.get("contract"):
        out += ["", "## What this run re-read", ""]
        c = marker.get("contract")
        if c:
            out.append(
                f"- goal contract {code(c.get('goal_id'))} v{c.get('version')} "
                f"({c.get('status') or 'accepted'})"
            )
        out += [
            f"- state ref {code(r.get('name'))}: version {code(r.get('version'))}" for r in refs
        ]
    return "\n".join(out) + "\n"


def _step_or(step: object, otherwise: str) -> str:
    return code(step) if step else otherwise


def _not_run(marker: Mapping[str, Any], view: PlanView) -> list[str]:
    seen = set(marker["executed_steps"]) | set(marker["failed_steps"])
    return [s.id for s in view.steps if s.id not in seen and s.status != "completed"]


def _unsuccessful(failed: list[str], view: PlanView, states: Mapping[str, StepState]) -> list[str]:
    if not failed:
        return []
    out = ["", f"## Unsuccessful ({len(failed)})"]
    for sid in failed:
        s = view.step(sid)
        st = states.get(sid)
        title = f" — {cell(s.title, 80)}" if s.title else ""
        attempts = f"{s.attempts} attempt{'s' if s.attempts != 1 else ''}"
        out += ["", f"### {code(sid)}{title} ({attempts})", ""]
        out.append(quote(first_line(s.error, 400) or "no error message recorded"))
        tail = last_lines(st.output_tail if st else None)
        if tail:
            out += ["", "Last lines of its output:", "", code_block(tail)]
    return out


def _reviews(view: PlanView, now: datetime) -> list[str]:
    from ..review.reasons import reason_words

    if not view.needs_review:
        return []
    out = ["", f"## Waits for an answer ({len(view.needs_review)})", ""]
    for item in view.needs_review:
        details = {k: v for k, v in item.items() if k not in ("step", "reason")}
        words = "; ".join(reason_words(item.get("reason"), details, now))
        out.append(f"- {code(item['step'])}: {words}")
    out += ["", "How to answer: see the plan page (the exact `waymark review` commands)."]
    return out


def _not_run_section(marker: Mapping[str, Any], view: PlanView) -> list[str]:
    """The steps this run did not run: the marker holds counts of the skipped and left-out
    ones (a run's record does not grow with the plan's history); their names come from the
    view the page is rendered with."""
    rest = _not_run(marker, view)
    ran = set(marker["executed_steps"])
    reasons = {s.id: str(s.skipped) for s in view.steps if s.status == "completed" and s.skipped}
    done_before = [
        s.id
        for s in view.steps
        if s.status == "completed" and s.id not in ran and s.id not in reasons
    ]
    if not rest and not done_before and not reasons:
        return []
    out = ["", "## Not run in this run"]
    if rest:
        out.append("")
        out += [f"- {code(sid)} — {_why_not_run(sid, view, marker)}" for sid in rest[:_LISTED]]
        if len(rest) > _LISTED:
            out.append(f"- … and {len(rest) - _LISTED} more")
    left_out = list(reasons)  # `waymark skip`: before the run, or while it went on
    if done_before:
        names = ", ".join(code(s) for s in done_before[:_LISTED])
        more = f" and {len(done_before) - _LISTED} more" if len(done_before) > _LISTED else ""
        out += ["", f"Skipped as completed by earlier runs: {names}{more}."]
    if left_out:
        out += ["", "Left out on purpose (`waymark skip`):", ""]
        out += [f"- {code(s)} — {cell(first_line(reasons[s]), 160)}" for s in left_out[:_LISTED]]
        if len(left_out) > _LISTED:
            out.append(f"- … and {len(left_out) - _LISTED} more")
    return out


def _ran_section(marker: Mapping[str, Any], view: PlanView) -> list[str]:
    executed = list(marker["executed_steps"])
    if not executed:
        return []
    outputs: dict[str, list[str]] = {}
    for o in marker.get("outputs", []):
        outputs.setdefault(o["step"], []).append(f"{code(o['path'])} ({o['sha256'][:12]})")
    rows = [
        [code(sid), cell(view.step(sid).title, 80) or "-", ", ".join(outputs.get(sid, [])) or "-"]
        for sid in executed[:_LISTED]
    ]
    more = [f"… and {len(executed) - _LISTED} more"] if len(executed) > _LISTED else []
    return ["", f"## Ran ({len(executed)})", "", *table(["step", "title", "outputs"], rows), *more]


def _receipts(marker: Mapping[str, Any], now: datetime) -> list[str]:
    receipts = marker.get("receipts") or []
    if not receipts:
        return []
    rows = [
        [
            code(r.get("step")),
            code(r.get("action")),
            code(r.get("key")),
            r.get("outcome") or "applied",
            cell(r.get("external_id") or "-", 60),
            when(r.get("at"), now) if r.get("at") else "-",
        ]
        for r in receipts
    ]
    headers = ["step", "action", "key", "outcome", "external id", "when"]
    return ["", f"## Receipts ({len(receipts)})", "", *table(headers, rows)]
