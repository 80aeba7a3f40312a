"""One fingerprint of a goal contract, and its value never changes.

Ledgers record it (``accepted_versions``, ``reanchor``: guards.conflicts.contract_record) and every
re-read compares against it, so a different value would stop every recorded plan at review. The
pinned values are what the code computed before the fingerprint functions were merged into one.
"""

from __future__ import annotations

from prefect_waymark.models import GoalContract, contract_hash

WEEKLY = GoalContract(
    goal_id="weekly-report",
    version=3,
    status="accepted",
    objective="Publish the weekly report",
    acceptance=["totals match the ledger"],
    forbidden=["action:send_*"],
    exit_conditions=["report published"],
)
WEEKLY_HASH = "sha256:0c0d13b3de941b72dcab9b9bd63550c1fc881b9213795cca3513c96a776d85e8"
MINIMAL = GoalContract(goal_id="g", objective="o")
MINIMAL_HASH = "sha256:06a7ca4ea268a9eeb1de0909da4ae025f28141e6095107556a0418c2d9dbdc67"


def test_the_fingerprint_of_a_fixed_contract_is_pinned() -> None:
    assert contract_hash(WEEKLY) == WEEKLY_HASH
    assert contract_hash(MINIMAL) == MINIMAL_HASH


def test_version_and_status_are_not_part_of_the_fingerprint() -> None:
    moved = WEEKLY.model_copy(update={"version": 4, "status": "superseded"})
    assert contract_hash(moved) == WEEKLY_HASH
    edited = WEEKLY.model_copy(update={"objective": "Publish the monthly report"})
    assert contract_hash(edited) != WEEKLY_HASH


def test_the_ledger_records_the_same_fingerprint() -> None:
    from prefect_waymark.guards.conflicts import contract_record

    assert contract_record(WEEKLY, "plan") == {
        "goal_id": "weekly-report",
        "version": 3,
        "status": "accepted",
        "hash": WEEKLY_HASH,
        "source": "plan",
        # The items by id: a contract block's items are known to the history (metrics, close).
        "items": {
            "acceptance": {"A1": "totals match the ledger"},
            "exit_conditions": {"E1": "report published"},
        },
        # The list the hooks enforce until a review accepts an edit (issue 33).
        "forbidden": list(WEEKLY.forbidden),
    }


def test_every_caller_uses_the_one_function() -> None:
    from prefect_waymark import blocks
    from prefect_waymark.blocks.goal_contract import GoalContractBlock
    from prefect_waymark.markers.marker_record import contract_fingerprint

    assert blocks.contract_hash is contract_hash
    assert GoalContractBlock.from_contract(WEEKLY).content_hash() == WEEKLY_HASH
    # A marker names the contract by the fingerprint its re-anchors recorded.
    assert contract_fingerprint(WEEKLY)["hash"] == WEEKLY_HASH
