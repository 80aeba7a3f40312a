"""The evidence each goal-contract item has: what ``waymark close`` checks and what the
acceptance-coverage metric counts.

A contract item (an acceptance item ``A1`` or an exit condition ``E1``) has evidence when

- ``waymark close --evidence "ID: text"`` gives it (``given``), or
- a step that ``serves`` it is completed — not skipped — in the ledger: the step's own
  evidence (a checked-in step's ``--evidence`` items) or, for a code step, its completion
  with the hashes of its outputs.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..ledger.step_state import StepState
from ..models import GoalContract, StepStatus
from ..plan.spec import PlanSpec

__all__ = ["contract_evidence", "step_evidence"]


def step_evidence(step_id: str, state: StepState) -> str | None:
    """What a step's completion shows, in one line; None when it is not completed or was
    skipped (a skipped step is no evidence)."""
    if state.status != StepStatus.completed or state.skipped is not None:
        return None
    if state.evidence:
        items = "; ".join(f"{k}: {v}" for k, v in sorted(state.evidence.items()))
        return f"step {step_id}: {items}"
    if state.outputs:
        outs = ", ".join(f"{path} {digest[:12]}" for path, digest in sorted(state.outputs.items()))
        return f"step {step_id} completed with {outs}"
    return f"step {step_id} completed"


def contract_evidence(
    spec: PlanSpec,
    contract: GoalContract,
    states: Mapping[str, StepState],
    given: Mapping[str, str] | None = None,
) -> dict[str, list[str]]:
    """Each contract item's evidence by id (acceptance items, then exit conditions); an item
    without evidence maps to an empty list."""
    ids = [*contract.acceptance_items(), *contract.exit_items()]
    out: dict[str, list[str]] = {item: [] for item in ids}
    for item, text in (given or {}).items():
        if item in out and text.strip():
            out[item].append(text.strip())
    for step in spec.steps:
        state = states.get(step.id)
        if state is None:
            continue
        shown = step_evidence(step.id, state)
        if shown is None:
            continue
        for item in step.serves:
            if item in out:
                out[item].append(shown)
    return out
