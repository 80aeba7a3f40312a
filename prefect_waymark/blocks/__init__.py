"""Prefect blocks of prefect-waymark: goal contracts and sets of state refs.

Register them with ``prefect block register -m prefect_waymark.blocks``; Prefect also finds them
through the ``prefect.collections`` entry point.
"""

from __future__ import annotations

from .goal_contract import GoalContractBlock, contract_hash
from .state_refs import StateRefItem, StateRefsBlock, StateRefsBlockError

__all__ = [
    "GoalContractBlock",
    "StateRefItem",
    "StateRefsBlock",
    "StateRefsBlockError",
    "contract_hash",
]
