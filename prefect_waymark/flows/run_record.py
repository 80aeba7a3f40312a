"""One run of a plan on record: who runs it, where and since when, and how its end is recorded
(the ``run_finished`` event, then its marker), also when an error, Ctrl-C or SIGTERM ends it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..boundary import RunBoundary
from ..errors import LedgerUnavailable
from ..ledger import Ledger
from ..ledger.events import EventKind, ProgressEvent
from ..ledger.progress_view import PlanView, build_view
from ..ledger.run_hashes import light_events
from ..ledger.step_state import StepState
from ..markers import write_run_markers
from ..models import utcnow
from ..plan.spec import PlanSpec
from ..run.options import RunOptions
from ..run.summary import RunResult, RunSummary

if TYPE_CHECKING:
    from ..results.storage import StorageSpec
    from ..run.slot_budget import SlotBudget

__all__ = ["RunRecord", "record_crash"]


@dataclass(frozen=True)
class RunRecord:
    """One run of a plan: its options, who runs it, where and since when (what every summary of
    this run repeats), and what it runs with."""

    options: RunOptions
    ledger: Ledger
    logger: Any
    run_id: str
    flow_run_id: str | None
    executor: str
    started_at: str
    started_from: str | None
    #: Where step results persist (given storage: the declared outputs too, results/outputs.py).
    storage: StorageSpec
    #: The task runner the scheduler starts; ``None``: the flow run's own (runners/choice.py).
    runner: Any = None
    #: A deployment's run: its budget in its schedule slot (run/slot_budget.py).
    budget: SlotBudget | None = None
    #: The run's execution boundary, taken before run_started (boundary/tracker.py).
    boundary: RunBoundary | None = None
    #: The run's plan page publisher once its observers exist: the run's end updates the
    #: version it created (no lookup, no second copy of the page's inputs).
    pages: list[Any] = field(default_factory=list)

    @property
    def spec(self) -> PlanSpec:
        return self.options.spec

    @property
    def workdir(self) -> Path:
        return self.options.workdir

    @property
    def markers_folder(self) -> Path:
        return self.options.markers_folder

    @property
    def keeps_outputs(self) -> bool:
        """Result storage was given: declared outputs are kept there too (results/outputs.py)."""
        return self.options.result_storage is not None

    def summary(self, result: RunResult, **fields: Any) -> RunSummary:
        return RunSummary(
            plan_id=self.spec.plan_id,
            run_id=self.run_id,
            flow_run_id=self.flow_run_id,
            executor=self.executor,
            workdir=str(self.workdir),
            started_at=self.started_at,
            finished_at=utcnow().isoformat(),
            result=result,
            **{"started_from": self.started_from, **fields},
        )

    def metrics(self, states: dict[str, StepState] | None) -> dict[str, Any] | None:
        """The plan's metrics as the run ends (metrics/); None, logged, if they cannot be
        computed: a metric never fails a run."""
        from ..metrics import compute_metrics

        try:
            return compute_metrics(self.spec, self.ledger, states=states)
        except Exception as exc:  # noqa: BLE001 - a metric must never fail a run
            self.logger.error("the plan's metrics were not computed: %s", exc)
            return None

    def finish(
        self,
        summary: RunSummary,
        states: dict[str, StepState] | None = None,
        view: PlanView | None = None,
    ) -> None:
        """The run's last records: the run_finished event, then its marker (from the states the
        run read at its end and their view, if it has them)."""
        data = summary.model_dump()
        if self.boundary is not None:
            data["boundary"] = self.boundary.end(self.ledger, self.run_id)
        metrics = self.metrics(states)
        if metrics is not None:
            data["metrics"] = metrics
        self.ledger.append(
            ProgressEvent(
                plan_id=self.spec.plan_id,
                kind=EventKind.run_finished,
                run_id=self.run_id,
                data=data,
            )
        )
        write_run_markers(
            self.spec,
            self.ledger,
            data,
            self.markers_folder,
            self.logger,
            artifacts=self.options.publish_artifacts,
            states=states,
            view=view,
            page=self.pages[0] if self.pages else None,
        )


def record_crash(run: RunRecord, exc: BaseException) -> None:
    """A run stopped by an unexpected error (result ``failed``) or by SIGINT / SIGTERM (result
    ``interrupted``; the step that was running is already recorded interrupted) still leaves a
    run_finished event and a marker. A second Ctrl-C meanwhile ends it at once: each record is
    one transaction and the marker file is replaced atomically, so nothing is left half-written.
    """
    interrupted = _is_interruption(exc)
    if isinstance(exc, LedgerUnavailable):  # a write failed already: nothing more is tried
        return  # (the error is the flow run's: Prefect logs it)
    try:
        states = run.ledger.step_states(run.spec.plan_id)
        view = build_view(run.spec, states)
        done = [  # this run's only, filtered in the database
            e.step_id
            for e in light_events(
                run.ledger, run.spec.plan_id, [EventKind.step_completed], run_id=run.run_id
            )
            if e.step_id
        ]
        if interrupted:
            why = f"the run was interrupted ({_signal_name(exc)}); the next run continues here"
        else:
            why = f"the run stopped on an error: {type(exc).__name__}: {exc}"
        run.finish(
            run.summary(
                "interrupted" if interrupted else "failed",
                executed_steps=done,
                needs_review=view.needs_review,
                next_start=view.needs_review[0]["step"] if view.needs_review else view.next_step,
                next_start_reason=why,
            ),
            states,
            view,
        )
    except Exception as inner:  # noqa: BLE001 - never hide the original error
        run.logger.error("could not record the stopped run's marker: %s", inner)


def _is_interruption(exc: BaseException) -> bool:
    from prefect.exceptions import TerminationSignal

    return isinstance(exc, (KeyboardInterrupt, TerminationSignal))


def _signal_name(exc: BaseException) -> str:
    from prefect.exceptions import TerminationSignal

    if isinstance(exc, TerminationSignal):
        import signal

        try:
            return signal.Signals(exc.signal).name
        except ValueError:
            return f"signal {exc.signal}"
    return "SIGINT"
