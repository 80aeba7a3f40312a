"""The plan: its file format (spec), loading and validation (loader), the Python builder."""

from __future__ import annotations

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
