"""Prefect flows of prefect-waymark."""

from __future__ import annotations

from .run_plan import PlanRunFailed, run_plan

__all__ = ["PlanRunFailed", "run_plan"]
