"""One error tree for prefect-waymark: every error it raises on purpose is defined here.

WaymarkError
├── PlanError                 bad plan input (exit code 2); carries every problem found
├── RefConfigError            a state ref's fields do not fit its kind (also a ValueError)
├── StateRefsBlockError       a StateRefs block's refs do not fit their kinds (also a ValueError)
├── ResolverError             a state ref could not be read (unreachable, bad answer)
│   └── UnknownRefKind        no resolver is registered for the ref's kind
├── LedgerError               the ledger cannot be opened or written
│   ├── LedgerNotFound        there is no ledger there (no file, or no ledger tables)
│   ├── LedgerUrlError        a malformed ledger URL, or one that keeps no record (a ValueError)
│   │   └── PinUnavailable    the plan's pinned ledger URL cannot be had (variable unset, no block)
│   ├── LedgerMismatch        the workdir's marker was written with another ledger
│   ├── LedgerVersionError    the ledger was written by a newer prefect-waymark
│   ├── LedgerDamaged         a value in the ledger cannot be read (names the row and field)
│   ├── LedgerUnavailable     a write failed: locked past the wait, a full disk, the file gone
│   ├── BranchBusyError       another run holds the branch's single in_progress slot
│   ├── TransitionError       a status change the progress rules do not allow
│   ├── ReceiptConflictError  a receipt's row is not in the state its caller holds
│   └── PlanClosedError       the plan was closed (`waymark close`): no new work is recorded
├── StepError                 a step failed (its command exited non-zero, its callable raised)
│   ├── ShellStepError        a ``run:`` command exited non-zero; carries the output's tail
│   ├── ForbiddenActionError  a step tried an action the goal contract forbids
│   ├── SubplanFailed         a ``plan:`` step's sub-plan failed or stopped; carries its summary
│   └── PlanRunFailed         a run ended with failed steps; carries the run's summary
├── PlanRunStopped            a run stopped before the plan was done; carries the run's summary
├── NeedsReview               a step must stop for a person (the run records needs_review)
│   └── OutcomeUnknownError   an action's intent was written but no receipt: did it happen?
├── ReviewError               a review decision cannot be applied (no such step, nothing to review)
├── UnwritablePathError       a folder a run will write cannot be created or written (checked first)
├── NotARegularFile           a path waymark would replace is a device, FIFO, link (an OSError)
├── OutputRefused             a declared output is not the workdir's own file (exit 2; a ValueError)
├── ResultsUnavailable        completed steps' results or outputs cannot be reached here (exit 2)
├── MarkerFileError           a marker or view file is not waymark's, or is corrupt
├── ExportFileError           an audit export a restore reads is not one (names the line)
├── CheckinError              a check-in (`waymark start`, `done`, ...) the ledger refuses (exit 2)
├── CheckinStopped            re-anchoring at a check-in stopped or refused the step (exit 4)
├── CloseError                a skip or close the plan's state or the input does not allow (exit 2)
├── HookPlanInvalid           the plan a hook answers for has problems (one line, the first)
├── HookNotRecorded           no forbidden list recorded to check while the plan file is invalid
├── HarnessFileError          a harness file `init --agent` would merge into is not one (exit 2)
├── ShellTooDeep              a command a hook reads nests too deep to be read (also a ValueError)
├── ShellUnclosed             a command a hook reads has a quote or substitution never closed
├── TaskRunnerError           an unknown task runner, or dask without prefect-dask (exit 2)
└── CommandRefused            a command refused: its line, exit code (in `waymark mcp`: tool error)

Importing this module is cheap (no Prefect, no pydantic): the records some errors carry are
named for type checkers only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "BranchBusyError",
    "CheckinError",
    "CheckinStopped",
    "CloseError",
    "CommandRefused",
    "HarnessFileError",
    "HookNotRecorded",
    "HookPlanInvalid",
    "ShellTooDeep",
    "ShellUnclosed",
    "ExportFileError",
    "ForbiddenActionError",
    "LedgerDamaged",
    "LedgerUnavailable",
    "LedgerError",
    "LedgerMismatch",
    "LedgerNotFound",
    "LedgerUrlError",
    "LedgerVersionError",
    "MarkerFileError",
    "NotARegularFile",
    "OutputRefused",
    "NeedsReview",
    "OutcomeUnknownError",
    "PinUnavailable",
    "PlanClosedError",
    "PlanError",
    "PlanProblem",
    "PlanRunFailed",
    "PlanRunStopped",
    "ReceiptConflictError",
    "RefConfigError",
    "ResolverError",
    "ReviewError",
    "ShellStepError",
    "StateRefsBlockError",
    "StepError",
    "SubplanFailed",
    "TaskRunnerError",
    "TransitionError",
    "UnknownRefKind",
    "UnwritablePathError",
    "ResultsUnavailable",
    "WaymarkError",
]


class WaymarkError(Exception):
    """Base class of every error prefect-waymark raises on purpose."""


@dataclass(frozen=True)
class PlanProblem:
    """One thing wrong with a plan: where it is and what was expected."""

    file: str
    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field = f" {self.path}:" if self.path else ""
        return f"{where}:{field} {self.message}"


class PlanError(WaymarkError):
    """The plan is invalid. ``problems`` lists every problem found, each naming file and field."""

    def __init__(self, problems: list[PlanProblem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"invalid plan ({len(problems)} {noun}):\n{lines}")


_Loc = tuple[int | str, ...]
"""Where a problem is inside a ref: its field path (``("headers", 0)``)."""


def _loc_text(loc: _Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<ref>"


class RefConfigError(WaymarkError, ValueError):
    """A ref's fields do not fit its kind; ``problems`` lists (field path, message).

    Also a ``ValueError``: bad input, and what callers caught before the error tree.
    """

    def __init__(self, problems: list[tuple[_Loc, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{_loc_text(loc)}: {msg}" for loc, msg in problems))


class StateRefsBlockError(WaymarkError, ValueError):
    """A saved StateRefs block's refs do not fit their kinds; names the block and field path.

    Also a ``ValueError``: bad input, and what callers caught before the error tree.
    """


class ResolverError(WaymarkError):
    """A state ref could not be read (unreachable, no version header, bad answer)."""


class UnknownRefKind(ResolverError):
    """No resolver is registered for this kind."""


class LedgerError(WaymarkError):
    """The ledger could not be opened, read or written."""


class LedgerNotFound(LedgerError):
    """There is no ledger at the location: the file does not exist, or it has no ledger tables.

    Read-only commands treat it as "no run recorded yet"; nothing is created.
    """


class LedgerUrlError(LedgerError, ValueError):
    """The ledger URL is malformed, or names a ledger that cannot keep a record (an in-memory
    SQLite database, a server URL without a database); nothing was opened or written.

    Also a ``ValueError``: bad input.
    """


class PinUnavailable(LedgerUrlError):
    """The plan pins its ledger (``ledger:`` in the plan file) but its URL cannot be had: the
    environment variable is not set, the Prefect Secret block is missing or unreadable."""


class LedgerMismatch(LedgerError):
    """The workdir's marker names another ledger (by identity) than the one this run opened:
    running here would start the plan afresh, actions included."""


class LedgerVersionError(LedgerError):
    """The ledger's schema is newer than this version of prefect-waymark understands."""


class LedgerDamaged(LedgerError):
    """A value stored in the ledger cannot be read (a schema version that is not a number, an
    event whose time, data or kind is not what waymark writes): the message names the ledger,
    the row and the field. Bad input from the command line (exit 2); nothing is written."""


class LedgerUnavailable(LedgerError):
    """A write to the ledger failed for a reason outside the plan: another process held the
    write lock past ``$WAYMARK_LEDGER_LOCK_SECONDS``, the disk is full, the file was deleted,
    replaced or made read-only, the server went away. A run ends at once (exit 1) with the
    reason, and records nothing more: its last record stands for the next run."""


class BranchBusyError(LedgerError):
    """Another step already holds the single in_progress slot of this (plan, branch)."""

    def __init__(self, plan_id: str, branch: str, holder_step: str, holder_run: str) -> None:
        self.plan_id = plan_id
        self.branch = branch
        self.holder_step = holder_step
        self.holder_run = holder_run
        super().__init__(
            f"plan {plan_id!r} branch {branch!r} already has step {holder_step!r} in_progress "
            f"(run {holder_run}); one step per branch may be in_progress at a time"
        )


class TransitionError(LedgerError):
    """A status change the progress rules forbid (e.g. completed -> in_progress without rerun)."""

    def __init__(
        self, plan_id: str, step_id: str, current: str, wanted: str, hint: str = ""
    ) -> None:
        self.plan_id = plan_id
        self.step_id = step_id
        self.current = current
        self.wanted = wanted
        msg = f"step {step_id!r} of plan {plan_id!r} is {current}; cannot move to {wanted}"
        super().__init__(msg + (f" ({hint})" if hint else ""))


class ReceiptConflictError(LedgerError):
    """The key's row is not in the state the caller holds (another run settled or took it)."""


class StepError(WaymarkError):
    """A step's body failed: a non-zero exit code or an exception from its callable."""


class ShellStepError(StepError):
    """A ``run:`` command exited non-zero; carries the output's tail."""

    def __init__(self, message: str, output_tail: str) -> None:
        super().__init__(message)
        self.output_tail = output_tail

    def __reduce__(self) -> tuple[Any, ...]:  # raised in a worker process, read in the flow's
        return (type(self), (str(self), self.output_tail))


class ForbiddenActionError(StepError):
    """A step tried an irreversible action that the goal contract's ``forbidden`` list names."""

    def __init__(self, step_id: str, action: str, rule: str) -> None:
        self.step_id = step_id
        self.action = action
        self.rule = rule
        super().__init__(
            f"step {step_id!r}: action {action!r} is forbidden by the goal contract ({rule!r}); "
            "nothing was done"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.step_id, self.action, self.rule))


class _RunOutcome(Protocol):
    """What a run's summary (:class:`~prefect_waymark.run.summary.RunSummary`) tells these
    errors; named structurally so that errors.py imports nothing of the package."""

    plan_id: str

    @property
    def result(self) -> str: ...  # completed, stopped, needs_review or failed

    @property
    def failed_list(self) -> str: ...  # the failed steps on one line, capped


class PlanRunFailed(StepError):
    """A step failed in this run; the flow run ends Failed and carries the run's summary
    (a :class:`~prefect_waymark.run.summary.RunSummary`)."""

    def __init__(self, summary: _RunOutcome) -> None:
        self.summary = summary
        super().__init__(f"plan {summary.plan_id}: step(s) failed: {summary.failed_list}")


class PlanRunStopped(WaymarkError):
    """A run stopped before the plan was done — a budget, ``--until`` or a busy branch
    (``stopped``), a stop for review (``needs_review``) or an aborted plan — and its flow run
    ends Cancelled or Failed (run/prefect_ui.py). It carries the run's summary (a
    :class:`~prefect_waymark.run.summary.RunSummary`): ``state.result()`` of such a run raises
    it; ``run_plan(...)`` called as a function returns the summary dict instead."""

    def __init__(self, summary: _RunOutcome) -> None:
        self.summary = summary
        super().__init__(f"plan {summary.plan_id}: {summary.result}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.summary,))


class NeedsReview(WaymarkError):
    """Raised inside a step: stop it at needs_review with ``reason`` (the run records it)."""

    def __init__(self, reason: str, details: dict[str, Any] | None = None) -> None:
        self.reason = reason
        self.details = dict(details or {})
        super().__init__(reason)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.details))


class OutcomeUnknownError(NeedsReview):
    """An action's intent was recorded but no receipt: it may or may not have happened.

    Without a probe to ask the business system, the action is never run again blindly; a person
    records what happened (``waymark receipt``) and the plan continues.
    """

    def __init__(self, reason: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(reason, details)


class ReviewError(WaymarkError):
    """The review decision cannot be applied (no such step, nothing to review)."""


class ResultsUnavailable(WaymarkError):
    """The plan's result storage cannot be had (its pinned variable is not set), or completed
    steps' results or declared outputs cannot be reached from this folder nor restored from the
    storage; found before anything is recorded. ``steps`` names the steps concerned."""

    def __init__(self, message: str, steps: list[str] | None = None) -> None:
        self.steps = list(steps or [])
        super().__init__(message)


class UnwritablePathError(WaymarkError):
    """A folder a run will write (the ledger's, the results', the markers') cannot be created or
    written; found before the run records anything. Carries ``path`` and ``reason``."""

    def __init__(self, what: str, path: str, reason: str) -> None:
        self.what = what
        self.path = path
        self.reason = reason
        super().__init__(f"cannot write the {what} at {path}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.what, self.path, self.reason))


class NotARegularFile(WaymarkError, OSError):
    """A path waymark would replace is not a regular file it may write (a device, a FIFO, a
    socket, a folder, a symbolic link, a read-only file): refused, nothing written, the path left
    as it was. An ``OSError`` too, so every caller that reports a failed write reports this.
    Carries ``path`` and ``kind``."""

    def __init__(self, path: str, kind: str) -> None:
        self.path = path
        self.kind = kind
        OSError.__init__(
            self,
            f"{path} is {kind}, not a regular file waymark may replace: nothing was written "
            "to it; name another path or remove it first",
        )

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.kind))


class OutputRefused(WaymarkError, ValueError):
    """A declared output (a step's ``outputs:``, ``waymark done --output``) is not a file of the
    workdir that waymark may read, hash, store or restore: a symbolic link (or a path) that
    leaves the workdir while the plan does not allow outside paths, a FIFO, a socket or a device
    (refused before it is opened, so never a hang), a directory, a link loop, or a file that
    was swapped while it was read. Bad input (exit 2); nothing was recorded or stored.
    ``declared`` is the path as the plan names it, ``path`` where it leads, ``kind`` one of
    ``outside``, ``special``, ``directory``, ``loop``, ``changed``, ``missing``."""

    def __init__(self, declared: str, path: str, kind: str, message: str) -> None:
        self.declared = declared
        self.path = path
        self.kind = kind
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.declared, self.path, self.kind, str(self)))


class MarkerFileError(WaymarkError):
    """A marker or view file is not waymark's, or is corrupt; nothing was overwritten."""


class CheckinError(WaymarkError):
    """A check-in (``waymark start / tick / done / fail / block``) the ledger must not take: the
    user's mistake (exit 2); nothing was recorded."""


class CheckinStopped(WaymarkError):
    """Re-anchoring at a check-in stopped the step for review, or refused it (exit 4)."""


class HookPlanInvalid(WaymarkError):
    """The plan file a hook answers for has problems: the message is one line, with the first
    problem (``waymark validate`` lists them all)."""

    def __init__(self, path: Path, exc: PlanError) -> None:
        self.path = path
        first = exc.problems[0] if exc.problems else None
        head = str(exc).strip().splitlines()[0].rstrip(":") if str(exc).strip() else ""
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        text = f"{head}: {first}{more}" if first is not None else (head or "invalid plan")
        super().__init__(f"plan {path}: {text}")


class HookNotRecorded(WaymarkError):
    """While the plan file is invalid, no forbidden list recorded while it was valid can be
    found to check a tool call against (not in this session, not in the ledger): ``reason``
    says which record is missing and why."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"plan {path}: no forbidden list was recorded to check against ({reason})")


class HarnessFileError(WaymarkError):
    """A file ``waymark init --agent`` would merge into (``.claude/settings.json``, ``.mcp.json``,
    ``.codex/config.toml``) is not what its harness reads: the message names the file and the
    field (exit 2); nothing was written."""


class ShellTooDeep(WaymarkError, ValueError):
    """A shell command a hook reads nests deeper than it reads: the rest of it is not read."""


class ShellUnclosed(WaymarkError):
    """A shell command a hook reads has a quote or a substitution that never closes (at
    character ``at``)."""

    def __init__(self, at: int) -> None:
        self.at = at
        super().__init__(f"unclosed at character {at}")


# Skipping a step and closing a plan (prefect_waymark/closing).
class CloseError(WaymarkError):
    """``waymark skip`` or ``waymark close`` cannot be taken: bad input (a blank reason, an
    unknown step or evidence id) or a step status that does not allow it (exit 2); nothing was
    recorded."""


class PlanClosedError(LedgerError):
    """The plan was closed (``waymark close``): runs, resumes, skips and check-ins refuse it
    (exit 2), and the ledger records no new work for it (a step start, skip, rerun request or
    action intent). Carries the ``plan_closed`` record (``at``, ``by``, ``reason``)."""

    def __init__(self, message: str, record: dict[str, Any] | None = None) -> None:
        self.record = dict(record or {})
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.record))


# Audit export, replay and restore (prefect_waymark/audit).
class ExportFileError(WaymarkError):
    """A file ``waymark restore`` reads is not an audit export it can restore: each problem
    names the file, the line and the field (exit 2); nothing was written."""


# Task runners: threads, processes, Dask (prefect_waymark/runners).
class TaskRunnerError(WaymarkError, ValueError):
    """``--task-runner`` / ``task_runner`` names no runner, or ``dask`` without prefect-dask
    installed, or a Dask address with another runner (exit 2); nothing was started."""


# Sub-plans as subflows (prefect_waymark/subplans).
class SubplanFailed(StepError):
    """A ``plan:`` step's sub-plan failed (its error names the sub-plan's failed step) or
    stopped before completing; carries the sub-plan's summary."""

    def __init__(self, message: str, summary: dict[str, Any] | None = None) -> None:
        self.summary = dict(summary or {})
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.summary))


class CommandRefused(WaymarkError):
    """A ``waymark`` command refused: its one-line ``message`` (what the CLI prints after
    ``waymark: ``), its exit ``code`` and, for a check-in, the ``document`` its ``--json`` prints
    (``{"ok": false, ...}``). The CLI says it and exits with ``code`` (the exit is raised
    ``from`` this error); ``waymark mcp`` returns it as a tool error."""

    def __init__(self, message: str, code: int, document: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.document = document
