"""Quieter logs for expected failures, and log lines that are text.

Prefect logs a failed task's exception with a Python traceback. For a ``run:`` step that exited
non-zero, a run that ends because a step failed or because the ledger cannot be written, that
traceback points into waymark's own code and says nothing the one-line error does not; the
step's output tail is logged separately; a full disk is its one line too. These filters drop
the traceback for those exception types only — a ``call:`` step's own exception keeps its
traceback. A run that stopped before the plan was done ends Cancelled or Failed with a
:class:`~prefect_waymark.errors.PlanRunStopped` as its data, which Prefect's engine raises once
more as a deployment's run ends and logs as "Engine execution exited with unexpected
exception": that record is dropped (Prefect's "Finished in state Stopped(...)" line says it). A
last filter masks secrets (``_masking``) in every record of those loggers — the
line and its traceback — before a handler sends it to the terminal, a file or Prefect's API.
"""

from __future__ import annotations

import errno
import logging

__all__ = ["install_log_filters"]

_INSTALLED: set[str] = set()


class _DropExpectedTracebacks(logging.Filter):
    def __init__(self, types: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.types = types

    def filter(self, record: logging.LogRecord) -> bool:
        from ..errors import PlanRunStopped

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, PlanRunStopped):  # a stop, not an error: said by "Finished in state"
            return False
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            # A full disk (Prefect's own result write, say): its one line, not a traceback
            record.msg, record.args = f"{record.getMessage()}: {exc}", None
        elif not isinstance(exc, self.types):
            return True
        record.exc_info = None
        record.exc_text = None
        return True


class _VisibleControls(logging.Filter):
    """A log line is text: control characters from a step's output or an executor's reason are
    shown as escapes (text/controls.py) in the terminal, the log file and Prefect's UI."""

    def filter(self, record: logging.LogRecord) -> bool:
        from ..text.controls import visible

        message = record.getMessage()
        shown = visible(message)
        if shown is not message:
            record.msg, record.args = shown, None
        return True


class _MaskSecrets(logging.Filter):
    """A log line (a step's output, a ``print`` in a ``call:`` step, an error quoting a URL)
    and its traceback with secrets masked: Prefect's API keeps them and its UI shows them."""

    def filter(self, record: logging.LogRecord) -> bool:
        from .._masking import mask

        message = record.getMessage()
        masked = mask(message)
        if masked is not message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask(record.exc_text)
        return True


def install_log_filters() -> None:
    """Install the filters on Prefect's task-run and flow-run loggers (once per process)."""
    from ..errors import LedgerUnavailable, ShellStepError, StepError

    for name, types in (
        ("prefect.task_runs", (ShellStepError,)),
        ("prefect.flow_runs", (StepError, LedgerUnavailable)),
    ):
        if name not in _INSTALLED:
            logging.getLogger(name).addFilter(_DropExpectedTracebacks(types))
            logging.getLogger(name).addFilter(_VisibleControls())
            logging.getLogger(name).addFilter(_MaskSecrets())
            _INSTALLED.add(name)
