"""prefect-waymark: resumable multi-week plans on Prefect 3.

Importing this package is cheap (Prefect imports it when it looks up block types, and every
``waymark`` command imports it first): only the errors load with it; the models, the plan loader
and the Prefect flow and tasks load on first use of a name that needs them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .errors import (
    BranchBusyError,
    CheckinError,
    CheckinStopped,
    CloseError,
    ExportFileError,
    ForbiddenActionError,
    HookPlanInvalid,
    LedgerError,
    LedgerMismatch,
    LedgerNotFound,
    LedgerUrlError,
    LedgerVersionError,
    MarkerFileError,
    NeedsReview,
    OutcomeUnknownError,
    PinUnavailable,
    PlanClosedError,
    PlanError,
    PlanProblem,
    PlanRunFailed,
    ReceiptConflictError,
    RefConfigError,
    ResolverError,
    ReviewError,
    ShellStepError,
    ShellTooDeep,
    ShellUnclosed,
    StateRefsBlockError,
    StepError,
    SubplanFailed,
    TaskRunnerError,
    TransitionError,
    UnknownRefKind,
    UnwritablePathError,
    WaymarkError,
)

if TYPE_CHECKING:
    from .flows.run_plan import run_plan
    from .ledger.events import EventKind, ProgressEvent
    from .models import ActionReceipt, ContractItem, GoalContract, StepStatus
    from .plan.builder import Plan
    from .plan.loader import load_plan, validate_plan_data
    from .plan.spec import PlanSpec, StepSpec
    from .tasks.step_context import StepContext

__version__ = "0.2.0"

__all__ = [
    "ActionReceipt",
    "BranchBusyError",
    "CheckinError",
    "CheckinStopped",
    "CloseError",
    "ContractItem",
    "EventKind",
    "ExportFileError",
    "ForbiddenActionError",
    "GoalContract",
    "HookPlanInvalid",
    "LedgerError",
    "LedgerMismatch",
    "LedgerNotFound",
    "LedgerUrlError",
    "LedgerVersionError",
    "MarkerFileError",
    "NeedsReview",
    "OutcomeUnknownError",
    "PinUnavailable",
    "Plan",
    "PlanClosedError",
    "PlanError",
    "PlanProblem",
    "PlanRunFailed",
    "PlanSpec",
    "ProgressEvent",
    "ReceiptConflictError",
    "RefConfigError",
    "ResolverError",
    "ReviewError",
    "ShellStepError",
    "ShellTooDeep",
    "ShellUnclosed",
    "StateRefsBlockError",
    "StepContext",
    "StepError",
    "StepSpec",
    "StepStatus",
    "SubplanFailed",
    "TaskRunnerError",
    "TransitionError",
    "UnknownRefKind",
    "UnwritablePathError",
    "WaymarkError",
    "load_plan",
    "run_plan",
    "validate_plan_data",
]


#: Where each public name that is not an error lives: loaded on first use, so ``import
#: prefect_waymark`` (and every ``waymark`` command, whose modules sit in this package) costs
#: the errors module only, not the plan and ledger models (~0.15 s of pydantic class builds).
_LAZY = {
    "ActionReceipt": ".models",
    "ContractItem": ".models",
    "GoalContract": ".models",
    "StepStatus": ".models",
    "EventKind": ".ledger.events",
    "ProgressEvent": ".ledger.events",
    "Plan": ".plan.builder",
    "load_plan": ".plan.loader",
    "validate_plan_data": ".plan.loader",
    "PlanSpec": ".plan.spec",
    "StepSpec": ".plan.spec",
    "run_plan": ".flows.run_plan",
    "StepContext": ".tasks.step_context",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'prefect_waymark' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # once: later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# Prefect imports this package through the ``prefect.collections`` entry point to find block
# types (its server then lists them in the UI's block catalog). With Prefect already loaded the
# blocks cost ~30 ms more, so register them then; ``waymark status``/``validate`` never load
# Prefect and pay nothing.
if "prefect.blocks.core" in sys.modules:
    from . import blocks as _blocks  # noqa: F401
