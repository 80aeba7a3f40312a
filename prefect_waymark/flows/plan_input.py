"""What ``run_plan`` is given as its plan: a file path, a plan document or a ``PlanSpec``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import WaymarkError
from ..plan.loader import load_plan, validate_plan_data
from ..plan.spec import PlanSpec

__all__ = ["check_until", "load_plan_input"]


def load_plan_input(plan: str | dict[str, Any] | PlanSpec, workdir: str | None) -> PlanSpec:
    """The validated plan (a document's sub-plan files are found from ``workdir``)."""
    if isinstance(plan, PlanSpec):
        spec = plan
    elif isinstance(plan, dict):
        base = Path(workdir) if workdir else Path.cwd()
        spec = validate_plan_data(plan, source="<plan parameter>", base_dir=base)
    else:
        spec = load_plan(plan)
    return spec


def check_until(spec: PlanSpec, until: str | None) -> None:
    """``until`` must name a step of the plan."""
    if until is not None and until not in {s.id for s in spec.steps}:
        raise WaymarkError(f"until: plan {spec.plan_id!r} has no step {until!r}")
