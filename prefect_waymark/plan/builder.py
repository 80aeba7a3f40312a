"""Build a plan in Python: the same structure and validation as a plan file.

Example::

    plan = Plan("weekly-report", contract={"goal_id": "g1", "objective": "Ship the report"})

    @plan.step(id="collect", outputs=["data.csv"])
    def collect(ctx):
        ...

    plan.add_step(id="publish", run="./publish.sh", depends_on=["collect"])
    spec = plan.build()  # a validated PlanSpec; raises PlanError like a bad file would
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..models import GoalContract
from .loader import validate_plan_data
from .spec import PlanSpec

__all__ = ["Plan"]

F = TypeVar("F", bound=Callable[..., Any])


class Plan:
    """A plan assembled in code; :meth:`build` validates it exactly like a plan file."""

    def __init__(
        self,
        plan_id: str,
        *,
        title: str = "",
        contract: GoalContract | dict[str, Any] | None = None,
        state_refs: list[dict[str, Any]] | None = None,
        base_dir: str | Path | None = None,
    ) -> None:
        self.plan_id = plan_id
        self.title = title
        self.contract = contract
        self.state_refs = list(state_refs or [])
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self._steps: list[dict[str, Any]] = []

    def add_step(self, **fields: Any) -> Plan:
        """Add a step given by the plan file's step fields (``id``, ``run`` or ``call``, ...)."""
        self._steps.append(dict(fields))
        return self

    def step(self, **fields: Any) -> Callable[[F], F]:
        """Decorator: the function becomes a ``call:`` step (``id`` defaults to its name)."""

        def register(fn: F) -> F:
            entry = {"id": fn.__name__.replace("_", "-"), **fields}
            entry["call"] = f"{fn.__module__}:{fn.__qualname__}"
            self._steps.append(entry)
            return fn

        return register

    def to_dict(self) -> dict[str, Any]:
        """The plan as a plan-file document."""
        doc: dict[str, Any] = {"plan_id": self.plan_id, "title": self.title, "steps": self._steps}
        if self.contract is not None:
            doc["contract"] = (
                self.contract.model_dump()
                if isinstance(self.contract, GoalContract)
                else self.contract
            )
        if self.state_refs:
            doc["state_refs"] = self.state_refs
        return doc

    def build(self) -> PlanSpec:
        """Validate and return the plan; raises :class:`~prefect_waymark.errors.PlanError`."""
        return validate_plan_data(
            self.to_dict(), source=f"<Plan {self.plan_id}>", base_dir=self.base_dir
        )
