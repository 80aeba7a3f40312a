"""Where a plan's goal contract and state refs come from: inline in the plan, or Prefect blocks."""

from __future__ import annotations

from ..models import GoalContract
from ..plan.spec import BlockRef, PlanSpec
from ..resolvers.base import RefConfig
from ..resolvers.resolve import run_sync
from ..resolvers.validation import parse_ref_config

__all__ = ["load_contract", "load_ref_configs"]


def load_contract(plan: PlanSpec) -> tuple[GoalContract, str] | None:
    """The plan's contract as it is now, and where it came from (``inline`` or ``block:NAME``)."""
    if plan.contract is None:
        return None
    if isinstance(plan.contract, BlockRef):
        from ..blocks.goal_contract import GoalContractBlock

        block: GoalContractBlock = run_sync(GoalContractBlock.aload(plan.contract.block))
        return block.to_contract(), f"block:{plan.contract.block}"
    return plan.contract, "inline"


def load_ref_configs(plan: PlanSpec) -> list[RefConfig]:
    """The typed config of every state ref (a refs block is loaded from Prefect)."""
    if isinstance(plan.state_refs, BlockRef):
        from ..blocks.state_refs import StateRefsBlock

        name = plan.state_refs.block
        block: StateRefsBlock = run_sync(StateRefsBlock.aload(name))
        return block.ref_configs(label=f"state_refs (block {name!r})")
    return [parse_ref_config(ref.model_dump(), from_plan_file=True) for ref in plan.state_refs]
