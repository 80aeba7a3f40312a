"""The plan page: one Markdown artifact per plan copy that a person opens first.

:func:`render_plan_page` is pure: it reads the plan, the ledger's step states and a few ledger
events (runs, pauses, answers: :data:`PAGE_EVENT_KINDS`) and says, without raw JSON, where the
plan stands, what failed and why (the tail of the step's output), what blocks what, what waits
for an answer and exactly how to give it, the receipts, where the next run starts and the last
runs with links. The publisher and the run observer are in :mod:`.plan_page_publish`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..ledger.events import EventKind, ProgressEvent
from ..ledger.progress_view import PlanView, build_view
from ..ledger.step_state import StepState
from ..models import GoalContract
from ..plan.spec import PlanSpec
from ..text.human_time import ago, as_datetime, when
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
from .page_metrics import metrics_section
from .page_review import review_section
from .page_sections import (
    acceptance_section,
    progress_section,
    receipts_section,
    step_title,
    steps_section,
)
from .plan_copy import PlanCopy, flow_run_url
from .plan_line import next_start, plan_line

__all__ = [
    "PAGE_EVENT_KINDS",
    "PageInput",
    "RunRecord",
    "open_pause",
    "page_line",
    "render_plan_page",
    "run_records",
]

#: The ledger events the page reads besides the step states.
PAGE_EVENT_KINDS = (
    EventKind.run_started,
    EventKind.run_finished,
    EventKind.review_waiting,
    EventKind.review_resumed,
    EventKind.step_review_accepted,
    EventKind.step_rerun_requested,
    EventKind.plan_aborted,
    EventKind.plan_abort_lifted,
)
_ANSWER_KINDS = {
    EventKind.step_review_accepted,
    EventKind.step_rerun_requested,
    EventKind.plan_aborted,
}
_RUNS_SHOWN = 8


@dataclass(frozen=True)
class PageInput:
    """Everything the page shows. ``live_run``: the run that publishes the page while it runs."""

    plan: PlanSpec
    states: Mapping[str, StepState]
    events: Sequence[ProgressEvent]
    copy: PlanCopy
    now: datetime
    contract: GoalContract | None = None
    ui_url: str | None = None
    live_run: str | None = None
    #: The view of ``states`` if the caller has it (the run built it already): used as ``view``.
    known_view: PlanView | None = None
    view: PlanView = field(init=False)

    def __post_init__(self) -> None:
        view = self.known_view or build_view(self.plan, dict(self.states))
        object.__setattr__(self, "view", view)


@dataclass
class RunRecord:
    """One run as the page lists it, from its ``run_started`` and ``run_finished`` events."""

    run_id: str
    started_at: datetime
    executor: str
    flow_run_id: str | None
    finished: dict[str, Any] | None = None

    @property
    def result(self) -> str:
        return str(self.finished["result"]) if self.finished else "no end recorded"


def run_records(events: Sequence[ProgressEvent]) -> list[RunRecord]:
    """The plan's runs, oldest first."""
    runs: dict[str, RunRecord] = {}
    for ev in events:
        if ev.kind == EventKind.run_started and ev.run_id:
            runs[ev.run_id] = RunRecord(
                ev.run_id, ev.at, str(ev.data.get("executor", "?")), ev.data.get("flow_run_id")
            )
        elif ev.kind == EventKind.run_finished and ev.run_id in runs:
            runs[str(ev.run_id)].finished = dict(ev.data)
    return list(runs.values())


def open_pause(events: Sequence[ProgressEvent], run_id: str | None) -> ProgressEvent | None:
    """The ``review_waiting`` event that no answer followed yet: of ``run_id`` (its process
    waits), or of any run whose flow run is suspended for it (its process ended with the run;
    the suspension lasts until an answer or its resumed execution)."""
    pause: ProgressEvent | None = None
    for ev in events:
        if ev.data.get("waits") == "checkin":
            continue  # a run suspended for a check-in, not for an answer
        if ev.kind == EventKind.review_waiting and (
            (ev.run_id == run_id and run_id) or ev.data.get("suspended")
        ):
            pause = ev
        elif pause is None:
            continue
        elif ev.kind in _ANSWER_KINDS:
            if ev.kind == EventKind.plan_aborted or ev.step_id == pause.step_id:
                pause = None
        elif ev.kind == EventKind.run_finished and ev.run_id == pause.run_id:
            if not pause.data.get("suspended"):
                pause = None
        elif ev.kind == EventKind.review_resumed:
            if ev.data.get("flow_run_id") == pause.data.get("flow_run_id"):
                pause = None
    return pause


def _aborted(events: Sequence[ProgressEvent]) -> bool:
    last = [e for e in events if e.kind in (EventKind.plan_aborted, EventKind.plan_abort_lifted)]
    return bool(last) and last[-1].kind == EventKind.plan_aborted


def page_line(page: PageInput) -> str:
    """The plan in one line as the page (and its artifact's description) says it."""
    runs = run_records(page.events)
    pause = open_pause(page.events, page.live_run)
    live = any(r.run_id == page.live_run and r.finished is None for r in runs)
    last = runs[-1].finished if runs and not live else None
    return plan_line(
        page.view,
        result=str(last["result"]) if last else None,
        executed=len(last.get("executed_steps", [])) if last else None,
        paused_at=pause.step_id if pause else None,
        aborted=_aborted(page.events),
    )


def render_plan_page(page: PageInput) -> str:
    """The page's Markdown."""
    plan, view, now = page.plan, page.view, page.now
    runs = run_records(page.events)
    pause = open_pause(page.events, page.live_run)
    aborted = _aborted(page.events)
    live = next((r for r in runs if r.run_id == page.live_run and r.finished is None), None)
    last = runs[-1] if runs else None
    line = page_line(page)
    out = [
        f"# {plan.title or plan.plan_id}",
        "",
        f"Plan {code(plan.plan_id)} · {page.copy.label} · ledger {code(page.copy.ledger)}",
        "",
        f"**Where it stands:** {line}  ",
        f"**Next start:** {_next_start_text(view, last, live, aborted)}  ",
    ]
    if live is not None:
        state = "paused for review" if pause else "running"
        out.append(
            f"**This run:** {state} since {ago(live.started_at, now)}, by {live.executor} — "
            f"{link('flow run', flow_run_url(page.ui_url, live.flow_run_id))}  "
        )
    elif last is not None:
        ended = as_datetime(last.finished.get("finished_at")) if last.finished else None
        out.append(
            f"**Last run:** {last.result} {ago(ended or last.started_at, now)} by "
            f"{last.executor} — {link('flow run', flow_run_url(page.ui_url, last.flow_run_id))}  "
        )
    out.append(f"**Updated:** {when(now, now)}")
    out += review_section(page.plan, view, page.copy, now, page.ui_url, pause)
    out += _failed_section(page)
    out += _blocked_section(view)
    out += _goal_section(page.contract)
    out += acceptance_section(plan, view, page.states, now)
    out += progress_section(plan, view)
    out += steps_section(view, page.states, now)
    out += receipts_section(view, now)
    out += metrics_section([r.finished for r in runs])
    out += _runs_section(runs, page.ui_url, now)
    out += [
        "",
        "---",
        "The whole record is in the ledger; `EXECUTION_MARKER.json` in the workdir and "
        "`waymark marker PLAN --json` have every run's marker as JSON.",
    ]
    return "\n".join(out) + "\n"


def _next_start_text(
    view: PlanView, last: RunRecord | None, live: RunRecord | None, aborted: bool
) -> str:
    nxt = next_start(view)
    if view.complete:
        return "nothing — the plan is complete"
    if aborted:
        return "nothing — the plan is aborted (answer `waymark review --accept` or `--rerun`)"
    if nxt is None:
        return "no step is ready (see Blocked below)"
    if view.needs_review:
        why = "it waits for your answer (below)"
    elif view.step(nxt).status == "failed":
        why = "it failed; the next run retries it"
    elif live is None and last is not None and last.finished:
        why = str(last.finished.get("next_start_reason") or "the next pending step")
    else:
        why = "the next pending step"
    return f"{code(nxt)} — {why}"


#: At most this many steps in one list of the page (failed, needs review).
PAGE_LIST_MAX = 40


def _failed_section(page: PageInput) -> list[str]:
    failed = [s for s in page.view.steps if s.status == "failed"]
    if not failed:
        return []
    out = ["", f"## Failed ({len(failed)})"]
    if len(failed) > PAGE_LIST_MAX:  # a page stays readable (and cheap) on a huge plan
        out += ["", f"The first {PAGE_LIST_MAX} of {len(failed)}; `waymark status` lists all."]
    for s in failed[:PAGE_LIST_MAX]:
        st = page.states.get(s.id)
        attempts = f"{s.attempts} attempt{'s' if s.attempts != 1 else ''}"
        at = ago(st.last_at, page.now) if st and st.last_at else "?"
        out += ["", f"### {code(s.id)}{step_title(s)}", "", f"{attempts} · failed {at}", ""]
        out.append(quote(first_line(s.error, 400) or "no error message recorded"))
        tail = last_lines(st.output_tail if st else None)
        if tail:
            out += ["", "Last lines of its output:", "", code_block(tail)]
        logs = f"{page.copy.workdir}/.waymark/logs/{page.plan.plan_id}/{s.id}/"
        out += ["", f"Whole output: {code(logs)}"]
    return out


def _blocked_section(view: PlanView) -> list[str]:
    blocked = [s for s in view.steps if s.status == "blocked"]
    if not blocked:
        return []
    out = ["", f"## Blocked ({len(blocked)})", ""]
    for s in blocked[:40]:
        out.append(f"- {code(s.id)}{step_title(s)} — {blocked_why(view, s)}")
    if len(blocked) > 40:
        out.append(f"- … and {len(blocked) - 40} more")
    return out


def _goal_section(contract: GoalContract | None) -> list[str]:
    if contract is None:
        return []
    out = [
        "",
        "## Goal",
        "",
        f"**{cell(contract.objective, 500)}**  ",
        f"Goal contract {code(contract.goal_id)} v{contract.version} ({contract.status})",
    ]
    if contract.acceptance:
        items = contract.acceptance_items().items()
        out += ["", "Acceptance:", *[f"- {i}: {cell(a, 300)}" for i, a in items]]
    if contract.forbidden:
        out += ["", "Forbidden:", *[f"- {cell(f, 300)}" for f in contract.forbidden]]
    if contract.exit_conditions:
        items = contract.exit_items().items()
        out += ["", "Stop when:", *[f"- {i}: {cell(e, 300)}" for i, e in items]]
    return out


def _runs_section(runs: list[RunRecord], ui_url: str | None, now: datetime) -> list[str]:
    if not runs:
        return []
    shown = runs[-_RUNS_SHOWN:][::-1]
    rows = []
    for r in shown:
        f = r.finished or {}
        ran = list(f.get("executed_steps", []))
        ran_text = ", ".join(ran[:4]) + (f" +{len(ran) - 4}" if len(ran) > 4 else "")
        rows.append(
            [
                ago(r.started_at, now),
                r.result,
                r.executor,
                ran_text or "-",
                f.get("next_start") or "-",
                link("open", flow_run_url(ui_url, r.flow_run_id)) if r.flow_run_id else "-",
            ]
        )
    more = f" (latest {_RUNS_SHOWN} of {len(runs)})" if len(runs) > _RUNS_SHOWN else ""
    return [
        "",
        f"## Last runs{more}",
        "",
        *table(["started", "result", "by", "ran", "next start", "flow run"], rows),
    ]
