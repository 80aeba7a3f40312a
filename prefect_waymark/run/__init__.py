"""What a run needs beside the flow: its options (checked once), runtime, resume, summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .options import RunOptions, check_run
    from .resume import prepare_resume, take_over_dead
    from .runtime import StepRuntime
    from .summary import RunResult, RunSummary

__all__ = [
    "RunOptions",
    "RunResult",
    "RunSummary",
    "StepRuntime",
    "check_run",
    "prepare_resume",
    "take_over_dead",
]

_WHERE = {
    "RunOptions": ".options",
    "check_run": ".options",
    "prepare_resume": ".resume",
    "take_over_dead": ".resume",
    "StepRuntime": ".runtime",
    "RunResult": ".summary",
    "RunSummary": ".summary",
}


__getattr__ = _lazy_exports(__name__, _WHERE)
