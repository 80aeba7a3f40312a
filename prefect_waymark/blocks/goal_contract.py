"""The ``GoalContractBlock``: a plan's goal contract, saved in Prefect and re-read at risk points.

Prefect keeps no history of a block document, so the contract carries an explicit ``version``;
the ledger records the version and a content hash every time it is read. Editing the content
without bumping the version, or marking the contract superseded/revoked, stops the plan for a
person.
"""

from __future__ import annotations

from prefect.blocks.core import Block
from pydantic import Field, HttpUrl

from ..models import ContractItem, ContractStatus, GoalContract, contract_hash
from ._meta import DOCS_URL, LOGO_URL

__all__ = ["GoalContractBlock", "contract_hash"]


class GoalContractBlock(Block):
    """What a plan is for: objective, acceptance criteria, forbidden actions, exit conditions.

    A plan names it with ``contract: {block: NAME}``; every run re-reads it at start, on resume,
    when switching milestone and before irreversible actions. Bump ``version`` on every edit;
    set ``status`` to ``superseded`` or ``revoked`` to stop plans that follow it.
    Entries of ``forbidden`` shaped ``action:<glob>`` refuse steps whose ``action`` matches.

    Example:
        Load a saved goal contract:
        ```python
        from prefect_waymark.blocks import GoalContractBlock

        contract = GoalContractBlock.load("BLOCK_NAME")
        print(contract.version, contract.forbidden)
        ```
    """

    _block_type_name = "Waymark Goal Contract"
    _block_type_slug = "waymark-goal-contract"
    _logo_url = HttpUrl(LOGO_URL)
    _documentation_url = HttpUrl(DOCS_URL)
    _description = (
        "A plan's goal contract (objective, acceptance, forbidden actions, exit conditions) "
        "with an explicit version and status, re-read by prefect-waymark before decisions."
    )

    goal_id: str = Field(description="Stable identifier of the goal.")
    version: int = Field(default=1, ge=1, description="Explicit version; bump it on every edit.")
    status: ContractStatus = Field(
        default="accepted", description="Authority of this version: accepted, superseded, revoked."
    )
    objective: str = Field(description="What the plan must achieve.")
    acceptance: list[str | ContractItem] = Field(
        default_factory=list,
        description="Acceptance criteria the result must meet: text (ids A1, A2, … by position) "
        "or {id, text}.",
    )
    forbidden: list[str] = Field(
        default_factory=list,
        description="Forbidden actions; 'action:<glob>' entries refuse matching steps.",
    )
    exit_conditions: list[str | ContractItem] = Field(
        default_factory=list,
        description="Conditions under which the plan stops: text (ids E1, E2, …) or {id, text}.",
    )

    def to_contract(self) -> GoalContract:
        """The contract as the plan's domain record."""
        return GoalContract(
            goal_id=self.goal_id,
            version=self.version,
            status=self.status,
            objective=self.objective,
            acceptance=list(self.acceptance),
            forbidden=list(self.forbidden),
            exit_conditions=list(self.exit_conditions),
        )

    @classmethod
    def from_contract(cls, contract: GoalContract) -> GoalContractBlock:
        return cls(**contract.model_dump())

    def content_hash(self) -> str:
        return contract_hash(self.to_contract())
