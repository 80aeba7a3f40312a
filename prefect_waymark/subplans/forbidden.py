"""The parent plan's forbidden actions hold inside its sub-plans.

The parent step hands its forbidden list (its contract's as last re-read, plus what its own
parent handed down) to the subflow in ``subplan_of``. Inside, every step whose ``action``
matches an ``action:<glob>`` entry of it is refused before it runs (a ``drift`` event, like the
sub-plan's own contract), and an action reached from a ``call:`` body is refused by the same
list (``ctx.forbidden`` holds both).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..guards.base import GuardBase, GuardContext, Verdict
from ..models import forbidden_rule

if TYPE_CHECKING:
    from ..plan.spec import StepSpec

__all__ = ["InheritedForbidden", "inherited_forbidden", "inherited_guards", "link_fields"]


def inherited_forbidden(subplan_of: dict[str, Any] | None) -> list[str]:
    """The forbidden entries a sub-plan's run inherits from its parents (none for a plan)."""
    return [str(r) for r in (subplan_of or {}).get("forbidden") or []]


def link_fields(subplan_of: dict[str, Any] | None) -> dict[str, Any]:
    """The ``parent`` field of a sub-plan run's ``run_started``: the plan, step and run that
    started it (nothing for a plan run by itself)."""
    if not subplan_of:
        return {}
    return {"parent": {k: subplan_of.get(k) for k in ("plan_id", "step_id", "run_id")}}


def inherited_guards(subplan_of: dict[str, Any] | None) -> list[GuardBase]:
    """The guard a sub-plan's run adds for its parents' forbidden list (none if it is empty)."""
    rules = inherited_forbidden(subplan_of)
    if not rules:
        return []
    assert subplan_of is not None
    parent = f"{subplan_of.get('plan_id')}/{subplan_of.get('step_id')}"
    goal = subplan_of.get("goal") or {}
    return [
        InheritedForbidden(
            rules,
            parent,
            goal_id=str(goal.get("goal_id") or subplan_of.get("plan_id")),
            version=int(goal.get("version") or 0),
        )
    ]


class InheritedForbidden(GuardBase):
    """Refuses a sub-plan step whose ``action`` a parent plan forbids."""

    def __init__(self, rules: list[str], parent: str, *, goal_id: str, version: int) -> None:
        self.rules = rules
        self.parent = parent
        self.goal_id = goal_id  # the parent's contract (else the parent plan's id)
        self.version = version

    def before_step(self, ctx: GuardContext, step: StepSpec) -> Verdict | None:
        if step.action is None:
            return None
        rule = forbidden_rule(step.action, self.rules)
        if rule is None:
            return None
        reason = (
            f"action {step.action!r} is forbidden by the parent plan ({self.parent}: {rule!r}); "
            "the step was refused before it ran"
        )
        details = {"drift": "forbidden_action", "action": step.action, "forbidden": rule}
        drift = {
            "drift": "forbidden_action",
            "action": step.action,
            "rule": rule,
            "goal_id": self.goal_id,
            "contract_version": self.version,
            "parent": self.parent,
        }
        return Verdict("refuse", reason, details, drift=drift)
