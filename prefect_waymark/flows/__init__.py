"""Prefect flows of prefect-waymark."""

from __future__ import annotations

from ..subplans.run_step import register_subflow
from .run_plan import PlanRunFailed, run_plan

register_subflow(run_plan)  # the flow a `plan:` step runs as its subflow (subplans/run_step.py)

__all__ = ["PlanRunFailed", "run_plan"]
