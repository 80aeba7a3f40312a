"""prefect-waymark: resumable multi-week plans on Prefect 3.

Importing this package is cheap (Prefect imports it when it looks up block types): the Prefect
flow and tasks load only when :func:`run_plan` or the ``flows``/``tasks`` packages are used.
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
from .ledger.events import EventKind, ProgressEvent
from .models import (
    ActionReceipt,
    ContractItem,
    GoalContract,
    StepStatus,
)
from .plan.builder import Plan
from .plan.loader import load_plan, validate_plan_data
from .plan.spec import PlanSpec, StepSpec

if TYPE_CHECKING:
    from .flows.run_plan import run_plan
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


def __getattr__(name: str) -> Any:
    if name == "run_plan":
        from .flows.run_plan import run_plan

        return run_plan
    if name == "StepContext":
        from .tasks.step_context import StepContext

        return StepContext
    raise AttributeError(f"module 'prefect_waymark' has no attribute {name!r}")


# Prefect imports this package through the ``prefect.collections`` entry point to find block
# types (its server then lists them in the UI's block catalog). With Prefect already loaded the
# blocks cost ~30 ms more, so register them then; ``waymark status``/``validate`` never load
# Prefect and pay nothing.
if "prefect.blocks.core" in sys.modules:
    from . import blocks as _blocks  # noqa: F401
