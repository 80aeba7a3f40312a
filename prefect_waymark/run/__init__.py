"""What a run needs beside the flow: its runtime, resume, summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .resume import prepare_resume, take_over_dead
    from .runtime import StepRuntime
    from .summary import RunResult, RunSummary

__all__ = [
    "RunResult",
    "RunSummary",
    "StepRuntime",
    "prepare_resume",
    "take_over_dead",
]

_WHERE = {
    "prepare_resume": ".resume",
    "take_over_dead": ".resume",
    "StepRuntime": ".runtime",
    "RunResult": ".summary",
    "RunSummary": ".summary",
}


__getattr__ = _lazy_exports(__name__, _WHERE)
