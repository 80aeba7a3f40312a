"""``waymark status --json``'s document (``waymark replay --json`` prints the same).

Standard library only, as is the view it is made from (:mod:`..ledger.progress_view`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..ledger.progress_view import PlanView, StepView

__all__ = ["print_json", "status_document", "status_json"]


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
    steps = doc["steps"]
    mark = f"steps-{os.urandom(16).hex()}"  # a placeholder no value can hold
    text = json.dumps({**doc, "steps": mark}, indent=2, default=str)
    encode = json.JSONEncoder(default=str).encode  # one encoder: json.dumps builds one a call
    rows = ",\n".join([f"    {encode(row)}" for row in steps])
    return text.replace(f'"{mark}"', f"[\n{rows}\n  ]" if steps else "[]", 1)
