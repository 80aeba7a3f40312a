"""Prefect flows of prefect-waymark."""

from __future__ import annotations

from .run_plan import PlanRunFailed, PlanRunStopped, run_plan

__all__ = ["PlanRunFailed", "PlanRunStopped", "run_plan"]
