"""The scheduler inside ``run_plan``: starts ready steps in dependency order, one in_progress per
branch (held by the ledger), branches concurrently, and records every outcome."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, cast

from prefect import Task
from prefect.client.schemas.objects import State
from prefect.futures import PrefectFuture
from prefect.task_runners import TaskRunner

from ..errors import BranchBusyError, PlanClosedError, TransitionError, WaymarkError
from ..guards.base import GuardBase, Guards
from ..guards.observers import RunObserver
from ..ledger.base import this_host
from ..ledger.event_writers import record_decision, record_step_started
from ..ledger.events import RELEASE_EVENT_KINDS, EventKind
from ..ledger.identity import default_executor
from ..results.storage import ResultAccess, StorageSpec
from ..review.gate import ReviewGate
from ..review.stale import stale_verdict, stale_words
from ..run.resume import take_over_dead
from ..run.runtime import StepRuntime
from ..runners.remote import RemoteRuntime
from ..runners.submit import Launcher
from ..tasks.cache_policy import step_result_key
from ..tasks.step_task import step_task
from ._step_records import LoopOutcome, StepRecords
from .frontier import ReadyFrontier

__all__ = ["LoopOutcome", "PlanLoop"]


RELEASE_KINDS = [*RELEASE_EVENT_KINDS, EventKind.step_needs_review, EventKind.step_blocked]
Launch = tuple[Task[..., Any], tuple[Any, ...]]  # a claimed step's task and its arguments
STEP_PARAMS = ("runtime", "step_id", "upstream", "result_key")  # waymark_step's, in order


class PlanLoop(StepRecords):
    """Runs the plan's remaining steps within a Prefect flow run.

    ``until`` must be a step of the plan (``run_plan`` checks it once, before anything is
    recorded). Guards, the review gate and observers default to the runtime's.
    """

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
        agent_wait_seconds: float = 0,
        guards: list[GuardBase] | None = None,
        observers: list[RunObserver] | None = None,
        task_runner: TaskRunner[Any] | None = None,
    ) -> None:
        gate = runtime.gate or ReviewGate(runtime.plan, runtime.ledger, runtime.run_id, logger)
        super().__init__(
            runtime,
            results,
            logger,
            Guards(guards) if guards is not None else runtime.guards,
            gate,
            list(observers or []),
        )
        self.storage = storage
        self.max_steps = max_steps
        self.until = until
        self.poll = poll_seconds
        self.lease = lease_seconds
        self.agent_wait = agent_wait_seconds
        #: Submits step tasks to ``task_runner`` (else the flow run's own) and waits for them.
        self.launcher = Launcher(task_runner)
        self._agent_deadline: float | None = None
        self._announced_waits: set[str] = set()
        self.branches = {s.branch for s in self.plan.steps}
        self.targets = self._targets()
        self.frontier = ReadyFrontier(self.order, self.specs, self.status, self.stale)
        #: branch -> the run that held it when this run last tried to start a step there.
        self.busy_by: dict[str, str] = {}
        self._running: dict[PrefectFuture[Any], str] = {}  # this run's steps in progress
        self._inline: str | None = None  # the step running in the loop's own thread
        self._closed: PlanClosedError | None = None  # `waymark close` while this run went on
        self.refresh()

    def _targets(self) -> set[str]:
        if self.until is None:
            return set(self.order)
        if self.until not in self.specs:  # checked by run_plan (or the CLI) before the run
            raise WaymarkError(f"until: plan {self.plan.plan_id!r} has no step {self.until!r}")
        wanted, stack = set(), [self.until]
        while stack:
            sid = stack.pop()
            if sid not in wanted:
                wanted.add(sid)
                stack.extend(self.specs[sid].depends_on)
        return wanted

    def run(self) -> LoopOutcome:
        """Start ready steps until nothing more may start; wait for the running ones."""
        out = LoopOutcome(skipped=[s for s in self.order if self.frontier.done(s)])
        try:
            self._run(out)
            if out.stopped_by == "closed":
                self._stopped_by_close(out)
        except BaseException as exc:
            held = list(self._running.values()) + ([self._inline] if self._inline else [])
            self.release_running(held, f"{type(exc).__name__}: {exc}")
            self._running.clear()
            self._inline = None
            raise
        finally:
            self.guards.on_run_end(self.rt.context)
            for observer in self.observers:
                observer.run_ended(self.rt.context)
        out.needs_review = [s for s in self.order if self.status[s] == "needs_review"]
        out.refused = [s for s in self.order if s in self.refused]
        if out.stopped_by is None and self.until is not None:
            if any(self.status[s] != "completed" for s in self.order):
                out.stopped_by = "until"
        return out

    def _ready(self, sid: str, failed_here: set[str]) -> bool:
        if sid not in self.targets or sid in failed_here or sid in self.refused:
            return False
        if not all(self.frontier.done(d) for d in self.specs[sid].depends_on):
            return False  # a need not completed, or stale (it runs again first)
        if sid in self.stale and self.status[sid] == "completed":
            return self._run_again(sid)
        return self.status[sid] in ("pending", "failed")

    def _run_again(self, sid: str) -> bool:
        """A stale step whose needs are all done: record its rerun (it runs in this run, after
        them), or stop it for review when that is a person's choice (its action was applied;
        an agent's or a person's step). True if it is ready to start now."""
        st = self.ledger.step_states(self.plan.plan_id).get(sid)
        if st is None or st.status != "completed" or not st.stale:
            self.refresh(sid)  # moved on meanwhile: the ledger says
            return False
        verdict = stale_verdict(self.plan, sid, st)
        if verdict is not None:
            self.stop(sid, verdict)  # an answer in this run (rerun) makes it pending
            return self.status[sid] in ("pending", "failed") and sid not in self.stale
        stale = st.stale
        try:
            record_decision(
                self.ledger,
                self.plan.plan_id,
                EventKind.step_rerun_requested,
                step_id=sid,
                branch=self.specs[sid].branch,
                run_id=self.rt.run_id,
                by=self.rt.executor or default_executor(),
                reason=f"{stale_words(stale)}: runs again after it",
            )
        except (TransitionError, PlanClosedError):  # moved on, or closed: the ledger says
            self.refresh(sid)
            return False
        self.log.info("step %s is stale (%s): running it again", sid, stale_words(stale))
        self.refresh(sid)
        return self.status[sid] == "pending"

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
            try:
                self.launcher.close()  # holds stay renewed while a runner winds down
            finally:
                stop.set()

    def _schedule(self, out: LoopOutcome) -> None:
        running = self._running
        active: set[str] = set()  # branches with a step of this run in progress
        busy_until: dict[str, float] = {}  # branches another run held at our last try
        failed_here: set[str] = set()
        started = 0
        open_steps: list[str] | None = None  # not completed, needs done, when last looked at
        while True:
            review_stop = "needs_review" in self.status.values()  # a C loop: every pass
            review_stop = review_stop or self._closed is not None  # launch nothing more
            waiting = False
            launches: list[tuple[str, Launch]] = []
            if not review_stop:
                now = time.monotonic()
                if self._reread or open_steps is None:  # from the ledger: a step may reopen
                    open_steps, self._reread = self.frontier.of(self.order), False
                else:
                    open_steps = self.frontier.advance(open_steps)
                for sid in self.frontier.scan(open_steps, lambda: self._reread):
                    if len(active) == len(self.branches):
                        break  # every branch has a step of this run in progress
                    if not self._ready(sid, failed_here):
                        continue
                    if self.specs[sid].checked_in:
                        continue  # an agent's or a person's: see _wait_for_checkins
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
                    if launch is None and self._closed is not None:
                        out.stopped_by = "closed"
                        break
                    if launch is None:
                        waiting = waiting or branch in busy_until
                        if "needs_review" in self.status.values():
                            break
                        continue
                    launches.append((sid, launch))
                    out.started.append(sid)
                    active.add(branch)
                    started += 1
            if launches and self.gate.aborted is not None:
                # A pause in this pass was answered "abort": the steps claimed before it
                # must not run; their holds are released (they are pending again).
                self.release_running([sid for sid, _ in launches], "the plan was aborted")
                break
            if len(launches) == 1 and not running and self.launcher.in_process:
                # The only step that can run now: run it in this thread. A thread pool
                # hand-off costs ~1 ms per step, a fifth of a no-op task run. (Another
                # runner's steps always go to it: that is where their resources are.)
                sid, (task, args) = launches[0]
                self._inline = sid
                state = cast("State[Any]", task(*args, return_state=True))
                self._inline = None
                active.discard(self.specs[sid].branch)
                self.finish(sid, state, out, failed_here)
                continue
            for i, (sid, (task, args)) in enumerate(launches):
                params = dict(zip(STEP_PARAMS, args, strict=True))
                try:  # the runner starts at its first submit: it may fail to (a Dask address)
                    running[self.launcher.submit(task, params)] = sid
                except BaseException as exc:
                    self.release_running(
                        [s for s, _ in launches[i:]], f"{type(exc).__name__}: {exc}"
                    )
                    raise
            if not running and not launches and not review_stop:
                if self._wait_for_checkins(out, failed_here):
                    busy_until.clear()
                    continue
            if not running:
                if not waiting or review_stop:
                    if not review_stop and self._moved_meanwhile(out, failed_here):
                        continue  # e.g. a failed step was skipped meanwhile: go on after it
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
                self.refresh()
                continue
            done = self.launcher.first_done(running, self.poll)  # Prefect's as_completed
            for fut in [f for f in running if f in done]:
                sid = running.pop(fut)
                active.discard(self.specs[sid].branch)
                fut.wait()
                self.finish(sid, fut.state, out, failed_here)
            if busy_until:
                self.refresh()
                busy_until = {b: t for b, t in busy_until.items() if t > time.monotonic()}

    def _waiting_checkins(self, failed_here: set[str]) -> dict[str, str]:
        """The agent and manual steps this run is stuck behind: ready, or in progress by
        their executor (step -> who it waits for)."""
        found: dict[str, str] = {}
        for sid in self.order:
            spec = self.specs[sid]
            if not spec.checked_in or sid not in self.targets or self.status[sid] == "completed":
                continue
            if self.status[sid] == "in_progress" or (
                self._ready(sid, failed_here) and sid not in self.refused_checkins
            ):
                found[sid] = spec.owner or f"{spec.kind} executor"
        return found

    def _wait_for_checkins(self, out: LoopOutcome, failed_here: set[str]) -> bool:
        """Nothing this run can start: if agent or manual steps are what it waits for, record
        that (once per step and run) and — with ``agent_wait_seconds`` left — wait a poll for
        a check-in and return True to look again; else note them in ``out``."""
        waiting = self._waiting_checkins(failed_here)
        if not waiting:
            return False
        for sid, who in waiting.items():
            if sid in self._announced_waits:
                continue
            self._announced_waits.add(sid)
            spec = self.specs[sid]
            self.ledger.record(
                self.plan.plan_id,
                EventKind.step_waiting,
                step_id=sid,
                run_id=self.rt.run_id,
                step_kind=spec.kind,
                owner=spec.owner,
            )
            self.log.info(
                "step %s (%s) waits for %s: `waymark next` shows it, `waymark start` / `done` "
                "check it in%s",
                sid,
                spec.kind,
                who,
                f"; this run waits up to {self.agent_wait:g}s" if self.agent_wait > 0 else "",
            )
        now = time.monotonic()
        if self._agent_deadline is None:
            self._agent_deadline = now + self.agent_wait
        if now < self._agent_deadline:
            time.sleep(min(max(self.poll, 1.0), self._agent_deadline - now))
            self.refresh()
            return True
        out.waiting = waiting
        out.stopped_by = out.stopped_by or "waiting"
        return False

    def _start(self, sid: str, busy_until: dict[str, float]) -> Launch | None:
        """Claim ``sid`` in the ledger (its branch's hold); return its task and arguments."""
        spec = self.specs[sid]
        verdict = self.guards.before_step(self.rt.context, spec)
        if verdict is not None and self.stop(sid, verdict) != "go_on":
            return None
        if self.status[sid] not in ("pending", "failed"):
            return None  # an answer during a pause moved it (e.g. accepted as completed)
        upstream = self.upstream(sid)
        if upstream is None:
            return None
        key = step_result_key(self.plan.plan_id, sid, self.hashes[sid], self.generation[sid])
        try:
            record_step_started(
                self.ledger,
                self.plan.plan_id,
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
            self.refresh(sid)  # another runner moved it on; take its word
            return None
        except PlanClosedError as exc:  # closed meanwhile: start nothing more (final)
            self._closed = exc
            return None
        self.status[sid] = "in_progress"
        self.result_keys[sid] = key
        task = step_task(spec, None, self.storage)  # one shared task per step shape
        if self.launcher.in_process:
            return task, (self.rt, sid, upstream, key)
        return task, (RemoteRuntime.of(self.rt, self.lease), sid, upstream, key)

    def _stopped_by_close(self, out: LoopOutcome) -> None:
        """The run's words for a close while it went on (one read: the steps it ended since)."""
        record = self._closed.record if self._closed is not None else {}
        since = int(record.get("seq") or 0)
        ended = {
            e.step_id
            for e in self.ledger.events(self.plan.plan_id, after_seq=since, kinds=RELEASE_KINDS)
            if e.run_id == self.rt.run_id
        }
        out.closed = (
            f"the plan was closed by {record.get('by', '?')} while this run went on; "
            f"{len(ended)} running step(s) finished"
        )
        self.log.warning("%s; no step started after it", out.closed)

    def _moved_meanwhile(self, out: LoopOutcome, failed_here: set[str]) -> bool:
        """Before the run ends with steps that failed or stopped here: one read of the ledger,
        in case someone moved them meanwhile (``waymark skip``). True if a step is now done."""
        seen = [s for s in self.order if s in failed_here or s in self.refused]
        if not seen:
            return False
        self.refresh()
        moved = [s for s in seen if self.status[s] == "completed"]
        for sid in moved:
            failed_here.discard(sid)
            self.refused.discard(sid)
            if sid in out.failed:
                out.failed.remove(sid)
        return bool(moved)
