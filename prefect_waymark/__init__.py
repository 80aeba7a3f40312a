"""prefect-waymark: resumable multi-week plans on Prefect 3.

Importing this package is cheap (Prefect imports it when it looks up block types): only the
errors load with it; the models, the plan loader, the ledger's events and the Prefect flow and
tasks load on first use of a name that needs them, and a subpackage on first use of its name.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import errors as _errors
from .errors import *  # noqa: F403 - every error, as errors.__all__ names them

if TYPE_CHECKING:
    from .flows.run_plan import run_plan
    from .ledger.events import EventKind, ProgressEvent
    from .models import ActionReceipt, ContractItem, GoalContract, StepStatus, TextLimit
    from .plan.builder import Plan
    from .plan.loader import load_plan, validate_plan_data
    from .plan.spec import PlanSpec, StepSpec
    from .tasks.step_context import StepContext

__version__ = "0.3.0"

__all__ = [
    "ActionReceipt",
    "ContractItem",
    "EventKind",
    "GoalContract",
    "Plan",
    "PlanSpec",
    "ProgressEvent",
    "StepContext",
    "StepSpec",
    "StepStatus",
    "TextLimit",
    "load_plan",
    "run_plan",
    "validate_plan_data",
]
__all__ += _errors.__all__  # the error tree, listed once (errors.py)
__all__.sort()


#: Where each public name that is not an error lives: loaded on first use, so a bare ``import
#: prefect_waymark`` costs the errors module only, not pydantic and the plan and ledger models
#: (~0.15 s of class builds; the ``waymark`` commands import what they use themselves).
_LAZY = {
    "ActionReceipt": ".models",
    "ContractItem": ".models",
    "GoalContract": ".models",
    "StepStatus": ".models",
    "TextLimit": ".models",
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
    from importlib import import_module
    from importlib.util import find_spec

    module = _LAZY.get(name)
    if module is not None:
        value = getattr(import_module(module, __name__), name)
        globals()[name] = value  # once: later lookups are plain module attributes
        return value
    if name.isidentifier() and not name.startswith("_") and find_spec(f"{__name__}.{name}"):
        return import_module(f".{name}", __name__)  # ``prefect_waymark.models`` and the like
    raise AttributeError(f"module 'prefect_waymark' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# Prefect imports this package through the ``prefect.collections`` entry point to find block
# types (its server then lists them in the UI's block catalog). With Prefect already loaded the
# blocks cost ~30 ms more, so register them then; ``waymark status``/``validate`` never load
# Prefect and pay nothing.
if "prefect.blocks.core" in sys.modules:
    from . import blocks as _blocks  # noqa: F401
