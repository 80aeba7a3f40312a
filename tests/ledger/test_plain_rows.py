"""Ledger rows read without pydantic (ledger/plain_rows.py) hold what the models read from the
same rows: a new step's fields are StepState's defaults, in its order; a projection row's plain
state has every StepState attribute with the model's value; a plain event is the event."""

from __future__ import annotations

from pathlib import Path

from prefect_waymark.ledger import open_ledger
from prefect_waymark.ledger.plain_rows import STATE_FIELDS, new_state_fields
from prefect_waymark.ledger.sqlite_reader import SqliteReader
from prefect_waymark.ledger.step_state import StepState
from tests._support.helpers import write_plan
from tests.cli.test_status import PLAN_DOC, default_url, record_history


def test_a_new_steps_fields_are_the_models_defaults_in_its_order() -> None:
    dumped = StepState(step_id="x").model_dump(mode="json")
    assert list(STATE_FIELDS) == list(StepState.model_fields) == list(dumped)
    assert new_state_fields("x") == dumped
    one, two = new_state_fields("a"), new_state_fields("b")
    one["receipts"].append({"k": 1})
    assert two["receipts"] == [] and STATE_FIELDS["receipts"] == []  # fresh containers


def test_plain_states_and_events_equal_the_models(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
        led.record(
            "status-plan",
            "action_intent",
            step_id="clean",
            branch="main",
            run_id="run-1",
            key="k",
            action="mail",
        )
        led.record("status-plan", "run_finished", run_id="run-1", result="stopped")
    reader = SqliteReader(default_url(plan))
    try:
        models = reader.step_states("status-plan")
        plain = reader.plain_step_states("status-plan")
        assert set(plain) == set(models) and len(models) == 4
        for sid, model in models.items():
            assert vars(plain[sid]) == model.__dict__, sid
            assert type(plain[sid].status) is type(model.status)
        assert plain["review-me"].review_data == models["review-me"].review_data != {}
        assert plain["clean"].open_actions == models["clean"].open_actions != {}
        for kinds in (["run_finished"], ["run_started"], ["step_failed", "step_started"]):
            event, row = (
                reader.last_event("status-plan", kinds),
                reader.plain_last_event("status-plan", kinds),
            )
            assert event is not None and row is not None
            fields = {name: getattr(row, name) for name in type(row).__slots__}
            assert fields == event.model_dump(), kinds
        assert reader.plain_last_event("status-plan", ["plan_closed"]) is None
    finally:
        reader.close()
