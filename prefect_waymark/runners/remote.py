"""What a step task receives when the task runner runs it in another process (a process pool,
a Dask worker): a small value it can send, from which the worker builds what the body needs.

What runs where:

- the scheduler process (the flow run) records ``step_started`` (the branch's single
  in_progress hold: the ledger refuses a second one whatever runs the task), renews this run's
  holds while its steps run anywhere (one ``renew`` per run id covers every hold), and records
  ``step_completed`` / ``step_failed`` / needs_review from the task's final state, reading the
  step's value back from the result storage;
- the worker process runs the body and writes what the body itself writes: failed attempts
  (``step_attempt_failed``, before Prefect retries), action intents and receipts, and ticks.

A tick in a worker does not have the run's guards: it checks that this run still holds the
step (a take-over after the scheduler died stops the body at its next tick), then re-anchors
the goal contract and the step's state refs with a re-anchoring guard of its own (built once
per process and run), as a tick in the scheduler process would. It renews nothing: the
scheduler does, so a dead scheduler's holds run out and another run can take them over.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StepError
from ..guards.base import GuardContext
from ..run.runtime import raise_for_verdict

if TYPE_CHECKING:
    from ..guards.reanchor import ReanchorGuard
    from ..ledger.base import Ledger
    from ..plan.spec import PlanSpec, StepSpec
    from ..run.runtime import StepRuntime

__all__ = ["RemoteRuntime", "worker_ledger"]

_LEDGERS: dict[str, Ledger] = {}  # ledger URL -> this process's open ledger
_GUARDS: dict[tuple[str, str], ReanchorGuard] = {}  # (plan id, run id) -> re-anchoring guard
_LOCK = threading.Lock()


def worker_ledger(url: str) -> Ledger:
    """The ledger at ``url``, opened once per process (SQLite or PostgreSQL)."""
    with _LOCK:
        found = _LEDGERS.get(url)
        if found is None:
            from ..ledger import open_ledger

            found = _LEDGERS[url] = open_ledger(url, create=False)
        return found


class RemoteRuntime:
    """One run's step runtime as a step task in another process receives it.

    A plain class (Prefect does not walk into it); everything in it can be sent: the validated
    plan (a pydantic model), the workdir, the resolved ledger URL (it may carry a password:
    it is never in ``repr``), the run id, the executor, the contract's forbidden list as the
    scheduler last re-read it, and the lease.
    """

    def __init__(
        self,
        plan: PlanSpec,
        workdir: Path,
        ledger_url: str,
        run_id: str,
        *,
        executor: str | None,
        forbidden: list[str],
        lease_seconds: float,
        run_subplan: Callable[..., Any] | None = None,
    ) -> None:
        self.plan = plan
        self.workdir = workdir
        self.ledger_url = ledger_url
        self.run_id = run_id
        self.executor = executor
        self.forbidden = list(forbidden)
        self.lease_seconds = lease_seconds
        self.run_subplan = run_subplan  # module-level: other processes get it by reference
        self._ticks: dict[str, int] = {}  # step -> ticks so far (this task run's)

    @classmethod
    def of(cls, runtime: StepRuntime, lease_seconds: float) -> RemoteRuntime:
        """The remote view of the scheduler's ``runtime`` now (the forbidden list as last
        re-read: a step sees the list of when it started, as in the scheduler process)."""
        return cls(
            runtime.plan,
            runtime.workdir,
            runtime.ledger.url,
            runtime.run_id,
            executor=runtime.executor,
            forbidden=runtime.forbidden,
            lease_seconds=lease_seconds,
            run_subplan=runtime.run_subplan,
        )

    @property
    def ledger(self) -> Ledger:
        return worker_ledger(self.ledger_url)

    @property
    def context(self) -> GuardContext:
        return GuardContext(
            plan=self.plan, ledger=self.ledger, workdir=self.workdir, run_id=self.run_id
        )

    def _guard(self) -> ReanchorGuard:
        key = (self.plan.plan_id, self.run_id)
        with _LOCK:
            found = _GUARDS.get(key)
        if found is not None:
            return found
        from ..guards.conflicts import load_accepted
        from ..guards.reanchor import ReanchorGuard

        guard = ReanchorGuard(self.plan, self.ledger, self.workdir, self.run_id)
        if guard.active:
            with guard.anchor.lock:
                guard.anchor.accepted = load_accepted(self.ledger, self.plan.plan_id)
                guard.anchor.load_refs()
        with _LOCK:
            if len(_GUARDS) > 64:
                _GUARDS.clear()
            return _GUARDS.setdefault(key, guard)

    def holds(self, step: StepSpec) -> bool:
        """This run still holds ``step`` (in_progress by this run) in the ledger."""
        st = self.ledger.step_states(self.plan.plan_id).get(step.id)
        return st is not None and st.status == "in_progress" and st.run_id == self.run_id

    def lost(self, step: StepSpec) -> bool:
        """True if the ledger shows another run (or none) holds ``step`` now; False when it
        cannot be read (a failed attempt is then recorded as usual)."""
        try:
            return not self.holds(step)
        except Exception:  # noqa: BLE001 - never hide the body's own error
            return False

    def tick(self, step: StepSpec, every: int) -> None:
        """``ctx.tick()`` in a worker, every ``every`` ticks: stop if this run lost the step,
        then re-anchor (a stop raises :class:`NeedsReview`, a refusal :class:`StepError`)."""
        n = self._ticks[step.id] = self._ticks.get(step.id, 0) + 1
        if n % max(1, every):
            return
        if not self.holds(step):
            raise StepError(
                f"step {step.id!r}: run {self.run_id} no longer holds it (its scheduler "
                "stopped and another run took the step over)"
            )
        guard = self._guard()
        # What the scheduler accepted since (a written ref, an answer): this process's guard
        # does not see the scheduler's, so it re-reads the ledger's accepted versions first.
        guard.reload_accepted()
        raise_for_verdict(step, guard.on_tick(self.context, step, 1))  # counted here

    def after_failed_attempt(self, step: StepSpec, error: str) -> None:
        """Before Prefect retries: re-anchor the contract and the step's refs (logged)."""
        self._guard().after_failed_attempt(self.context, step, error)

    def __repr__(self) -> str:
        return f"RemoteRuntime(plan={self.plan.plan_id!r}, run={self.run_id!r})"
