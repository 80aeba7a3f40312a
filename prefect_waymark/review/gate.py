"""The review gate: the one place that acts on guards' verdicts.

Guards, the scheduler and steps only decide that a step must stop. The gate records the stop
(``step_needs_review``, or ``step_refused`` with its ``drift`` event), announces it (the
``waymark.plan.needs-review`` Prefect event, once per step and run), waits for an answer in the
Prefect UI when the run was asked to (``review_wait_seconds``: every kind of stop can pause — a
ref or contract conflict, an edited output, an action whose outcome is unknown, a lost result),
applies the answer, and checks whether the plan is aborted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from ..errors import LedgerError, ReviewError
from ..guards.base import GuardBase, GuardContext, Verdict
from ..ledger.event_writers import record_drift, record_review_waiting
from ..ledger.events import EventKind
from ..models import utcnow
from .decisions import abort_event, apply_decision
from .reasons import form_description, reason_words

if TYPE_CHECKING:
    from ..ledger.base import Ledger
    from ..ledger.events import ProgressEvent
    from ..plan.spec import PlanSpec, StepSpec
    from .signal import ReviewInput

__all__ = ["AbortCheck", "GateOutcome", "ReviewGate"]

#: What became of a stop: the step may go on (a person answered accept or rerun during the
#: pause), it waits at needs_review, it was refused, or another run moved it on first.
GateOutcome = Literal["go_on", "needs_review", "refused", "moved"]

Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]


def _in_flow_run() -> bool:
    try:
        from prefect.context import FlowRunContext
    except ImportError:  # pragma: no cover - Prefect is a dependency
        return False
    return FlowRunContext.get() is not None


class ReviewGate:
    """Records, announces, waits for and applies every stop of one run."""

    def __init__(
        self,
        plan: PlanSpec,
        ledger: Ledger,
        run_id: str,
        logger: Logger,
        *,
        wait_seconds: float = 0,
    ) -> None:
        self.plan = plan
        self.ledger = ledger
        self.run_id = run_id
        self.log = logger
        self.wait_seconds = wait_seconds
        self.aborted: ProgressEvent | None = None
        #: Called after a person's answer was applied (e.g. the re-anchoring guard reloads the
        #: versions the answer accepted; the plan page shows the answer).
        self.on_answer: list[Callable[[], None]] = []
        #: Called with the step id just before the run pauses for an answer (the plan page and
        #: the progress artifact show the pause while it lasts).
        self.on_pause: list[Callable[[str], None]] = []
        #: The plan page's address in the Prefect UI, for the form's description: set by the
        #: run's plan page (markers), None while no page is published.
        self.page_url: str | None = None
        self._announced: set[str] = set()
        #: In a deployment's run: the first stop this run would have paused for. The run
        #: finishes what it may, then suspends for it (:mod:`.suspend`) instead of pausing.
        self.suspend_for: tuple[str, int, Verdict] | None = None

    # -- aborts ----------------------------------------------------------------------------
    def check_abort(self) -> bool:
        """Read whether the plan is aborted (at run start, and after an answer)."""
        self.aborted = abort_event(self.ledger, self.plan.plan_id)
        return self.aborted is not None

    def abort_message(self) -> str:
        ev = self.aborted
        assert ev is not None
        who = ev.data.get("by") or "someone"
        why = f" ({ev.data['reason']})" if ev.data.get("reason") else ""
        return (
            f"plan {self.plan.plan_id!r} was aborted by {who} at {ev.at.isoformat()}{why}; "
            "`waymark run` will not run it (answer with `waymark review --accept|--rerun` to "
            "lift the abort)"
        )

    def abort_verdict(self) -> Verdict | None:
        """The stop an aborted plan puts on the step it would run next."""
        if self.aborted is None:
            return None
        return Verdict("review", self.abort_message(), {"aborted": True})

    def abort_check(self) -> AbortCheck:
        """The guard through which this gate's abort check runs with the other guards."""
        return AbortCheck(self)

    # -- stops -----------------------------------------------------------------------------
    def stop(self, step_id: str, verdict: Verdict) -> GateOutcome:
        """Record ``verdict`` on ``step_id``, announce it, and (if asked to) wait for an answer."""
        spec = self.plan.step(step_id)
        if verdict.kind == "refuse":
            return self._refuse(step_id, spec.branch, verdict)
        try:
            stored = self.ledger.record(
                self.plan.plan_id,
                EventKind.step_needs_review,
                step_id=step_id,
                branch=spec.branch,
                run_id=self.run_id,
                reason=verdict.reason,
                details=verdict.details,
            )
        except LedgerError:  # another run moved the step on (e.g. a rerun): its word stands
            return "moved"
        words = "; ".join(reason_words(verdict.reason, verdict.details, utcnow()))
        self.log.warning("step %s needs review: %s", step_id, words)
        d = verdict.details
        self.announce(
            [
                {
                    "step": step_id,
                    "reason": verdict.reason,
                    "ref": d.get("ref"),
                    "accepted": d.get("accepted"),
                    "current": d.get("current"),
                    "at": d.get("at"),
                }
            ],
            new_stops={step_id: stored.seq} if stored.seq is not None else None,
        )
        if self.wait_seconds <= 0 or not _in_flow_run() or self.aborted is not None:
            return "needs_review"
        from .schedules import own_deployment_id

        if own_deployment_id() is not None:  # a deployment's run suspends (review/suspend.py)
            if self.suspend_for is None and stored.seq is not None:
                self.suspend_for = (step_id, stored.seq, verdict)
                self.log.warning(
                    "step %s: once the steps still running end, the flow run suspends for an "
                    "answer (its worker is free meanwhile)",
                    step_id,
                )
            return "needs_review"
        return self._wait(step_id, verdict)

    def _refuse(self, step_id: str, branch: str, verdict: Verdict) -> GateOutcome:
        if verdict.drift is not None:
            record_drift(
                self.ledger,
                self.plan.plan_id,
                step_id=step_id,
                run_id=self.run_id,
                **verdict.drift,
            )
        try:
            self.ledger.record(
                self.plan.plan_id,
                EventKind.step_refused,
                step_id=step_id,
                branch=branch,
                run_id=self.run_id,
                reason=verdict.reason,
                details=verdict.details,
            )
        except LedgerError:
            return "moved"
        self.log.error("step %s refused: %s", step_id, verdict.reason)
        return "refused"

    def _wait(self, step_id: str, verdict: Verdict) -> GateOutcome:
        from prefect.runtime import flow_run

        from .signal import wait_for_review

        record_review_waiting(
            self.ledger, self.plan.plan_id, step_id, self.run_id, str(flow_run.get_id()),
            self.wait_seconds,
        )  # fmt: skip
        self.log.warning(
            "step %s: the flow run pauses up to %ss for an answer (accept / rerun / abort) in "
            "the Prefect UI: open the flow run, Resume in its ⋮ menu",
            step_id,
            self.wait_seconds,
        )
        for show in self.on_pause:
            show(step_id)
        description = self.describe(step_id, verdict)
        answer = wait_for_review(self.wait_seconds, description=description)
        if answer is None:
            self.log.warning(
                "no answer within %ss: the run stops for review; answer later with `waymark "
                "review PLAN --step %s --accept|--rerun|--abort`",
                self.wait_seconds,
                step_id,
            )
            return "needs_review"
        return self.apply_answer(step_id, answer)

    def describe(self, step_id: str, verdict: Verdict) -> str:
        """The Markdown above the review form: why the run waits and what each answer does."""
        return form_description(
            self.plan,
            step_id,
            verdict.reason,
            verdict.details,
            wait_seconds=self.wait_seconds,
            now=utcnow(),
            page_url=self.page_url,
        )

    def apply_answer(self, step_id: str, answer: ReviewInput) -> GateOutcome:
        """Apply a person's answer to the stop of ``step_id`` (from the paused run's form, or
        found by a suspended run's resumed execution)."""
        by = answer.by or "prefect-ui"
        if answer.receipt and answer.decision != "abort":
            self._settle(step_id, answer.receipt, by, answer.reason)
        try:
            done = apply_decision(
                self.ledger,
                self.plan,
                answer.decision,
                step_id=step_id,
                by=by,
                reason=answer.reason,
                run_id=self.run_id,
            )
        except ReviewError as exc:  # answered meanwhile by `waymark review`: the ledger says
            self.log.warning("review: the answer from the Prefect UI was not applied: %s", exc)
            return "moved"
        # apply_decision's last line says what the *next* run does (its words for `waymark
        # review`); this run goes on with the answer now, so it says that instead.
        for line in done[:-1] if answer.decision != "abort" else []:
            self.log.info("review: %s", line)
        self.log.info("review: %s", self._next_words(step_id, answer.decision, by, answer.reason))
        # A later stop of the same step in this run is news again: announce it too.
        self._announced.discard(step_id)
        if answer.decision == "abort":
            self.check_abort()
        for listener in self.on_answer:
            listener()
        return "needs_review" if answer.decision == "abort" else "go_on"

    def _next_words(self, step_id: str, decision: str, by: str, reason: str) -> str:
        """What this run does after a person's answer, in one sentence."""
        why = f" ({reason})" if reason else ""
        if decision == "abort":
            return (
                f"{by} aborted plan {self.plan.plan_id!r}{why}: this run stops here and runs "
                "nothing more; `waymark run` refuses the plan until someone answers `waymark "
                "review PLAN --accept` or `--rerun`"
            )
        state = self.ledger.step_states(self.plan.plan_id).get(step_id)
        status = state.status if state is not None else "pending"
        if self.plan.step(step_id).checked_in:  # an agent's or a person's: no flow runs it
            again = "to be done again" if decision == "rerun" else "accepted"
            return (
                f"{by} answered step {step_id!r} ({decision}){why}: it goes back to its "
                f"executor, {again} (`waymark next` offers it); this run goes on with the "
                "steps it can run"
            )
        if decision == "rerun":
            return f"{by} asked to run step {step_id!r} again{why}: this run runs it now"
        if status == "completed":
            return (
                f"{by} accepted step {step_id!r}{why}: it stays completed and this run goes on "
                "with the steps after it"
            )
        return f"{by} accepted step {step_id!r}{why}: this run goes on and runs it now"

    def _settle(self, step_id: str, receipt: str, by: str, reason: str) -> None:
        """The answer says what became of the step's open action: record it first. A receipt
        for a step without an open action is ignored (it would record an action that never
        ran as applied)."""
        from .receipts import open_intents, record_receipt

        if not open_intents(self.ledger, self.plan, step_id):  # inherited ones too
            self.log.warning(
                "review: step %s has no action whose outcome is unknown; receipt %r ignored",
                step_id,
                receipt,
            )
            return

        outcome: Literal["applied", "not_applied"] = (
            "applied" if receipt == "applied" else "not_applied"
        )
        try:
            rec, _ = record_receipt(
                self.ledger,
                self.plan,
                step_id,
                outcome=outcome,
                note=reason or None,
                by=by,
                release=False,
            )
        except (ValueError, LedgerError) as exc:
            self.log.warning("review: receipt %r not recorded: %s", receipt, exc)
            return
        self.log.info("review: action %s (key %s) recorded %s", rec.action, rec.key, outcome)

    # -- announcements ---------------------------------------------------------------------
    def announce(
        self, steps: list[dict[str, Any]], *, new_stops: dict[str, int] | None = None
    ) -> None:
        """Emit ``waymark.plan.needs-review`` once per stop: for the steps not announced yet by
        this run nor, for the same stop, by an earlier run (a scheduled run of a plan waiting
        for a person does not notify again every day); the ledger records each announcement."""
        fresh = [s for s in steps if str(s["step"]) not in self._announced]
        if not fresh or not _in_flow_run():
            return
        self._announced.update(str(s["step"]) for s in fresh)
        stops = dict(new_stops or {})
        older = [s for s in fresh if str(s["step"]) not in stops]
        if older:  # stops left by earlier runs: announced already? (two reads, not per step)
            stops.update({k: v for k, v in self.stop_seqs().items() if k not in stops})
            done = {
                seq
                for ev in self.ledger.events(self.plan.plan_id, kinds=[EventKind.review_announced])
                for seq in (ev.data.get("stops") or {}).values()
            }
            fresh = [s for s in fresh if str(s["step"]) in (new_stops or {})] + [
                s for s in older if stops.get(str(s["step"])) not in done
            ]
        if not fresh:
            return
        from .signal import emit_needs_review

        try:
            emit_needs_review(self.plan.plan_id, self.run_id, fresh)
        except Exception as exc:  # noqa: BLE001 - a lost notification must not stop the run
            self.log.warning("could not emit the needs-review event: %s", exc)
            return
        self.ledger.record(
            self.plan.plan_id,
            EventKind.review_announced,
            run_id=self.run_id,
            stops={str(s["step"]): stops[str(s["step"])] for s in fresh if str(s["step"]) in stops},
        )

    def stop_seqs(self) -> dict[str, int]:
        """Each step's latest needs_review event (its seq identifies the stop)."""
        found: dict[str, int] = {}
        for ev in self.ledger.events(self.plan.plan_id, kinds=[EventKind.step_needs_review]):
            if ev.step_id is not None and ev.seq is not None:
                found[ev.step_id] = ev.seq
        return found

    def announce_open(self, needs_review: list[dict[str, Any]]) -> None:
        """Announce the stops waiting in the plan's view that this run has not announced yet
        (e.g. left by an earlier run, or recorded by another runner)."""
        self.announce(
            [{"step": str(item["step"]), "reason": item.get("reason")} for item in needs_review]
        )


class AbortCheck(GuardBase):
    """An aborted plan does not run: at run start its next step (unless one already waits for
    review) stops, and every step is stopped before it runs."""

    def __init__(self, gate: ReviewGate) -> None:
        self.gate = gate

    def on_run_start(self, ctx: GuardContext) -> list[tuple[str, Verdict]]:
        verdict = self.gate.abort_verdict()
        if verdict is None:
            return []
        self.gate.log.error("%s", self.gate.abort_message())
        view = ctx.view
        reviewing = [str(item["step"]) for item in view.needs_review]
        target = reviewing[0] if reviewing else view.next_step
        if target is None or target in reviewing:
            return []
        return [(target, verdict)]

    def before_step(self, ctx: GuardContext, step: StepSpec) -> Verdict | None:
        return self.gate.abort_verdict()
