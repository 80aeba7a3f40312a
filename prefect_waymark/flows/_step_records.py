"""How the scheduler keeps and records each step's progress in the ledger.

:class:`StepRecords` holds what the scheduler knows of every step (status, rerun generation,
result key, values of this run), records how a step of this run ended, releases this run's
running steps when the loop stops on an error, and hands every stop to the review gate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prefect.client.schemas.objects import State

from ..errors import LedgerError, LedgerUnavailable, NeedsReview, OutputRefused
from ..guards.base import Guards, Verdict
from ..guards.observers import RunObserver
from ..guards.output_hashes import ABSENT, hash_outputs
from ..ledger.event_writers import (
    record_step_completed,
    record_step_failed,
    record_step_interrupted,
)
from ..ledger.events import EventKind
from ..results.storage import ResultAccess
from ..review.gate import GateOutcome, ReviewGate

if TYPE_CHECKING:
    from ..run.runtime import StepRuntime

__all__ = ["LoopOutcome", "StepRecords"]


@dataclass
class LoopOutcome:
    executed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    needs_review: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    #: the steps this run claimed, in order (the first is where the run really started)
    started: list[str] = field(default_factory=list)
    #: "max-steps", "until", or "busy" (the only ready steps are on branches another live run
    #: holds; that run goes on with them).
    stopped_by: str | None = None
    busy: dict[str, str] = field(default_factory=dict)
    #: "waiting": agent or manual steps (``kind: agent | manual``) the run cannot do itself,
    #: with who they wait for (the step's owner, else its kind).
    waiting: dict[str, str] = field(default_factory=dict)
    #: stopped_by "closed": the plan was closed (``waymark close``) while the run went on
    closed: str | None = None


class StepRecords:
    """Each step's progress as this run knows it, and the records of how steps ended."""

    def __init__(
        self,
        runtime: StepRuntime,
        results: ResultAccess,
        logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
        guards: Guards,
        gate: ReviewGate,
        observers: list[RunObserver],
    ) -> None:
        self.rt = runtime
        self.plan = runtime.plan
        self.ledger = runtime.ledger
        self.results = results
        self.log = logger
        self.guards = guards
        self.gate = gate
        self.observers = observers
        self.hashes = self.plan.step_hashes()
        self.order = self.plan.topological_order()
        self.specs = {s.id: s for s in self.plan.steps}
        self.values: dict[str, Any] = {}
        self.status: dict[str, str] = {}
        self.generation: dict[str, int] = {}
        self.result_keys: dict[str, str | None] = {}
        #: Steps left out with `waymark skip`: done, with ``None`` as their upstream value.
        self.skipped: set[str] = set()
        self.refused: set[str] = set()
        #: Agent or manual steps the ledger shows refused (a forbidden action): not waited for.
        self.refused_checkins: set[str] = set()
        #: Completed steps whose inputs changed after they completed (the ledger's
        #: ``step_stale``): run again once their needs are done and not stale themselves.
        self.stale: set[str] = set()
        self._reread = True

    def refresh(self, only: str | None = None) -> None:
        """Take the statuses from the ledger (all steps, or ``only``)."""
        self._reread = True
        states = self.ledger.step_states(self.plan.plan_id)
        for sid in [only] if only else self.order:
            st = states.get(sid)
            self.status[sid] = st.status if st else "pending"
            if st is not None and st.last_event == "step_refused":
                self.refused_checkins.add(sid)  # not offered again until re-run
            else:
                self.refused_checkins.discard(sid)
            if st is not None and st.status == "blocked" and st.blocked_on:
                done = states.get(st.blocked_on)  # what `waymark block --on` waited for is done
                if done is not None and done.status == "completed":
                    self.status[sid] = "pending"
            self.generation[sid] = st.generation if st else 0
            self.result_keys[sid] = st.result_key if st else None
            if st is not None and st.status == "completed" and st.skipped is not None:
                self.skipped.add(sid)
            else:
                self.skipped.discard(sid)
            if st is not None and st.status == "completed" and st.stale:
                self.stale.add(sid)
            else:
                self.stale.discard(sid)

    def stop(self, sid: str, verdict: Verdict) -> GateOutcome:
        """Hand a stop to the review gate and take its outcome into the statuses."""
        outcome = self.gate.stop(sid, verdict)
        if outcome == "needs_review":
            self.status[sid] = "needs_review"
        elif outcome == "refused":
            self.status[sid] = "failed"
            self.refused.add(sid)
        else:  # answered (accept / rerun) or moved on by another run: the ledger says
            self.refresh(sid)
        return outcome

    def upstream(self, sid: str) -> dict[str, Any] | None:
        """Upstream values, from this run or from persisted results (``None`` for a skipped
        step); None if one is unreadable (that step is stopped for review, unless a person's
        answer let the run go on)."""
        values: dict[str, Any] = {}
        for dep in self.specs[sid].depends_on:
            if dep in self.values:
                values[dep] = self.values[dep]
                continue
            if dep in self.skipped:  # left out on purpose (`waymark skip`): no value
                values[dep] = None
                continue
            if self.specs[dep].checked_in:  # done outside the flow: what was checked in
                values[dep] = self.values[dep] = self.checked_in_value(dep)
                continue
            key = self.result_keys.get(dep)
            try:
                if key is None:
                    raise FileNotFoundError("no result key recorded")
                values[dep] = self.values[dep] = self.results.read(key)
            except Exception as exc:  # noqa: BLE001 - any storage error means: cannot trust it
                self.stop(
                    dep,
                    Verdict(
                        "review",
                        f"persisted result is missing or unreadable: {exc}",
                        {"result_key": key or "", "needed_by": sid},
                    ),
                )
                return None
        return values

    def checked_in_value(self, sid: str) -> dict[str, Any]:
        """An agent's or a person's step as downstream steps see it (``ctx.upstream``): who
        did it, its outputs (path -> sha256) and the evidence per acceptance item."""
        st = self.ledger.step_states(self.plan.plan_id).get(sid)
        return {
            "kind": self.specs[sid].kind,
            "executor": st.executor if st else None,
            "outputs": dict(st.outputs) if st else {},
            "evidence": dict(st.evidence) if st else {},
        }

    def release_running(self, held: list[str], why: str) -> None:
        """The loop stops on an error (or Ctrl-C): record this run's running steps interrupted,
        which frees their branches at once. Otherwise a next run in this same process (a test
        session, a worker) would find them held by a live pid until the lease runs out. A step
        whose task still finishes leaves its result under its key: the next run gets it Cached.
        """
        for sid in held:
            spec = self.specs[sid]
            try:
                record_step_interrupted(
                    self.ledger,
                    self.plan.plan_id,
                    step_id=sid,
                    branch=spec.branch,
                    run_id=self.rt.run_id,
                    dead_run=self.rt.run_id,
                    reason=f"interrupted: run {self.rt.run_id} stopped on {why} while the "
                    "step was in_progress"
                    + ("; its command's processes were ended with the run" if spec.run else ""),
                )
                self.status[sid] = "pending"
            except Exception as inner:  # noqa: BLE001 - never hide the original error
                self.log.error("could not release step %s: %s", sid, inner)

    def finish(self, sid: str, state: State[Any], out: LoopOutcome, failed_here: set[str]) -> None:
        """Record how ``sid``'s task run ended: completed, stopped for review, or failed."""
        spec = self.specs[sid]
        with self.rt.returned_lock:
            returned = self.rt.returned.pop(sid, None)
        if state.is_completed():
            cached = state.name == "Cached"
            # The value the body returned in this task run is what Prefect just persisted: no
            # need to read it back from storage (~0.5 ms a step). A Cached step's body did not run.
            if cached or returned is None or returned[0] != state.state_details.task_run_id:
                value = state.result()
            else:
                value = returned[2]
            tail = value.get("stdout") if isinstance(value, dict) and spec.run else None
            try:
                hashed = hash_outputs(
                    self.rt.workdir, spec.outputs, allow_outside=self.plan.allow_outside_workdir
                )
            except OutputRefused as refused:  # a link out of the workdir, a FIFO, a folder
                self._failed(sid, f"{type(refused).__name__}: {refused}", None, out, failed_here)
                return
            if not self._record_end(
                sid,
                EventKind.step_completed,
                lambda: record_step_completed(
                    self.ledger,
                    self.plan.plan_id,
                    step_id=sid,
                    branch=spec.branch,
                    run_id=self.rt.run_id,
                    def_hash=self.hashes[sid],
                    result_key=self.result_keys[sid],
                    cached=cached,
                    output_tail=tail,
                    outputs=hashed,
                    workdir=str(self.rt.workdir),  # where its outputs are (run/reach.py)
                ),
            ):
                return
            self._keep_outputs(sid, hashed)
            self.values[sid] = value
            self.status[sid] = "completed"
            self.stale.discard(sid)
            self.guards.after_step(self.rt.context, spec, value)
            for observer in self.observers:
                observer.step_completed(self.rt.context, spec)
            (out.cached if cached else out.executed).append(sid)
            return
        exc = state.result(raise_on_failure=False)
        if isinstance(exc, NeedsReview):  # e.g. an action whose outcome is unknown
            self.stop(sid, Verdict("review", exc.reason, exc.details))
            return
        error = (
            f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(state.message)
        )
        self._failed(sid, error, getattr(exc, "output_tail", None), out, failed_here)

    def _failed(
        self, sid: str, error: str, tail: str | None, out: LoopOutcome, failed_here: set[str]
    ) -> None:
        """Record that ``sid`` failed in this run with ``error``."""
        spec = self.specs[sid]
        if not self._record_end(
            sid,
            EventKind.step_failed,
            lambda: record_step_failed(
                self.ledger,
                self.plan.plan_id,
                step_id=sid,
                branch=spec.branch,
                run_id=self.rt.run_id,
                error=error,
                output_tail=tail,
            ),
        ):
            return
        self.log.error("step %s failed: %s", sid, error)
        self.status[sid] = "failed"
        failed_here.add(sid)
        out.failed.append(sid)
        for observer in self.observers:
            observer.step_failed(self.rt.context, spec, error)

    def _keep_outputs(self, sid: str, hashed: dict[str, str]) -> None:
        """Put the step's declared outputs beside the results (given storage only), under the
        hashes just recorded; a failure is logged: the output is then restored from nowhere
        and a later run in another folder stops for review, never runs the step blindly."""
        store = self.results.outputs
        hashes = {p: h for p, h in hashed.items() if h != ABSENT}
        if store is None or not hashes:
            return
        try:
            kept = store.put(self.rt.workdir, hashes, allow_outside=self.plan.allow_outside_workdir)
        except Exception as exc:  # noqa: BLE001 - the step is complete; its copy is a convenience
            self.log.warning("step %s: outputs not kept in the result storage: %s", sid, exc)
            return
        for rel, why in kept.not_kept.items():
            self.log.warning("step %s: output %s not kept in the result storage: %s", sid, rel, why)

    def _record_end(self, sid: str, kind: EventKind, record: Callable[[], object]) -> bool:
        """Record how a step of this run ended (``record``, of ``kind``); False if this run no
        longer holds the step.

        That happens when this run's lease ran out (the process was stopped for longer than
        ``lease_seconds``) and another run took the step over: its record stands. A result this
        run persisted is found by that run under the same key (``Cached``), so it is not lost.
        """
        try:
            record()
            return True
        except LedgerUnavailable as exc:  # not this step's: the run cannot record anything
            raise LedgerUnavailable(
                f"{exc}; the run ends here, step {sid}'s end not recorded"
            ) from exc
        except LedgerError as exc:
            self.log.error("step %s: cannot record %s: %s", sid, kind, exc)
            self.refresh(sid)
            return False
