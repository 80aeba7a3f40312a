"""The scheduler inside ``run_plan``: starts ready steps in dependency order, one in_progress per
branch (held by the ledger), branches concurrently, and records every outcome."""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field
from typing import Any, cast

from prefect import Task
from prefect.client.schemas.objects import State
from prefect.futures import PrefectFuture

from ..errors import BranchBusyError, LedgerError, NeedsReview, TransitionError, WaymarkError
from ..guards.base import StepGuard, Verdict
from ..guards.output_hashes import hash_outputs
from ..ledger.base import this_host
from ..plan.spec import PlanSpec
from ..run.results import ResultAccess, StorageSpec
from ..run.resume import take_over_dead
from ..tasks.cache_policy import step_result_key
from ..tasks.step_task import StepRuntime, step_task

__all__ = ["LoopOutcome", "PlanLoop", "hash_outputs"]


Launch = tuple[Task[..., Any], tuple[Any, ...]]  # a claimed step's task and its arguments


@dataclass
class LoopOutcome:
    executed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    needs_review: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    #: "max-steps", "until", or "busy" (the only ready steps are on branches another live run
    #: holds; that run goes on with them).
    stopped_by: str | None = None
    busy: dict[str, str] = field(default_factory=dict)


class PlanLoop:
    """Runs the plan's remaining steps within a Prefect flow run."""

    def __init__(
        self,
        runtime: StepRuntime,
        storage: StorageSpec,
        results: ResultAccess,
        logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
        *,
        max_steps: int | None = None,
        until: str | None = None,
        poll_seconds: float = 0.2,
        lease_seconds: float = 60.0,
        guards: list[StepGuard] | None = None,
    ) -> None:
        self.guards = list(guards or [])
        self.rt = runtime
        self.plan: PlanSpec = runtime.plan
        self.ledger = runtime.ledger
        self.storage = storage
        self.results = results
        self.log = logger
        self.max_steps = max_steps
        if until is not None and until not in {s.id for s in runtime.plan.steps}:
            raise WaymarkError(f"until: plan {runtime.plan.plan_id!r} has no step {until!r}")
        self.until = until
        self.poll = poll_seconds
        self.lease = lease_seconds
        self.hashes = self.plan.step_hashes()
        self.order = self.plan.topological_order()
        self.specs = {s.id: s for s in self.plan.steps}
        self.branches = {s.branch for s in self.plan.steps}
        self.targets = self._targets()
        self.values: dict[str, Any] = {}
        self.status: dict[str, str] = {}
        self.generation: dict[str, int] = {}
        self.result_keys: dict[str, str | None] = {}
        self.refused: set[str] = set()
        #: branch -> the run that held it when this run last tried to start a step there.
        self.busy_by: dict[str, str] = {}
        self._running: dict[PrefectFuture[Any], str] = {}  # this run's steps in progress
        self._inline: str | None = None  # the step running in the loop's own thread
        self._refresh()

    def _targets(self) -> set[str]:
        if self.until is None:
            return set(self.order)
        wanted, stack = set(), [self.until]
        while stack:
            sid = stack.pop()
            if sid not in wanted:
                wanted.add(sid)
                stack.extend(self.specs[sid].depends_on)
        return wanted

    def _refresh(self, only: str | None = None) -> None:
        self._reread = True
        states = self.ledger.step_states(self.plan.plan_id)
        for sid in [only] if only else self.order:
            st = states.get(sid)
            self.status[sid] = st.status if st else "pending"
            self.generation[sid] = st.generation if st else 0
            self.result_keys[sid] = st.result_key if st else None

    def _upstream(self, sid: str) -> dict[str, Any] | None:
        """Upstream values, from this run or from persisted results; None if one is unreadable."""
        values: dict[str, Any] = {}
        for dep in self.specs[sid].depends_on:
            if dep in self.values:
                values[dep] = self.values[dep]
                continue
            key = self.result_keys.get(dep)
            try:
                if key is None:
                    raise FileNotFoundError("no result key recorded")
                values[dep] = self.values[dep] = self.results.read(key)
            except Exception as exc:  # noqa: BLE001 - any storage error means: cannot trust it
                dspec = self.specs[dep]
                try:
                    self.ledger.record(
                        self.plan.plan_id,
                        "step_needs_review",
                        step_id=dep,
                        branch=dspec.branch,
                        run_id=self.rt.run_id,
                        reason=f"persisted result is missing or unreadable: {exc}",
                        details={"result_key": key or "", "needed_by": sid},
                    )
                    self.status[dep] = "needs_review"
                except TransitionError:  # another run moved it on (e.g. a rerun): re-read
                    self._refresh(dep)
                return None
        return values

    def run(self) -> LoopOutcome:
        """Start ready steps until nothing more may start; wait for the running ones."""
        out = LoopOutcome(skipped=[s for s in self.order if self.status[s] == "completed"])
        try:
            self._run(out)
        except BaseException as exc:
            self._release_running(exc)
            raise
        finally:
            for guard in self.guards:
                on_end = getattr(guard, "on_run_end", None)
                if on_end is not None:
                    on_end(self.rt)
        out.needs_review = [s for s in self.order if self.status[s] == "needs_review"]
        out.refused = [s for s in self.order if s in self.refused]
        if out.stopped_by is None and self.until is not None:
            if any(self.status[s] != "completed" for s in self.order):
                out.stopped_by = "until"
        return out

    def _ready(self, sid: str, failed_here: set[str]) -> bool:
        if sid not in self.targets or sid in failed_here or sid in self.refused:
            return False
        if self.status[sid] not in ("pending", "failed"):
            return False
        return all(self.status[d] == "completed" for d in self.specs[sid].depends_on)

    def _release_running(self, exc: BaseException) -> None:
        """The loop stops on an error (or Ctrl-C): record this run's running steps interrupted,
        which frees their branches at once. Otherwise a next run in this same process (a test
        session, a worker) would find them held by a live pid until the lease runs out. A step
        whose task still finishes leaves its result under its key: the next run gets it Cached.
        """
        held = list(self._running.values()) + ([self._inline] if self._inline else [])
        for sid in held:
            spec = self.specs[sid]
            try:
                self.ledger.record(
                    self.plan.plan_id,
                    "step_interrupted",
                    step_id=sid,
                    branch=spec.branch,
                    run_id=self.rt.run_id,
                    dead_run=self.rt.run_id,
                    reason=f"interrupted: run {self.rt.run_id} stopped on "
                    f"{type(exc).__name__}: {exc} while the step was in_progress",
                )
                self.status[sid] = "pending"
            except Exception as inner:  # noqa: BLE001 - never hide the original error
                self.log.error("could not release step %s: %s", sid, inner)
        self._running.clear()
        self._inline = None

    def _renew_leases(self, stop: threading.Event) -> None:
        """Keep this run's holds alive while it runs (also while a step runs inline)."""
        while not stop.wait(self.lease / 3):
            try:
                self.ledger.renew(self.rt.run_id, self.lease)
            except Exception as exc:  # noqa: BLE001 - try again at the next beat
                self.log.warning("could not renew this run's holds: %s", exc)

    def _run(self, out: LoopOutcome) -> None:
        stop = threading.Event()
        renewer = threading.Thread(
            target=self._renew_leases, args=(stop,), name="waymark-lease", daemon=True
        )
        renewer.start()
        try:
            self._schedule(out)
        finally:
            stop.set()

    def _schedule(self, out: LoopOutcome) -> None:
        running = self._running
        active: set[str] = set()  # branches with a step of this run in progress
        busy_until: dict[str, float] = {}  # branches another run held at our last try
        failed_here: set[str] = set()
        started = 0
        open_steps = list(self.order)  # not completed when last looked at, in order
        while True:
            review_stop = any(v == "needs_review" for v in self.status.values())
            waiting = False
            launches: list[tuple[str, Launch]] = []
            if not review_stop:
                now = time.monotonic()
                if self._reread:  # statuses came from the ledger: a step may have reopened
                    open_steps, self._reread = list(self.order), False
                open_steps = [sid for sid in open_steps if self.status[sid] != "completed"]
                for sid in open_steps:
                    if len(active) == len(self.branches):
                        break  # every branch has a step of this run in progress
                    if not self._ready(sid, failed_here):
                        continue
                    branch = self.specs[sid].branch
                    if branch in active:
                        continue
                    if busy_until.get(branch, 0) > now:
                        waiting = True
                        continue
                    if self.max_steps is not None and started >= self.max_steps:
                        out.stopped_by = "max-steps"
                        break
                    launch = self._start(sid, busy_until)
                    if launch is None:
                        waiting = waiting or branch in busy_until
                        if any(v == "needs_review" for v in self.status.values()):
                            break
                        continue
                    launches.append((sid, launch))
                    active.add(branch)
                    started += 1
            if len(launches) == 1 and not running:
                # The only step that can run now: run it in this thread. A thread pool
                # hand-off costs ~1 ms per step, a fifth of a no-op task run.
                sid, (task, args) = launches[0]
                self._inline = sid
                state = cast("State[Any]", task(*args, return_state=True))
                self._inline = None
                active.discard(self.specs[sid].branch)
                self._finish(sid, state, out, failed_here)
                continue
            for sid, (task, args) in launches:
                running[task.submit(*args)] = sid
            if not running:
                if not waiting or review_stop:
                    break
                # Only branches another run holds are left. A dead run's hold is taken over
                # (its step is interrupted and runs here); a live run goes on with them itself.
                taken = take_over_dead(self.ledger, self.plan, self.rt.run_id)
                if not taken:
                    out.stopped_by = out.stopped_by or "busy"
                    out.busy = dict(self.busy_by)
                    break
                for tid in taken:
                    self.log.warning("step %s was left in_progress by a dead run: running it", tid)
                out.interrupted.extend(taken)
                busy_until.clear()
                self._refresh()
                continue
            done, _ = wait(
                [f.wrapped_future for f in running],  # type: ignore[attr-defined]
                timeout=self.poll,
                return_when=FIRST_COMPLETED,
            )
            for fut in [f for f in running if f.wrapped_future in done]:  # type: ignore[attr-defined]
                sid = running.pop(fut)
                active.discard(self.specs[sid].branch)
                fut.wait()
                self._finish(sid, fut.state, out, failed_here)
            if busy_until:
                self._refresh()
                busy_until = {b: t for b, t in busy_until.items() if t > time.monotonic()}

    def record_verdict(self, sid: str, verdict: Verdict) -> None:
        """Record a guard's verdict: needs_review, or refused before running (a drift event)."""
        spec = self.specs[sid]
        kind = "step_needs_review" if verdict.kind == "review" else "step_refused"
        try:
            self.ledger.record(
                self.plan.plan_id,
                kind,
                step_id=sid,
                branch=spec.branch,
                run_id=self.rt.run_id,
                reason=verdict.reason,
                details=verdict.details,
            )
        except TransitionError:
            self._refresh(sid)
            return
        self.status[sid] = "needs_review" if verdict.kind == "review" else "failed"

    def _start(self, sid: str, busy_until: dict[str, float]) -> Launch | None:
        """Claim ``sid`` in the ledger (its branch's hold); return its task and arguments."""
        spec = self.specs[sid]
        for guard in self.guards:
            verdict = guard.before_step(self.rt, spec)
            if verdict is not None:
                self.record_verdict(sid, verdict)
                if verdict.kind == "refuse":
                    self.refused.add(sid)
                return None
        upstream = self._upstream(sid)
        if upstream is None:
            return None
        key = step_result_key(self.plan.plan_id, sid, self.hashes[sid], self.generation[sid])
        try:
            self.ledger.record(
                self.plan.plan_id,
                "step_started",
                step_id=sid,
                branch=spec.branch,
                run_id=self.rt.run_id,
                lease_seconds=self.lease,
                def_hash=self.hashes[sid],
                result_key=key,
                host=this_host(),
                pid=os.getpid(),
            )
        except BranchBusyError as exc:
            if self.busy_by.get(spec.branch) != exc.holder_run:
                self.log.info("branch %s is busy: %s", spec.branch, exc)
            self.busy_by[spec.branch] = exc.holder_run
            busy_until[spec.branch] = time.monotonic() + self.poll
            return None
        except TransitionError:
            self._refresh(sid)  # another runner moved it on; take its word
            return None
        self.status[sid] = "in_progress"
        self.result_keys[sid] = key
        task = step_task(spec, None, self.storage)  # one shared task per step shape
        return task, (self.rt, sid, upstream, key)

    def _finish(self, sid: str, state: State[Any], out: LoopOutcome, failed_here: set[str]) -> None:
        spec = self.specs[sid]
        common: dict[str, Any] = {
            "step_id": sid,
            "branch": spec.branch,
            "run_id": self.rt.run_id,
        }
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
            if not self._record_end(
                sid,
                "step_completed",
                def_hash=self.hashes[sid],
                result_key=self.result_keys[sid],
                cached=cached,
                output_tail=tail,
                outputs=hash_outputs(self.rt.workdir, spec.outputs),
                **common,
            ):
                return
            self.values[sid] = value
            self.status[sid] = "completed"
            for guard in self.guards:
                guard.after_step(self.rt, spec, value)
            (out.cached if cached else out.executed).append(sid)
            return
        exc = state.result(raise_on_failure=False)
        if isinstance(exc, NeedsReview):  # e.g. an action whose outcome is unknown
            if not self._record_end(
                sid, "step_needs_review", reason=exc.reason, details=exc.details, **common
            ):
                return
            self.log.warning("step %s needs review: %s", sid, exc.reason)
            self.status[sid] = "needs_review"
            return
        error = (
            f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(state.message)
        )
        if not self._record_end(
            sid, "step_failed", error=error, output_tail=getattr(exc, "output_tail", None), **common
        ):
            return
        self.log.error("step %s failed: %s", sid, error)
        self.status[sid] = "failed"
        failed_here.add(sid)
        out.failed.append(sid)

    def _record_end(self, sid: str, kind: str, **data: Any) -> bool:
        """Record how a step of this run ended; False if this run no longer holds the step.

        That happens when this run's lease ran out (the process was stopped for longer than
        ``lease_seconds``) and another run took the step over: its record stands. A result this
        run persisted is found by that run under the same key (``Cached``), so it is not lost.
        """
        try:
            self.ledger.record(self.plan.plan_id, kind, **data)
            return True
        except LedgerError as exc:
            self.log.error("step %s: cannot record %s: %s", sid, kind, exc)
            self._refresh(sid)
            return False
