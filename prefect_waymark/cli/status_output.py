"""Rendering of ``waymark status``: a rich table, or one JSON document."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..ledger.progress_view import PlanView, StepView
from ..markers.markdown import cell
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


def _in_key_order(item: dict[str, Any]) -> dict[str, Any]:
    """A needs-review item with ``step`` and ``reason`` first, then its stop's data with keys
    sorted at every depth: the data's key order depends on where it was read (the projection
    keeps the writer's, the events table sorts), and `waymark replay` prints exactly this."""
    rest = {k: v for k, v in item.items() if k not in ("step", "reason")}
    head = {k: item[k] for k in ("step", "reason") if k in item}
    return {**head, **json.loads(json.dumps(rest, sort_keys=True, default=str))}


def _step_rows(steps: list[StepView]) -> list[dict[str, Any]]:
    """Every step as a dict of its fields, for the JSON document: a copy of each view's own
    field dict (views hold plain values: strings, lists, dicts), which the JSON encoder writes
    as pydantic's serializer would (its ``dump_python`` took ~15 ms for 10,000 steps)."""
    return [dict(view.__dict__) for view in steps]


def status_document(view: PlanView, extra: dict[str, Any]) -> dict[str, Any]:
    extra = dict(extra)
    subplans = extra.pop("subplans", {})  # `plan:` steps' rows (subplans/status.py)
    doc: dict[str, Any] = {
        "plan_id": view.plan_id,
        "title": view.title,
        "complete": view.complete,
        "current_step": view.current_step,
        "next_step": view.next_step,
        "active_milestone": view.active_milestone,
        "blocked": view.blocked,
        "needs_review": [_in_key_order(item) for item in view.needs_review],
        "counts": view.counts,
        "steps": _step_rows(view.steps),
    }
    for row in doc["steps"]:
        if row["id"] in subplans:
            row["subplan"] = subplans[row["id"]]
    doc.update(extra)
    if extra.get("closed"):  # `waymark close`: the final states stay; nothing is next
        doc["next_step"], doc["current_step"] = None, {}
    return doc


def print_json(view: PlanView, extra: dict[str, Any]) -> None:
    """The status document, indented, with one compact line per step: JSON's indented form is
    written by the stdlib's pure-Python encoder (~0.3 s for 10,000 steps), a compact line by
    its C encoder."""
    print(status_json(status_document(view, extra)))


def status_json(doc: dict[str, Any]) -> str:
    """``doc`` as ``status --json`` prints it (``waymark replay --json`` too, byte for byte)."""
    import uuid

    steps = doc["steps"]
    mark = f"steps-{uuid.uuid4().hex}"  # a placeholder no value can hold
    text = json.dumps({**doc, "steps": mark}, indent=2, default=str)
    encode = json.JSONEncoder(default=str).encode  # one encoder: json.dumps builds one a call
    rows = ",\n".join([f"    {encode(row)}" for row in steps])
    return text.replace(f'"{mark}"', f"[\n{rows}\n  ]" if steps else "[]", 1)


def print_table(view: PlanView, extra: dict[str, Any], console: Console | None = None) -> None:
    from rich.console import Console  # not needed by --json: spare its import time
    from rich.markup import escape
    from rich.table import Table

    large = console is None and len(view.steps) >= LARGE_TABLE_ROWS
    console = console or Console(width=120)
    title = f"{view.plan_id}" + (f" — {view.title}" if view.title else "")
    headers = ("step", "status", "owner", "branch", "last event")
    table = Table(title=title, title_justify="left")
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
        status = s.status + (" (definition changed)" if s.definition_changed else "")
        style = _STYLE.get(s.status, "")
        text = status
        if s.skipped is not None:  # `waymark skip`: completed without running
            text = f"skipped: {cell(s.skipped, 60)}"
            status, style = escape(text), "dim green"
        if s.id in subplans:  # a `plan:` step: its sub-plan's progress
            from ..subplans.status import subplan_cell

            more = f" — {subplan_cell(subplans[s.id])}"
            status, text = status + escape(more), text + more
        owner, at = s.owner or "", (s.last_event_at or "")[:19].replace("T", " ")
        if large:
            plain.append((s.id, text, owner, s.branch, at))
        else:
            table.add_row(s.id, f"[{style}]{status}[/]" if style else status, owner, s.branch, at)
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
        console.print(
            f"[red]aborted[/] by {ab.get('by') or 'someone'} at {ab.get('at', '')[:19]}{why}: "
            "`waymark run` will not run it (`waymark review --accept` or `--rerun` lifts it)"
        )
    if view.blocked:
        console.print("blocked: " + ", ".join(view.blocked))
    for item in view.needs_review:
        console.print(f"[magenta]needs review[/]: {item['step']}: {item.get('reason')}")
    for s in view.steps:
        if s.status == "failed" and s.error:
            console.print(f"[red]failed[/]: {s.id}: {s.error}")
    for s in view.steps:
        for r in s.receipts:
            ext = f", external id {r['external_id']}" if r.get("external_id") else ""
            console.print(f"receipt: {s.id}: {r.get('action')} {r.get('outcome')}{ext}")
        label = "action in progress" if s.status == "in_progress" else "outcome unknown"
        for a in s.open_actions:
            console.print(
                f"[magenta]{label}[/]: {s.id}: {a.get('action')} (key {a.get('key')}, "
                f"intent at {str(a.get('at'))[:19]})"
            )
    if extra.get("deployment"):
        from .status_deployment import deployment_line

        console.print(deployment_line(extra["deployment"]), markup=False)
    if extra.get("last_run"):
        lr = extra["last_run"]
        console.print(f"last run: {lr.get('result')} at {lr.get('at')} by {lr.get('executor')}")
