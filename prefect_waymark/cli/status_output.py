"""Rendering of ``waymark status`` as a rich table (its JSON document: :mod:`.status_document`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ledger.progress_view import PlanView, stale_words
from ..text.controls import visible
from ..text.lists import capped_list
from ..text.markdown import cell
from .status_table import LARGE_TABLE_ROWS, fast_table

if TYPE_CHECKING:
    from rich.console import Console

_STYLE = {
    "completed": "green",
    "in_progress": "cyan",
    "failed": "red",
    "needs_review": "magenta",
    "blocked": "yellow",
    "pending": "",
}


def escape(text: str) -> str:
    """User text for rich: its markup escaped, its control characters shown as escapes (rich
    writes to the terminal as it is; see :func:`~prefect_waymark.cli.rich_stdout`)."""
    from rich.markup import escape as escape_markup

    return escape_markup(visible(text))


def print_table(view: PlanView, extra: dict[str, Any], console: Console | None = None) -> None:
    from rich.console import Console  # not needed by --json: spare its import time
    from rich.table import Table

    from ._stdout import rich_stdout

    large = console is None and len(view.steps) >= LARGE_TABLE_ROWS
    console = console or Console(width=120, file=rich_stdout())
    title = f"{view.plan_id}" + (f" — {view.title}" if view.title else "")
    headers = ("step", "status", "owner", "branch", "last event")
    table = Table(title=escape(title), title_justify="left")
    for col in headers:
        table.add_column(col)
    plain: list[tuple[str, ...]] = []  # the rows as text, for a big plan's table
    closed = extra.get("closed")
    if closed:
        from ..closing.closed import closed_line

        forced = ""  # a close is forced only when something was unmet (closing/close.py)
        if closed.get("forced"):
            unmet = len(closed.get("unmet") or [])
            forced = f" — forced, with {unmet} thing(s) unmet" if unmet else " — forced"
        line = escape(closed_line(view.plan_id, closed))
        console.print(f"[bold]{line}[/]{forced}", highlight=False)
    subplans = extra.get("subplans", {})
    for s in view.steps:
        status = s.status + (" (definition changed)" if s.definition_changed else "")  # no markup
        style = _STYLE.get(s.status, "")
        text = status
        if s.skipped is not None:  # `waymark skip`: completed without running
            text = f"skipped: {cell(s.skipped, 60)}"
            status, style = escape(text), "dim green"
        elif s.stale and s.status == "completed":  # runs again on the next run (or stops)
            text = f"completed, stale: {stale_words(s.stale)}"
            status, style = escape(text), "yellow"
        if s.id in subplans:  # a `plan:` step: its sub-plan's progress
            from ..subplans.status import subplan_cell

            more = f" — {subplan_cell(subplans[s.id])}"
            status, text = status + escape(more), text + more
        owner, at = s.owner or "", (s.last_event_at or "")[:19].replace("T", " ")
        if large:
            plain.append((s.id, text, owner, s.branch, at))
        else:
            cells = (escape(s.id), f"[{style}]{status}[/]" if style else status, escape(owner))
            table.add_row(*cells, escape(s.branch), at)
    if not (large and fast_table(title, headers, plain, console.width, console.file)):
        for row in plain:  # too wide for the fast table (rich wraps the cells): rich draws it
            table.add_row(*(escape(v) for v in row))
        console.print(table)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(view.counts.items()))
    console.print(f"steps: {counts}")
    current = ", ".join(f"{b}: {sid}" for b, sid in sorted(view.current_step.items()))
    console.print(f"current step: {current or 'none'}")
    nxt = view.next_step or ("none — plan complete" if view.complete else "none")
    console.print(f"next step: {'none — the plan is closed' if closed else nxt}")
    if extra.get("aborted"):
        ab = extra["aborted"]
        why = f" ({ab['reason']})" if ab.get("reason") else ""
        who = f" by {ab.get('by') or 'someone'} at {ab.get('at', '')[:19]}{why}: "
        console.print(
            f"[red]aborted[/]{escape(who)}"
            "`waymark run` will not run it (`waymark review --accept` or `--rerun` lifts it)"
        )
    if view.blocked:
        console.print(visible("blocked: " + capped_list(view.blocked)), markup=False)
    for item in view.needs_review:
        said = f"{item['step']}: {item.get('reason')}"
        console.print(f"[magenta]needs review[/]: {escape(said)}")
    for s in view.steps:
        if s.status == "failed" and s.error:
            console.print(f"[red]failed[/]: {escape(f'{s.id}: {s.error}')}")
    for s in view.steps:
        for r in s.receipts:
            ext = f", external id {r['external_id']}" if r.get("external_id") else ""
            console.print(
                visible(f"receipt: {s.id}: {r.get('action')} {r.get('outcome')}{ext}"),
                markup=False,
            )
        label = "action in progress" if s.status == "in_progress" else "outcome unknown"
        for a in s.open_actions:
            what = (
                f"{s.id}: {a.get('action')} (key {a.get('key')}, intent at {str(a.get('at'))[:19]})"
            )
            console.print(f"[magenta]{label}[/]: {escape(what)}")
    if extra.get("deployment"):
        from .status_deployment import deployment_line

        console.print(visible(deployment_line(extra["deployment"])), markup=False)
    if extra.get("last_run"):
        lr = extra["last_run"]
        line = f"last run: {lr.get('result')} at {lr.get('at')} by {lr.get('executor')}"
        console.print(visible(line), markup=False)
