"""What a run needs beside the flow: its runtime, resume, results, summary, identity, server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import _lazy_exports

if TYPE_CHECKING:
    from .identity import default_executor
    from .local_server import ensure_local_server, find_local_server, stop_local_server
    from .observers import RunObserver
    from .results import ResultAccess, StorageSpec, default_result_storage
    from .resume import prepare_resume, take_over_dead
    from .runtime import StepRuntime
    from .summary import RunResult, RunSummary

__all__ = [
    "ResultAccess",
    "RunObserver",
    "RunResult",
    "RunSummary",
    "StepRuntime",
    "StorageSpec",
    "default_executor",
    "default_result_storage",
    "ensure_local_server",
    "find_local_server",
    "prepare_resume",
    "stop_local_server",
    "take_over_dead",
]

_WHERE = {
    "default_executor": ".identity",
    "ensure_local_server": ".local_server",
    "find_local_server": ".local_server",
    "stop_local_server": ".local_server",
    "RunObserver": ".observers",
    "ResultAccess": ".results",
    "StorageSpec": ".results",
    "default_result_storage": ".results",
    "prepare_resume": ".resume",
    "take_over_dead": ".resume",
    "StepRuntime": ".runtime",
    "RunResult": ".summary",
    "RunSummary": ".summary",
}


__getattr__ = _lazy_exports(__name__, _WHERE)
