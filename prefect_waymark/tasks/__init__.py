"""Plan steps as Prefect tasks."""

from __future__ import annotations

from .actions import Action
from .cache_policy import StepCachePolicy, step_result_key
from .step_context import StepContext
from .step_task import StepRuntime, step_task, waymark_step

__all__ = [
    "Action",
    "StepCachePolicy",
    "StepContext",
    "StepRuntime",
    "step_result_key",
    "step_task",
    "waymark_step",
]
