"""The ledger interface: append-only progress events plus the projections derived from them."""

from __future__ import annotations

import os
import socket
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import LedgerError
from .events import EventKind, ProgressEvent
from .receipts import ReceiptStore
from .step_state import StepState

__all__ = [
    "Hold",
    "Ledger",
    "LedgerReader",
    "event_kind",
    "pid_alive",
    "this_host",
]


def event_kind(kind: EventKind | str) -> EventKind:
    """``kind`` as an :class:`EventKind`; an unknown kind is a :class:`LedgerError`."""
    try:
        return EventKind(kind)
    except ValueError:
        known = ", ".join(k.value for k in EventKind)
        raise LedgerError(f"unknown event kind {kind!r}; the known kinds are: {known}") from None


def this_host() -> str:
    return socket.gethostname()


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists here and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@dataclass(frozen=True)
class Hold:
    """A branch's in_progress slot, held by one step of one run."""

    plan_id: str
    branch: str
    step_id: str
    run_id: str
    host: str
    pid: int
    since: str
    lease_until: float

    def is_stale(self, now: float | None = None) -> bool:
        """The holder is gone: its lease ran out, or it ran here and its process is dead."""
        if (now if now is not None else time.time()) > self.lease_until:
            return True
        return self.host == this_host() and not pid_alive(self.pid)


class LedgerReader(Protocol):
    """What read-only commands (``waymark status``) need: every :class:`Ledger` is one."""

    url: str
    #: The ledger's identity (a UUID written at creation); ``None`` for a ledger of schema 1
    #: that has not been migrated yet (a read-only reader does not migrate).
    ledger_id: str | None

    def events(
        self,
        plan_id: str,
        *,
        after_seq: int = 0,
        kinds: Iterable[EventKind | str] | None = None,
        first: int | None = None,
        last: int | None = None,
        run_ids: Iterable[str] | None = None,
    ) -> list[ProgressEvent]: ...

    def last_event(
        self, plan_id: str, kinds: Iterable[EventKind | str]
    ) -> ProgressEvent | None: ...

    def count_events(
        self, plan_id: str, *, kinds: Iterable[EventKind | str] | None = None
    ) -> int: ...

    def step_states(self, plan_id: str) -> dict[str, StepState]: ...

    def holds(self, plan_id: str) -> list[Hold]: ...

    def close(self) -> None: ...

    def __enter__(self) -> LedgerReader: ...

    def __exit__(self, *exc: object) -> None: ...


class Ledger(ReceiptStore):
    """Append-only progress events for plans; one implementation per storage back-end.

    Every write is one transaction that appends an event and updates the step's projection;
    events are never updated or deleted, and :meth:`rebuild` folds them again from scratch.
    The receipts of irreversible actions are :class:`ReceiptStore`'s part of the interface.
    """

    url: str
    ledger_id: str | None = None

    @abstractmethod
    def append(self, event: ProgressEvent, *, lease_seconds: float = 60.0) -> ProgressEvent:
        """Append one event; step events are checked against the step's status first.

        The kind is checked with :func:`event_kind` and stored as its plain name.

        ``step_started`` also takes the branch's in_progress slot (raises
        :class:`~prefect_waymark.errors.BranchBusyError` if another step holds it); completing,
        failing or interrupting a step releases it.
        """

    @abstractmethod
    def events(
        self,
        plan_id: str,
        *,
        after_seq: int = 0,
        kinds: Iterable[EventKind | str] | None = None,
        first: int | None = None,
        last: int | None = None,
        run_ids: Iterable[str] | None = None,
    ) -> list[ProgressEvent]:
        """Events of a plan in append order, after ``after_seq``, of one of ``kinds`` and of one
        of ``run_ids`` (each if given). ``first`` / ``last`` (one of them): only the oldest /
        newest that many of them (still in append order), read without reading the others —
        what a run reads of a long history (its markers, its recent runs, one run's events)
        stays the same size however long the history gets."""

    @abstractmethod
    def last_event(self, plan_id: str, kinds: Iterable[EventKind | str]) -> ProgressEvent | None:
        """The newest event of one of ``kinds``."""

    @abstractmethod
    def count_events(self, plan_id: str, *, kinds: Iterable[EventKind | str] | None = None) -> int:
        """How many events the plan has (of one of ``kinds``), counted without reading them."""

    @abstractmethod
    def step_states(self, plan_id: str) -> dict[str, StepState]:
        """The projection: the active view of each step that has events."""

    @abstractmethod
    def holds(self, plan_id: str) -> list[Hold]:
        """The branches' in_progress slots currently held."""

    @abstractmethod
    def renew(self, run_id: str, lease_seconds: float) -> int:
        """Extend the leases of every slot ``run_id`` holds; return how many."""

    @abstractmethod
    def rebuild(self, plan_id: str, *, write: bool = False) -> dict[str, StepState]:
        """Fold the plan's events again; with ``write`` replace the projection with the result."""

    @abstractmethod
    def rename_plan(self, old: str, new: str, *, by: str) -> dict[str, int]:
        """Carry plan ``old``'s history and receipts over to the id ``new`` (one transaction);
        return the counts of events, steps and receipts carried over."""

    @abstractmethod
    def rename_steps(
        self,
        plan_id: str,
        renames: Mapping[str, str],
        *,
        rebase: Mapping[str, str],
        by: str,
        source: str,
    ) -> dict[str, int]:
        """Carry renamed steps' state and receipts (old id to new) over to their new ids and
        record the definition hash under the new ids of the steps in ``rebase`` (one
        transaction); return the counts of steps, receipts and rebased steps."""

    @abstractmethod
    def close_plan(
        self, plan_id: str, decide: Callable[[dict[str, StepState]], dict[str, Any] | None]
    ) -> ProgressEvent | None:
        """Record ``plan_closed`` with the data ``decide`` gives for the plan's step states, read
        in the same transaction (``None``: nothing recorded); final: no new work after it."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""

    def record(
        self,
        plan_id: str,
        kind: EventKind | str,
        *,
        step_id: str | None = None,
        branch: str | None = None,
        run_id: str | None = None,
        lease_seconds: float = 60.0,
        **data: Any,
    ) -> ProgressEvent:
        """Shorthand for :meth:`append`; an unknown ``kind`` is a :class:`LedgerError`."""
        event = ProgressEvent(
            plan_id=plan_id,
            kind=event_kind(kind),
            step_id=step_id,
            branch=branch,
            run_id=run_id,
            data=data,
        )
        return self.append(event, lease_seconds=lease_seconds)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
