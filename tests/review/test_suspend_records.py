"""What the ledger says about suspended flow runs (review/suspend.py): which suspension a resumed
execution takes up, which ``waymark review`` resumes, what the plan page shows, and the run id
of each execution. The suspending itself needs a deployment's run on a real worker:
tests/team/test_review_suspend.py."""

from __future__ import annotations

from datetime import timedelta

from prefect_waymark.ledger.events import EventKind, ProgressEvent
from prefect_waymark.ledger.identity import execution_run_id, flow_run_of
from prefect_waymark.markers.plan_page.render import open_pause
from prefect_waymark.models import utcnow
from prefect_waymark.review.suspend import open_suspension, open_suspensions, suspend_key

FR1 = "0b6f7a52-2a43-4f5e-9d0c-6b1f5b3f1a01"
FR2 = "0b6f7a52-2a43-4f5e-9d0c-6b1f5b3f1a02"


def _ev(
    kind: EventKind, step: str | None = None, run: str | None = None, **data: object
) -> ProgressEvent:
    return ProgressEvent(plan_id="p", kind=kind, step_id=step, run_id=run, data=dict(data))


def _suspended(step: str, fr: str, seq: int) -> ProgressEvent:
    return _ev(
        EventKind.review_waiting,
        step,
        fr,
        flow_run_id=fr,
        timeout_seconds=600,
        suspended=True,
        pause_key=suspend_key(seq),
    )


def test_a_suspension_stays_open_until_its_resumed_execution_takes_it_up() -> None:
    events = [_suspended("b", FR1, 7)]
    (s,) = open_suspensions(events)
    assert (s.flow_run_id, s.step_id, s.key, s.answered) == (FR1, "b", "waymark-review-7", False)
    assert open_suspensions(events, now=utcnow()) == [s]  # its 600 s wait is not over
    # The run's own end (its process exits with the suspend) does not close it ...
    events.append(_ev(EventKind.run_finished, run=FR1, result="needs_review"))
    assert open_suspension(events, FR1) is not None
    # ... an answer to its step marks it answered (waymark review then resumes it) ...
    accepted = _ev(EventKind.step_review_accepted, "b", by="ann")
    accepted.seq = 12
    events.append(accepted)
    (s,) = open_suspensions(events)
    assert s.answered is True and s.answered_seq == 12
    # A later answer (the same step stopped and answered again) does not re-answer it.
    again = _ev(EventKind.step_rerun_requested, "b", by="bob")
    again.seq = 15
    (s,) = open_suspensions([*events, again])
    assert s.answered_seq == 12
    # ... and the resumed execution's review_resumed closes it.
    events.append(_ev(EventKind.review_resumed, "b", f"{FR1}-r2", flow_run_id=FR1, pause_key=s.key))
    assert open_suspensions(events) == []
    assert open_suspension(events, FR1) is None


def test_an_answer_to_another_step_leaves_a_suspension_unanswered() -> None:
    events = [
        _suspended("b", FR1, 7),
        _suspended("c", FR2, 9),
        _ev(EventKind.step_rerun_requested, "c", by="ann"),
    ]
    assert [(s.flow_run_id, s.answered) for s in open_suspensions(events)] == [
        (FR1, False),
        (FR2, True),
    ]
    assert open_suspension(events, FR2) is not None and open_suspension(events, "x") is None
    # An abort answers every suspension.
    events.append(_ev(EventKind.plan_aborted, by="ann"))
    assert all(s.answered for s in open_suspensions(events))


def test_a_suspension_whose_wait_is_over_is_not_offered() -> None:
    old = _suspended("b", FR1, 7)
    old.at = utcnow() - timedelta(seconds=601)  # Prefect has failed the run: nobody resumes it
    assert open_suspensions([old], now=utcnow()) == []
    # The resumed execution's lookup does not care: a run resumed in time is taken up.
    assert open_suspension([old], FR1) is not None


def test_a_paused_run_is_not_a_suspension() -> None:
    paused = _ev(EventKind.review_waiting, "b", FR1, flow_run_id=FR1, timeout_seconds=60)
    assert open_suspensions([paused]) == []


def test_the_plan_page_shows_a_suspension_after_its_run_ended_until_it_is_taken_up() -> None:
    at = utcnow() - timedelta(minutes=5)
    paused = _ev(EventKind.review_waiting, "a", "run-x", flow_run_id=FR2, timeout_seconds=60)
    paused.at = at
    ended = _ev(EventKind.run_finished, run="run-x")
    # A paused run's pause ends with the run; it is shown only while that run is the live one.
    assert open_pause([paused], "run-x") is paused
    assert open_pause([paused, ended], "run-x") is None
    assert open_pause([paused], "another-run") is None
    # A suspended run's pause outlives its run and shows on every later run's page ...
    susp = _suspended("b", FR1, 7)
    events = [susp, _ev(EventKind.run_finished, run=FR1)]
    assert open_pause(events, "a-later-run") is susp
    # ... until its resumed execution takes it up, or the step is answered.
    taken = _ev(EventKind.review_resumed, "b", f"{FR1}-r2", flow_run_id=FR1)
    assert open_pause([*events, taken], "a-later-run") is None
    answered = _ev(EventKind.step_review_accepted, "b", by="ann")
    assert open_pause([*events, answered], None) is None


def test_each_execution_of_a_flow_run_has_a_run_id_of_its_own() -> None:
    assert execution_run_id(FR1, 1) == FR1
    assert execution_run_id(FR1, 0) == FR1
    assert execution_run_id(FR1, 2) == f"{FR1}-r2"
    assert flow_run_of(f"{FR1}-r2") == FR1 and flow_run_of(FR1) == FR1
    assert flow_run_of("run-without-flow") == "run-without-flow"
