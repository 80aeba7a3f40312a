"""The one in-process runner of the tests: a real ``run_plan`` flow run in this process.

It reads the flow's final state with the function ``waymark run`` uses
(:func:`prefect_waymark.run.summary.summary_from_state`): a completed run returns the
:class:`RunSummary`, a stopped one ends Cancelled (``Stopped``, ``Aborted``) or Failed
(``NeedsReview``) with a :class:`PlanRunStopped` that carries it, a run with failed steps ends
Failed with a :class:`PlanRunFailed`; anything else is a crash and fails the test. Every run
checks that its state's type is the one its name goes with (run/prefect_ui.py).
``publish_artifacts=False`` (no Prefect artifacts) is no flow parameter: the options are checked
here, as ``waymark run`` checks them (:func:`prefect_waymark.run.options.check_run`), and handed
to the flow with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from prefect_waymark.run.summary import RunSummary

__all__ = ["flow_outcome", "run_inprocess"]


#: The state type each final state's name goes with.
STATE_TYPES = {
    "Completed": "COMPLETED",
    "Stopped": "CANCELLED",
    "Aborted": "CANCELLED",
    "NeedsReview": "FAILED",
    "Failed": "FAILED",
}


def flow_outcome(
    plan: Path, *, publish_artifacts: bool = True, **kwargs: Any
) -> tuple[Literal["Completed", "Stopped", "Aborted", "NeedsReview", "Failed"], RunSummary]:
    """Run the flow once; return the name of the flow run's final state and its summary."""
    from prefect_waymark.flows import run_plan
    from prefect_waymark.run.options import check_run
    from prefect_waymark.run.summary import summary_from_state

    if not publish_artifacts:
        options = check_run(str(plan), publish_artifacts=False, **kwargs)
        kwargs["options"] = options.as_parameter()
    state = run_plan(plan=str(plan), return_state=True, **kwargs)
    summary = summary_from_state(state)
    assert not isinstance(summary, BaseException), f"the flow crashed: {summary!r}"
    assert state.name in STATE_TYPES, state
    assert state.type.value == STATE_TYPES[state.name], state
    return state.name, summary  # type: ignore[return-value]  # one of STATE_TYPES' names


def run_inprocess(plan: Path, *, publish_artifacts: bool = True, **kwargs: Any) -> RunSummary:
    """Run the flow once; return its :class:`RunSummary` whether the flow run failed or not."""
    return flow_outcome(plan, publish_artifacts=publish_artifacts, **kwargs)[1]
