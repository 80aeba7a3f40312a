"""The projection an append writes is the fold of the stored events, byte for byte.

``SqlLedger._append`` folds each step event into the step's row as plain fields
(``step_state.apply_to_fields``: no pydantic model on the write path); ``rebuild`` folds the
stored events again through ``apply_event`` and the model. For any sequence of events — with
payloads that carry outputs, evidence, review details, receipts and non-ASCII text — the row's
``state`` text must be exactly the rebuilt state's ``model_dump_json()``, and a row written by
an older version (fewer fields) must still fold.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefect_waymark.ledger import EventKind, ProgressEvent, SqlLedger
from prefect_waymark.ledger.events import STEP_EVENT_KINDS
from prefect_waymark.ledger.step_state import STATE_FIELDS, StepState, new_state_fields

PLAN = "fold-plan"
T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
KINDS = sorted(STEP_EVENT_KINDS)  # every kind the projection folds
text = st.text(alphabet='abcé✓ "\\\n', max_size=6)


def _data(kind: EventKind, run: str, draw: Any) -> dict[str, Any]:
    if kind == EventKind.step_started:
        return {"host": "h", "pid": 7, "def_hash": draw(text), "result_key": draw(text)}
    if kind == EventKind.step_completed:
        return {
            "cached": draw(st.booleans()),
            "outputs": {"b.md": draw(text), "a.md": "h1"},  # stored sorted: as the fold reads
            "evidence": {"item": draw(text)},
            "executor": draw(st.sampled_from([None, "agent-é"])),
            "workdir": "/w",
            "output_tail": draw(text),
        }
    if kind == EventKind.step_attempt_failed:
        return {"attempt": draw(st.integers(1, 3)), "error": draw(text)}
    if kind == EventKind.step_interrupted:
        return {"dead_run": run, "reason": "the run died"}
    if kind == EventKind.step_needs_review:
        n = draw(st.sampled_from([1.5, 1e-7, 1e20, float("nan"), float("inf"), -0.0, 10**20]))
        return {"reason": draw(text), "details": {"current_outputs": {"a.md": "h2"}, "n": n}}
    if kind == EventKind.step_review_accepted:
        return {"resume_status": draw(st.sampled_from([None, "completed", "pending"]))}
    if kind in (EventKind.action_intent, EventKind.action_applied, EventKind.action_not_applied):
        return {"key": draw(st.sampled_from(["k1", "k2"])), "action": "pay", "external_id": "x"}
    return {"reason": draw(text), "on": draw(st.sampled_from([None, "a"]))}


@st.composite
def events(draw: Any) -> list[ProgressEvent]:
    out = []
    for i in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(KINDS))
        run = draw(st.sampled_from(["r1", "r2"]))
        out.append(
            ProgressEvent(
                plan_id=PLAN,
                kind=kind,
                step_id=draw(st.sampled_from(["a", "b"])),
                branch="main",
                run_id=run,
                at=T0 + timedelta(seconds=i),
                data=_data(kind, run, draw),
            )
        )
    return out


def _rows(db: Path) -> dict[str, str]:
    con = sqlite3.connect(db)
    try:
        return dict(
            con.execute("SELECT step_id, state FROM waymark_steps WHERE plan_id = ?", (PLAN,))
        )
    finally:
        con.close()


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(evs=events())
def test_the_appended_projection_is_the_rebuilt_one_byte_for_byte(
    tmp_path: Path, evs: list[ProgressEvent]
) -> None:
    db = tmp_path / "fold.db"
    db.unlink(missing_ok=True)
    led = SqlLedger(f"sqlite:///{db}")
    try:
        accepted = 0
        for ev in evs:
            try:
                led.append(ev)
                accepted += 1
            except Exception:  # noqa: BLE001 - refused transitions are part of the sequence
                pass
        rebuilt = led.rebuild(PLAN)
        # As JSON: a NaN in review details is never equal to itself (stored as null, as pydantic
        # writes it).
        read = {k: s.model_dump_json() for k, s in led.step_states(PLAN).items()}
        assert read == {k: s.model_dump_json() for k, s in rebuilt.items()}
    finally:
        led.close()
    rows = _rows(db)
    assert set(rows) == set(rebuilt)
    for step_id, state in rebuilt.items():
        assert rows[step_id] == state.model_dump_json(), step_id
    if accepted:
        assert rows  # something was folded: the comparison above was not vacuous


def test_a_row_written_by_an_older_version_still_folds(tmp_path: Path) -> None:
    """A projection row without the fields later versions added folds with their defaults; a
    field the model does not know is dropped, as pydantic drops it."""
    db = tmp_path / "old.db"
    led = SqlLedger(f"sqlite:///{db}")
    try:
        led.record(PLAN, "step_started", step_id="a", branch="main", run_id="r1")
        con = sqlite3.connect(db)
        old = (  # fewer fields than today's, one the model does not know, another order
            '{"status":"in_progress","step_id":"a","branch":"main","run_id":"r1","attempts":0,'
            '"retired_field":"x"}'
        )
        with con:
            con.execute("UPDATE waymark_steps SET state = ? WHERE step_id = 'a'", (old,))
        con.close()
        led.record(PLAN, "step_completed", step_id="a", branch="main", run_id="r1", cached=False)
        state = led.step_states(PLAN)["a"]
    finally:
        led.close()
    assert state.status == "completed" and state.attempts == 1
    assert state.skipped is None and state.interrupted == 0 and state.evidence == {}
    assert _rows(db)["a"] == state.model_dump_json()
    assert StepState.model_validate_json(_rows(db)["a"]) == state


def test_a_new_steps_fields_are_the_models_defaults_in_its_order() -> None:
    dumped = StepState(step_id="x").model_dump(mode="json")
    assert list(STATE_FIELDS) == list(StepState.model_fields) == list(dumped)
    assert new_state_fields("x") == dumped
    one, two = new_state_fields("a"), new_state_fields("b")
    one["receipts"].append({"k": 1})
    assert two["receipts"] == [] and STATE_FIELDS["receipts"] == []  # fresh containers
