"""``waymark validate`` and ``waymark schema``: the plan file checked, and its JSON Schema."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ._common import load_or_exit
from .options import PlanArg

if TYPE_CHECKING:
    from ..plan.spec import PlanSpec

__all__ = ["schema", "validate"]


def validate(plan: PlanArg) -> None:
    """Check a plan file; print every problem, and which forbidden entries the hooks and a
    run enforce (the others are only shown). Writes nothing."""
    spec = load_or_exit(plan)
    print(f"{plan}: valid plan {spec.plan_id!r} with {len(spec.steps)} steps")
    _print_forbidden(spec)


def _print_forbidden(spec: PlanSpec) -> None:
    """Which forbidden entries the hook and a run enforce, and which are only shown."""
    from ..hooks.forbidden import entry_kinds
    from ..models import GoalContract

    c = spec.contract
    if c is None:
        return
    if not isinstance(c, GoalContract):
        print(f"forbidden: in the goal contract block {c.block!r} (read when a run or "
              "`waymark next` re-anchors; `waymark validate` reads no Prefect)")  # fmt: skip
        return
    entries = entry_kinds(list(c.forbidden))
    if not entries:
        return
    enforced = sum(e.enforced for e in entries)
    print(f"forbidden ({c.goal_id} v{c.version}): {enforced} enforced, "
          f"{len(entries) - enforced} shown only")  # fmt: skip
    for e in entries:
        print(f"  {'enforced' if e.enforced else 'shown   '}  {e.rule}  — {e.how}")


def schema() -> None:
    """Print the plan file's JSON Schema."""
    from ..plan.spec import PlanSpec

    doc = PlanSpec.model_json_schema()
    for internal in ("source", "base_dir"):  # set by the loader; not plan file fields
        doc["properties"].pop(internal, None)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "prefect-waymark plan"
    print(json.dumps(doc, indent=2))
