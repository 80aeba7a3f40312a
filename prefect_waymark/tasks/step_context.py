"""What a ``call:`` step receives: the plan, its step, the workdir and its upstream values."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..plan_spec import PlanSpec, StepSpec

__all__ = ["StepContext"]


@dataclass
class StepContext:
    """Passed to a ``call:`` step's function as its only argument."""

    plan: PlanSpec
    step: StepSpec
    workdir: Path
    upstream: dict[str, Any]
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger]
    run_id: str
    attempt: int = 1
    forbidden: list[str] = field(default_factory=list)

    @property
    def plan_id(self) -> str:
        return self.plan.plan_id

    @property
    def step_id(self) -> str:
        return self.step.id

    def path(self, relative: str) -> Path:
        """A path inside the workdir."""
        return self.workdir / relative
