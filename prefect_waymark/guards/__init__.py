"""Guards decide whether a step may go ahead: each returns a verdict at the run's hook points."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .base import HOOK_POINTS, GuardBase, GuardContext, Guards, HookPoint, StepGuard, Verdict
    from .completed import CompletedStepsGuard
    from .conflicts import AcceptedState, Conflict
    from .observers import RunObserver
    from .outputs import OutputsGuard
    from .reanchor import ReanchorGuard
    from .receipts import ReceiptConsistencyGuard

__all__ = [
    "HOOK_POINTS",
    "AcceptedState",
    "CompletedStepsGuard",
    "Conflict",
    "GuardBase",
    "GuardContext",
    "Guards",
    "HookPoint",
    "OutputsGuard",
    "ReanchorGuard",
    "ReceiptConsistencyGuard",
    "RunObserver",
    "StepGuard",
    "Verdict",
]

_WHERE = {
    "RunObserver": ".observers",
    "GuardBase": ".base",
    "GuardContext": ".base",
    "Guards": ".base",
    "HOOK_POINTS": ".base",
    "HookPoint": ".base",
    "StepGuard": ".base",
    "Verdict": ".base",
    "CompletedStepsGuard": ".completed",
    "AcceptedState": ".conflicts",
    "Conflict": ".conflicts",
    "OutputsGuard": ".outputs",
    "ReanchorGuard": ".reanchor",
    "ReceiptConsistencyGuard": ".receipts",
}


__getattr__ = _lazy_exports(__name__, _WHERE)
