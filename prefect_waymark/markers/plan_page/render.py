"""The plan page's Markdown: one artifact per plan copy that a person opens first.

:func:`render_plan_page` is pure: it reads the plan, the ledger's step states and a few ledger
events (runs, pauses, answers: :data:`PAGE_EVENT_KINDS`) and says, without raw JSON, where the
plan stands, draws it (a Mermaid graph: :mod:`.graph`), what failed and why (the tail of the
step's output), what blocks what, what waits for an answer and exactly how to give it, the
receipts, where the next run starts and the last runs with links. The plan in one line
(:func:`plan_line`) comes first: artifact descriptions, the run marker's page and the flow run's
final state say the plan so too. Then each section, in the order the page shows it. The
publisher and the run observer are in :mod:`.publish`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ...ledger import default_ledger_url
from ...ledger.events import EventKind, ProgressEvent
from ...ledger.progress_view import PlanView, StepView, build_view, stale_words
from ...ledger.step_state import StepState
from ...metrics.table import MUST_BE_ZERO, NOT_USED, metric_rows
from ...models import GoalContract
from ...plan.spec import PlanSpec
from ...review.reasons import answer_effects, reason_words, review_commands
from ...text.human_time import ago, as_datetime, deadline, when
from ...text.markdown import (
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
from ..plan_copy import PlanCopy, flow_run_url, normal_ledger_url
from .graph import Tallies, graph_section, tally

__all__ = [
    "PAGE_EVENT_KINDS",
    "PAGE_RUNS_READ",
    "ROWS_SHOWN",
    "PageInput",
    "RunRecord",
    "acceptance_section",
    "metrics_section",
    "open_pause",
    "page_line",
    "plan_line",
    "progress_section",
    "receipts_section",
    "render_plan_page",
    "review_section",
    "run_records",
    "step_title",
    "steps_section",
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
#: The newest runs whose events the page reads (twice what it shows: a pause or an answer of
#: a run a little older still counts).
PAGE_RUNS_READ = 2 * _RUNS_SHOWN
#: At most this many steps in one list of the page (needs your answer, failed, blocked).
PAGE_LIST_MAX = 40
#: At most this many rows in one table of the page (acceptance, steps by status, receipts).
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
    #: The check-in that publishes this version (``draft done by writer``), outside a run.
    checkin: str | None = None
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


def plan_line(
    view: PlanView,
    *,
    result: str | None = None,
    executed: int | None = None,
    paused_at: str | None = None,
    aborted: bool = False,
) -> str:
    """The plan in one line, as the page, artifact descriptions and cards show it:
    ``failed at check-figures · 3/6 done · next: check-figures``.

    ``result`` is the run's (``completed``, ``stopped``, ...) once it ended; ``executed`` the
    number of steps it ran; ``paused_at`` the step a paused run waits on."""
    total = len(view.steps)
    done = view.counts.get("completed", 0)
    parts: list[str] = []
    failed = [s.id for s in view.steps if s.status == "failed"]
    running = sorted(view.current_step.values())
    if view.complete:
        return f"complete · {done}/{total} done"
    if aborted:
        parts.append("aborted")
    elif paused_at is not None:
        parts.append(f"paused for review at {paused_at}")
    elif view.needs_review:
        parts.append(f"needs review at {view.needs_review[0]['step']}")
    elif failed:
        parts.append(f"failed at {failed[0]}" + (f" (+{len(failed) - 1})" if failed[1:] else ""))
    elif running and result is None:
        parts.append("running " + ", ".join(running[:3]) + (" …" if running[3:] else ""))
    elif result == "stopped" and executed is not None:
        parts.append(f"stopped after {executed} step{'s' if executed != 1 else ''}")
    elif result == "interrupted":
        parts.append("interrupted")
    parts.append(f"{done}/{total} done")
    nxt = view.next_start
    parts.append(f"next: {nxt}" if nxt else "next: none ready")
    return " · ".join(parts)


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
    out.append(f"**Updated:** {when(now, now)}" + ("  " if page.checkin else ""))
    if page.checkin:
        out.append(f"**This version:** published by the check-in “{cell(page.checkin, 200)}”")
    counted = tally(view)  # one pass over the steps for the picture and the Progress section
    out += graph_section(view, counted)
    out += review_section(page.plan, view, page.copy, now, page.ui_url, pause)
    out += _failed_section(page)
    out += _blocked_section(view)
    out += _goal_section(page.contract)
    out += acceptance_section(plan, view, page.states, now)
    out += progress_section(plan, view, counted)
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
    nxt = view.next_start
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
    elif view.step(nxt).stale and view.step(nxt).status == "completed":
        why = f"it is stale ({stale_words(view.step(nxt).stale)}); the next run runs it again"
    elif live is None and last is not None and last.finished:
        why = str(last.finished.get("next_start_reason") or "the next pending step")
    else:
        why = "the next pending step"
    return f"{code(nxt)} — {why}"


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


def review_section(
    plan: PlanSpec,
    view: PlanView,
    copy: PlanCopy,
    now: datetime,
    ui_url: str | None,
    pause: ProgressEvent | None,
) -> list[str]:
    """Each step waiting for review: why in words, what each answer does, and how to give it —
    the paused run's form (``pause``: this run's open ``review_waiting`` event) and the exact
    ``waymark review`` commands."""
    items = view.needs_review
    if not items:
        return []
    out = ["", f"## Needs your answer ({len(items)})"]
    workdir_flag, ledger_flag = _cli_flags(plan, copy)
    if len(items) > PAGE_LIST_MAX:  # a page stays readable (and cheap) on a huge plan
        out += ["", f"The first {PAGE_LIST_MAX} of {len(items)}; `waymark status` lists all."]
    for item in items[:PAGE_LIST_MAX]:
        sid = str(item["step"])
        details = {k: v for k, v in item.items() if k not in ("step", "reason")}
        spec = view.step(sid)
        paused_here = pause is not None and pause.step_id == sid
        out += ["", f"### {code(sid)}{step_title(spec)}", "", "**Why:**"]
        out += [f"- {w}" for w in reason_words(item.get("reason"), details, now)]
        out += ["", "**What each answer does:**"]
        effects = answer_effects(
            details, sid, this_run=paused_here, checked_in=plan.step(sid).checked_in
        )
        out += [f"- **{name}** — {effects[name]}" for name in ("accept", "rerun", "abort")]
        out += ["", "**How to answer:**"]
        suspended = paused_here and pause is not None and bool(pause.data.get("suspended"))
        if suspended and pause is not None:
            wait = timedelta(seconds=float(pause.data.get("timeout_seconds", 0)))
            if pause.at + wait < now:  # Prefect failed the suspended run: nobody can resume it
                paused_here = suspended = False
        if paused_here and pause is not None and suspended:
            until = pause.at + timedelta(seconds=float(pause.data.get("timeout_seconds", 0)))
            run_link = link("its flow run", flow_run_url(ui_url, pause.data.get("flow_run_id")))
            out.append(
                f"- In the Prefect UI: a deployment's run is suspended for this answer until "
                f"{deadline(until, now)} (its worker is free meanwhile): open {run_link}, "
                "**Resume** in its ⋮ menu; the form asks for the decision (accept / rerun / "
                "abort), a receipt (only for an action whose outcome is unknown), a reason and "
                "your name. Any worker of the pool then picks the run up and it goes on from here."
            )
        elif paused_here and pause is not None:
            until = pause.at + timedelta(seconds=float(pause.data.get("timeout_seconds", 0)))
            run_link = link("its flow run", flow_run_url(ui_url, pause.data.get("flow_run_id")))
            out.append(
                f"- In the Prefect UI: this run is paused and waits until {deadline(until, now)}:"
                f" open {run_link}, **Resume** in its ⋮ menu; the form asks for the decision"
                " (accept / rerun / abort), a receipt (only for an action whose outcome is "
                "unknown), a reason and your name. Without an answer by then the run stops for "
                "review."
            )
        else:
            out.append(
                "- In the Prefect UI: no run waits for this answer now. A run started with "
                "`review_wait_seconds` (or `$WAYMARK_REVIEW_WAIT_SECONDS`) pauses here and shows "
                "the form on its flow run page (**Resume**, in its ⋮ menu)."
            )
        cmds = review_commands(
            plan.source,
            sid,
            workdir=workdir_flag,
            ledger=ledger_flag,
            open_action=bool(spec.open_actions) or "intent_run" in details,
        )
        after = (
            "it resumes the suspended run with the answer; "
            if suspended
            else "this paused run does not see it; "
            if paused_here
            else ""
        )
        out.append(
            f"- With the CLI ({after}the next `waymark run` follows it; it runs nothing itself):"
        )
        out += ["", code_block("\n".join(f"# {name}\n{cmd}" for name, cmd in cmds), "sh")]
    return out


def _cli_flags(plan: PlanSpec, copy: PlanCopy) -> tuple[str | None, str | None]:
    """``--workdir`` and ``--ledger`` of the CLI commands, when they are not the defaults."""
    wd = copy.workdir
    base = plan.base_dir
    workdir_flag = wd if base is None or str(base.resolve()) != wd else None
    default = normal_ledger_url(default_ledger_url(Path(wd)))
    ledger_flag = None if copy.ledger == default else copy.ledger
    if ledger_flag and "***" in ledger_flag:  # masked: the reader must put the password in
        ledger_flag = "LEDGER_URL"
    return workdir_flag, ledger_flag


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
    for s in blocked[:PAGE_LIST_MAX]:
        out.append(f"- {code(s.id)}{step_title(s)} — {blocked_why(view, s)}")
    if len(blocked) > PAGE_LIST_MAX:
        out.append(f"- … and {len(blocked) - PAGE_LIST_MAX} more")
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


def progress_section(plan: PlanSpec, view: PlanView, counted: Tallies | None = None) -> list[str]:
    """Done and open steps per milestone and per branch (``counted``: the view's
    :func:`~.graph.tally`, which the page's picture counts from too)."""
    headers = ["done", "running", "failed", "review", "blocked", "pending"]
    out = ["", "## Progress", ""]
    # Summed from the one pass over the steps per branch and milestone (a 10,000-step plan has
    # a hundred milestones).
    milestones: dict[str, dict[str, int]] = {}
    branches: dict[str, dict[str, int]] = {}
    for pair in (counted or tally(view)).pairs:
        for name, into in (
            (pair.milestone or "(no milestone)", milestones),
            (pair.branch, branches),
        ):
            counts = into.get(str(name))
            if counts is None:
                counts = into[str(name)] = dict.fromkeys(_STATUS_ORDER, 0)
            for status, n in pair.counts.items():
                counts[status] += n
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
            elif s.stale and status == "completed":  # runs again on the next run (or stops)
                note = "stale: " + stale_words(s.stale)
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


def metrics_section(finished: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """The plan page's "Metrics" section: the metrics the last finished run recorded."""
    last = next((f for f in reversed(finished) if f and f.get("metrics")), None)
    if last is None:
        return []
    metrics = last["metrics"]
    rows = []
    for row in metric_rows(metrics):
        bad = row["key"] in MUST_BE_ZERO and row["value"] not in ("0", "-", NOT_USED)
        value = f"**{row['value']} (must be 0)**" if bad else row["value"]
        rows.append([row["metric"], value, row["made of"]])
    return [
        "",
        "## Metrics",
        "",
        f"As the last run ({code(str(last.get('run_id', '?')))}) ended; "
        "`waymark metrics PLAN` computes them now.",
        "",
        *table(["metric", "value", "made of"], rows),
    ]


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
