"""A cache key that outlives flow runs: plan id + step id + definition hash + re-run generation.

Prefect's default policy includes the flow run id, so a new run re-executes everything; ``INPUTS``
alone collides across tasks and ``TASK_SOURCE`` collides for identical sources. The step's key
never includes the run, so a step whose task finished in a run that died before the ledger
recorded it comes back ``Cached`` instead of running twice.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from prefect.cache_policies import CachePolicy
from prefect.context import TaskRunContext

__all__ = ["StepCachePolicy", "step_result_key"]


def step_result_key(plan_id: str, step_id: str, def_hash: str, generation: int) -> str:
    """The persisted result's key (also its file name): safe characters only."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "-", f"{plan_id}.{step_id}")[:120]
    digest = hashlib.sha256(f"{plan_id}\0{step_id}".encode()).hexdigest()[:8]
    return f"waymark-{safe}-{digest}-{def_hash[:16]}-g{generation}"


@dataclass
class StepCachePolicy(CachePolicy):
    """The step's key: ``key`` if set, else the task run's ``result_key`` parameter (so one
    Prefect task object serves many steps). Never raises (Prefect would silently not persist)."""

    key: str = ""

    def compute_key(
        self,
        task_ctx: TaskRunContext,
        inputs: dict[str, Any],
        flow_parameters: dict[str, Any],
        **kwargs: Any,
    ) -> str | None:
        if self.key:
            return self.key
        given = inputs.get("result_key")
        return given if isinstance(given, str) and given else None
