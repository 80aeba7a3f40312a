"""Review stops that free the worker: a deployment's flow run suspends instead of pausing.

A run that pauses for an answer (``review_wait_seconds``) keeps its process, and so its worker's
slot, busy while it waits. A flow run created from a deployment suspends instead: Prefect's
``suspend_flow_run`` ends the process and leaves the run ``Suspended`` with the review form;
answering it (the Prefect UI's **Resume**, or ``waymark review``, which resumes the run with its
answer) reschedules the run, any worker of the pool picks it up, and ``run_plan`` starts from the
top: completed steps are not run again, and the answer is applied before anything else.

The protocol, all of it in the ledger and Prefect's run input:

1. the run records its stop as usual, runs what it still may, writes its marker, then records
   ``review_waiting`` with ``suspended: true`` and the ``pause_key`` (``waymark-review-<seq>``,
   the stop's ledger sequence: a suspend is never asked twice for one stop) and suspends;
2. the resumed execution (a new run id, the same flow run) finds that event
   (:func:`open_suspension`), reads the answer saved under the key (:func:`read_answer`, never a
   second suspend, so a run resumed without an answer cannot suspend again in a loop), applies it
   if the stop is still open, and records ``review_resumed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ..errors import ReviewError
from ..ledger.event_writers import record_review_resumed, record_review_waiting
from ..ledger.events import EventKind, ProgressEvent
from ..text.lists import capped_list

if TYPE_CHECKING:
    from .gate import ReviewGate
    from .signal import ReviewInput

__all__ = [
    "SUSPENSION_EVENT_KINDS",
    "Suspension",
    "in_deployment_run",
    "open_suspension",
    "open_suspensions",
    "prefect_api_known",
    "read_answer",
    "record_suspension",
    "resume_suspended",
    "suspend_key",
    "suspend_now",
    "take_up",
]

#: Stops that close a suspension besides ``review_resumed``: an answer to its step, an abort.
_CLOSING = {
    EventKind.step_review_accepted,
    EventKind.step_rerun_requested,
    EventKind.plan_aborted,
}
#: The events :func:`open_suspensions` reads.
SUSPENSION_EVENT_KINDS = (EventKind.review_waiting, EventKind.review_resumed, *sorted(_CLOSING))


def suspend_key(stop_seq: int) -> str:
    """The Prefect pause key of the stop recorded at ``stop_seq`` (one suspend per stop)."""
    return f"waymark-review-{stop_seq}"


def in_deployment_run() -> bool:
    """True inside a flow run that a deployment created and that is not a subflow: the only
    runs Prefect can suspend (DESIGN: "Suspending")."""
    from .schedules import own_deployment_id

    return own_deployment_id() is not None


@dataclass(frozen=True)
class Suspension:
    """A ``review_waiting`` event of a suspended flow run, and the answer that closed its stop
    meanwhile, if one did (``answered_seq``: that answer's ledger sequence)."""

    event: ProgressEvent
    answered_seq: int | None = None

    @property
    def answered(self) -> bool:
        return self.answered_seq is not None

    @property
    def flow_run_id(self) -> str:
        return str(self.event.data.get("flow_run_id") or "")

    @property
    def key(self) -> str:
        return str(self.event.data.get("pause_key") or "")

    @property
    def step_id(self) -> str:
        return str(self.event.step_id or "")

    @property
    def waits_for_checkin(self) -> bool:
        """Suspended for an agent's or a person's check-in (``waymark done`` resumes it), not
        for a review answer."""
        return self.event.data.get("waits") == "checkin"

    def expired(self, now: datetime) -> bool:
        """Its wait is over: Prefect fails a suspended run that was not resumed in time."""
        timeout = float(self.event.data.get("timeout_seconds") or 0)
        return self.event.at + timedelta(seconds=timeout) < now


def open_suspensions(
    events: Sequence[ProgressEvent], *, now: datetime | None = None
) -> list[Suspension]:
    """The suspended flow runs no resumed execution has taken up yet, oldest first (from the
    plan's ``review_waiting``, ``review_resumed`` and answer events, in ledger order); each says
    whether its stop was answered meanwhile (e.g. by ``waymark review``). Given ``now``, those
    whose wait is over are left out (nobody can resume them any more)."""
    found: dict[str, Suspension] = {}
    for ev in events:
        fr = str(ev.data.get("flow_run_id") or "")
        if ev.kind == EventKind.review_waiting and ev.data.get("suspended") and fr:
            found[fr] = Suspension(ev)
        elif ev.kind == EventKind.review_resumed:
            found.pop(fr, None)
        elif ev.kind in _CLOSING:
            for fr_id, s in list(found.items()):
                if s.answered:
                    continue
                if ev.kind == EventKind.plan_aborted or ev.step_id == s.step_id:
                    found[fr_id] = Suspension(s.event, ev.seq if ev.seq is not None else -1)
    out = list(found.values())
    return out if now is None else [s for s in out if not s.expired(now)]


def open_suspension(events: Sequence[ProgressEvent], flow_run_id: str) -> Suspension | None:
    """This flow run's suspension that its resumed execution has to take up, if any."""
    for s in open_suspensions(events):
        if s.flow_run_id == flow_run_id:
            return s
    return None


def suspend_now(key: str, timeout_seconds: float, description: str | None) -> None:
    """Suspend the current flow run — with the review form and ``description`` above it, or
    (``description`` None: a run waiting for a check-in) without a form: raises Prefect's
    ``Pause``, which ends the flow function (the process exits, the worker is free)."""
    from prefect.flow_runs import suspend_flow_run

    from .signal import ReviewInput

    timeout = max(1, int(timeout_seconds))
    if description is None:
        suspend_flow_run(timeout=timeout, key=key)
        return
    suspend_flow_run(
        wait_for_input=ReviewInput.with_initial_data(description=description),
        timeout=timeout,
        key=key,
    )


def read_answer(suspension: Suspension, attempts: int = 4) -> ReviewInput | None:
    """The answer given to ``suspension`` (the UI form's, or the one ``waymark review`` resumed
    the run with); ``None`` if the run was resumed without one. A failing read is tried again
    (``attempts`` in all, 1 s apart), then raises: the answer must not be taken for none."""
    import time

    from prefect.input.actions import read_flow_run_input
    from prefect.input.run_input import keyset_from_base_key

    from .signal import ReviewInput

    keyset = keyset_from_base_key(f"suspended-{suspension.key}")
    for attempt in range(attempts):
        try:
            value = read_flow_run_input(
                keyset["response"], flow_run_id=UUID(suspension.flow_run_id)
            )
            break
        except Exception:
            if attempt == attempts - 1:
                raise
            time.sleep(1.0)
    if not isinstance(value, dict):
        return None
    try:
        return ReviewInput(**value)
    except ValueError:
        return None


def prefect_api_known() -> bool:
    """Point Prefect at a server that is already there — ``PREFECT_API_URL`` (environment or
    profile), else the local server waymark started — without ever starting one; False if
    there is none."""
    import os

    if os.environ.get("PREFECT_API_URL"):
        return True
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return True
    from ..prefect_server.local import find_local_server

    info = find_local_server()
    if info is None:
        return False
    os.environ["PREFECT_API_URL"] = info.api_url
    return True


def resume_suspended(suspensions: Sequence[Suspension], answer: dict[str, Any] | None) -> list[str]:
    """Resume each suspended flow run with ``answer`` (its form's fields; None: a run waiting
    for a check-in, no form); return one line per run, what became of it. A run that cannot be
    resumed (its pause timed out, the server is not reachable) is said so; the ledger holds the
    answer or the check-in either way."""
    from prefect.exceptions import FlowPauseTimeout, NotPausedError
    from prefect.flow_runs import resume_flow_run

    lines: list[str] = []
    what = "answer" if answer is not None else "check-in"
    if suspensions and not prefect_api_known():
        return [
            f"flow run {s.flow_run_id} stays suspended: no Prefect server is known here "
            f"(set PREFECT_API_URL); resume it in the Prefect UI, or the next run follows the "
            f"{what}"
            for s in suspensions
        ]
    for s in suspensions:
        try:
            resume_flow_run(UUID(s.flow_run_id), run_input=answer)
        except NotPausedError:
            lines.append(f"flow run {s.flow_run_id} was resumed already; it goes on")
        except FlowPauseTimeout:
            lines.append(
                f"flow run {s.flow_run_id} waited for this {what} and timed out; the next run "
                f"follows the {what}"
            )
        except Exception as exc:  # noqa: BLE001 - the ledger holds the answer: say, go on
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            lines.append(
                f"flow run {s.flow_run_id} stays suspended ({first}); the next run follows the "
                f"{what}, or resume the flow run in the Prefect UI"
            )
        else:
            lines.append(
                f"resumed the suspended flow run {s.flow_run_id}: a worker picks it up and it "
                "goes on from here"
            )
    return lines


def record_suspension(
    gate: ReviewGate, view_needs_review: list[dict[str, Any]]
) -> tuple[str, str] | None:
    """At the end of a deployment's run that stopped for review: record that the flow run
    suspends for the first stop it would have paused for, if that stop is still open (not
    answered, not moved on by another run); return the pause key and the form's text."""
    if gate.suspend_for is None or gate.aborted is not None:
        return None
    step_id, seq, verdict = gate.suspend_for
    if step_id not in {str(item["step"]) for item in view_needs_review}:
        return None
    if gate.stop_seqs().get(step_id) != seq:
        return None  # stopped again by another run since: that run's stop is the one open
    from prefect.runtime import flow_run

    key = suspend_key(seq)
    record_review_waiting(
        gate.ledger, gate.plan.plan_id, step_id, gate.run_id, str(flow_run.get_id()),
        gate.wait_seconds, pause_key=key,
    )  # fmt: skip
    gate.log.warning(
        "step %s: the flow run suspends up to %ss for an answer (accept / rerun / abort): "
        "its worker is free meanwhile; answer in the Prefect UI (open the flow run, Resume "
        "in its ⋮ menu) or with `waymark review PLAN --step %s --accept|--rerun|--abort`, which "
        "resumes it; any worker of the pool then picks it up",
        step_id,
        gate.wait_seconds,
        step_id,
    )
    return key, gate.describe(step_id, verdict)


def take_up(gate: ReviewGate, suspension: Suspension) -> None:
    """This run is the resumed execution of a suspended flow run: apply the answer it was
    resumed with (unless the stop was answered meanwhile), and record that it did. A run
    suspended for a check-in has no answer to apply: the ledger holds the check-in."""
    step_id = suspension.step_id
    answer = None if suspension.waits_for_checkin else _resumed_with(suspension)
    applied = False
    if suspension.waits_for_checkin:
        gate.log.info(
            "resumed: %s checked in; the run goes on from the ledger",
            capped_list(suspension.event.data.get("steps") or [step_id]),
        )
    elif suspension.answered:
        gate.log.info(
            "resumed after step %s was answered (e.g. with `waymark review`): that answer "
            "stands; the run goes on from the ledger",
            step_id,
        )
    elif answer is None:
        gate.log.warning(
            "resumed without an answer: step %s still waits for review; answer with "
            "`waymark review PLAN --step %s --accept|--rerun|--abort`",
            step_id,
            step_id,
        )
    else:
        applied = gate.apply_answer(step_id, answer) != "moved"
    record_review_resumed(
        gate.ledger,
        gate.plan.plan_id,
        step_id=step_id,
        run_id=gate.run_id,
        flow_run_id=suspension.flow_run_id,
        pause_key=suspension.key,
        decision=answer.decision if answer is not None else "",
        applied=applied,
    )


def _resumed_with(suspension: Suspension) -> ReviewInput | None:
    """The answer a review suspension was resumed with; a read that keeps failing is not taken
    for "no answer": the suspension stays open and this run fails, visibly."""
    try:
        return read_answer(suspension)
    except Exception as exc:
        step_id = suspension.step_id
        raise ReviewError(
            f"could not read the answer flow run {suspension.flow_run_id} was resumed with "
            f"({type(exc).__name__}: {exc}); step {step_id} still waits for review: answer "
            f"again with `waymark review PLAN --step {step_id} --accept|--rerun|--abort`"
        ) from exc
