"""Names check-ins share with their readers (the hooks): an executor's ledger run, and the ids
of a step's acceptance items. No imports: hooks load it on every call."""

from __future__ import annotations

__all__ = ["agent_run_id", "item_ids"]


def agent_run_id(executor: str) -> str:
    """The ledger run of an executor's check-ins."""
    return f"agent:{executor}"


def item_ids(acceptance: list[str]) -> dict[str, str]:
    """Acceptance items by id: ``A1``, ``A2``, … in order."""
    return {f"A{i}": text for i, text in enumerate(acceptance, 1)}
