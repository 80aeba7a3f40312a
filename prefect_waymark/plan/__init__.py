"""The plan: its file format (spec), loading and validation (loader), the Python builder.

Importing this package loads no pydantic: its names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .builder import Plan
    from .loader import load_plan, validate_plan_data
    from .spec import BlockRef, PlanSpec, StateRefSpec, StepSpec

__all__ = [
    "BlockRef",
    "Plan",
    "PlanSpec",
    "StateRefSpec",
    "StepSpec",
    "load_plan",
    "validate_plan_data",
]

__getattr__ = _lazy_exports(
    __name__,
    {
        "BlockRef": ".spec",
        "Plan": ".builder",
        "PlanSpec": ".spec",
        "StateRefSpec": ".spec",
        "StepSpec": ".spec",
        "load_plan": ".loader",
        "validate_plan_data": ".loader",
    },
)
